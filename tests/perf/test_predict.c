/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_predict.c: sharc-perf predict's simulation on schedules with known answers (pure
 * compute, pure communication, perfect overlap, one unit, the bound holding prefetches
 * back), its cost model's formulas, the models' sizes against the published ones, and the
 * cluster file's errors; offload: an offloaded unit's transfers and host work delay its next
 * gather by exactly what cannot overlap, the memory a GPU holds with and without it, the
 * host link's presets.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../perf/predict/predict.h"
#include "../check.h"

#define NEAR(_a, _b) (fabs((_a) - (_b)) <= 1e-9 * (fabs(_a) + fabs(_b)) + 1e-15)

static pred_sched_t sched(int n, double f, double a, double r)
{
    pred_sched_t s = {
        .nunits = n, .prefetch = 1, .reshard_after_forward = 1, .queues = 2, .passes = 1};

    s.units = calloc((size_t)n, sizeof(pred_unit_t));
    for (int u = 0; u < n; u++) {
        s.units[u] = (pred_unit_t){.fwd_s = f, .bwd_s = 2 * f, .ag_s = a, .rs_s = r};
    }
    return s;
}

static void test_pure_compute(void)
{
    pred_sched_t s = sched(6, 1e-3, 0, 0);
    pred_step_t st;

    s.call_s = 1e-5;
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK_MSG(NEAR(st.step_s, 6 * 3e-3 + 4 * 6 * 1e-5), "step %g", st.step_s);
    CHECK(NEAR(st.compute_s, st.step_s));
    CHECK(fabs(st.exposed_s) < 1e-12);
    CHECK(st.comm_s == 0);
    free(s.units);
}

static void test_pure_comm(void)
{
    /* no compute, one queue: it never idles, and the step is every collective end to end:
     * n gathers in forward, n - 1 in backward (the forward's last unit is kept), n reductions */
    for (int q = 1; q <= 2; q++) {
        for (int depth = 0; depth <= 2; depth++) {
            pred_sched_t s = sched(5, 0, 2e-3, 3e-3);
            pred_step_t st;

            s.queues = q;
            s.prefetch = depth;
            CHECK(pred_simulate(&s, &st) == 0);
            CHECK_MSG(NEAR(st.comm_s, 9 * 2e-3 + 5 * 3e-3), "comm %g", st.comm_s);
            if (q == 1) {
                CHECK_MSG(NEAR(st.step_s, st.comm_s), "depth %d: step %g, comm %g", depth,
                          st.step_s, st.comm_s);
            }
            CHECK(NEAR(st.exposed_s, st.step_s));
            CHECK(st.gathers == 9);
            free(s.units);
        }
    }
}

static void test_perfect_overlap(void)
{
    /* compute longer than any collective, prefetch 1, reductions beside the gathers: only the
     * first gather and the last reduction show */
    pred_sched_t s = sched(8, 10e-3, 2e-3, 3e-3);
    pred_step_t st;

    CHECK(pred_simulate(&s, &st) == 0);
    CHECK_MSG(NEAR(st.step_s, 8 * 30e-3 + 2e-3 + 3e-3), "step %g", st.step_s);
    CHECK(NEAR(st.exposed_s, 5e-3));
    CHECK(st.prefetches == 14); /* every gather but the step's first */
    CHECK(st.evictions == 0 && st.peak_unsharded == 2);
    /* without prefetch every gather is waited for */
    s.prefetch = 0;
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK_MSG(NEAR(st.step_s, 8 * 30e-3 + 15 * 2e-3 + 3e-3), "step %g", st.step_s);
    CHECK(st.prefetches == 0);
    free(s.units);
}

static void test_one_unit(void)
{
    pred_sched_t s = sched(1, 4e-3, 1e-3, 2e-3);
    pred_step_t st;

    CHECK(pred_simulate(&s, &st) == 0);
    /* gather, forward, kept for the backward, backward, its reduction */
    CHECK_MSG(NEAR(st.step_s, 1e-3 + 12e-3 + 2e-3), "step %g", st.step_s);
    CHECK(st.gathers == 1);
    CHECK(NEAR(st.comm_s, 3e-3));
    free(s.units);
}

