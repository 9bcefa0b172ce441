/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_main.c: the command line of `sharc-perf tune` and `sharc-perf tune --check`. Runs on
 * one node (where rank 0 of the jobs it launches writes its results), not under a launcher.
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "../sharc_perf.h"
#include "tune.h"
#include "tune_launch.h"
#include "tune_out.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sharc-perf tune [options]          search settings, write the results\n"
            "       sharc-perf tune --check DIR [opts] re-measure DIR/tune.json here\n"
            "  --colls LIST         collectives (default allgather,reduce_scatter,allreduce; also\n"
            "                       broadcast, alltoall)\n"
            "  -b, -e SIZE          size range, factor 2 (default 64K .. 256M)\n"
            "  --np N               ranks of each job (default 2)\n"
            "  --nodes N            nodes they span (default 1): filters the space\n"
            "  --launch TEMPLATE    how to start a job (default 'mpirun -np {np} {cmd}');\n"
            "                       {np} ranks, {cmd} the benchmark with `env K=V ...` in front,\n"
            "                       {env} -x K=V ... for mpirun, {exports} K=V,K=V for srun\n"
            "  --env K=V            a setting of every job, defaults included (repeat; e.g.\n"
            "                       SHARC_TRANSPORT=ucx to tune UCX on one node)\n"
            "  --device host|cuda   host buffers (sharc and UCX knobs) or GPU buffers (NCCL)\n"
            "  --budget TIME        search time (default 30m; 70%% search, the rest finals)\n"
            "  --rounds N           interleaved rounds of the finals (default 5)\n"
            "  --timeout TIME       a job running longer is killed, marked failed (default 120s)\n"
            "  --iters N, --warmup N  sharc-perf -n / -w of each job (default 10 / 3)\n"
            "  -d TYPE              data type (default f32)\n"
            "  --space FILE         restrict, drop or add knobs (see docs/tune.md)\n"
            "  --out DIR            results (default sharc-tune; an interrupted run resumes)\n"
            "  --topo-cmd CMD       topology source (default: sharc-topo --json beside this)\n"
            "  --perf PATH          the sharc-perf the jobs run (default: this one)\n"
            "  --dry-run            print the space and the first job's command, run nothing\n");
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (end == s || *end != '\0' || v < min || v > INT_MAX) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* the collectives of a comma-separated list, 0 (said) for an unknown one */
static unsigned parse_colls(const char *list)
{
    char unknown[PERF_TUNE_NAME];
    unsigned bits = perf_tune_parse_colls(list, unknown, sizeof(unknown));

    if (bits == 0) {
        fprintf(stderr, "sharc-perf tune: unknown collective '%s'\n", unknown);
    }
    return bits;
}

/* This program's path, or the sibling @p name (in the build tree one level up from .libs). */
static void self_path(const char *name, char *out, size_t len)
{
    if (perf_sibling(name != NULL ? name : "sharc-perf", out, len) != 0) {
        perf_snprintf(out, len, "%s", name != NULL ? name : "sharc-perf");
    }
}

typedef struct {
    unsigned colls;
    size_t minb, maxb;
    int np, nodes, cuda, rounds, iters, warmup, dry_run;
    double budget_s, timeout_s;
    const char *launch, *dtype, *space_file, *out, *check;
    char topo_cmd[PATH_MAX + 32], perf[PATH_MAX];
    perf_tune_env_t base_env;
} tune_args_t;

