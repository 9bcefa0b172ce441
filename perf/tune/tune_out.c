/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_out.c: the files `sharc-perf tune` writes (tune.json, which --check reads back, is
 * tune_json.c's).
 *
 *   tuned.env        the global settings in /etc/nccl.conf's format (KEY=VALUE lines, '#'
 *                    comments), with SHARC_TUNE_FILE / NCCL_TUNER_CONFIG_FILE naming the
 *                    tables below when they have rows
 *   tuned.sh         the same as shell exports
 *   sharc-tune.conf  sharc's per-size algorithm table (SHARC_TUNE_FILE)
 *   nccl-tuner.csv   NCCL's per-size algorithm, protocol and channels in the CSV of NCCL's
 *                    example tuner plugin (NCCL_TUNER_PLUGIN + NCCL_TUNER_CONFIG_FILE)
 *   tune.json        everything measured and decided, for --check (tune_json.c)
 *   report.md, report.dat, report.png   default vs tuned busbw per size with the spread
 * Every file carries the fingerprint of what it was tuned on (topology, driver, library
 * versions, job shape).
 *
 * Sizes are nccl-tests' (the larger buffer: all ranks' blocks for all-gather and
 * reduce-scatter), which is also how sharc's table and NCCL's tuner measure a collective.
 * A size's row covers it up to the next measured size; outside the measured range the
 * defaults stay.
 */
#include "tune_out.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sharc/sharc.h>

#include "../common/perf_util.h"

/* The rows the tables got: sharc's, NCCL's, and the sizes NCCL's CSV cannot hold. */
typedef struct {
    int sharc, nccl, nccl_skipped;
} perf_tune_rows_t;

/* ---- the tables --------------------------------------------------------------------------- */

static const char *algo_key(int coll)
{
    static const char *const keys[PERF_TUNE_NCOLLS] = {
        "SHARC_ALLGATHER_ALGO", "SHARC_REDUCE_SCATTER_ALGO", "SHARC_ALLREDUCE_ALGO",
        "SHARC_BROADCAST_ALGO", "SHARC_ALLTOALL_ALGO"};

    return keys[coll];
}

/* The value of @p key at size i of p where kept, else NULL. */
static const char *kept_value(const perf_tune_coll_plan_t *p, int i, const char *key)
{
    return p->kept[i] ? perf_tune_env_get(&p->at[i], key) : NULL;
}

static int same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Rows of runs of equal values; each row [size_i, size_next - 1]. Returns the rows written. */
static int sharc_rows(FILE *f, const perf_tune_plan_t *plan, int np)
{
    int rows = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        const perf_tune_coll_plan_t *p = &plan->coll[c];

        for (int i = 0; i < p->n;) {
            const char *v = kept_value(p, i, algo_key(c));
            int j = i;

            while (j + 1 < p->n && same(kept_value(p, j + 1, algo_key(c)), v)) {
                j++;
            }
            if (v != NULL) {
                size_t max = j + 1 < p->n ? p->size[j + 1] - 1 : p->size[j];
                fprintf(f, "%-15s %4d %12zu %12zu  %s\n", sharc_coll_name((sharc_coll_type_t)(c)),
                        np, p->size[i], max, v);
                rows++;
            }
            i = j + 1;
        }
    }
    return rows;
}

/* NCCL's names in the tuner CSV */
static const char *nccl_coll(int coll)
{
    static const char *const names[PERF_TUNE_NCOLLS] = {"allgather", "reducescatter", "allreduce",
                                                        "broadcast", NULL};

    return names[coll];
}

static void lower(const char *in, char *out, size_t len)
{
    size_t i = 0;

    for (; in[i] != '\0' && i + 1 < len; i++) {
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
    }
    out[i] = '\0';
}

/* "NVLSTree" -> "nvls_tree"; the rest lower case */
static void nccl_algo(const char *algo, char *out, size_t len)
{
    if (strcmp(algo, "NVLSTree") == 0) {
        perf_snprintf(out, len, "nvls_tree");
    } else if (strcmp(algo, "CollnetDirect") == 0) {
        perf_snprintf(out, len, "collnet_direct");
    } else if (strcmp(algo, "CollnetChain") == 0) {
        perf_snprintf(out, len, "collnet_chain");
    } else {
        lower(algo, out, len);
    }
}

