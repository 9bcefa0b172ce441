/*
 * check_main.c: `sharc-perf check`, run under the job's launcher on every rank: the command
 * line, the job's layout (ranks on nodes, host names), the expected figures from sharc-topo,
 * then the probe, the plan, the passes, the re-test and the verdict (check_run.c), and the
 * output on rank 0. Exit status 0: nothing slow; 1: a slow node, link or rank named; 2: bad
 * input or a job that could not be checked (said on stderr).
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_job.h"
#include "../common/perf_cuda.h"
#include "../common/perf_util.h"
#include "../sharc_perf.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sharc-perf check [options]   (under the job's launcher, on every rank)\n"
            "  Finds the slow node, rank or link of the job: each rank's copy bandwidth and\n"
            "  the pairs of ranks inside each node, every pair of nodes (round-robin, all\n"
            "  pairs of a round at once, local rank i with local rank i), a ring of the nodes;\n"
            "  then figures below the threshold of the job's median are re-tested and named.\n"
            "  --budget TIME         time for the whole check (default 60s): scales the size\n"
            "                        and the iterations; 90, 90s, 2m\n"
            "  --threshold F         an outlier is below F of the job's median (default 0.75;\n"
            "                        also 75%%)\n"
            "  --expect RATE         every node's link rate: 400 or 400Gb/s, 50GB/s; 'topo'\n"
            "                        (default): each node's sharc-topo; 'none'\n"
            "  --expect-threshold F  warn below F of the expected figure (default 0.5)\n"
            "  -b, --minbytes N      smallest exchange (default 256K); K, M, G suffixes\n"
            "  -e, --maxbytes N      largest exchange (default 64M)\n"
            "  -n, --iters N         at most N timed exchanges a round (default 20)\n"
            "  --peers N             healthy partners a suspect is re-tested with (default 2)\n"
            "  --timeout TIME        longest exchange before a peer counts as unreachable\n"
            "                        (default: the budget, at least 10s)\n"
            "  --device host|cuda    buffers in host memory (default) or on each rank's GPU\n"
            "  -J, --json FILE       everything measured and decided, as JSON\n"
            "      --png FILE        a heat map of the pairwise figures (gnuplot)\n"
            "  --topo-cmd CMD        the topology oracle (default: sharc-topo --json beside this)\n"
            "Exit status: 0 nothing slow, 1 something named, 2 bad input or the job failed.\n"
            "Example: srun -N 16 --ntasks-per-node 8 sharc-perf check --budget 2m -J check.json\n");
}

/* "90", "90s", "2m", "1h" in seconds; -1 for garbage */
static double parse_time(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || !(v > 0)) {
        return -1;
    }
    if (*end == '\0' || strcmp(end, "s") == 0) {
        return v;
    }
    if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0) {
        return v * 60;
    }
    return strcmp(end, "h") == 0 ? v * 3600 : -1;
}

/* "0.75" or "75%" in (0, 1]; -1 for garbage */
static double parse_frac(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    if (end != s && strcmp(end, "%") == 0) {
        v /= 100;
    } else if (end == s || *end != '\0') {
        return -1;
    }
    return (v > 0 && v <= 1) ? v : -1;
}

/* "topo" (-1), "none" (0), or a rate in Gb/s: "400", "400Gb/s", "400gbit", "50GB/s"; -2 bad */
static double parse_rate(const char *s)
{
    char *end;
    double v;

    if (strcmp(s, "topo") == 0) {
        return -1;
    }
    if (strcmp(s, "none") == 0) {
        return 0;
    }
    v = strtod(s, &end);
    if (end == s || !(v > 0)) {
        return -2;
    }
    if (*end == '\0' || strcmp(end, "Gb/s") == 0 || strcmp(end, "gbit") == 0 ||
        strcmp(end, "Gbit") == 0 || strcmp(end, "Gbps") == 0) {
        return v;
    }
    if (strcmp(end, "GB/s") == 0 || strcmp(end, "GBps") == 0) {
        return v * 8;
    }
    return -2;
}

/* This program's sibling sharc-topo (libtool keeps uninstalled programs in .libs/). */
static void default_topo_cmd(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;

    if (n > 0) {
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        *slash = '\0';
        if (strlen(exe) >= 6 && strcmp(exe + strlen(exe) - 6, "/.libs") == 0) {
            exe[strlen(exe) - 6] = '\0';
        }
        perf_snprintf(out, len, "%s/sharc-topo", exe);
        if (access(out, X_OK) == 0) {
            perf_snprintf(out, len, "'%s/sharc-topo' --json 2>/dev/null", exe);
            return;
        }
    }
    perf_snprintf(out, len, "sharc-topo --json 2>/dev/null");
}

