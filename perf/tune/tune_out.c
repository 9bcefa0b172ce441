/*
 * tune_out.c: what `sharc-perf tune` writes, and what --check reads back.
 *
 *   tuned.env        the global settings in /etc/nccl.conf's format (KEY=VALUE lines, '#'
 *                    comments), with SHARC_TUNE_FILE / NCCL_TUNER_CONFIG_FILE naming the
 *                    tables below when they have rows
 *   tuned.sh         the same as shell exports
 *   sharc-tune.conf  sharc's per-size algorithm table (SHARC_TUNE_FILE)
 *   nccl-tuner.csv   NCCL's per-size algorithm, protocol and channels in the CSV of NCCL's
 *                    example tuner plugin (NCCL_TUNER_PLUGIN + NCCL_TUNER_CONFIG_FILE)
 *   tune.json        everything measured and decided, for --check
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
#include <json.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../common/perf_util.h"

/* ---- the target: topology and versions ---------------------------------------------------- */

static const char *jstr(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static double jnum(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

/* First line of a command's output (or of a file), "none" when there is none. */
static void first_line(const char *cmd, const char *file, char *buf, size_t len)
{
    FILE *f = cmd != NULL ? popen(cmd, "r") : fopen(file, "r");

    perf_snprintf(buf, len, "none");
    if (f == NULL) {
        return;
    }
    if (fgets(buf, (int)len, f) == NULL || buf[0] == '\0') {
        perf_snprintf(buf, len, "none");
    }
    buf[strcspn(buf, "\n")] = '\0';
    if (cmd != NULL) {
        pclose(f);
    } else {
        fclose(f);
    }
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return h;
}

int perf_tune_target_detect(perf_tune_target_t *t, const char *topo_cmd, char *err, size_t errlen)
{
    char *text = NULL, line[256], driver[128], ucx[128], nccl[32], gpus[256] = "", nics[512] = "";
    size_t len = 0, cap = 0;
    FILE *f = popen(topo_cmd, "r");
    json_object *o, *arr;
    struct utsname un;

    if (f == NULL) {
        perf_snprintf(err, errlen, "cannot run '%s': %s", topo_cmd, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t n = strlen(line);
        if (len + n + 1 > cap) {
            char *more = realloc(text, cap = 2 * (len + n + 1));
            if (more == NULL) {
                break;
            }
            text = more;
        }
        memcpy(text + len, line, n + 1);
        len += n;
    }
    int status = pclose(f);
    o = text != NULL ? json_tokener_parse(text) : NULL;
    free(text);
    if (o == NULL) {
        perf_snprintf(err, errlen, "'%s' gave no topology (exit status %d)", topo_cmd, status);
        return -1;
    }
    perf_snprintf(t->fabric, sizeof(t->fabric), "%s", jstr(o, "fabric"));
    perf_snprintf(t->intra, sizeof(t->intra), "%s", jstr(o, "intra"));
    if (json_object_object_get_ex(o, "gpus", &arr)) {
        t->ngpus = (int)json_object_array_length(arr);
        for (int i = 0; i < t->ngpus; i++) {
            json_object *g = json_object_array_get_idx(arr, i);
            if (i == 0) {
                t->gpu_sm = (int)jnum(g, "sm");
                t->nvlinks = (int)jnum(g, "nvlinks_switch");
                t->gpu_net_gbps = jnum(g, "net_gbps");
            }
            size_t u = strlen(gpus);
            perf_snprintf(gpus + u, sizeof(gpus) - u, "%s%s", i ? "," : "", jstr(g, "model"));
        }
    }
    if (json_object_object_get_ex(o, "nics", &arr)) {
        t->nnics = (int)json_object_array_length(arr);
        for (int i = 0; i < t->nnics; i++) {
            json_object *nic = json_object_array_get_idx(arr, i), *ports;
            double rate = 0;
            if (json_object_object_get_ex(nic, "ports", &ports) &&
                json_object_array_length(ports) > 0) {
                rate = jnum(json_object_array_get_idx(ports, 0), "rate_gbps");
            }
            t->nic_gbps = rate > t->nic_gbps ? rate : t->nic_gbps;
            size_t u = strlen(nics);
            perf_snprintf(nics + u, sizeof(nics) - u, "%s%s:%.0f", i ? "," : "", jstr(nic, "name"),
                          rate);
        }
    }
    int nvswitches = (int)jnum(o, "nvswitches");
    json_object_put(o);

    first_line(NULL, "/sys/module/nvidia/version", driver, sizeof(driver));
    first_line("ucx_info -v 2>/dev/null", NULL, ucx, sizeof(ucx));
    perf_snprintf(nccl, sizeof(nccl), t->nccl_version > 0 ? "%d" : "none", t->nccl_version);
    if (uname(&un) != 0) {
        perf_snprintf(un.release, sizeof(un.release), "unknown");
    }
    perf_snprintf(t->fp_text, sizeof(t->fp_text),
                  "topology: fabric %s, GPUs %s (%d: %s), NICs %d (%s), NVSwitches %d\n"
                  "job: %d ranks on %d node(s), %s buffers\n"
                  "driver: nvidia %s; kernel %s\n"
                  "libraries: sharc %s, NCCL %s, UCX %s\n",
                  t->fabric, t->intra, t->ngpus, gpus, t->nnics, nics, nvswitches, t->np, t->nodes,
                  t->cuda ? "device" : "host", driver, un.release,
                  sharc_get_version(NULL, NULL, NULL), nccl, ucx[0] == '#' ? ucx + 2 : ucx);
    perf_snprintf(t->fingerprint, sizeof(t->fingerprint), "%016llx",
                  (unsigned long long)fnv1a(t->fp_text));
    return 0;
}

double perf_tune_expected_gbps(const perf_tune_target_t *t, double memcpy_gbps)
{
    if (!t->cuda) {
        /* host buffers on one node: every byte is copied by a core; between nodes the NIC */
        if (t->nodes > 1 && t->nic_gbps > 0) {
            return t->nic_gbps / 8;
        }
        return memcpy_gbps;
    }
    if (t->nodes > 1) {
        return t->gpu_net_gbps > 0 ? t->gpu_net_gbps / 8 : 0;
    }
    if (strcmp(t->intra, "NVSwitch") == 0 && t->nvlinks > 0) {
        return 25.0 * t->nvlinks; /* NVLink 3 and 4: 25 GB/s per link and direction */
    }
    if (strcmp(t->intra, "PCIe") == 0) {
        return 24.0; /* PCIe gen4 x16, what a copy reaches */
    }
    return 0;
}

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

static json_object *doubles(const double *v, int n)
{
    json_object *a = json_object_new_array();

    for (int i = 0; i < n; i++) {
        json_object_array_add(a, json_object_new_double(v[i]));
    }
    return a;
}

static json_object *env_json(const perf_tune_env_t *env)
{
    json_object *o = json_object_new_object();

    for (int i = 0; i < env->n; i++) {
        json_object_object_add(o, env->kv[i].key, json_object_new_string(env->kv[i].value));
    }
    return o;
}

static int write_json(const char *dir, const perf_tune_target_t *t, const perf_tune_plan_t *plan,
                      const perf_tune_env_t *base_env)
{
    char path[PATH_MAX];
    json_object *o = json_object_new_object(), *colls = json_object_new_array();
    int ret;

    json_object_object_add(o, "fingerprint", json_object_new_string(t->fingerprint));
    json_object_object_add(o, "fingerprint_text", json_object_new_string(t->fp_text));
    json_object_object_add(o, "np", json_object_new_int(t->np));
    json_object_object_add(o, "nodes", json_object_new_int(t->nodes));
    json_object_object_add(o, "device", json_object_new_string(t->cuda ? "cuda" : "host"));
    json_object_object_add(o, "base_env", env_json(base_env));
    json_object_object_add(o, "global", env_json(&plan->global));
    json_object_object_add(o, "global_proposed", env_json(&plan->proposed));
    json_object_object_add(o, "global_gain", json_object_new_double(plan->global_gain));
    json_object_object_add(o, "global_spread", json_object_new_double(plan->global_spread));
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        const perf_tune_coll_plan_t *p = &plan->coll[c];
        json_object *co, *sizes, *at, *kept;

        if (p->n == 0) {
            continue;
        }
        co = json_object_new_object();
        sizes = json_object_new_array();
        at = json_object_new_array();
        kept = json_object_new_array();
        for (int i = 0; i < p->n; i++) {
            json_object_array_add(sizes, json_object_new_int64((int64_t)p->size[i]));
            json_object_array_add(at, env_json(&p->at[i]));
            json_object_array_add(kept, json_object_new_boolean(p->kept[i]));
        }
        json_object_object_add(co, "collective",
                               json_object_new_string(sharc_coll_name((sharc_coll_type_t)(c))));
        json_object_object_add(co, "sizes", sizes);
        json_object_object_add(co, "per_size", at);
        json_object_object_add(co, "kept", kept);
        json_object_object_add(co, "default_busbw", doubles(p->base, p->n));
        json_object_object_add(co, "tuned_busbw", doubles(p->tuned, p->n));
        json_object_object_add(co, "spread", doubles(p->spread, p->n));
        json_object_array_add(colls, co);
    }
    json_object_object_add(o, "collectives", colls);
    perf_snprintf(path, sizeof(path), "%s/tune.json", dir);
    ret = json_object_to_file_ext(path, o, JSON_C_TO_STRING_PRETTY) == 0 ? 0 : -1;
    json_object_put(o);
    return ret;
}

static void env_from_json(json_object *o, perf_tune_env_t *env)
{
    memset(env, 0, sizeof(*env));
    if (o == NULL || json_object_get_type(o) != json_type_object) {
        return;
    }
    json_object_object_foreach(o, key, val)
    {
        perf_tune_env_set(env, key, json_object_get_string(val));
    }
}

int perf_tune_load(const char *path, perf_tune_saved_t *saved, char *err, size_t errlen)
{
    json_object *o = json_object_from_file(path), *colls, *v;
    int ret = -1;

    memset(saved, 0, sizeof(*saved));
    if (o == NULL) {
        perf_snprintf(err, errlen, "%s: not a tune result (%s)", path, json_util_get_last_err());
        return -1;
    }
    if (!json_object_object_get_ex(o, "collectives", &colls) ||
        json_object_get_type(colls) != json_type_array) {
        perf_snprintf(err, errlen, "%s: no collectives", path);
        goto out;
    }
    perf_snprintf(saved->fingerprint, sizeof(saved->fingerprint), "%s", jstr(o, "fingerprint"));
    perf_snprintf(saved->fp_text, sizeof(saved->fp_text), "%s", jstr(o, "fingerprint_text"));
    saved->np = (int)jnum(o, "np");
    saved->nodes = (int)jnum(o, "nodes");
    saved->cuda = strcmp(jstr(o, "device"), "cuda") == 0;
    json_object_object_get_ex(o, "base_env", &v);
    env_from_json(v, &saved->base_env);
    json_object_object_get_ex(o, "global", &v);
    env_from_json(v, &saved->plan.global);
    for (size_t k = 0; k < json_object_array_length(colls); k++) {
        json_object *co = json_object_array_get_idx(colls, k), *sizes, *at, *kept, *tuned;
        json_object *spread = NULL;
        const char *name = jstr(co, "collective");
        int c;

        for (c = 0;
             c < PERF_TUNE_NCOLLS && strcmp(name, sharc_coll_name((sharc_coll_type_t)(c))) != 0;
             c++) {
        }
        if (c == PERF_TUNE_NCOLLS || !json_object_object_get_ex(co, "sizes", &sizes) ||
            !json_object_object_get_ex(co, "per_size", &at) ||
            !json_object_object_get_ex(co, "kept", &kept) ||
            !json_object_object_get_ex(co, "tuned_busbw", &tuned) ||
            json_object_array_length(sizes) > PERF_TUNE_MAX_SIZES ||
            json_object_array_length(at) != json_object_array_length(sizes) ||
            json_object_array_length(kept) != json_object_array_length(sizes) ||
            json_object_array_length(tuned) != json_object_array_length(sizes)) {
            perf_snprintf(err, errlen, "%s: collective %zu ('%s') is malformed", path, k, name);
            goto out;
        }
        perf_tune_coll_plan_t *p = &saved->plan.coll[c];
        json_object_object_get_ex(co, "spread", &spread);
        p->coll = c;
        p->n = (int)json_object_array_length(sizes);
        for (int i = 0; i < p->n; i++) {
            p->size[i] = (size_t)json_object_get_int64(json_object_array_get_idx(sizes, i));
            env_from_json(json_object_array_get_idx(at, i), &p->at[i]);
            p->kept[i] = json_object_get_boolean(json_object_array_get_idx(kept, i));
            saved->tuned[c][i] = json_object_get_double(json_object_array_get_idx(tuned, i));
            saved->spread[c][i] = spread != NULL && json_object_array_length(spread) == (size_t)p->n
                                      ? json_object_get_double(json_object_array_get_idx(spread, i))
                                      : 0;
        }
        saved->colls |= 1u << c;
    }
    if (saved->colls == 0 || saved->np < 1) {
        perf_snprintf(err, errlen, "%s: nothing to check (no collectives or no rank count)", path);
        goto out;
    }
    ret = 0;
out:
    json_object_put(o);
    return ret;
}

static void report_plot(const char *dir, const perf_tune_plan_t *plan)
{
    char path[PATH_MAX], cmd[PATH_MAX * 2];
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
    perf_snprintf(cmd, sizeof(cmd), "command -v gnuplot >/dev/null && gnuplot '%s/report.gp'", dir);
    if (system(cmd) != 0) {
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

int perf_tune_write(const char *dir, const perf_tune_target_t *t, const perf_tune_space_t *space,
                    const perf_tune_plan_t *plan, const perf_tune_env_t *base_env)
{
    char path[PATH_MAX], absdir[PATH_MAX], csv_path[PATH_MAX], conf_path[PATH_MAX];
    int sharc_n = 0, nccl_n = 0, nccl_skipped = 0;
    FILE *f;

    if (realpath(dir, absdir) == NULL) {
        perf_snprintf(absdir, sizeof(absdir), "%s", dir);
    }
    /* sharc's table */
    if ((f = open_out(dir, "sharc-tune.conf", conf_path, sizeof(conf_path))) == NULL) {
        return -1;
    }
    header(f, "sharc tune file v1 (SHARC_TUNE_FILE)", t);
    fprintf(f, "# collective    ranks    min_bytes    max_bytes  algorithm\n");
    sharc_n = sharc_rows(f, plan, t->np);
    fclose(f);
    /* NCCL's tuner CSV */
    if ((f = open_out(dir, "nccl-tuner.csv", csv_path, sizeof(csv_path))) == NULL) {
        return -1;
    }
    header(f, "NCCL tuner configuration (example tuner plugin's CSV format)", t);
    fprintf(f, "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
               "numPipeOps,regBuff\n");
    nccl_n = nccl_rows(f, plan, t, &nccl_skipped);
    fclose(f);
    /* the env file and the exports */
    for (int sh = 0; sh < 2; sh++) {
        if ((f = open_out(dir, sh ? "tuned.sh" : "tuned.env", path, sizeof(path))) == NULL) {
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
        if (plan->global.n == 0 && sharc_n == 0 && nccl_n == 0) {
            fprintf(f, "# nothing beat the defaults by more than the measured spread\n");
        }
        for (int i = 0; i < plan->global.n; i++) {
            fprintf(f, sh ? "export %s='%s'\n" : "%s=%s\n", plan->global.kv[i].key,
                    plan->global.kv[i].value);
        }
        if (sharc_n > 0) {
            fprintf(f,
                    sh ? "export SHARC_TUNE_FILE='%s/sharc-tune.conf'\n"
                       : "SHARC_TUNE_FILE=%s/sharc-tune.conf\n",
                    absdir);
        }
        if (nccl_n > 0) {
            fprintf(f,
                    "# NCCL reads the CSV through its example tuner plugin: set NCCL_TUNER_PLUGIN "
                    "to the plugin's library\n");
            fprintf(f,
                    sh ? "export NCCL_TUNER_CONFIG_FILE='%s/nccl-tuner.csv'\n"
                       : "NCCL_TUNER_CONFIG_FILE=%s/nccl-tuner.csv\n",
                    absdir);
        }
        fclose(f);
    }
    if (write_json(dir, t, plan, base_env) != 0) {
        fprintf(stderr, "sharc-perf tune: cannot write %s/tune.json\n", dir);
        return -1;
    }
    /* the report */
    if ((f = open_out(dir, "report.md", path, sizeof(path))) == NULL) {
        return -1;
    }
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
    fprintf(f, "Kept: %s. sharc table rows: %d; NCCL tuner rows: %d%s.\n\n", kept, sharc_n, nccl_n,
            nccl_skipped ? " (sizes with channels alone have no CSV row)" : "");
    fprintf(f, "A per-size setting is kept where every interleaved round of it beats every "
               "round of the defaults and the medians are apart by more than the spread (max - "
               "min over either's rounds) plus the noise floor (2%%).\n\n");
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
    report_plot(dir, plan);
    return 0;
}
