/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/profile.c: the profile's table (profile.h). Floors: a product of the table's act
 * dtype (the GEMM rate MFU uses where that was measured, else llama_gemm_rate) and a copy
 * (llama_copy_rate), both measured at start through the table; a site's floor is the larger
 * of its FLOPs over the first and its bytes over the second (model/prof_cost.c counts them),
 * its gap the measured time over the floor. The waits (the shard engine, all-reduces, read-
 * backs, data, host gaps) have no floor. Medians per site over the steps the summary counts.
 */
#include "profile.h"
#include "metrics.h"
#include "../util.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what the table needs besides the marks */
struct llama_profile {
    double gemm, copy; /* FLOP/s of the product; bytes read + written per second of a copy */
    char gemm_what[320], copy_what[160];
    double flops[LLAMA_SITE_LAST], bytes[LLAMA_SITE_LAST]; /* a step's, on this rank */
};

/* the steps whose op spans rank 0 keeps for --trace: as many as the engine's trace keeps by
 * default (SHARC_SHARD_TRACE_STEPS) */
#define LLAMA_PROFILE_TRACE_STEPS 50

sharc_status_t llama_profile_setup(llama_train_t *t)
{
    const llama_ops_t *ops = llama_model_ops(t->model);
    llama_profile_t *pr = calloc(1, sizeof(*pr));
    sharc_status_t status = pr != NULL ? SHARC_OK : SHARC_ERR_NOMEM;

    t->profile = pr;
    if (status == SHARC_OK) {
        int spans = t->rank == 0 && t->o->trace_path != NULL ? LLAMA_PROFILE_TRACE_STEPS : 0;
        status = llama_prof_create(ops, spans, &t->prof);
    }
    if (status != SHARC_OK) {
        return status;
    }
    /* the rate MFU is taken against, where it is this table's product measured (the CPU's);
     * a data-sheet peak or --peak-gflops is no floor: measure */
    if (ops->peak_flops == NULL && t->o->peak_gflops <= 0 && t->peak > 0) {
        pr->gemm = t->peak;
        snprintf(pr->gemm_what, sizeof(pr->gemm_what), "%s", t->peak_what);
    } else {
        pr->gemm = llama_gemm_rate(ops, pr->gemm_what, sizeof(pr->gemm_what));
    }
    pr->copy = llama_copy_rate(ops, pr->copy_what, sizeof(pr->copy_what));
    if (!(pr->gemm > 0) || !(pr->copy > 0)) {
        llama_err("--profile: the floors could not be measured (GEMM %g FLOP/s, copy %g B/s)",
                  pr->gemm, pr->copy);
        return SHARC_ERR_BACKEND;
    }
    llama_model_site_costs(t->model, t->o->accum, pr->flops, pr->bytes);
    llama_model_set_prof(t->model, t->prof);
    return SHARC_OK;
}

/* ---- the table ------------------------------------------------------------------------------ */

/*
 * One row over the steps counted: the median time and calls; the rate, floor and gap of that
 * median; its share of the sum of the sites' medians (the median step's, where the times
 * are steady, as on a GPU; on a busy machine the medians of the sites need not add up to the
 * step's, their means do: every moment of a step is one site's).
 */
typedef struct {
    double calls, s, share, achieved, floor_s, gap; /* floor_s 0: none */
    double mean_s;
    const char *unit; /* of achieved; NULL: none */
} row_t;

/* The step's figures over the steps counted. */
typedef struct {
    double s, mean_s; /* median and mean */
    double sum_s;     /* the sites' medians added up */
    int timed;        /* steps counted */
} step_t;

/* A row's rate, floor and gap from its median time. */
static void row_rates(const llama_profile_t *pr, int s, row_t *r)
{
    if (llama_site_kind(s) == LLAMA_SITE_WAIT || r->s <= 0) {
        return;
    }
    r->floor_s = fmax(pr->flops[s] / pr->gemm, pr->bytes[s] / pr->copy);
    r->gap = r->floor_s > 0 ? r->s / r->floor_s : 0.0;
    if (llama_site_kind(s) == LLAMA_SITE_FLOPS && pr->flops[s] > 0) {
        r->achieved = pr->flops[s] / r->s;
        r->unit = "FLOP/s";
    } else if (pr->bytes[s] > 0) {
        r->achieved = pr->bytes[s] / r->s;
        r->unit = "B/s";
    }
}