static int nccl_rows(FILE *f, const perf_tune_plan_t *plan, const perf_tune_target_t *t,
                     int *skipped_p)
{
    int rows = 0;

    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        const perf_tune_coll_plan_t *p = &plan->coll[c];

        for (int i = 0; nccl_coll(c) != NULL && i < p->n; i++) {
            const char *algo = kept_value(p, i, "NCCL_ALGO"),
                       *proto = kept_value(p, i, "NCCL_PROTO");
            const char *ch = kept_value(p, i, "NCCL_MAX_NCHANNELS");
            char a[32], pr[32];

            if (algo == NULL && proto == NULL && ch == NULL) {
                continue;
            }
            if (algo == NULL || proto == NULL) {
                (*skipped_p)++; /* the CSV needs both; channels alone cannot be a row */
                continue;
            }
            nccl_algo(algo, a, sizeof(a));
            lower(proto, pr, sizeof(pr));
            fprintf(f, "%s,%zu,%zu,%s,%s,%s,%d,%d,-1,-1\n", nccl_coll(c), p->size[i],
                    i + 1 < p->n ? p->size[i + 1] - 1 : p->size[i], a, pr, ch != NULL ? ch : "-1",
                    t->nodes, t->np);
            rows++;
        }
    }
    return rows;
}

/* ---- the files ---------------------------------------------------------------------------- */

static FILE *open_out(const char *dir, const char *name, char *path, size_t len)
{
    perf_snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "sharc-perf tune: cannot write %s: %s\n", path, strerror(errno));
    }
    return f;
}

