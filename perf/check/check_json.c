/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_json.c: `sharc-perf check -J`, everything measured and decided as JSON, and the other
 * direction: what a node's link should carry, from the JSON of `sharc-topo --json` (the
 * topology oracle). Both through json-c; check_json_none.c stands in without it.
 */
#include "config.h"

#include <json.h>
#include <string.h>

#include "check_job.h"
#include "../common/perf_json.h"
#include "../common/perf_util.h"

int perf_check_have_json(void)
{
    return 1;
}




/* RDMA fabrics: the active ports of the fabric's NICs. */
static int rdma_expect(json_object *root, const char *fabric, perf_check_expect_t *e)
{
    json_object *nics = perf_jarr(root, "nics");
    double sum = 0;
    int n = 0;

    for (size_t i = 0; nics != NULL && i < json_object_array_length(nics); i++) {
        json_object *nic = json_object_array_get_idx(nics, i), *ports = perf_jarr(nic, "ports");

        if (strcmp(perf_jstr(nic, "fabric"), fabric) != 0) {
            continue;
        }
        for (size_t p = 0; ports != NULL && p < json_object_array_length(ports); p++) {
            json_object *port = json_object_array_get_idx(ports, p), *active;
            if (!json_object_object_get_ex(port, "active", &active) ||
                !json_object_get_boolean(active)) {
                continue;
            }
            if (!(perf_jnum(port, "rate_gbps", 0) > 0)) {
                perf_snprintf(e->why, sizeof(e->why), "%s port %s/%d: rate unknown", fabric,
                              perf_jstr(nic, "name"), perf_jint(port, "port"));
                return -1;
            }
            sum += perf_jnum(port, "rate_gbps", 0);
            n++;
        }
    }
    if (n == 0) {
        perf_snprintf(e->why, sizeof(e->why), "no active %s port", fabric);
        return -1;
    }
    e->gbit = sum;
    e->nports = n;
    perf_snprintf(e->why, sizeof(e->why), "%d %s port%s, %.0f Gb/s in all", n, fabric,
                  n > 1 ? "s" : "", sum);
    return 0;
}

/* Ethernet: the interfaces NCCL's sockets and UCX would use. */
static int eth_expect(json_object *root, perf_check_expect_t *e)
{
    json_object *ifs = perf_jarr(root, "socket_ifs"), *devs = perf_jarr(root, "netdevs");
    double sum = 0;
    int n = 0;

    for (size_t i = 0; ifs != NULL && i < json_object_array_length(ifs); i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(ifs, i));
        double mbps = -1;

        if (name == NULL) {
            continue; /* (a null in the list) */
        }
        for (size_t d = 0; devs != NULL && d < json_object_array_length(devs); d++) {
            json_object *dev = json_object_array_get_idx(devs, d);
            if (strcmp(perf_jstr(dev, "name"), name) == 0) {
                mbps = perf_jnum(dev, "speed_mbps", -1);
            }
        }
        if (!(mbps > 0)) {
            perf_snprintf(e->why, sizeof(e->why), "Ethernet %s: speed unknown", name);
            return -1;
        }
        sum += mbps / 1000;
        n++;
    }
    if (n == 0) {
        perf_snprintf(e->why, sizeof(e->why), "no Ethernet interface to use");
        return -1;
    }
    e->gbit = sum;
    e->nports = n;
    perf_snprintf(e->why, sizeof(e->why), "%d Ethernet interface%s, %.0f Gb/s in all", n,
                  n > 1 ? "s" : "", sum);
    return 0;
}

int perf_check_topo_expect(const char *json, perf_check_expect_t *e)
{
    json_object *root = json_tokener_parse(json);
    const char *fabric;
    int ret;

    e->gbit = -1;
    e->nports = 0;
    if (root == NULL) {
        perf_snprintf(e->why, sizeof(e->why), "sharc-topo gave no JSON");
        return -1;
    }
    fabric = perf_jstr(root, "fabric");
    if (strcmp(fabric, "InfiniBand") == 0 || strcmp(fabric, "RoCE") == 0 ||
        strcmp(fabric, "EFA") == 0) {
        ret = rdma_expect(root, fabric, e);
    } else if (strcmp(fabric, "Ethernet") == 0) {
        ret = eth_expect(root, e);
    } else {
        perf_snprintf(e->why, sizeof(e->why), "no fabric found (sharc-topo: %s)",
                      fabric[0] ? fabric : "nothing");
        ret = -1;
    }
    if (ret != 0) {
        e->gbit = -1;
        e->nports = 0;
    }
    json_object_put(root);
    return ret;
}