/* 0, 2 for bad arguments (said), -1 for -h (done). */
static int parse_args(int argc, char **argv, perf_check_opts_t *o)
{
    static const struct option opts[] = {
        {"budget", required_argument, NULL, 'B'},
        {"threshold", required_argument, NULL, 't'},
        {"expect", required_argument, NULL, 'x'},
        {"expect-threshold", required_argument, NULL, 'X'},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"iters", required_argument, NULL, 'n'},
        {"peers", required_argument, NULL, 'p'},
        {"timeout", required_argument, NULL, 'T'},
        {"device", required_argument, NULL, 'D'},
        {"json", required_argument, NULL, 'J'},
        {"png", required_argument, NULL, 'P'},
        {"topo-cmd", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    char bad[160] = "";

    optind = 2;
    while ((c = getopt_long(argc, argv, "b:e:n:J:h", opts, NULL)) != -1) {
        switch (c) {
        case 'B':
            if ((o->budget_s = parse_time(optarg)) < 1) {
                perf_snprintf(bad, sizeof(bad), "--budget %s: a time of 1s or more", optarg);
            }
            break;
        case 't':
            if ((o->threshold = parse_frac(optarg)) < 0) {
                perf_snprintf(bad, sizeof(bad), "--threshold %s: a fraction in (0, 1]", optarg);
            }
            break;
        case 'x':
            if ((o->expect_gbit = parse_rate(optarg)) < -1) {
                perf_snprintf(bad, sizeof(bad), "--expect %s: topo, none or a rate", optarg);
            }
            break;
        case 'X':
            if ((o->expect_frac = parse_frac(optarg)) < 0) {
                perf_snprintf(bad, sizeof(bad), "--expect-threshold %s: a fraction", optarg);
            }
            break;
        case 'b':
        case 'e':
            if (perf_parse_size(optarg, c == 'b' ? &o->min_size : &o->max_size) != 0) {
                perf_snprintf(bad, sizeof(bad), "-%c %s: a size", c, optarg);
            }
            break;
        case 'n':
            if ((o->max_iters = atoi(optarg)) < 3) {
                perf_snprintf(bad, sizeof(bad), "-n %s: 3 or more", optarg);
            }
            break;
        case 'p':
            if ((o->peers = atoi(optarg)) < 1) {
                perf_snprintf(bad, sizeof(bad), "--peers %s: 1 or more", optarg);
            }
            break;
        case 'T':
            if ((o->timeout_s = parse_time(optarg)) < 0) {
                perf_snprintf(bad, sizeof(bad), "--timeout %s: a time", optarg);
            }
            break;
        case 'D':
            o->cuda = strcmp(optarg, "cuda") == 0;
            if (!o->cuda && strcmp(optarg, "host") != 0) {
                perf_snprintf(bad, sizeof(bad), "--device %s: host or cuda", optarg);
            }
            break;
        case 'J': o->json = optarg; break;
        case 'P': o->png = optarg; break;
        case 'c': perf_snprintf(o->topo_cmd, sizeof(o->topo_cmd), "%s", optarg); break;
        case 'h': usage(stdout); return -1;
        default: perf_snprintf(bad, sizeof(bad), "unknown option"); break;
        }
    }
    if (bad[0] == '\0' && optind < argc) {
        perf_snprintf(bad, sizeof(bad), "unexpected argument '%s'", argv[optind]);
    }
    if (bad[0] == '\0' && (o->min_size == 0 || o->min_size > o->max_size)) {
        perf_snprintf(bad, sizeof(bad), "-b %zu -e %zu: 0 < min <= max", o->min_size, o->max_size);
    }
    if (bad[0] == '\0' && o->json != NULL && !perf_check_have_json()) {
        perf_snprintf(bad, sizeof(bad), "-J: this sharc was built without json-c");
    }
    if (bad[0] == '\0' && o->png != NULL && strchr(o->png, '\'') != NULL) {
        perf_snprintf(bad, sizeof(bad), "--png: a file name without quotes");
    }
    if (bad[0] != '\0') {
        fprintf(stderr, "sharc-perf check: %s\n", bad);
        usage(stderr);
        return 2;
    }
    if (o->timeout_s <= 0) {
        o->timeout_s = o->budget_s > 10 ? o->budget_s : 10;
    }
    if (o->topo_cmd[0] == '\0') {
        default_topo_cmd(o->topo_cmd, sizeof(o->topo_cmd));
    }
    return 0;
}

/* ---- the job ----------------------------------------------------------------------------- */

/* A context whose collectives give up a while after an exchange would (SHARC_TIMEOUT, unless
 * set: the exchanges' own bound then names the link first), and the job's communicator. */
static int open_job(perf_check_job_t *j)
{
    sharc_config_h config = NULL;
    char value[32];

    if (sharc_config_create(0, &config) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: bad SHARC_* settings (see the log above)\n");
        return 2;
    }
    if (getenv("SHARC_TIMEOUT") == NULL) {
        perf_snprintf(value, sizeof(value), "%.0fs", j->o->timeout_s + 5);
        sharc_config_set(config, "TIMEOUT", value);
    }
    if (sharc_context_create(config, &j->ctx) != SHARC_OK) {
        sharc_config_destroy(config);
        fprintf(stderr, "sharc-perf check: cannot create a context (see the log above)\n");
        return 2;
    }
    sharc_config_destroy(config);
    if (sharc_comm_create(j->ctx, NULL, &j->world) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: cannot join the job: a rank is missing or unreachable "
                        "(the log above names it)\n");
        sharc_context_destroy(j->ctx);
        return 2;
    }
    j->rank = sharc_comm_rank(j->world);
    j->nranks = sharc_comm_size(j->world);
    j->nnodes = sharc_comm_nnodes(j->world);
    j->node = sharc_comm_node(j->world);
    j->lrank = sharc_comm_local_rank(j->world);
    return 0;
}