/* Medians and means over the steps the summary counts: after the first two (schedule
 * recording, warm caches) when there are more than four. */
static int rows_of(const llama_train_t *t, row_t *rows, step_t *step)
{
    const llama_prof_step_t *st;
    int nsteps = llama_prof_steps(t->prof, &st), skip = nsteps > 4 ? 2 : 0, n = nsteps - skip;
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1) * 2);

    if (v == NULL || n <= 0) {
        free(v);
        return -1;
    }
    memset(step, 0, sizeof(*step));
    for (int i = 0; i < n; i++) {
        v[i] = st[skip + i].step_s;
        step->mean_s += v[i] / n;
    }
    step->s = llama_median(v, n);
    step->timed = n;
    for (int s = 0; s < LLAMA_SITE_LAST; s++) {
        row_t *r = &rows[s];
        memset(r, 0, sizeof(*r));
        for (int i = 0; i < n; i++) {
            v[i] = st[skip + i].s[s];
            v[n + i] = st[skip + i].calls[s];
            r->mean_s += v[i] / n;
        }
        r->s = llama_median(v, n);
        r->calls = llama_median(v + n, n);
        row_rates(t->profile, s, r);
        step->sum_s += r->s;
    }
    for (int s = 0; s < LLAMA_SITE_LAST; s++) {
        rows[s].share = step->sum_s > 0 ? rows[s].s / step->sum_s : 0.0;
    }
    free(v);
    return 0;
}

