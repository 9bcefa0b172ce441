/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tune.c: the search and decisions of `sharc-perf tune` against a deterministic
 * stand-in benchmark with a known optimum and injected noise (the right settings found, a
 * setting within noise never kept, a crashing candidate skipped, the budget respected); the
 * search space per topology and the space file's errors; the launch template; the output
 * files read back (the env file by the nccl.conf parser, the tuner CSV by a reader that
 * follows the example plugin's format, tune.json by --check's loader).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../perf/tune/tune.h"
#include "../../perf/tune/tune_launch.h"
#include "../../perf/tune/tune_out.h"
#include "../../coll/algorithms/tune.h"
#include "../../perf/topo/topo_tool.h"
#include "../../comm/context.h"
#include "../../transport/topo/topo.h"
#include "../check.h"

/* ---- the stand-in ------------------------------------------------------------------------- */

typedef struct {
    unsigned long long rng;
    double noise; /* relative, uniform +- */
    double clock; /* fake seconds: each launch costs one */
    int launches;
    int hang_value; /* "SHARC_COLL_CHUNK=4m" fails like a crash */
} standin_t;

static double uniform(standin_t *s)
{
    /* xorshift64* */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (double)((s->rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static standin_t *standin_now_arg;

static double fake_now(void)
{
    return standin_now_arg->clock;
}

/*
 * busbw of one size: 10 s / (s + 256 KiB) GB/s times the settings' effects:
 *   SHARC_COLL_CHUNK=2m 1.25x (the optimum), 512k 0.9x, 4m fails (crash)
 *   UCX_RNDV_THRESH=8k 1.005x (within noise: never to be kept)
 *   SHARC_ALLGATHER_ALGO=direct 1.5x up to 256 KiB, 0.6x above; recursive_doubling 1.01x
 */
static int standin_measure(void *arg, int coll, size_t minb, size_t maxb,
                           const perf_tune_env_t *env, const char *tag, perf_tune_result_t *r)
{
    standin_t *s = arg;
    const char *chunk = perf_tune_env_get(env, "SHARC_COLL_CHUNK");
    const char *thresh = perf_tune_env_get(env, "UCX_RNDV_THRESH");
    const char *algo = perf_tune_env_get(env, "SHARC_ALLGATHER_ALGO");

    s->clock += 1;
    s->launches++;
    r->seconds = 1;
    if (chunk != NULL && strcmp(chunk, "4m") == 0) {
        snprintf(r->error, sizeof(r->error), "killed by signal 11");
        return 0;
    }
    for (size_t b = minb; b <= maxb; b *= 2) {
        double bw = 10.0 * (double)b / ((double)b + 262144.0);

        if (chunk != NULL) {
            bw *= strcmp(chunk, "2m") == 0 ? 1.25 : 0.9;
        }
        if (thresh != NULL) {
            bw *= 1.005;
        }
        if (algo != NULL && strcmp(algo, "direct") == 0) {
            bw *= b <= 262144 ? 1.5 : 0.6;
        } else if (algo != NULL) {
            bw *= 1.01;
        }
        bw *= 1 + s->noise * (2 * uniform(s) - 1);
        r->size[r->n] = b;
        r->busbw[r->n] = bw;
        r->memcpy[r->n] = 20.0;
        r->n++;
    }
    r->ok = 1;
    (void)coll;
    (void)tag;
    return 0;
}

static void space_standin(perf_tune_space_t *sp)
{
    memset(sp, 0, sizeof(*sp));
    sp->nknobs = 3;
    snprintf(sp->knobs[0].name, PERF_TUNE_NAME, "SHARC_COLL_CHUNK");
    snprintf(sp->knobs[0].values[0], PERF_TUNE_VALUE, "SHARC_COLL_CHUNK=512k");
    snprintf(sp->knobs[0].values[1], PERF_TUNE_VALUE, "SHARC_COLL_CHUNK=2m");
    snprintf(sp->knobs[0].values[2], PERF_TUNE_VALUE, "SHARC_COLL_CHUNK=4m");
    sp->knobs[0].nvalues = 3;
    sp->knobs[0].colls = 1u << SHARC_COLL_ALLGATHER | 1u << SHARC_COLL_ALLREDUCE;
    snprintf(sp->knobs[1].name, PERF_TUNE_NAME, "UCX_RNDV_THRESH");
    snprintf(sp->knobs[1].values[0], PERF_TUNE_VALUE, "UCX_RNDV_THRESH=8k");
    sp->knobs[1].nvalues = 1;
    sp->knobs[1].colls = sp->knobs[0].colls;
    snprintf(sp->knobs[2].name, PERF_TUNE_NAME, "SHARC_ALLGATHER_ALGO");
    snprintf(sp->knobs[2].values[0], PERF_TUNE_VALUE, "SHARC_ALLGATHER_ALGO=ring");
    snprintf(sp->knobs[2].values[1], PERF_TUNE_VALUE, "SHARC_ALLGATHER_ALGO=recursive_doubling");
    snprintf(sp->knobs[2].values[2], PERF_TUNE_VALUE, "SHARC_ALLGATHER_ALGO=direct");
    sp->knobs[2].nvalues = 3;
    sp->knobs[2].per_size = 1;
    sp->knobs[2].colls = 1u << SHARC_COLL_ALLGATHER;
}

static void opts_standin(perf_tune_opts_t *o, standin_t *s)
{
    memset(o, 0, sizeof(*o));
    o->colls = 1u << SHARC_COLL_ALLGATHER | 1u << SHARC_COLL_ALLREDUCE;
    o->minb = 64 << 10;
    o->maxb = 4 << 20;
    o->budget_s = 1e6;
    o->search_share = 0.7;
    o->rounds = 5;
    o->noise_floor = 0.02;
    o->measure = standin_measure;
    o->measure_arg = s;
    o->now = fake_now;
    o->log = getenv("TUNE_TEST_VERBOSE") != NULL ? stderr : NULL;
    standin_now_arg = s;
}

static perf_tune_plan_t plan;

/* the optimum found; the within-noise knob and the crashing value never kept */
static void test_search(unsigned seed)
{
    standin_t s = {.rng = 0x9e3779b97f4a7c15ull * seed, .noise = 0.03};
    perf_tune_space_t sp;
    perf_tune_opts_t o;
    const perf_tune_coll_plan_t *ag = &plan.coll[SHARC_COLL_ALLGATHER];

    space_standin(&sp);
    opts_standin(&o, &s);
    CHECK(perf_tune_run(&o, &sp, &plan) == 0);
    CHECK_MSG(plan.global.n == 1, "seed %u: %d global settings kept", seed, plan.global.n);
    CHECK(perf_tune_env_get(&plan.global, "SHARC_COLL_CHUNK") != NULL &&
          strcmp(perf_tune_env_get(&plan.global, "SHARC_COLL_CHUNK"), "2m") == 0);
    CHECK_MSG(perf_tune_env_get(&plan.global, "UCX_RNDV_THRESH") == NULL,
              "seed %u: a 0.5%% effect under 3%% noise was kept", seed);
    CHECK(plan.failures >= 1); /* 4m: its first collective fails, the value is dropped */
    CHECK(ag->n == 7 && plan.coll[SHARC_COLL_ALLREDUCE].n == 7);
    for (int i = 0; i < ag->n; i++) {
        const char *v = ag->kept[i] ? perf_tune_env_get(&ag->at[i], "SHARC_ALLGATHER_ALGO") : NULL;
        if (ag->size[i] <= 262144) {
            CHECK_MSG(v != NULL && strcmp(v, "direct") == 0, "seed %u: size %zu: %s", seed,
                      ag->size[i], v ? v : "defaults");
            CHECK(ag->tuned[i] > ag->base[i] + ag->spread[i]);
        } else {
            CHECK_MSG(v == NULL, "seed %u: size %zu kept %s (within noise or worse)", seed,
                      ag->size[i], v);
        }
    }
    for (int i = 0; i < plan.coll[SHARC_COLL_ALLREDUCE].n; i++) {
        CHECK(!plan.coll[SHARC_COLL_ALLREDUCE].kept[i]); /* no per-size knob of its own */
    }
    CHECK(plan.knobs_tried == 3 && plan.knobs_skipped == 0);
}

/* a budget of a few launches: the search stops, says so, and still decides */
static void test_budget(void)
{
    standin_t s = {.rng = 7, .noise = 0.01};
    perf_tune_space_t sp;
    perf_tune_opts_t o;
    perf_tune_plan_t *p = calloc(1, sizeof(*p));

    space_standin(&sp);
    opts_standin(&o, &s);
    o.budget_s = 10; /* 7 s of search: the 4 defaults' launches and 3 more */
    CHECK(perf_tune_run(&o, &sp, p) == 0);
    CHECK(p->knobs_skipped >= 1);
    CHECK(s.launches < 4 + 6 + 1 + 5 * 2 * 3);
    free(p);
}

/* a stand-in whose defaults always fail: nothing to compare with */
static int failing_measure(void *arg, int coll, size_t minb, size_t maxb,
                           const perf_tune_env_t *env, const char *tag, perf_tune_result_t *r)
{
    snprintf(r->error, sizeof(r->error), "exit status 1");
    r->seconds = 1;
    return 0;
}

static void test_defaults_fail(void)
{
    standin_t s = {.rng = 1};
    perf_tune_space_t sp;
    perf_tune_opts_t o;
    perf_tune_plan_t *p = calloc(1, sizeof(*p));

    space_standin(&sp);
    opts_standin(&o, &s);
    o.measure = failing_measure;
    CHECK(perf_tune_run(&o, &sp, p) == -1);
    CHECK(p->coll[SHARC_COLL_ALLGATHER].failed && p->coll[SHARC_COLL_ALLREDUCE].failed);
    free(p);
}

/* ---- the space ---------------------------------------------------------------------------- */

static int has_knob(const perf_tune_space_t *sp, const char *name)
{
    for (int k = 0; k < sp->nknobs; k++) {
        if (strncmp(sp->knobs[k].name, name, strlen(name)) == 0) {
            return 1;
        }
    }
    return 0;
}

static int has_value(const perf_tune_space_t *sp, const char *text)
{
    for (int k = 0; k < sp->nknobs; k++) {
        for (int v = 0; v < sp->knobs[k].nvalues; v++) {
            if (strstr(sp->knobs[k].values[v], text) != NULL) {
                return 1;
            }
        }
    }
    return 0;
}

static void test_space(void)
{
    static perf_tune_space_t sp;
    perf_tune_target_t t = {.np = 2, .nodes = 1, .shm = 1};

    snprintf(t.fabric, sizeof(t.fabric), "Ethernet");
    snprintf(t.intra, sizeof(t.intra), "none");
    perf_tune_space_build(&t, &sp);
    CHECK(has_knob(&sp, "SHARC_ALLGATHER_ALGO") && has_knob(&sp, "SHARC_COLL_CHUNK"));
    CHECK(has_value(&sp, "recursive_doubling"));
    CHECK(!has_knob(&sp, "UCX_") && !has_knob(&sp, "NCCL_")); /* shm carries it; host */

    t.np = 3;
    t.ucx = 1;
    t.shm = 0;
    perf_tune_space_build(&t, &sp);
    CHECK(has_knob(&sp, "UCX_TLS") && has_knob(&sp, "UCX_RNDV_THRESH"));
    CHECK(!has_value(&sp, "recursive_doubling") && !has_knob(&sp, "SHARC_SHM_CMA"));

    /* GPUs, two nodes over InfiniBand: IB knobs, no socket knobs */
    t = (perf_tune_target_t){.cuda = 1, .np = 16, .nodes = 2, .nnics = 8, .gpu_sm = 90};
    snprintf(t.fabric, sizeof(t.fabric), "InfiniBand");
    snprintf(t.intra, sizeof(t.intra), "NVSwitch");
    perf_tune_space_build(&t, &sp);
    CHECK(has_knob(&sp, "NCCL_IB_QPS_PER_CONNECTION") && has_knob(&sp, "NCCL_CROSS_NIC"));
    CHECK(!has_knob(&sp, "NCCL_SOCKET_NTHREADS") && !has_knob(&sp, "SHARC_"));
    CHECK(has_value(&sp, "NCCL_ALGO=NVLSTree") && has_knob(&sp, "NCCL_NVLS_ENABLE"));
    /* Ethernet between nodes, PCIe GPUs: socket knobs, no IB, no NVLS */
    snprintf(t.fabric, sizeof(t.fabric), "Ethernet");
    snprintf(t.intra, sizeof(t.intra), "PCIe");
    t.nnics = 0;
    perf_tune_space_build(&t, &sp);
    CHECK(has_knob(&sp, "NCCL_SOCKET_NTHREADS") && has_knob(&sp, "NCCL_NSOCKS_PERTHREAD"));
    CHECK(!has_knob(&sp, "NCCL_IB_") && !has_value(&sp, "NVLS") && !has_knob(&sp, "NCCL_CROSS"));
    /* one node, one GPU: no network knobs at all */
    t.nodes = 1;
    t.np = 1;
    perf_tune_space_build(&t, &sp);
    CHECK(!has_knob(&sp, "NCCL_SOCKET") && !has_knob(&sp, "NCCL_P2P_NET_CHUNKSIZE"));
    CHECK(sp.nleft >= 3);
}

static char tmpdir[] = "/tmp/sharc-test-tune.XXXXXX";

static int space_file(const char *text, char *err, size_t len)
{
    static perf_tune_space_t sp;
    perf_tune_target_t t = {.np = 2, .nodes = 1, .ucx = 1};
    char path[256];
    FILE *f;

    snprintf(t.fabric, sizeof(t.fabric), "Ethernet");
    perf_tune_space_build(&t, &sp);
    snprintf(path, sizeof(path), "%s/space", tmpdir);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    err[0] = '\0';
    int ret = perf_tune_space_file(&sp, path, err, len);
    if (ret == 0 && strstr(text, "only") != NULL) {
        CHECK(sp.nknobs == 2 && has_knob(&sp, "UCX_TLS") && has_knob(&sp, "NCCL_FOO"));
        CHECK(!sp.knobs[1].per_size && sp.knobs[1].colls == 1u << SHARC_COLL_ALLREDUCE);
        CHECK(sp.knobs[0].nvalues == 1 && strcmp(sp.knobs[0].values[0], "UCX_TLS=tcp,self") == 0);
    }
    return ret;
}

static void test_space_file(void)
{
    char err[512];

    CHECK(space_file("# comment\n\nvalues UCX_TLS tcp,self\nadd NCCL_FOO 1 2 for "
                     "allreduce\nonly UCX_TLS NCCL_FOO\n",
                     err, sizeof(err)) == 0);
    CHECK(space_file("drop UCX_NOPE\n", err, sizeof(err)) == -1 && strstr(err, ":1:") != NULL &&
          strstr(err, "unknown knob 'UCX_NOPE'") != NULL);
    CHECK(space_file("\nvalues NOPE 1\n", err, sizeof(err)) == -1 && strstr(err, ":2:") != NULL);
    CHECK(space_file("frobnicate UCX_TLS\n", err, sizeof(err)) == -1 &&
          strstr(err, "unknown command") != NULL);
    CHECK(space_file("values UCX_TLS 'rc;rm'\n", err, sizeof(err)) == -1);
    CHECK(space_file("values UCX_TLS $(reboot)\n", err, sizeof(err)) == -1);
    CHECK(space_file("add PATH /bin\n", err, sizeof(err)) == -1 && strstr(err, "PATH") != NULL);
    CHECK(space_file("add NCCL_X 1 for gather\n", err, sizeof(err)) == -1 &&
          strstr(err, "unknown collective") != NULL);
    CHECK(space_file("add UCX_TLS sm\n", err, sizeof(err)) == -1 && strstr(err, "already") != NULL);
    CHECK(space_file("values UCX_TLS\n", err, sizeof(err)) == -1);
    CHECK(space_file("add per-size NCCL_FOO 1 2\n", err, sizeof(err)) == -1 &&
          strstr(err, "global") != NULL);
}

static void test_expand(void)
{
    perf_tune_env_t env = {0};
    char out[512];

    perf_tune_env_set(&env, "NCCL_ALGO", "Ring");
    perf_tune_env_set(&env, "UCX_TLS", "sm,self");
    CHECK(perf_tune_expand("mpirun -np {np} {env} {cmd}", 4, &env, "env X=1 prog", out,
                           sizeof(out)) == 0);
    CHECK(strcmp(out, "mpirun -np 4 -x NCCL_ALGO=Ring -x UCX_TLS=sm,self env X=1 prog") == 0);
    CHECK(perf_tune_expand("srun -n {np} --export=ALL,{exports} {cmd}", 2, &env, "p", out,
                           sizeof(out)) == 0);
    CHECK(strcmp(out, "srun -n 2 --export=ALL,NCCL_ALGO=Ring,UCX_TLS=sm,self p") == 0);
    CHECK(perf_tune_expand("mpirun -np {np} prog", 2, &env, "p", out, sizeof(out)) == -1);
    CHECK(perf_tune_expand("{cmd}", 2, &env, "a-long-command", out, 8) == -1);
}

/* ---- outputs read back -------------------------------------------------------------------- */

static char *slurp(const char *dir, const char *name)
{
    char path[512];
    FILE *f;
    char *text = calloc(1, 1 << 16);

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    if (f != NULL) {
        size_t n = fread(text, 1, (1 << 16) - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    return text;
}

/* The example tuner plugin's CSV: colltype,minbytes,maxbytes,algorithm,protocol,channels,
 * nNodes,nRanks[,numPipeOps[,regBuff]]; '#' comments; the names it documents. */
static int read_tuner_csv(const char *text, int *rows_p)
{
    static const char *const colls[] = {"broadcast", "reduce", "allgather", "reducescatter",
                                        "allreduce"};
    static const char *const algos[] = {
        "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
    static const char *const protos[] = {"ll", "ll128", "simple"};
    char buf[1 << 16], *save = NULL;

    *rows_p = 0;
    snprintf(buf, sizeof(buf), "%s", text);
    for (char *line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char *f[12], *s2 = NULL;
        int n = 0, ok = 0;

        if (line[0] == '#' || line[0] == '\0') {
            continue;
        }
        for (char *p = strtok_r(line, ",", &s2); p != NULL && n < 12;
             p = strtok_r(NULL, ",", &s2)) {
            f[n++] = p;
        }
        if (n < 8 || n > 10) {
            return -1;
        }
        for (size_t i = 0; i < sizeof(colls) / sizeof(*colls); i++) {
            ok |= strcmp(f[0], colls[i]) == 0;
        }
        if (!ok || strtoull(f[1], NULL, 10) > strtoull(f[2], NULL, 10)) {
            return -1;
        }
        ok = 0;
        for (size_t i = 0; i < sizeof(algos) / sizeof(*algos); i++) {
            ok |= strcmp(f[3], algos[i]) == 0;
        }
        for (size_t i = 0; ok == 1 && i < sizeof(protos) / sizeof(*protos); i++) {
            ok |= (strcmp(f[4], protos[i]) == 0) << 1;
        }
        if (ok != 3 || atoi(f[5]) < -1 || atoi(f[5]) == 0 || atoi(f[6]) < -1 || atoi(f[7]) < -1) {
            return -1;
        }
        (*rows_p)++;
    }
    return 0;
}

static void test_outputs(void)
{
    static perf_tune_space_t sp;
    static perf_tune_saved_t saved;
    perf_tune_target_t t = {.np = 2, .nodes = 1, .shm = 1};
    perf_tune_env_t base = {0};
    sharc_topo_setting_t settings[16];
    char dir[300], err[512];
    perf_tune_coll_plan_t *ar = &plan.coll[SHARC_COLL_ALLREDUCE];
    int n, rows;

    /* test_search's plan, with NCCL per-size settings added to all-reduce's first sizes */
    snprintf(t.fabric, sizeof(t.fabric), "Ethernet");
    snprintf(t.fp_text, sizeof(t.fp_text), "topology: test\n");
    snprintf(t.fingerprint, sizeof(t.fingerprint), "0123456789abcdef");
    space_standin(&sp);
    perf_tune_env_apply(&ar->at[0], "NCCL_ALGO=Tree;NCCL_PROTO=LL");
    perf_tune_env_apply(&ar->at[1], "NCCL_ALGO=NVLSTree;NCCL_PROTO=Simple;NCCL_MAX_NCHANNELS=16");
    perf_tune_env_apply(&ar->at[2], "NCCL_MAX_NCHANNELS=8"); /* alone: no CSV row */
    ar->kept[0] = ar->kept[1] = ar->kept[2] = 1;
    perf_tune_env_set(&base, "SHARC_TRANSPORT", "ucx");
    snprintf(dir, sizeof(dir), "%s/out", tmpdir);
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(perf_tune_write(dir, &t, &sp, &plan, &base) == 0);

    /* the env file as NCCL reads /etc/nccl.conf */
    char *env = slurp(dir, "tuned.env");
    n = sharc_topo_parse_conf(env, "tuned.env", settings, 0, 16);
    CHECK(n == 3);
    CHECK(n >= 1 && strcmp(settings[0].key, "SHARC_COLL_CHUNK") == 0 &&
          strcmp(settings[0].value, "2m") == 0);
    CHECK(n >= 2 && strcmp(settings[1].key, "SHARC_TUNE_FILE") == 0 &&
          strstr(settings[1].value, "/out/sharc-tune.conf") != NULL);
    CHECK(n >= 3 && strcmp(settings[2].key, "NCCL_TUNER_CONFIG_FILE") == 0 &&
          strstr(settings[2].value, "/out/nccl-tuner.csv") != NULL);
    CHECK(strstr(env, "# fingerprint 0123456789abcdef") != NULL);
    CHECK(strstr(env, "measured with: SHARC_TRANSPORT=ucx") != NULL);
    free(env);
    char *sh = slurp(dir, "tuned.sh");
    CHECK(strstr(sh, "export SHARC_COLL_CHUNK='2m'\n") != NULL);
    free(sh);

    /* the tuner CSV: two rows (the channels-only size has none) */
    char *csv = slurp(dir, "nccl-tuner.csv");
    CHECK(read_tuner_csv(csv, &rows) == 0 && rows == 2);
    CHECK(strstr(csv, "\nallreduce,65536,131071,tree,ll,-1,1,2,-1,-1\n") != NULL);
    CHECK(strstr(csv, "\nallreduce,131072,262143,nvls_tree,simple,16,1,2,-1,-1\n") != NULL);
    free(csv);

    /* sharc's table: direct from 64 KiB up to the first size it lost at, as the library
     * reads it (SHARC_TUNE_FILE) */
    char *conf = slurp(dir, "sharc-tune.conf");
    CHECK(strstr(conf, "allgather          2        65536       524287  direct\n") != NULL);
    free(conf);
    sharc_coll_tune_t *tune = NULL;
    char path[400];
    snprintf(path, sizeof(path), "%s/sharc-tune.conf", dir);
    CHECK(sharc_coll_tune_load(path, &tune) == SHARC_OK && tune != NULL && tune->nrules == 1);
    if (tune != NULL) {
        const sharc_coll_tune_rule_t *rule =
            sharc_coll_tune_lookup(tune, SHARC_COLL_ALLGATHER, 2, 300000);
        CHECK(rule != NULL && strcmp(rule->algo->info.name, "direct") == 0);
        CHECK(sharc_coll_tune_lookup(tune, SHARC_COLL_ALLGATHER, 2, 524288) == NULL);
        CHECK(sharc_coll_tune_lookup(tune, SHARC_COLL_ALLGATHER, 4, 65536) == NULL);
        sharc_coll_tune_destroy(tune);
    }

    /* tune.json back through --check's loader */
    snprintf(path, sizeof(path), "%s/tune.json", dir);
    CHECK(perf_tune_load(path, &saved, err, sizeof(err)) == 0);
    CHECK(strcmp(saved.fingerprint, "0123456789abcdef") == 0 && saved.np == 2);
    CHECK(saved.colls == (1u << SHARC_COLL_ALLGATHER | 1u << SHARC_COLL_ALLREDUCE));
    CHECK(strcmp(perf_tune_env_get(&saved.plan.global, "SHARC_COLL_CHUNK"), "2m") == 0);
    CHECK(strcmp(perf_tune_env_get(&saved.base_env, "SHARC_TRANSPORT"), "ucx") == 0);
    CHECK(saved.plan.coll[SHARC_COLL_ALLGATHER].kept[0] &&
          !saved.plan.coll[SHARC_COLL_ALLGATHER].kept[6]);
    CHECK(fabs(saved.tuned[SHARC_COLL_ALLGATHER][3] - plan.coll[SHARC_COLL_ALLGATHER].tuned[3]) <
          1e-3);
    /* a broken one: a clear error */
    FILE *f = fopen(path, "w");
    fputs("{\"collectives\": [{\"collective\": \"gather\"}], \"np\": 2}", f);
    fclose(f);
    CHECK(perf_tune_load(path, &saved, err, sizeof(err)) == -1 && strstr(err, "gather") != NULL);
    snprintf(path, sizeof(path), "%s/nope.json", dir);
    CHECK(perf_tune_load(path, &saved, err, sizeof(err)) == -1);
}

int main(void)
{
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    for (unsigned seed = 1; seed <= 200; seed++) {
        test_search(seed);
    }
    test_budget();
    test_defaults_fail();
    test_space();
    test_space_file();
    test_expand();
    test_search(3);
    test_outputs();
    if (check_failures == 0) {
        char cmd[400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) {
            fprintf(stderr, "test_tune: could not remove %s\n", tmpdir);
        }
    }
    return check_result("test_tune");
}