/* ---- the report -------------------------------------------------------------------------- */

static json_object *num(double v)
{
    return v < 0 ? NULL : json_object_new_double(v);
}

static json_object *why_list(unsigned why)
{
    json_object *a = json_object_new_array();

    if (why & PERF_CHECK_BY_LINKS) {
        json_object_array_add(a, json_object_new_string("links"));
    }
    if (why & PERF_CHECK_BY_COPY) {
        json_object_array_add(a, json_object_new_string("copy"));
    }
    return a;
}

static json_object *link_obj(const perf_check_job_t *j, const perf_check_link_t *l, int round,
                             int nodes)
{
    json_object *o = json_object_new_object();
    const perf_check_graph_t *g = nodes ? &j->inter : &j->intra;

    json_object_object_add(o, nodes ? "node_a" : "rank_a", json_object_new_int(l->a));
    json_object_object_add(o, nodes ? "node_b" : "rank_b", json_object_new_int(l->b));
    json_object_object_add(o, "host_a",
                           json_object_new_string(j->host[nodes ? l->a : j->node_of[l->a]]));
    json_object_object_add(o, "host_b",
                           json_object_new_string(j->host[nodes ? l->b : j->node_of[l->b]]));
    json_object_object_add(o, "round", json_object_new_int(round));
    json_object_object_add(o, "busbw_gbps", num(l->gbps));
    json_object_object_add(o, "retest_gbps", num(l->retest));
    json_object_object_add(o, "judged_gbps", num(l->eff));
    json_object_object_add(o, "fraction_of_median",
                           num(g->ref > 0 && l->eff >= 0 ? l->eff / g->ref : -1));
    json_object_object_add(o, "expected_gbps", num(l->expect > 0 ? l->expect : -1));
    json_object_object_add(o, "suspect", json_object_new_boolean(l->suspect));
    json_object_object_add(o, "named", json_object_new_boolean(l->named));
    json_object_object_add(o, "below_expected", json_object_new_boolean(l->below_expect));
    return o;
}