static int parse_args(int argc, char **argv, tune_args_t *a)
{
    static const struct option opts[] = {
        {"colls", required_argument, NULL, 'C'},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"np", required_argument, NULL, 'N'},
        {"nodes", required_argument, NULL, 'M'},
        {"launch", required_argument, NULL, 'L'},
        {"env", required_argument, NULL, 'E'},
        {"device", required_argument, NULL, 'D'},
        {"budget", required_argument, NULL, 'B'},
        {"rounds", required_argument, NULL, 'R'},
        {"timeout", required_argument, NULL, 'T'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},
        {"space", required_argument, NULL, 'S'},
        {"out", required_argument, NULL, 'o'},
        {"topo-cmd", required_argument, NULL, 'P'},
        {"perf", required_argument, NULL, 'X'},
        {"check", required_argument, NULL, 'K'},
        {"dry-run", no_argument, NULL, 'Y'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    optind = 2;
    while ((c = getopt_long(argc, argv, "b:e:d:n:w:h", opts, NULL)) != -1) {
        switch (c) {
        case 'C': bad |= (a->colls = parse_colls(optarg)) == 0; break;
        case 'b': bad |= perf_parse_size(optarg, &a->minb); break;
        case 'e': bad |= perf_parse_size(optarg, &a->maxb); break;
        case 'N': bad |= parse_int(optarg, 1, &a->np); break;
        case 'M': bad |= parse_int(optarg, 1, &a->nodes); break;
        case 'L': a->launch = optarg; break;
        case 'E': {
            const char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg || !perf_tune_value_ok(eq + 1) ||
                perf_tune_env_apply(&a->base_env, optarg) != 0) {
                fprintf(stderr, "sharc-perf tune: --env wants K=V with a plain value: '%s'\n",
                        optarg);
                bad = 1;
            }
            break;
        }
        case 'D':
            a->cuda = strcmp(optarg, "cuda") == 0;
            bad |= !a->cuda && strcmp(optarg, "host") != 0;
            break;
        case 'B': bad |= (a->budget_s = perf_parse_time(optarg)) < 0; break;
        case 'R': bad |= parse_int(optarg, 1, &a->rounds); break;
        case 'T': bad |= (a->timeout_s = perf_parse_time(optarg)) < 0; break;
        case 'n': bad |= parse_int(optarg, 1, &a->iters); break;
        case 'w': bad |= parse_int(optarg, 0, &a->warmup); break;
        case 'd': a->dtype = optarg; break;
        case 'S': a->space_file = optarg; break;
        case 'o': a->out = optarg; break;
        case 'P': perf_snprintf(a->topo_cmd, sizeof(a->topo_cmd), "%s", optarg); break;
        case 'X': perf_snprintf(a->perf, sizeof(a->perf), "%s", optarg); break;
        case 'K': a->check = optarg; break;
        case 'Y': a->dry_run = 1; break;
        case 'h': usage(stdout); exit(0);
        default: bad = 1; break;
        }
    }
    if (!bad && a->minb > a->maxb) {
        fprintf(stderr, "sharc-perf tune: empty size range (-b %zu is above -e %zu)\n", a->minb,
                a->maxb);
        bad = 1;
    }
    if (!bad && (a->minb == 0 || a->maxb / a->minb >= (1ul << (PERF_TUNE_MAX_SIZES - 1)))) {
        fprintf(stderr,
                "sharc-perf tune: the size range must start above 0 and span at most %d "
                "sizes\n",
                PERF_TUNE_MAX_SIZES);
        bad = 1;
    }
    if (!bad && a->nodes > a->np) {
        fprintf(stderr, "sharc-perf tune: %d nodes for %d ranks\n", a->nodes, a->np);
        bad = 1;
    }
    if (!bad && strstr(a->launch, "{cmd}") == NULL) {
        fprintf(stderr, "sharc-perf tune: the launch template has no {cmd}: '%s'\n", a->launch);
        bad = 1;
    }
    if (bad || optind < argc) {
        usage(stderr);
        return -1;
    }
    return 0;
}

static void fill_target(const tune_args_t *a, perf_tune_target_t *t)
{
    const char *tp = perf_tune_env_get(&a->base_env, "SHARC_TRANSPORT");

    t->cuda = a->cuda;
    t->nccl_version = perf_nccl_version();
    t->np = a->np;
    t->nodes = a->nodes;
    t->ucx = (tp != NULL && strcmp(tp, "ucx") == 0) ||
             (a->nodes > 1 && (tp == NULL || strcmp(tp, "auto") == 0));
    t->shm = a->nodes == 1 && (tp == NULL || strcmp(tp, "auto") == 0 || strcmp(tp, "shm") == 0);
}

static int open_launcher(const tune_args_t *a, const char *dir, perf_tune_launcher_t *l)
{
    char err[512];

    memset(l, 0, sizeof(*l));
    l->perf = a->perf;
    l->launch = a->launch;
    l->np = a->np;
    l->base_env = a->base_env;
    l->cuda = a->cuda;
    l->iters = a->iters;
    l->warmup = a->warmup;
    l->dtype = a->dtype;
    l->timeout_s = a->timeout_s;
    perf_snprintf(l->dir, sizeof(l->dir), "%s", dir);
    if (perf_tune_launcher_open(l, err, sizeof(err)) != 0) {
        fprintf(stderr, "sharc-perf tune: %s\n", err);
        return -1;
    }
    return 0;
}