/* micro-batches: only the last one reduces; the gathers repeat every pass */
static void test_accum(void)
{
    pred_sched_t s = sched(4, 0, 1e-3, 2e-3);
    pred_step_t st;

    s.queues = 1;
    s.passes = 3;
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK_MSG(NEAR(st.comm_s, 3 * 7 * 1e-3 + 4 * 2e-3), "comm %g", st.comm_s);
    CHECK(NEAR(st.step_s, st.comm_s));
    free(s.units);
}

static void test_bound(void)
{
    /* depth 2 under a bound of 2 unsharded units: the second one ahead waits for a slot */
    pred_sched_t s = sched(6, 1e-3, 1e-4, 1e-4);
    pred_step_t st;

    s.prefetch = 2;
    s.max_unsharded = 2;
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK(st.deferred > 0);
    CHECK(st.peak_unsharded <= 2);
    /* the derived bound (depth + 1) admits them */
    s.max_unsharded = 0;
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK(st.deferred == 0 && st.peak_unsharded == 3);
    /* kept after forward: every unit stays, and the backward gathers nothing */
    s.reshard_after_forward = 0;
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK(st.gathers == 6);
    /* HSDP: the replica all-reduce follows each reduce-scatter, the last one exposed */
    s.reshard_after_forward = 1;
    for (int u = 0; u < 6; u++) {
        s.units[u].ar_s = 5e-4;
    }
    CHECK(pred_simulate(&s, &st) == 0);
    CHECK(st.exposed_s >= 1e-4 + 1e-4 + 5e-4 - 1e-12);
    free(s.units);
}

/* auto prefetch: the engine's own decision raises the depth while gathers are waited for
 * and a deeper one cuts the waits (a large unit after each small one), and stays at 1 when
 * nothing is waited for */
static void test_auto(void)
{
    pred_sched_t s = sched(8, 2e-3, 0, 1e-4);
    pred_step_t d1, d2, a;

    for (int u = 0; u < 8; u++) {
        s.units[u].ag_s = (u % 2) ? 3e-3 : 1e-4;
    }
    CHECK(pred_simulate(&s, &d1) == 0);
    s.prefetch = 2;
    CHECK(pred_simulate(&s, &d2) == 0);
    CHECK_MSG(d2.step_s < d1.step_s - 1e-3, "depth 2 %g, depth 1 %g", d2.step_s, d1.step_s);
    s.prefetch = -1;
    CHECK(pred_simulate(&s, &a) == 0);
    CHECK_MSG(a.depth >= 2 && a.step_s <= d2.step_s + 1e-9, "auto: depth %d, step %g", a.depth,
              a.step_s);
    for (int u = 0; u < 8; u++) {
        s.units[u].ag_s = 1e-4;
    }
    CHECK(pred_simulate(&s, &a) == 0);
    CHECK(a.depth == 1);
    free(s.units);
}

static void test_cost(void)
{
    pred_cluster_t c;
    pred_engine_t e = {.shard_size = 0};
    pred_group_t sg, rg, one = {1, 8}, two = {2, 8};
    double B = 1e9, t;

    CHECK(pred_cluster_preset("p5", &c) == 0);
    /* inside a node: (n-1) alpha + (n-1)/n B / bw */
    t = pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AG, &one, B);
    CHECK(NEAR(t, 7 * c.intra_lat + 7.0 / 8 * B / c.intra_bw));
    CHECK(NEAR(pred_coll_time(&c, PRED_ALGO_AUTO, PRED_RS, &one, B), t));
    CHECK(NEAR(pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AR, &one, B), 2 * t));
    /* two nodes, hierarchical: between nodes on B / 8 per GPU at the node's NICs / 8 */
    double binter = c.nics * c.nic_bw * c.nic_eff / 8;
    t = pred_coll_time(&c, PRED_ALGO_HIER, PRED_AG, &two, B);
    CHECK(NEAR(t, c.nic_lat + 0.5 * (B / 8) / binter + 7 * c.intra_lat + 7.0 / 8 * B / c.intra_bw));
    t = pred_coll_time(&c, PRED_ALGO_RING, PRED_AG, &two, B);
    CHECK(NEAR(t, 15 * c.nic_lat + 15.0 / 16 * B / fmin(8 * binter, c.intra_bw)));
    CHECK(pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AG, &(pred_group_t){1, 1}, B) == 0);
    /* groups: full sharding spans the nodes; HSDP shards inside a node, replicas across */
    pred_groups(&c, &e, 4, &sg, &rg);
    CHECK(sg.nodes == 4 && sg.per_node == 8 && rg.nodes * rg.per_node == 1);
    e.shard_size = 8;
    pred_groups(&c, &e, 4, &sg, &rg);
    CHECK(sg.nodes == 1 && sg.per_node == 8 && rg.nodes == 4 && rg.per_node == 1);
}