/* Every rank's node, local rank and host name; the nodes' ranks in local rank order. */
static int layout(perf_check_job_t *j)
{
    int32_t mine[2] = {j->node, j->lrank}, *all = malloc(sizeof(int32_t) * 2 * (size_t)j->nranks);
    char me[PERF_CHECK_HOST] = "", *hosts = malloc((size_t)j->nranks * PERF_CHECK_HOST);

    gethostname(me, sizeof(me) - 1);
    if (sharc_allgather(mine, all, 2, SHARC_DTYPE_I32, j->world, NULL) != SHARC_OK ||
        sharc_allgather(me, hosts, PERF_CHECK_HOST, SHARC_DTYPE_U8, j->world, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: rank %d: cannot learn the job's layout\n", j->rank);
        free(all);
        free(hosts);
        return 2;
    }
    j->node_of = calloc((size_t)j->nranks, sizeof(int));
    j->lrank_of = calloc((size_t)j->nranks, sizeof(int));
    j->by_node = calloc((size_t)j->nranks, sizeof(int));
    j->first = calloc((size_t)j->nnodes, sizeof(int));
    j->count = calloc((size_t)j->nnodes, sizeof(int));
    j->host = calloc((size_t)j->nnodes, sizeof(*j->host));
    for (int r = 0; r < j->nranks; r++) {
        j->node_of[r] = all[2 * r];
        j->lrank_of[r] = all[2 * r + 1];
        j->count[j->node_of[r]]++;
    }
    j->rails = j->nranks;
    for (int n = 0; n < j->nnodes; n++) {
        j->first[n] = n ? j->first[n - 1] + j->count[n - 1] : 0;
        j->rails = j->count[n] < j->rails ? j->count[n] : j->rails;
        j->maxlocal = j->count[n] > j->maxlocal ? j->count[n] : j->maxlocal;
    }
    for (int r = 0; r < j->nranks; r++) {
        j->by_node[j->first[j->node_of[r]] + j->lrank_of[r]] = r;
        if (j->lrank_of[r] == 0) {
            perf_snprintf(j->host[j->node_of[r]], PERF_CHECK_HOST, "%.*s", PERF_CHECK_HOST - 1,
                          hosts + (size_t)r * PERF_CHECK_HOST);
        }
    }
    free(all);
    free(hosts);
    return 0;
}

/* Each node's expected link rate: --expect, or sharc-topo run by the node's local rank 0. */
static int expectations(perf_check_job_t *j)
{
    perf_check_expect_t mine = {.gbit = -1, .nports = 0, .why = "unknown"};
    perf_check_expect_t *all = calloc((size_t)j->nranks, sizeof(*all));
    int ret = 0;

    if (j->o->expect_gbit > 0) {
        mine.gbit = j->o->expect_gbit;
        mine.nports = 1;
        perf_snprintf(mine.why, sizeof(mine.why), "--expect");
    } else if (j->o->expect_gbit == 0) {
        perf_snprintf(mine.why, sizeof(mine.why), "--expect none");
    } else if (j->lrank == 0) {
        FILE *f = popen(j->o->topo_cmd, "r");
        char *text = calloc(1, 1u << 22);
        size_t len = 0, n;

        while (f != NULL && text != NULL && len + 1 < (1u << 22) &&
               (n = fread(text + len, 1, (1u << 22) - 1 - len, f)) > 0) {
            len += n;
        }
        if (f != NULL) {
            pclose(f);
        }
        if (text == NULL || len == 0) {
            perf_snprintf(mine.why, sizeof(mine.why), "no topology (sharc-topo did not run)");
        } else if (perf_check_topo_expect(text, &mine) != 0) {
            mine.gbit = -1; /* mine.why says why */
        }
        free(text);
    }
    /* the struct travels as bytes: every rank runs this same build */
    if (sharc_allgather(&mine, all, sizeof(mine), SHARC_DTYPE_U8, j->world, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: rank %d: cannot gather the topology\n", j->rank);
        ret = 2;
    }
    j->expect = calloc((size_t)j->nnodes, sizeof(*j->expect));
    for (int n = 0; n < j->nnodes && ret == 0; n++) {
        j->expect[n] = all[j->by_node[j->first[n]]];
        j->expect[n].why[sizeof(mine.why) - 1] = '\0';
    }
    free(all);
    return ret;
}

/* GB/s a node's link should carry with the job's rails: its ports' rate, or the share of it
 * that as many flows as rails can use (one port each); <= 0 unknown. */
static double node_expect(const perf_check_job_t *j, int n)
{
    const perf_check_expect_t *e = &j->expect[n];
    int used = j->rails < e->nports ? j->rails : e->nports;

    return (e->gbit > 0 && e->nports > 0) ? e->gbit * used / e->nports / 8 : -1;
}

/* The links of both levels, in the order of their rounds. */
static void build_graphs(perf_check_job_t *j, double threshold, double expect_frac)
{
    int rounds = perf_check_rr_rounds(j->nnodes), k = 0;
    perf_check_pair_t *p = malloc(sizeof(*p) * (size_t)(j->nranks / 2 + j->nnodes / 2 + 2));

    j->inter =
        (perf_check_graph_t){.nm = j->nnodes, .threshold = threshold, .expect_frac = expect_frac};
    j->inter.m = calloc((size_t)j->nnodes, sizeof(perf_check_member_t));
    j->inter.nl = j->nnodes * (j->nnodes - 1) / 2;
    j->inter.l = calloc((size_t)j->inter.nl, sizeof(perf_check_link_t));
    j->inter_round = calloc((size_t)j->inter.nl, sizeof(int));
    j->inter_rounds = rounds;
    for (int n = 0; n < j->nnodes; n++) {
        j->inter.m[n].copy = -1;
        j->inter.m[n].expect = node_expect(j, n);
    }
    for (int r = 0; r < rounds; r++) {
        int np = perf_check_rr_round(j->nnodes, r, p);
        for (int i = 0; i < np; i++, k++) {
            double ea = node_expect(j, p[i].a), eb = node_expect(j, p[i].b);
            j->inter.l[k] = (perf_check_link_t){
                .a = p[i].a, .b = p[i].b, .gbps = -1, .retest = -1, .expect = ea < eb ? ea : eb};
            j->inter_round[k] = r;
        }
    }

    j->intra =
        (perf_check_graph_t){.nm = j->nranks, .threshold = threshold, .expect_frac = expect_frac};
    j->intra.m = calloc((size_t)j->nranks, sizeof(perf_check_member_t));
    for (int n = 0; n < j->nnodes; n++) {
        j->intra.nl += j->count[n] * (j->count[n] - 1) / 2;
    }
    j->intra.l = calloc((size_t)j->intra.nl + 1, sizeof(perf_check_link_t));
    j->intra_round = calloc((size_t)j->intra.nl + 1, sizeof(int));
    j->intra_rounds = perf_check_rr_rounds(j->maxlocal);
    for (int r = 0; r < j->nranks; r++) {
        j->intra.m[r].group = j->node_of[r];
        j->intra.m[r].copy = -1;
        j->intra.m[r].expect = -1;
    }
    k = 0;
    for (int r = 0; r < j->intra_rounds; r++) {
        for (int n = 0; n < j->nnodes; n++) {
            int np = perf_check_rr_round(j->count[n], r, p);
            for (int i = 0; i < np; i++, k++) {
                j->intra.l[k] = (perf_check_link_t){.a = j->by_node[j->first[n] + p[i].a],
                                                    .b = j->by_node[j->first[n] + p[i].b],
                                                    .gbps = -1,
                                                    .retest = -1,
                                                    .expect = -1};
                j->intra_round[k] = r;
            }
        }
    }
    free(p);
}

/* On host memory a pair inside a node should move what one copy does: the node's median copy
 * bandwidth is the intra-node links' expected figure (on GPUs the copy is HBM's, not NVLink's:
 * unknown). */
static void intra_expect(perf_check_job_t *j)
{
    double *v = malloc(sizeof(double) * (size_t)j->nranks);

    for (int n = 0; n < j->nnodes && !j->o->cuda; n++) {
        int m = 0;
        double med;
        for (int i = 0; i < j->count[n]; i++) {
            double c = j->intra.m[j->by_node[j->first[n] + i]].copy;
            if (c >= 0) {
                v[m++] = c;
            }
        }
        med = m > 0 ? perf_median(v, (size_t)m) : -1;
        for (int k = 0; k < j->intra.nl; k++) {
            if (j->node_of[j->intra.l[k].a] == n) {
                j->intra.l[k].expect = med;
            }
        }
    }
    free(v);
}

/* Rank 0 fits the size and iterations into what is left of the budget; every rank learns it.
 * 0, or 2 when the budget is too small (said by rank 0). */
static int plan(perf_check_job_t *j)
{
    double msg[4] = {0, 0, 0, 0};

    if (j->rank == 0) {
        perf_check_budget_t b = {
            .budget_s = j->o->budget_s,
            .spent_s = perf_now() - j->t0,
            .rounds = j->inter_rounds + j->intra_rounds + (j->nnodes >= 3 ? 2 : 0) + 0.5,
            .retest_rounds = 3,
            .round_s = j->round_s,
            .lat_s = j->probe_lat_s,
            .gbps = j->probe_gbps,
            .min_size = j->o->min_size,
            .max_size = j->o->max_size,
            .min_iters = 3,
            .want_iters = j->o->max_iters < 5 ? j->o->max_iters : 5,
            .max_iters = j->o->max_iters,
        };
        perf_check_plan_t p;
        int ok = perf_check_plan(&b, &p) == 0;

        msg[0] = ok;
        msg[1] = (double)p.size;
        msg[2] = p.iters;
        msg[3] = p.est_s;
        if (!ok) {
            fprintf(stderr,
                    "sharc-perf check: --budget %.0fs is too small for %d nodes x %d ranks: the "
                    "probe found %.3g GB/s between nodes and %.2f s a round, so even %zu-byte "
                    "exchanges x %d need about %.0f s more after the %.1f s spent; use --budget "
                    "%.0fs or more, or a smaller -b\n",
                    j->o->budget_s, j->nnodes, j->rails, j->probe_gbps, j->round_s, p.size, p.iters,
                    p.est_s, b.spent_s, b.spent_s + p.est_s + 1);
        }
    }
    if (sharc_broadcast(msg, msg, 4, SHARC_DTYPE_F64, 0, j->world, NULL) != SHARC_OK) {
        fprintf(stderr, "sharc-perf check: rank %d: cannot learn the plan\n", j->rank);
        return 2;
    }
    j->plan.size = (size_t)msg[1];
    j->plan.iters = (int)msg[2];
    j->plan.est_s = msg[3];
    return msg[0] != 0 ? 0 : 2;
}

/*
 * After a step failed on this rank: whether every rank still reaches the job's store (the
 * bootstrap's barrier, bounded by SHARC_BOOTSTRAP_TIMEOUT), so that sharc's log names the
 * ranks that do not: a collective that times out cannot say which of its peers went silent.
 */
static void diagnose(perf_check_job_t *j)
{
    sharc_status_t status;

    fprintf(stderr,
            "sharc-perf check: rank %d (%s): the check cannot go on; asking which ranks still "
            "answer (at most SHARC_BOOTSTRAP_TIMEOUT)\n",
            j->rank, j->host[j->node]);
    fflush(stderr);
    status = sharc_comm_barrier(j->world);
    if (status == SHARC_OK) {
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): every rank still reaches the job's store: the "
                "fault is between nodes (the log above names the connection lost)\n",
                j->rank, j->host[j->node]);
    } else if (status == SHARC_ERR_TIMEOUT) {
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): not every rank reached the job's store in time: "
                "the log above names those that did not arrive (their node or its link is "
                "down)\n",
                j->rank, j->host[j->node]);
    } else {
        fprintf(stderr,
                "sharc-perf check: rank %d (%s): the job's store is out of reach (%s): rank 0 "
                "left or its node's link is down (the log above says which)\n",
                j->rank, j->host[j->node], sharc_status_string(status));
    }
}