/* The lines of fingerprint text @p from that @p other lacks, each after @p label. */
static void print_fp_lines(const char *from, const char *other, const char *label)
{
    const char *p = from;

    while (*p != '\0') {
        size_t n = strcspn(p, "\n");
        char line[512];
        perf_snprintf(line, sizeof(line), "%.*s", (int)n, p);
        if (strstr(other, line) == NULL) {
            printf("  %s %s\n", label, line);
        }
        p += n + (p[n] == '\n');
    }
}

/* --check: the saved settings against the defaults here, and against what they gave then. */
static int check(tune_args_t *a, perf_tune_opts_t *o)
{
    static perf_tune_saved_t saved;
    perf_tune_target_t t = {0};
    perf_tune_launcher_t l;
    char path[PATH_MAX], dir[PATH_MAX], err[512];
    int flagged = 0;

    perf_snprintf(path, sizeof(path), "%s/tune.json", a->check);
    if (perf_tune_load(path, &saved, err, sizeof(err)) != 0) {
        fprintf(stderr, "sharc-perf tune --check: %s\n", err);
        return 2;
    }
    a->np = saved.np;
    a->nodes = saved.nodes;
    a->cuda = saved.cuda;
    a->base_env = saved.base_env;
    fill_target(a, &t);
    if (perf_tune_target_detect(&t, a->topo_cmd, err, sizeof(err)) != 0) {
        fprintf(stderr, "sharc-perf tune --check: %s\n", err);
        return 2;
    }
    if (strcmp(t.fingerprint, saved.fingerprint) != 0) {
        printf("FINGERPRINT MISMATCH: tuned on %s, this is %s\n", saved.fingerprint, t.fingerprint);
        print_fp_lines(saved.fp_text, t.fp_text, "tuned on:");
        print_fp_lines(t.fp_text, saved.fp_text, "here:    ");
        flagged = 1;
    } else {
        printf("fingerprint %s matches\n", t.fingerprint);
    }
    perf_snprintf(dir, sizeof(dir), "%s", a->out != NULL ? a->out : a->check);
    perf_snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "%s",
                  a->out != NULL ? "" : "/check");
    if (open_launcher(a, dir, &l) != 0) {
        return 2;
    }
    o->colls = saved.colls;
    o->measure_arg = &l;
    if (perf_tune_compare(o, &saved.plan) != 0) {
        perf_tune_launcher_close(&l);
        fprintf(stderr, "sharc-perf tune --check: stopped\n");
        return 2;
    }
    perf_tune_launcher_close(&l);
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        const perf_tune_coll_plan_t *p = &saved.plan.coll[c];

        if (p->n == 0) {
            continue;
        }
        printf("\n## %s\n\n", sharc_coll_name((sharc_coll_type_t)(c)));
        perf_tune_report_table(stdout, &t, &saved.plan, c, "saved");
        for (int i = 0; i < p->n; i++) {
            /* slower than when tuned: by more than the spread now, the spread then, and 10% */
            double then = saved.tuned[c][i];
            double slack = p->spread[i] > 0.1 * then ? p->spread[i] : 0.1 * then;
            slack = saved.spread[c][i] > slack ? saved.spread[c][i] : slack;
            if (p->tuned[i] < p->base[i] - p->spread[i]) {
                printf("REGRESSION: %s %zu B: the saved settings give %.3f GB/s, the defaults "
                       "%.3f (spread %.3f)\n",
                       sharc_coll_name((sharc_coll_type_t)(c)), p->size[i], p->tuned[i], p->base[i],
                       p->spread[i]);
                flagged = 1;
            } else if (then > 0 && p->tuned[i] < then - slack) {
                printf("REGRESSION: %s %zu B: %.3f GB/s, %.3f when tuned (below by more than "
                       "either spread and 10%%)\n",
                       sharc_coll_name((sharc_coll_type_t)(c)), p->size[i], p->tuned[i], then);
                flagged = 1;
            }
        }
    }
    printf("\n%s\n", flagged ? "check: FLAGGED (see above)" : "check: OK");
    return flagged ? 1 : 0;
}

/* The topology command and the sharc-perf the jobs run, where not given: this one's siblings. */
static void default_paths(tune_args_t *a)
{
    if (a->topo_cmd[0] == '\0') {
        char topo[PATH_MAX];
        self_path("sharc-topo", topo, sizeof(topo));
        perf_snprintf(a->topo_cmd, sizeof(a->topo_cmd), "%s --json",
                      access(topo, X_OK) == 0 ? topo : "sharc-topo");
    }
    if (a->perf[0] == '\0') {
        self_path(NULL, a->perf, sizeof(a->perf));
    }
}