int perf_check_write_json(const perf_check_job_t *j, const char *path)
{
    json_object *root = json_object_new_object(), *nodes = json_object_new_array();
    json_object *ranks = json_object_new_array(), *links = json_object_new_array();
    json_object *intra = json_object_new_array(), *ring = json_object_new_object();
    json_object *hops = json_object_new_array();
    int ret = 0;

    json_object_object_add(root, "nranks", json_object_new_int(j->nranks));
    json_object_object_add(root, "nnodes", json_object_new_int(j->nnodes));
    json_object_object_add(root, "rails", json_object_new_int(j->rails));
    json_object_object_add(root, "device", json_object_new_string(j->o->cuda ? "cuda" : "host"));
    json_object_object_add(root, "size", json_object_new_int64((int64_t)j->plan.size));
    json_object_object_add(root, "iters", json_object_new_int(j->plan.iters));
    json_object_object_add(root, "budget_s", json_object_new_double(j->o->budget_s));
    json_object_object_add(root, "elapsed_s", json_object_new_double(j->elapsed_s));
    json_object_object_add(root, "threshold", json_object_new_double(j->inter.threshold));
    json_object_object_add(root, "expect_threshold", json_object_new_double(j->inter.expect_frac));
    json_object_object_add(root, "median_gbps", json_object_new_double(j->inter.ref));
    json_object_object_add(root, "retest_median_gbps", json_object_new_double(j->inter.ref_retest));
    json_object_object_add(root, "intra_median_gbps", num(j->intra.nl ? j->intra.ref : -1));
    json_object_object_add(root, "copy_median_gbps", json_object_new_double(j->intra.ref_copy));
    json_object_object_add(root, "named", json_object_new_int(j->named));
    json_object_object_add(root, "exit_status", json_object_new_int(j->named > 0));
    for (int n = 0; n < j->nnodes; n++) {
        const perf_check_member_t *m = &j->inter.m[n];
        json_object *o = json_object_new_object(), *rs = json_object_new_array();

        for (int i = 0; i < j->count[n]; i++) {
            json_object_array_add(rs, json_object_new_int(j->by_node[j->first[n] + i]));
        }
        json_object_object_add(o, "node", json_object_new_int(n));
        json_object_object_add(o, "host", json_object_new_string(j->host[n]));
        json_object_object_add(o, "ranks", rs);
        json_object_object_add(o, "best_gbps", num(m->best));
        json_object_object_add(o, "first_pass_best_gbps", num(m->best0));
        json_object_object_add(o, "retest_best_gbps", num(m->best_retest));
        json_object_object_add(o, "fraction_of_median",
                               num(j->inter.ref > 0 && m->best >= 0 ? m->best / j->inter.ref : -1));
        json_object_object_add(o, "expected_gbps", num(m->expect > 0 ? m->expect : -1));
        json_object_object_add(o, "expected_from", json_object_new_string(j->expect[n].why));
        json_object_object_add(o, "ring_in_gbps", num(j->ring_gbps >= 0 ? j->ring_hop[n] : -1));
        json_object_object_add(o, "suspect", why_list(m->suspect));
        json_object_object_add(o, "named", why_list(m->named));
        json_object_object_add(o, "below_expected", json_object_new_boolean(m->below_expect));
        json_object_array_add(nodes, o);
    }
    for (int r = 0; r < j->nranks; r++) {
        const perf_check_member_t *m = &j->intra.m[r];
        json_object *o = json_object_new_object();

        json_object_object_add(o, "rank", json_object_new_int(r));
        json_object_object_add(o, "node", json_object_new_int(j->node_of[r]));
        json_object_object_add(o, "local_rank", json_object_new_int(j->lrank_of[r]));
        json_object_object_add(o, "host", json_object_new_string(j->host[j->node_of[r]]));
        json_object_object_add(o, "copy_gbps", num(m->copy));
        json_object_object_add(o, "copy_retest_gbps", num(m->copy_retest));
        json_object_object_add(o, "retest_best_pair_gbps", num(m->best_retest));
        json_object_object_add(o, "best_pair_gbps", num(m->nlinks ? m->best : -1));
        json_object_object_add(o, "suspect", why_list(m->suspect));
        json_object_object_add(o, "named", why_list(m->named));
        json_object_array_add(ranks, o);
    }
    for (int k = 0; k < j->inter.nl; k++) {
        json_object_array_add(links, link_obj(j, &j->inter.l[k], j->inter_round[k], 1));
    }
    for (int k = 0; k < j->intra.nl; k++) {
        json_object_array_add(intra, link_obj(j, &j->intra.l[k], j->intra_round[k], 0));
    }
    json_object_object_add(ring, "gbps", num(j->ring_gbps));
    for (int n = 0; n < j->nnodes && j->ring_gbps >= 0; n++) {
        json_object *h = json_object_new_object();
        json_object_object_add(h, "from", json_object_new_int((n - 1 + j->nnodes) % j->nnodes));
        json_object_object_add(h, "to", json_object_new_int(n));
        json_object_object_add(h, "gbps", num(j->ring_hop[n]));
        json_object_array_add(hops, h);
    }
    json_object_object_add(ring, "hops", hops);
    json_object_object_add(root, "nodes", nodes);
    json_object_object_add(root, "links", links);
    json_object_object_add(root, "ranks", ranks);
    json_object_object_add(root, "intra_links", intra);
    json_object_object_add(root, "ring", ring);
    if (json_object_to_file_ext(path, root, JSON_C_TO_STRING_PRETTY) != 0) {
        fprintf(stderr, "sharc-perf check: cannot write %s\n", path);
        ret = -1;
    }
    json_object_put(root);
    return ret;
}