/* The wires and hpZ: bytes per value on the wire, the quantizers' cost, the hierarchical
 * reduce-scatter, the backward inside the node, the bytes between nodes, hpZ's memory. */
static void test_wire(void)
{
    pred_cluster_t c;
    pred_engine_t e;
    pred_group_t two = {2, 8}, one = {1, 8};
    pred_model_t m;
    pred_row_t full, q, h;
    double P = 8e8, w = 1.0 + 4.0 / 256, binter;

    pred_engine_defaults(&e);
    CHECK(pred_cluster_preset("eth100", &c) == 0 && c.nics == 1 && c.quant_bw > 0);
    binter = c.nic_bw * c.nic_eff / 8;
    c.quant_bw = 0; /* first without the quantizers' cost: only bytes change */
    CHECK(NEAR(pred_wire_ag_time(&c, &e, &two, P),
               pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AG, &two, P * 2)));
    e.pwire = e.rwire = SHARC_WIRE_INT8;
    CHECK(NEAR(pred_wire_ag_time(&c, &e, &two, P),
               pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AG, &two, P * w)));
    /* reduce-scatter: f32 inside the node, w bytes a value of the node's 1/8 between nodes */
    CHECK(NEAR(pred_wire_rs_time(&c, &e, &two, P),
               pred_coll_time(&c, PRED_ALGO_AUTO, PRED_RS, &one, P * 4) + c.nic_lat +
                   0.5 * P / 8 * w / binter));
    /* one node: full precision, as the library sums there */
    CHECK(NEAR(pred_wire_rs_time(&c, &e, &one, P),
               pred_coll_time(&c, PRED_ALGO_AUTO, PRED_RS, &one, P * 4)));
    CHECK(NEAR(pred_node_ag_time(&c, &e, &two, P),
               pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AG, &one, P * 2)));
    /* the quantizers cost memory traffic: the unit's codes and values read and written */
    c.quant_bw = 1e12;
    CHECK(NEAR(pred_wire_ag_time(&c, &e, &two, P),
               pred_coll_time(&c, PRED_ALGO_AUTO, PRED_AG, &two, P * w) +
                   (P / 16 * (2 + w) + P * (w + 2)) / 1e12));
    /* a step of Llama 2 7B on 2 nodes: int8 sends ~(2 w + w) of (2 + 2 + 4) bytes per value
     * between nodes; hpZ drops the backward's gathers, and keeps 1/8 of each unit but the
     * forward's last (kept whole) in the param dtype */
    CHECK(pred_model_load("llama2-7b", &m) == 0 && pred_cluster_preset("eth100", &c) == 0);
    e.pwire = e.rwire = SHARC_WIRE_FULL;
    CHECK(pred_predict(&m, &c, &e, 2, &full) == 0);
    e.pwire = e.rwire = SHARC_WIRE_INT8;
    CHECK(pred_predict(&m, &c, &e, 2, &q) == 0);
    e.hpz = 1;
    CHECK(pred_predict(&m, &c, &e, 2, &h) == 0);
    CHECK_MSG(fabs(q.step.xnode_bytes / full.step.xnode_bytes - 3 * w / 8) < 0.01, "%g",
              q.step.xnode_bytes / full.step.xnode_bytes);
    CHECK_MSG(fabs(h.step.xnode_bytes / full.step.xnode_bytes - 2 * w / 8) < 0.01, "%g",
              h.step.xnode_bytes / full.step.xnode_bytes);
    CHECK(q.step.peak_secondary_bytes == 0 && h.step.peak_secondary_bytes > 0);
    CHECK_MSG(fabs(h.step.peak_secondary_bytes * 8 / 2 /
                       ((double)pred_model_params(&m) - (double)m.vocab * m.dim) -
                   1) < 0.01,
              "%g", h.step.peak_secondary_bytes);
    CHECK(q.step.step_s < full.step.step_s && h.step.comm_s < q.step.comm_s);
}