static void close_job(perf_check_job_t *j)
{
    perf_check_free_bufs(j);
    if (j->o->cuda) {
        perf_cuda_fini();
    }
    free(j->node_of);
    free(j->lrank_of);
    free(j->by_node);
    free(j->first);
    free(j->count);
    free(j->host);
    free(j->expect);
    free(j->inter.m);
    free(j->inter.l);
    free(j->inter_round);
    free(j->intra.m);
    free(j->intra.l);
    free(j->intra_round);
    free(j->ring_hop);
    sharc_comm_destroy(j->world);
    sharc_context_destroy(j->ctx);
}

int perf_check_main(int argc, char **argv)
{
    perf_check_opts_t o = {.budget_s = 60,
                           .threshold = 0.75,
                           .expect_frac = 0.5,
                           .expect_gbit = -1,
                           .min_size = 256u << 10,
                           .max_size = 64u << 20,
                           .max_iters = 20,
                           .peers = 2};
    perf_check_job_t j;
    int ret = parse_args(argc, argv, &o), failed = 0;

    if (ret != 0) {
        return ret < 0 ? 0 : ret;
    }
    memset(&j, 0, sizeof(j));
    j.o = &o;
    j.t0 = perf_now();
    if ((ret = open_job(&j)) != 0) {
        return ret;
    }
    if (o.cuda && perf_cuda_init(j.world) != 0) {
        sharc_comm_destroy(j.world);
        sharc_context_destroy(j.ctx);
        return 2;
    }
    ret = layout(&j);
    if (ret == 0 && j.nnodes < 2) {
        if (j.rank == 0) {
            fprintf(stderr,
                    "sharc-perf check: the job's %d rank(s) are all on one node (%s): the check "
                    "compares nodes, so it needs ranks on 2 nodes or more; run it under the "
                    "launcher of the multi-node job\n",
                    j.nranks, j.host[0]);
        }
        ret = 2;
    }
    if (ret == 0) {
        ret = expectations(&j);
    }
    if (ret == 0) {
        j.ring_hop = calloc((size_t)j.nnodes, sizeof(double));
        j.ring_gbps = -1; /* none below 3 nodes */
        build_graphs(&j, o.threshold, o.expect_frac);
        failed = perf_check_probe(&j) != 0;
        ret = failed ? 2 : plan(&j);
    }
    if (ret == 0) {
        failed = perf_check_measure(&j) != 0;
    }
    if (ret == 0 && !failed) {
        intra_expect(&j);
        failed = perf_check_retest(&j) != 0;
    }
    if (failed) {
        /* the job is broken: no orderly teardown (rank 0's would wait for ranks that are
         * gone), and no exit handlers either; the process's end closes what it holds */
        diagnose(&j);
        fflush(stdout);
        fflush(stderr);
        _exit(2);
    }
    if (ret == 0) {
        j.elapsed_s = perf_now() - j.t0;
        if (j.rank == 0) {
            perf_check_print(&j, stdout);
            if (o.json != NULL && perf_check_write_json(&j, o.json) != 0) {
                ret = 2;
            }
            if (o.png != NULL) {
                perf_check_plot(&j, o.png);
            }
        }
        ret = ret != 0 ? ret : (j.named > 0 ? 1 : 0);
    }
    fflush(stdout);
    close_job(&j);
    return ret;
}