static void header(FILE *f, const char *what, const perf_tune_target_t *t)
{
    char date[32];
    time_t now = time(NULL);
    const char *p = t->fp_text;

    strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(f, "# %s, written by sharc-perf tune on %s\n# fingerprint %s\n", what, date,
            t->fingerprint);
    while (*p != '\0') {
        size_t n = strcspn(p, "\n");
        fprintf(f, "#   %.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
}

static void report_plot(const char *dir, const perf_tune_plan_t *plan)
{
    char path[PATH_MAX];
    FILE *f = open_out(dir, "report.dat", path, sizeof(path));
    int blocks = 0;

    if (f == NULL) {
        return;
    }
    fprintf(f, "# collective size_bytes default_busbw tuned_busbw spread (GB/s); one block per "
               "collective\n");
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        const perf_tune_coll_plan_t *p = &plan->coll[c];
        if (p->n == 0) {
            continue;
        }
        fprintf(f, "%s# %s\n", blocks ? "\n\n" : "", sharc_coll_name((sharc_coll_type_t)(c)));
        for (int i = 0; i < p->n; i++) {
            fprintf(f, "%s %zu %.4f %.4f %.4f\n", sharc_coll_name((sharc_coll_type_t)(c)),
                    p->size[i], p->base[i], p->tuned[i], p->spread[i]);
        }
        blocks++;
    }
    fclose(f);
    f = open_out(dir, "report.gp", path, sizeof(path));
    if (f == NULL || blocks == 0) {
        if (f != NULL) {
            fclose(f);
        }
        return;
    }
    fprintf(f,
            "set terminal pngcairo size 1000,600 noenhanced\nset output '%s/report.png'\n"
            "set logscale x 2\nset format x '%%.0b%%B'\nset xlabel 'size'\n"
            "set ylabel 'busbw (GB/s)'\nset yrange [0:*]\nset key top left\nset grid\n"
            "set title 'sharc-perf tune: default vs tuned busbw, medians (bars: the spread, "
            "max - min)'\nplot ",
            dir);
    for (int b = 0, c = 0; c < PERF_TUNE_NCOLLS; c++) {
        if (plan->coll[c].n == 0) {
            continue;
        }
        fprintf(f,
                "%s'%s/report.dat' index %d using 2:3 with linespoints dt 2 lc %d title '%s "
                "default', '' index %d using 2:4:($5/2) with yerrorlines lc %d title '%s tuned'",
                b ? ", " : "", dir, b, b + 1, sharc_coll_name((sharc_coll_type_t)(c)), b, b + 1,
                sharc_coll_name((sharc_coll_type_t)(c)));
        b++;
    }
    fprintf(f, "\n");
    fclose(f);
    if (perf_gnuplot(path) != 0) {
        fprintf(stderr,
                "sharc-perf tune: no plot (gnuplot missing or failed); the data is in "
                "%s/report.dat\n",
                dir);
    }
}

/* The table of one collective: default vs tuned per size, with the spread and the bound. */
void perf_tune_report_table(FILE *f, const perf_tune_target_t *t, const perf_tune_plan_t *plan,
                            int c, const char *tuned_name)
{
    const perf_tune_coll_plan_t *p = &plan->coll[c];

    fprintf(f,
            "| size (B) | default busbw (GB/s) | %s busbw (GB/s) | spread (GB/s) | gain | "
            "per-size setting | %% of expected |\n|---:|---:|---:|---:|---:|---|---:|\n",
            tuned_name);
    for (int i = 0; i < p->n; i++) {
        char at[512] = "", bound[32] = "n/a";
        double exp_gbps = perf_tune_expected_gbps(t, p->memcpy[i]);

        perf_tune_env_text(&p->at[i], at, sizeof(at));
        if (exp_gbps > 0) {
            perf_snprintf(bound, sizeof(bound), "%.0f%% of %.1f", 100 * p->tuned[i] / exp_gbps,
                          exp_gbps);
        }
        fprintf(f, "| %zu | %.3f | %.3f | %.3f | %.3fx | %s%s | %s |\n", p->size[i], p->base[i],
                p->tuned[i], p->spread[i], p->base[i] > 0 ? p->tuned[i] / p->base[i] : 0,
                p->at[i].n ? at : "-",
                p->at[i].n ? (p->kept[i] ? " (kept)" : " (within spread: dropped)") : "", bound);
    }
}

/* sharc's table (sharc-tune.conf) and NCCL's tuner CSV (nccl-tuner.csv): the rows of each. */
static int write_tables(const char *dir, const perf_tune_target_t *t, const perf_tune_plan_t *plan,
                        perf_tune_rows_t *rows)
{
    char path[PATH_MAX];
    FILE *f;

    if ((f = open_out(dir, "sharc-tune.conf", path, sizeof(path))) == NULL) {
        return -1;
    }
    header(f, "sharc tune file v1 (SHARC_TUNE_FILE)", t);
    fprintf(f, "# collective    ranks    min_bytes    max_bytes  algorithm\n");
    rows->sharc = sharc_rows(f, plan, t->np);
    fclose(f);
    if ((f = open_out(dir, "nccl-tuner.csv", path, sizeof(path))) == NULL) {
        return -1;
    }
    header(f, "NCCL tuner configuration (example tuner plugin's CSV format)", t);
    fprintf(f, "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
               "numPipeOps,regBuff\n");
    rows->nccl = nccl_rows(f, plan, t, &rows->nccl_skipped);
    fclose(f);
    return 0;
}

/* The settings as tuned.env (/etc/nccl.conf's format) or, @p sh, tuned.sh (shell exports),
 * naming the tables (by their absolute path) where they have rows. */
static int write_env(const char *dir, const char *absdir, int sh, const perf_tune_target_t *t,
                     const perf_tune_plan_t *plan, const perf_tune_env_t *base_env,
                     const perf_tune_rows_t *rows)
{
    char path[PATH_MAX];
    FILE *f = open_out(dir, sh ? "tuned.sh" : "tuned.env", path, sizeof(path));

    if (f == NULL) {
        return -1;
    }
    header(f,
           sh ? "sharc-perf tune: settings as shell exports"
              : "sharc-perf tune: settings (the format of /etc/nccl.conf)",
           t);
    if (base_env->n > 0) {
        char text[2048];
        perf_tune_env_text(base_env, text, sizeof(text));
        fprintf(f, "# measured with: %s (set those too)\n", text);
    }
    if (plan->global.n == 0 && rows->sharc == 0 && rows->nccl == 0) {
        fprintf(f, "# nothing beat the defaults by more than the measured spread\n");
    }
    for (int i = 0; i < plan->global.n; i++) {
        fprintf(f, sh ? "export %s='%s'\n" : "%s=%s\n", plan->global.kv[i].key,
                plan->global.kv[i].value);
    }
    if (rows->sharc > 0) {
        fprintf(f,
                sh ? "export SHARC_TUNE_FILE='%s/sharc-tune.conf'\n"
                   : "SHARC_TUNE_FILE=%s/sharc-tune.conf\n",
                absdir);
    }
    if (rows->nccl > 0) {
        fprintf(f, "# NCCL reads the CSV through its example tuner plugin: set NCCL_TUNER_PLUGIN "
                   "to the plugin's library\n");
        fprintf(f,
                sh ? "export NCCL_TUNER_CONFIG_FILE='%s/nccl-tuner.csv'\n"
                   : "NCCL_TUNER_CONFIG_FILE=%s/nccl-tuner.csv\n",
                absdir);
    }
    fclose(f);
    return 0;
}

/* The report's opening: the fingerprint, the run, the space searched. */
static void report_space(FILE *f, const perf_tune_target_t *t, const perf_tune_space_t *space,
                         const perf_tune_plan_t *plan)
{
    fprintf(f, "# sharc-perf tune report\n\nFingerprint `%s`:\n\n```\n%s```\n\n", t->fingerprint,
            t->fp_text);
    fprintf(f,
            "%d launches (%d from the journal of an earlier run), %d failed candidates, "
            "%d knobs searched, %d not tried for lack of budget, %.0f s.\n\n",
            plan->launches, plan->cached, plan->failures, plan->knobs_tried, plan->knobs_skipped,
            plan->seconds);
    fprintf(f, "## Space\n\n");
    for (int k = 0; k < space->nknobs; k++) {
        fprintf(f, "- `%s` (%s, %d values): %s\n", space->knobs[k].name,
                space->knobs[k].per_size ? "per size" : "global", space->knobs[k].nvalues,
                space->knobs[k].why);
    }
    for (int k = 0; k < space->nleft; k++) {
        fprintf(f, "- left out: %s\n", space->left_out[k]);
    }
}

/* The report's decisions: the global settings, what was kept, the rule. */
static void report_decisions(FILE *f, const perf_tune_plan_t *plan, const perf_tune_rows_t *rows)
{
    char prop[2048], kept[2048];

    perf_tune_env_text(&plan->proposed, prop, sizeof(prop));
    perf_tune_env_text(&plan->global, kept, sizeof(kept));
    fprintf(f, "\n## Decisions\n\nGlobal settings the search chose: %s; ", prop);
    if (plan->proposed.n > 0) {
        fprintf(f, "in the finals %.3fx over the per-size table against a spread of %.1f%%: %s.\n",
                plan->global_gain, 100 * plan->global_spread, plan->global.n ? "kept" : "dropped");
    } else {
        fprintf(f, "nothing to decide.\n");
    }
    fprintf(f, "Kept: %s. sharc table rows: %d; NCCL tuner rows: %d%s.\n\n", kept, rows->sharc,
            rows->nccl, rows->nccl_skipped ? " (sizes with channels alone have no CSV row)" : "");
    fprintf(f, "A per-size setting is kept where every interleaved round of it beats every "
               "round of the defaults and the medians are apart by more than the spread (max - "
               "min over either's rounds) plus the noise floor (2%%).\n\n");
}

/* report.md: the space, the decisions, a table per collective. */
static int write_report(const char *dir, const perf_tune_target_t *t,
                        const perf_tune_space_t *space, const perf_tune_plan_t *plan,
                        const perf_tune_rows_t *rows)
{
    char path[PATH_MAX];
    FILE *f = open_out(dir, "report.md", path, sizeof(path));

    if (f == NULL) {
        return -1;
    }
    report_space(f, t, space, plan);
    report_decisions(f, plan, rows);
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        if (plan->coll[c].n == 0) {
            if (plan->coll[c].failed) {
                fprintf(f, "## %s\n\nThe defaults could not be measured (see logs/).\n\n",
                        sharc_coll_name((sharc_coll_type_t)(c)));
            }
            continue;
        }
        fprintf(f, "## %s\n\n", sharc_coll_name((sharc_coll_type_t)(c)));
        perf_tune_report_table(f, t, plan, c, "tuned");
        fprintf(f, "\n");
    }
    fprintf(f, "%% of expected: tuned busbw over what the hardware should deliver per rank (%s).\n",
            t->cuda ? "from the topology: NVLink or PCIe within a node, the GPU's NICs between"
                    : "one core's memcpy in the same run on one node, the NIC between nodes");
    fclose(f);
    return 0;
}

int perf_tune_write(const char *dir, const perf_tune_target_t *t, const perf_tune_space_t *space,
                    const perf_tune_plan_t *plan, const perf_tune_env_t *base_env)
{
    char absdir[PATH_MAX];
    perf_tune_rows_t rows = {0};

    if (realpath(dir, absdir) == NULL) {
        perf_snprintf(absdir, sizeof(absdir), "%s", dir);
    }
    if (write_tables(dir, t, plan, &rows) != 0 ||
        write_env(dir, absdir, 0, t, plan, base_env, &rows) != 0 ||
        write_env(dir, absdir, 1, t, plan, base_env, &rows) != 0) {
        return -1;
    }
    if (perf_tune_write_json(dir, t, plan, base_env) != 0) {
        fprintf(stderr, "sharc-perf tune: cannot write %s/tune.json\n", dir);
        return -1;
    }
    if (write_report(dir, t, space, plan, &rows) != 0) {
        return -1;
    }
    report_plot(dir, plan);
    return 0;
}