static void test_models(void)
{
    pred_model_t m;
    pred_cluster_t c;
    pred_engine_t e;
    pred_row_t r1, r16;

    pred_engine_defaults(&e); /* sharc-perf predict's, as in the anchors below */
    /* the published sizes: Llama 2 7B 6.74B, Llama 3 8B 8.03B */
    CHECK(pred_model_load("llama2-7b", &m) == 0);
    CHECK_MSG(fabs(pred_model_params(&m) / 1e9 - 6.74) < 0.01, "%zu", pred_model_params(&m));
    CHECK(pred_model_load("llama3-8b", &m) == 0);
    CHECK_MSG(fabs(pred_model_params(&m) / 1e9 - 8.03) < 0.01, "%zu", pred_model_params(&m));
    CHECK(pred_model_load("synthetic:16:4M", &m) == 0 && m.n_layers == 16 &&
          m.syn_params == (4u << 20));
    fprintf(stderr, "(an unknown model is an error that lists them:)\n");
    CHECK(pred_model_load("llama9", &m) != 0);
    /* scaling: 16 nodes never beat 1 per GPU, and the prediction is finite */
    CHECK(pred_model_load("llama2-7b", &m) == 0 && pred_cluster_preset("p5", &c) == 0);
    CHECK(pred_predict(&m, &c, &e, 1, &r1) == 0 && pred_predict(&m, &c, &e, 16, &r16) == 0);
    CHECK(r16.tokens_per_s_gpu <= r1.tokens_per_s_gpu * (1 + 1e-9));
    CHECK(r1.mfu > 0 && r1.mfu < c.mfu + 1e-9);
}

static void test_cluster_file(void)
{
    char path[] = "/tmp/test_predict_XXXXXX";
    int fd = mkstemp(path);
    pred_cluster_t c;
    FILE *f;

    CHECK(fd >= 0);
    f = fdopen(fd, "w");
    fprintf(f, "# a cluster\npreset = hgx-h100-ib\nnics = 4   # half\nnic_Gbps = 200\n");
    fclose(f);
    CHECK(pred_cluster_load(path, &c) == 0);
    CHECK(c.nics == 4 && NEAR(c.nic_bw, 25e9) && c.gpus_per_node == 8);
    f = fopen(path, "w");
    fprintf(f, "nics = four\n");
    fclose(f);
    fprintf(stderr, "(a bad value and an unknown key are errors that say where:)\n");
    CHECK(pred_cluster_load(path, &c) != 0);
    f = fopen(path, "w");
    fprintf(f, "nic_speed = 4\n");
    fclose(f);
    CHECK(pred_cluster_load(path, &c) != 0);
    unlink(path);
}

/* --from-topo: sharc-topo's JSON sets the node part (json-c builds only) */
static void test_from_topo(void)
{
#ifdef HAVE_JSONC
    char path[] = "/tmp/test_predict_topo_XXXXXX";
    int fd = mkstemp(path);
    pred_cluster_t c;
    FILE *f = fdopen(fd, "w");

    fprintf(f, "{\"gpus\": [{}, {}, {}, {}], \"intra\": \"NVLink\", \"nics\": ["
               "{\"ports\": [{\"active\": true, \"rate_gbps\": 200.0}]},"
               "{\"ports\": [{\"active\": false, \"rate_gbps\": 200.0}]},"
               "{\"ports\": [{\"active\": true, \"rate_gbps\": 200.0}]}]}\n");
    fclose(f);
    CHECK(pred_cluster_preset("p5", &c) == 0);
    CHECK(pred_cluster_from_topo(path, &c) == 0);
    CHECK(c.gpus_per_node == 4 && c.nics == 2 && NEAR(c.nic_bw, 25e9) && NEAR(c.intra_bw, 150e9));
    f = fopen(path, "w");
    fprintf(f, "{\"not\": \"topo\"}\n");
    fclose(f);
    CHECK(pred_cluster_from_topo(path, &c) != 0);
    unlink(path);
#endif
}