/* "312.4 TFLOP/s", "12.1 GB/s": the prefix that leaves 1 to 999 */
static const char *rate_str(char *buf, size_t len, double v, const char *unit)
{
    static const char *const prefixes[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;

    if (unit == NULL) {
        return "-";
    }
    while (v >= 1000.0 && i < 5) {
        v /= 1000.0;
        i++;
    }
    snprintf(buf, len, "%.1f %s%s", v, prefixes[i], unit);
    return buf;
}

static void print_table(const llama_train_t *t, const row_t *rows, const step_t *step)
{
    const llama_profile_t *pr = t->profile;
    char a[32], b[32];
    double sum_s = 0.0, sum_share = 0.0;

    llama_info("profile: rank 0, %s %s, batch %d x seq %d x accum %d; medians of %d step(s)%s: "
               "step %.3f ms (mean %.3f ms), the sites' %.3f ms",
               t->cfg.name, llama_model_ops(t->model)->name, t->run.batch, t->run.seq, t->o->accum,
               step->timed, step->timed < t->nsteps ? " (after the first 2)" : "", step->s * 1e3,
               step->mean_s * 1e3, step->sum_s * 1e3);
    llama_info("profile: floors: GEMM %s (%s); copy %s (%s)",
               rate_str(a, sizeof(a), pr->gemm, "FLOP/s"), pr->gemm_what,
               rate_str(b, sizeof(b), pr->copy, "B/s"), pr->copy_what);
    llama_info("profile: %-15s %10s %10s %7s %15s %10s %8s", "site", "calls/step", "ms/step",
               "share", "achieved", "floor ms", "gap");
    for (int s = 0; s < LLAMA_SITE_LAST; s++) {
        const row_t *r = &rows[s];
        char fl[32] = "-", gap[32] = "-";
        if (r->floor_s > 0) {
            snprintf(fl, sizeof(fl), "%.3f", r->floor_s * 1e3);
            snprintf(gap, sizeof(gap), "%.2fx", r->gap);
        }
        llama_info("profile: %-15s %10.0f %10.3f %6.1f%% %15s %10s %8s", llama_site_name(s),
                   r->calls, r->s * 1e3, 100.0 * r->share,
                   rate_str(a, sizeof(a), r->achieved, r->unit), fl, gap);
        sum_s += r->s;
        sum_share += r->share;
    }
    llama_info("profile: %-15s %10s %10.3f %6.1f%%", "sum", "", sum_s * 1e3, 100.0 * sum_share);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static struct json_object *num(double v)
{
    return isfinite(v) ? json_object_new_double(v) : NULL; /* null: JSON has no inf or nan */
}

static struct json_object *json_row(const llama_train_t *t, int s, const row_t *r)
{
    struct json_object *o = json_object_new_object();

    json_object_object_add(o, "site", json_object_new_string(llama_site_name(s)));
    json_object_object_add(o, "kind",
                           json_object_new_string(llama_site_kind(s) == LLAMA_SITE_FLOPS ? "flops"
                                                  : llama_site_kind(s) == LLAMA_SITE_BYTES
                                                      ? "bytes"
                                                      : "wait"));
    json_object_object_add(o, "calls", num(r->calls));
    json_object_object_add(o, "ms", num(r->s * 1e3));
    json_object_object_add(o, "mean_ms", num(r->mean_s * 1e3));
    json_object_object_add(o, "share", num(r->share));
    json_object_object_add(o, "flops", num(t->profile->flops[s]));
    json_object_object_add(o, "bytes", num(t->profile->bytes[s]));
    json_object_object_add(o, "achieved", r->unit != NULL ? num(r->achieved) : NULL);
    json_object_object_add(o, "achieved_unit",
                           r->unit != NULL ? json_object_new_string(r->unit) : NULL);
    json_object_object_add(o, "floor_ms", r->floor_s > 0 ? num(r->floor_s * 1e3) : NULL);
    json_object_object_add(o, "gap", r->floor_s > 0 ? num(r->gap) : NULL);
    return o;
}

static sharc_status_t write_json(const llama_train_t *t, const row_t *rows, const step_t *step)
{
    const llama_profile_t *pr = t->profile;
    struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
    int ret;

    json_object_object_add(o, "producer", json_object_new_string("sharc-llama --profile"));
    json_object_object_add(o, "config", json_object_new_string(t->cfg.name));
    json_object_object_add(o, "ops", json_object_new_string(llama_model_ops(t->model)->name));
    json_object_object_add(o, "world", json_object_new_int(t->world));
    json_object_object_add(o, "rank", json_object_new_int(0));
    json_object_object_add(o, "batch", json_object_new_int(t->run.batch));
    json_object_object_add(o, "seq", json_object_new_int(t->run.seq));
    json_object_object_add(o, "accum", json_object_new_int(t->o->accum));
    json_object_object_add(o, "steps", json_object_new_int(t->nsteps));
    json_object_object_add(o, "steps_timed", json_object_new_int(step->timed));
    json_object_object_add(o, "step_ms", num(step->s * 1e3));
    json_object_object_add(o, "step_mean_ms", num(step->mean_s * 1e3));
    json_object_object_add(o, "sites_ms", num(step->sum_s * 1e3));
    json_object_object_add(o, "gemm_flops_per_s", num(pr->gemm));
    json_object_object_add(o, "gemm_source", json_object_new_string(pr->gemm_what));
    json_object_object_add(o, "copy_bytes_per_s", num(pr->copy));
    json_object_object_add(o, "copy_source", json_object_new_string(pr->copy_what));
    for (int s = 0; s < LLAMA_SITE_LAST; s++) {
        json_object_array_add(arr, json_row(t, s, &rows[s]));
    }
    json_object_object_add(o, "sites", arr);
    ret = json_object_to_file_ext(t->o->profile_json, o, JSON_C_TO_STRING_PRETTY);
    json_object_put(o);
    if (ret != 0) {
        llama_err("--profile-json: cannot write %s: %s", t->o->profile_json, strerror(errno));
        return SHARC_ERR_IO;
    }
    return SHARC_OK;
}

sharc_status_t llama_profile_report(const llama_train_t *t)
{
    row_t rows[LLAMA_SITE_LAST];
    step_t step;

    if (t->prof == NULL || t->rank != 0) {
        return SHARC_OK;
    }
    if (rows_of(t, rows, &step) != 0) {
        llama_err("--profile: no step was profiled");
        return SHARC_ERR_INVALID;
    }
    print_table(t, rows, &step);
    return t->o->profile_json != NULL ? write_json(t, rows, &step) : SHARC_OK;
}

void llama_profile_release(llama_train_t *t)
{
    if (t->model != NULL) {
        llama_model_set_prof(t->model, NULL);
    }
    llama_prof_release(t->prof);
}

void llama_profile_trace(const llama_train_t *t)
{
    if (t->prof != NULL && t->rank == 0 && t->o->trace_path != NULL) {
        llama_profile_trace_add(t->prof, t->o->trace_path);
    }
}

void llama_profile_destroy(llama_train_t *t)
{
    llama_prof_destroy(t->prof);
    free(t->profile);
    t->prof = NULL;
    t->profile = NULL;
}
