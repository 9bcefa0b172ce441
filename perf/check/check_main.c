/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_main.c: `sharc-perf check`, run under the job's launcher on every rank: the command
 * line, then the job (check_job.c: the layout of ranks on nodes, the expected figures from
 * sharc-topo), the probe, the plan, the passes, the re-test and the verdict (check_pass.c),
 * and the output on rank 0. Exit status 0: nothing slow; 1: a slow node, link or rank named; 2: bad
 * input or a job that could not be checked (said on stderr).
 */
#include "config.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_job.h"
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

/* This program's sibling sharc-topo, else the one on the PATH. */
static void default_topo_cmd(char *out, size_t len)
{
    char topo[PATH_MAX];

    if (perf_sibling("sharc-topo", topo, sizeof(topo)) == 0 && access(topo, X_OK) == 0) {
        perf_snprintf(out, len, "'%s' --json 2>/dev/null", topo);
    } else {
        perf_snprintf(out, len, "sharc-topo --json 2>/dev/null");
    }
}

/* The options whose value can be wrong, and what each wants. */
static const struct {
    int c;
    const char *flag, *want;
} check_wants[] = {
    {'B', "--budget", "a time of 1s or more"},
    {'t', "--threshold", "a fraction in (0, 1]"},
    {'x', "--expect", "topo, none or a rate"},
    {'X', "--expect-threshold", "a fraction"},
    {'b', "-b", "a size"},
    {'e', "-e", "a size"},
    {'n', "-n", "3 or more"},
    {'p', "--peers", "1 or more"},
    {'T', "--timeout", "a time"},
    {'D', "--device", "host or cuda"},
};

/* One option into @p o; a bad value is said into @p bad. */
static void check_option(int c, const char *arg, perf_check_opts_t *o, char *bad, size_t len)
{
    int ok = 1;

    switch (c) {
    case 'B': ok = (o->budget_s = perf_parse_time(arg)) >= 1; break;
    case 't': ok = (o->threshold = parse_frac(arg)) >= 0; break;
    case 'x': ok = (o->expect_gbit = parse_rate(arg)) >= -1; break;
    case 'X': ok = (o->expect_frac = parse_frac(arg)) >= 0; break;
    case 'b': ok = perf_parse_size(arg, &o->min_size) == 0; break;
    case 'e': ok = perf_parse_size(arg, &o->max_size) == 0; break;
    case 'n': ok = (o->max_iters = atoi(arg)) >= 3; break;
    case 'p': ok = (o->peers = atoi(arg)) >= 1; break;
    case 'T': ok = (o->timeout_s = perf_parse_time(arg)) >= 0; break;
    case 'D':
        o->cuda = strcmp(arg, "cuda") == 0;
        ok = o->cuda || strcmp(arg, "host") == 0;
        break;
    case 'J': o->json = arg; break;
    case 'P': o->png = arg; break;
    case 'c': perf_snprintf(o->topo_cmd, sizeof(o->topo_cmd), "%s", arg); break;
    default: perf_snprintf(bad, len, "unknown option"); break;
    }
    for (size_t i = 0; !ok && i < sizeof(check_wants) / sizeof(check_wants[0]); i++) {
        if (check_wants[i].c == c) {
            perf_snprintf(bad, len, "%s %s: %s", check_wants[i].flag, arg, check_wants[i].want);
        }
    }
}

/* What no single option says: the sizes, what this build can write. */
static void check_options(const perf_check_opts_t *o, char *bad, size_t len)
{
    if (bad[0] == '\0' && (o->min_size == 0 || o->min_size > o->max_size)) {
        perf_snprintf(bad, len, "-b %zu -e %zu: 0 < min <= max", o->min_size, o->max_size);
    }
    if (bad[0] == '\0' && o->json != NULL && !perf_check_have_json()) {
        perf_snprintf(bad, len, "-J: this sharc was built without json-c");
    }
    if (bad[0] == '\0' && o->png != NULL && strchr(o->png, '\'') != NULL) {
        perf_snprintf(bad, len, "--png: a file name without quotes");
    }
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
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        check_option(c, optarg, o, bad, sizeof(bad));
    }
    if (bad[0] == '\0' && optind < argc) {
        perf_snprintf(bad, sizeof(bad), "unexpected argument '%s'", argv[optind]);
    }
    check_options(o, bad, sizeof(bad));
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

/* What the job found, on rank 0: the tables, the JSON (-J) and the heat map (--png). 0, 1
 * when something was named, 2 when the JSON could not be written. */
static int report(perf_check_job_t *j)
{
    int ret = 0;

    j->elapsed_s = perf_now() - j->t0;
    if (j->rank == 0) {
        perf_check_print(j, stdout);
        if (j->o->json != NULL && perf_check_write_json(j, j->o->json) != 0) {
            ret = 2;
        }
        if (j->o->png != NULL) {
            perf_check_plot(j, j->o->png);
        }
    }
    return ret != 0 ? ret : (j->named > 0 ? 1 : 0);
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
    if ((ret = perf_check_job_open(&j)) != 0) {
        return ret;
    }
    ret = perf_check_job_layout(&j);
    if (ret == 0) {
        failed = perf_check_probe(&j) != 0;
        ret = failed ? 2 : perf_check_job_plan(&j);
    }
    if (ret == 0) {
        failed = perf_check_measure(&j) != 0;
    }
    if (ret == 0 && !failed) {
        perf_check_intra_expect(&j);
        failed = perf_check_retest(&j) != 0;
    }
    if (failed) {
        /* the job is broken: no orderly teardown (rank 0's would wait for ranks that are
         * gone), and no exit handlers either; the process's end closes what it holds */
        perf_check_job_diagnose(&j);
        fflush(stdout);
        fflush(stderr);
        _exit(2);
    }
    if (ret == 0) {
        ret = report(&j);
    }
    fflush(stdout);
    perf_check_job_close(&j);
    return ret;
}