static void test_offload(void)
{
    /* one unit, clipping or not: its host work runs after its reduction (down, landing: finish
     * waits for the landing), its update and upload after that, and the next step's gather
     * waits for the upload; nothing of it overlaps anything */
    for (int clip = 0; clip < 2; clip++) {
        pred_sched_t s = sched(1, 1e-3, 0, 2e-4);
        pred_step_t st;

        s.clip = clip;
        s.units[0] = (pred_unit_t){.fwd_s = 1e-3,
                                   .bwd_s = 2e-3,
                                   .rs_s = 2e-4,
                                   .host = 1,
                                   .down_s = 3e-4,
                                   .land_s = 4e-4,
                                   .update_s = 5e-4,
                                   .up_s = 6e-4};
        CHECK(pred_simulate(&s, &st) == 0);
        CHECK_MSG(NEAR(st.step_s, 3e-3 + 2e-4 + 3e-4 + 4e-4 + 5e-4 + 6e-4), "clip %d: step %g",
                  clip, st.step_s);
        free(s.units);
    }
    /* no offload time: the step of no offload */
    pred_sched_t a = sched(6, 1e-3, 1e-4, 2e-4), b = sched(6, 1e-3, 1e-4, 2e-4);
    pred_step_t sa, sb;
    for (int u = 0; u < 6; u++) {
        b.units[u].host = 1;
    }
    CHECK(pred_simulate(&a, &sa) == 0 && pred_simulate(&b, &sb) == 0);
    CHECK(NEAR(sa.step_s, sb.step_s));
    free(a.units);
    free(b.units);

    /* Llama 2 7B on one 80 GB GPU: not without offload, yes with it, the GPU keeping 2 bytes
     * (bf16) of each parameter's 16 */
    pred_model_t m;
    pred_cluster_t c;
    pred_engine_t e;
    pred_row_t none, host;
    CHECK(pred_model_load("llama2-7b", &m) == 0 && pred_cluster_preset("p5", &c) == 0);
    c.gpus_per_node = 1;
    pred_engine_defaults(&e);
    CHECK(pred_predict(&m, &c, &e, 1, &none) == 0);
    e.offload = 1;
    CHECK(pred_predict(&m, &c, &e, 1, &host) == 0);
    CHECK_MSG(none.fits == 0 && host.fits == 1, "7B on one 80 GB GPU: %d without, %d with",
              none.fits, host.fits);
    double saved = none.gpu_bytes - host.gpu_bytes, want = 14.0 * pred_model_params(&m);
    CHECK_MSG(fabs(saved - want) < 0.01 * want, "saved %g bytes, not %g", saved, want);
    CHECK(host.host_bytes >= 16.0 * pred_model_params(&m) && none.host_bytes == 0);
    CHECK(host.step.step_s >= none.step.step_s);

    /* the host link's presets and keys */
    CHECK(pred_cluster_set(&c, "host_link", "c2c", "test") == 0 && NEAR(c.host_bw, 450e9));
    CHECK(pred_cluster_set(&c, "host_link", "pcie4", "test") == 0 && NEAR(c.host_bw, 31.5e9));
    CHECK(pred_cluster_set(&c, "host_link", "usb", "test") != 0);
    CHECK(pred_cluster_set(&c, "cpu_optim_Gparams", "2.5", "test") == 0 &&
          NEAR(c.cpu_optim_rate, 2.5e9));
}

int main(void)
{
    test_offload();
    test_pure_compute();
    test_pure_comm();
    test_perfect_overlap();
    test_one_unit();
    test_bound();
    test_accum();
    test_auto();
    test_cost();
    test_wire();
    test_models();
    test_cluster_file();
    test_from_topo();
    return check_result("test_predict");
}
