/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_json.c: what `sharc-perf tune` reads and writes as JSON (json-c): the target (sharc-topo's
 * JSON, the driver, kernel and library versions, the fingerprint over them) and tune.json,
 * everything measured and decided, written after a tune and read back by --check. The text
 * files (tables, env files, report) are tune_out.c's.
 */
#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <sharc/sharc.h>

#include "../common/perf_json.h"
#include "../common/perf_util.h"
#include "tune_out.h"

/* ---- the target: topology and versions ---------------------------------------------------- */

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
    perf_snprintf(t->fabric, sizeof(t->fabric), "%s", perf_jstr(o, "fabric"));
    perf_snprintf(t->intra, sizeof(t->intra), "%s", perf_jstr(o, "intra"));
    if ((arr = perf_jarr(o, "gpus")) != NULL) {
        t->ngpus = (int)json_object_array_length(arr);
        for (int i = 0; i < t->ngpus; i++) {
            json_object *g = json_object_array_get_idx(arr, i);
            if (i == 0) {
                t->gpu_sm = perf_jint(g, "sm");
                t->nvlinks = perf_jint(g, "nvlinks_switch");
                t->gpu_net_gbps = perf_jnum(g, "net_gbps", 0);
            }
            size_t u = strlen(gpus);
            perf_snprintf(gpus + u, sizeof(gpus) - u, "%s%s", i ? "," : "", perf_jstr(g, "model"));
        }
    }
    if ((arr = perf_jarr(o, "nics")) != NULL) {
        t->nnics = (int)json_object_array_length(arr);
        for (int i = 0; i < t->nnics; i++) {
            json_object *nic = json_object_array_get_idx(arr, i);
            double rate = perf_jnum(perf_jidx(perf_jarr(nic, "ports"), 0), "rate_gbps", 0);

            t->nic_gbps = rate > t->nic_gbps ? rate : t->nic_gbps;
            size_t u = strlen(nics);
            perf_snprintf(nics + u, sizeof(nics) - u, "%s%s:%.0f", i ? "," : "",
                          perf_jstr(nic, "name"), rate);
        }
    }
    int nvswitches = perf_jint(o, "nvswitches");
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
                  (unsigned long long)perf_fnv1a(t->fp_text));
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

/* ---- tune.json ------------------------------------------------------------------------------ */

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

int perf_tune_write_json(const char *dir, const perf_tune_target_t *t, const perf_tune_plan_t *plan,
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
    perf_snprintf(saved->fingerprint, sizeof(saved->fingerprint), "%s",
                  perf_jstr(o, "fingerprint"));
    perf_snprintf(saved->fp_text, sizeof(saved->fp_text), "%s", perf_jstr(o, "fingerprint_text"));
    saved->np = perf_jint(o, "np");
    saved->nodes = perf_jint(o, "nodes");
    saved->cuda = strcmp(perf_jstr(o, "device"), "cuda") == 0;
    json_object_object_get_ex(o, "base_env", &v);
    env_from_json(v, &saved->base_env);
    json_object_object_get_ex(o, "global", &v);
    env_from_json(v, &saved->plan.global);
    for (size_t k = 0; k < json_object_array_length(colls); k++) {
        json_object *co = json_object_array_get_idx(colls, k), *sizes, *at, *kept, *tuned;
        json_object *spread;
        const char *name = perf_jstr(co, "collective");
        int c = perf_coll_index(name);

        if (c < 0 || (sizes = perf_jarr(co, "sizes")) == NULL ||
            (at = perf_jarr(co, "per_size")) == NULL || (kept = perf_jarr(co, "kept")) == NULL ||
            (tuned = perf_jarr(co, "tuned_busbw")) == NULL ||
            json_object_array_length(sizes) > PERF_TUNE_MAX_SIZES ||
            json_object_array_length(at) != json_object_array_length(sizes) ||
            json_object_array_length(kept) != json_object_array_length(sizes) ||
            json_object_array_length(tuned) != json_object_array_length(sizes)) {
            perf_snprintf(err, errlen, "%s: collective %zu ('%s') is malformed", path, k, name);
            goto out;
        }
        perf_tune_coll_plan_t *p = &saved->plan.coll[c];
        spread = perf_jarr(co, "spread");
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