/* What will be searched: the job, the target, the knobs and those left out. */
static void print_space(const tune_args_t *a, const perf_tune_target_t *t,
                        const perf_tune_space_t *space)
{
    printf("# sharc-perf tune: %d ranks on %d node(s), %s buffers, %zu..%zu B, fabric %s, "
           "fingerprint %s\n# %d knobs:",
           a->np, a->nodes, a->cuda ? "device" : "host", a->minb, a->maxb, t->fabric,
           t->fingerprint, space->nknobs);
    for (int k = 0; k < space->nknobs; k++) {
        printf(" %s%s", space->knobs[k].name, space->knobs[k].per_size ? "(per size)" : "");
    }
    printf("\n");
    for (int k = 0; k < space->nleft; k++) {
        printf("# left out: %s\n", space->left_out[k]);
    }
}

/* The search through the launcher, then the files. 0, or 1 (said). */
static int search(tune_args_t *a, perf_tune_opts_t *o, const perf_tune_target_t *t,
                  const perf_tune_space_t *space)
{
    static perf_tune_plan_t plan;
    perf_tune_launcher_t l;
    int ret;

    if (open_launcher(a, a->out, &l) != 0) {
        return 2;
    }
    o->colls = a->colls;
    o->measure_arg = &l;
    ret = perf_tune_run(o, space, &plan);
    perf_tune_launcher_close(&l);
    if (ret != 0) {
        fprintf(stderr,
                perf_tune_interrupted()
                    ? "sharc-perf tune: interrupted; run the same command again to resume (the "
                      "results so far are in %s/results.jsonl)\n"
                    : "sharc-perf tune: stopped: the defaults could not be measured (see %s/logs)"
                      "\n",
                a->out);
        return 1;
    }
    if (perf_tune_write(a->out, t, space, &plan, &a->base_env) != 0) {
        return 1;
    }
    printf("# %d launches (%d from the journal), %d failed, %.0f s; results in %s/: tuned.env, "
           "tuned.sh, sharc-tune.conf, nccl-tuner.csv, report.md, report.png, tune.json\n",
           plan.launches, plan.cached, plan.failures, plan.seconds, a->out);
    return 0;
}

int perf_tune_main(int argc, char **argv)
{
    static perf_tune_space_t space;
    tune_args_t a = {.colls = (1u << SHARC_COLL_ALLGATHER) | (1u << SHARC_COLL_REDUCE_SCATTER) |
                              (1u << SHARC_COLL_ALLREDUCE),
                     .minb = 64u << 10,
                     .maxb = 256u << 20,
                     .np = 2,
                     .nodes = 1,
                     .rounds = 5,
                     .iters = 10,
                     .warmup = 3,
                     .budget_s = 1800,
                     .timeout_s = 120,
                     .launch = "mpirun -np {np} {cmd}",
                     .dtype = "f32",
                     .out = NULL};
    perf_tune_opts_t o = {.search_share = 0.7,
                          .noise_floor = 0.02,
                          .measure = perf_tune_measure,
                          .now = perf_now,
                          .log = stdout};
    perf_tune_target_t t = {0};
    char err[512];

    if (parse_args(argc, argv, &a) != 0) {
        return 2;
    }
    default_paths(&a);
    o.minb = a.minb;
    o.maxb = a.maxb;
    o.budget_s = a.budget_s;
    o.rounds = a.rounds;
    if (a.check != NULL) {
        return check(&a, &o);
    }
    if (a.out == NULL) {
        a.out = "sharc-tune";
    }
    fill_target(&a, &t);
    if (perf_tune_target_detect(&t, a.topo_cmd, err, sizeof(err)) != 0) {
        fprintf(stderr, "sharc-perf tune: %s\n", err);
        return 2;
    }
    perf_tune_space_build(&t, &space);
    if (a.space_file != NULL && perf_tune_space_file(&space, a.space_file, err, sizeof(err)) != 0) {
        fprintf(stderr, "sharc-perf tune: %s\n", err);
        return 2;
    }
    print_space(&a, &t, &space);
    if (a.dry_run) {
        char line[16384];
        perf_tune_expand(a.launch, a.np, &a.base_env, "env ... sharc-perf ...", line, sizeof(line));
        printf("# a job: %s\n", line);
        return 0;
    }
    return search(&a, &o, &t, &space);
}
