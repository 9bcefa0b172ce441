/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_space.c: what `sharc-perf tune` searches. Built in per backend and filtered by the
 * detected topology and the job's shape, so that no candidate is spent on a knob that cannot
 * matter (InfiniBand knobs without an RDMA port, socket knobs where sockets carry nothing,
 * UCX knobs where UCX carries no traffic, NVLS without NVSwitch); every knob left out is
 * listed with why. A space file of the user's restricts, drops or adds knobs.
 *
 * Defaults (the baseline) are never a candidate value: a knob's values are the
 * alternatives to leaving it unset.
 */
#include "../common/perf_util.h"
#include "tune.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PERF_TUNE_ALL_COLLS ((1u << PERF_TUNE_NCOLLS) - 1)
#define PERF_TUNE_BIT(_c)   (1u << (_c))

static perf_tune_knob_t *knob(perf_tune_space_t *s, const char *name, int per_size, unsigned colls,
                              const char *why)
{
    perf_tune_knob_t *k;

    if (s->nknobs == PERF_TUNE_MAX_KNOBS) {
        return NULL;
    }
    k = &s->knobs[s->nknobs++];
    memset(k, 0, sizeof(*k));
    perf_snprintf(k->name, sizeof(k->name), "%s", name);
    perf_snprintf(k->why, sizeof(k->why), "%s", why);
    k->per_size = per_size;
    k->colls = colls;
    return k;
}

/* "K=..." with K a variable name (upper case, digits, _), not a value like "=mlx5_0" */
static int is_assignment(const char *v)
{
    size_t n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

    return n > 0 && v[n] == '=' && isupper((unsigned char)v[0]);
}

/* A value: "V" sets the knob's own variable, else "K=V;K=V" as given. */
static void value(perf_tune_knob_t *k, const char *v)
{
    if (k == NULL || k->nvalues == PERF_TUNE_MAX_VALUES) {
        return;
    }
    char name[PERF_TUNE_NAME];

    memcpy(name, k->name, sizeof(name));
    if (is_assignment(v)) {
        perf_snprintf(k->values[k->nvalues++], PERF_TUNE_VALUE, "%s", v);
    } else {
        perf_snprintf(k->values[k->nvalues++], PERF_TUNE_VALUE, "%s=%s", name, v);
    }
}

/* A knob with one variable and a NULL-terminated list of values. */
static void simple(perf_tune_space_t *s, const char *name, int per_size, unsigned colls,
                   const char *why, const char *const *values)
{
    perf_tune_knob_t *k = knob(s, name, per_size, colls, why);

    for (int i = 0; k != NULL && values[i] != NULL; i++) {
        value(k, values[i]);
    }
}

static void leave_out(perf_tune_space_t *s, const char *fmt, ...)
{
    va_list ap;

    if (s->nleft == PERF_TUNE_MAX_KNOBS) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s->left_out[s->nleft++], sizeof(s->left_out[0]), fmt, ap);
    va_end(ap);
}

/* ---- sharc's own and UCX's, for host buffers ---------------------------------------------- */

static void space_host(const perf_tune_target_t *t, perf_tune_space_t *s)
{
    int pow2 = t->np > 0 && (t->np & (t->np - 1)) == 0, left_pow2 = 0;
    static const char *const chunks[] = {"256k", "512k", "2m", "4m", NULL};

    /* algorithms per collective and size: sharc's table (SHARC_TUNE_FILE), from the library's
     * own list of algorithms and their constraints */
    for (int c = 0; c < PERF_TUNE_NCOLLS; c++) {
        const sharc_coll_algo_info_t *algo;
        char name[PERF_TUNE_NAME], why[64], upper[32];
        perf_tune_knob_t *k;

        perf_snprintf(upper, sizeof(upper), "%s", sharc_coll_name((sharc_coll_type_t)c));
        for (char *p = upper; *p != '\0'; p++) {
            *p = (char)toupper((unsigned char)*p);
        }
        perf_snprintf(name, sizeof(name), "SHARC_%s_ALGO", upper);
        perf_snprintf(why, sizeof(why), "sharc's %s algorithm per size",
                      sharc_coll_name((sharc_coll_type_t)c));
        k = knob(s, name, 1, PERF_TUNE_BIT(c), why);
        for (int i = 0; k != NULL && (algo = sharc_coll_algo((sharc_coll_type_t)c, i)) != NULL;
             i++) {
            if ((algo->flags & SHARC_COLL_ALGO_POW2) && !pow2) {
                left_pow2 = 1;
            } else {
                value(k, algo->name);
            }
        }
    }
    if (left_pow2) {
        leave_out(s, "recursive doubling / halving: %d ranks is not a power of two", t->np);
    }
    simple(s, "SHARC_COLL_CHUNK", 0, PERF_TUNE_ALL_COLLS & ~PERF_TUNE_BIT(SHARC_COLL_ALLTOALL),
           "chunk of the pipelined ring and chain (default 1m)", chunks);
    if (t->shm) {
        simple(s, "SHARC_SHM_CMA", 0, PERF_TUNE_ALL_COLLS,
               "single-copy reads between processes of a node (default yes)",
               (const char *const[]){"no", NULL});
        simple(s, "SHARC_SHM_CMA_REDUCE_MIN", 0,
               PERF_TUNE_BIT(SHARC_COLL_ALLREDUCE) | PERF_TUNE_BIT(SHARC_COLL_REDUCE_SCATTER),
               "smallest message a reduction reads with CMA (default 256k)",
               (const char *const[]){"0", "16m", NULL});
    } else {
        leave_out(s, "SHARC_SHM_CMA, SHARC_SHM_CMA_REDUCE_MIN: sharc's shm transport carries no "
                     "traffic here");
    }

    if (!t->ucx) {
        leave_out(s, "UCX_*: UCX carries no traffic here (one node: sharc's shm transport); "
                     "put SHARC_TRANSPORT=ucx in the base environment to tune it");
        return;
    }
    perf_tune_knob_t *k = knob(s, "UCX_TLS", 0, PERF_TUNE_ALL_COLLS, "UCX transports");
    if (t->nodes <= 1) {
        value(k, "sm,self");
        value(k, "posix,cma,self");
        value(k, "tcp,self");
    } else if (strcmp(t->fabric, "InfiniBand") == 0 || strcmp(t->fabric, "RoCE") == 0) {
        value(k, "rc,sm,self");
        value(k, "ud,sm,self");
        if (strcmp(t->fabric, "InfiniBand") == 0) {
            value(k, "dc,sm,self");
        }
    } else {
        value(k, "tcp,sm,self");
        value(k, "tcp,posix,cma,self");
    }
    simple(s, "UCX_RNDV_THRESH", 0, PERF_TUNE_ALL_COLLS,
           "message size where UCX switches to rendezvous (default auto)",
           (const char *const[]){"8k", "32k", "128k", "512k", NULL});
    simple(s, "UCX_ZCOPY_THRESH", 0, PERF_TUNE_ALL_COLLS,
           "message size where UCX sends without a copy (default auto)",
           (const char *const[]){"8k", "64k", "512k", NULL});
    simple(s, "UCX_RNDV_SCHEME", 0, PERF_TUNE_ALL_COLLS, "how rendezvous moves the data",
           (const char *const[]){"get_zcopy", "put_zcopy", NULL});
    if (t->nodes > 1 && t->nnics > 1) {
        simple(s, "UCX_MAX_RNDV_RAILS", 0, PERF_TUNE_ALL_COLLS,
               "NICs one large message is striped over",
               (const char *const[]){"1", "2", "4", NULL});
    } else {
        leave_out(s, "UCX_MAX_RNDV_RAILS: one node or one NIC");
    }
}

/* ---- NCCL's, for device buffers ----------------------------------------------------------- */

/* NCCL's algorithm and protocol per collective and size, jointly (they interact): the rows
 * of NCCL's tuner CSV. @p net: several nodes; @p nvls: NVLink SHARP. */
static void space_nccl_algos(const perf_tune_target_t *t, perf_tune_space_t *s, int net, int nvls)
{
    int ll128 = t->gpu_sm >= 70 || t->gpu_sm == 0;
    static const struct {
        sharc_coll_type_t coll;
        const char *nccl;
    } colls[] = {{SHARC_COLL_ALLGATHER, "allgather"},
                 {SHARC_COLL_REDUCE_SCATTER, "reduce_scatter"},
                 {SHARC_COLL_ALLREDUCE, "allreduce"},
                 {SHARC_COLL_BROADCAST, "broadcast"}};
    const char *protos[] = {"LL", "LL128", "Simple"};

    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
        const char *algos[4];
        int nalgos = 0;
        char name[PERF_TUNE_NAME], v[PERF_TUNE_VALUE];

        algos[nalgos++] = "Ring";
        if (colls[c].coll == SHARC_COLL_ALLREDUCE) {
            algos[nalgos++] = "Tree";
            if (nvls) {
                algos[nalgos++] = net ? "NVLSTree" : "NVLS";
            }
        } else if (colls[c].coll != SHARC_COLL_BROADCAST) {
            if (nvls) {
                algos[nalgos++] = "NVLS";
            }
            if (net && t->np == t->nodes) {
                algos[nalgos++] = "PAT"; /* one GPU per node */
            }
        }
        perf_snprintf(name, sizeof(name), "NCCL_ALGO+NCCL_PROTO:%s", colls[c].nccl);
        perf_tune_knob_t *k = knob(s, name, 1, PERF_TUNE_BIT(colls[c].coll),
                                   "NCCL's algorithm and protocol per size (tuner CSV)");
        for (int a = 0; a < nalgos; a++) {
            for (int p = 0; p < 3; p++) {
                if (!ll128 && p == 1) {
                    continue;
                }
                perf_snprintf(v, sizeof(v), "NCCL_ALGO=%s;NCCL_PROTO=%s", algos[a], protos[p]);
                value(k, v);
            }
        }
    }
}

static void space_nccl(const perf_tune_target_t *t, perf_tune_space_t *s)
{
    int net = t->nodes > 1;
    int rdma = strcmp(t->fabric, "InfiniBand") == 0 || strcmp(t->fabric, "RoCE") == 0;
    int sockets = net && (strcmp(t->fabric, "Ethernet") == 0 || strcmp(t->fabric, "none") == 0);
    int nvls = strcmp(t->intra, "NVSwitch") == 0 && t->gpu_sm >= 90;

    space_nccl_algos(t, s, net, nvls);
    if (!nvls) {
        leave_out(s, "NVLS algorithms, NCCL_NVLS_ENABLE: no NVSwitch with sm90+ GPUs");
    }
    perf_tune_knob_t *k = knob(s, "NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS", 1,
                               PERF_TUNE_ALL_COLLS & ~PERF_TUNE_BIT(SHARC_COLL_ALLTOALL),
                               "NCCL channels per size (tuner CSV)");
    for (int ch = 2; ch <= 32; ch *= 2) {
        char v[PERF_TUNE_VALUE];
        perf_snprintf(v, sizeof(v), "NCCL_MIN_NCHANNELS=%d;NCCL_MAX_NCHANNELS=%d", ch, ch);
        value(k, v);
    }
    simple(s, "NCCL_BUFFSIZE", 0, PERF_TUNE_ALL_COLLS, "NCCL's buffer per channel (default 4 MiB)",
           (const char *const[]){"1048576", "2097152", "8388608", "16777216", NULL});
    simple(s, "NCCL_NTHREADS", 0, PERF_TUNE_ALL_COLLS, "CUDA threads per NCCL block",
           (const char *const[]){"256", "512", NULL});
    if (nvls) {
        simple(s, "NCCL_NVLS_ENABLE", 0, PERF_TUNE_ALL_COLLS, "NVLink SHARP on the NVSwitches",
               (const char *const[]){"0", NULL});
    }
    if (net && rdma) {
        simple(s, "NCCL_IB_QPS_PER_CONNECTION", 0, PERF_TUNE_ALL_COLLS,
               "queue pairs per connection (ECMP spreading on RoCE and adaptive routing)",
               (const char *const[]){"2", "4", NULL});
    } else {
        leave_out(s, "NCCL_IB_*: %s", net ? "no InfiniBand or RoCE port" : "one node");
    }
    if (net) {
        simple(s, "NCCL_P2P_NET_CHUNKSIZE", 0, PERF_TUNE_ALL_COLLS,
               "chunk of network point-to-point transfers (default 128 KiB)",
               (const char *const[]){"65536", "262144", "524288", NULL});
    } else {
        leave_out(s, "NCCL_P2P_NET_CHUNKSIZE: one node, no network transfers");
    }
    if (sockets) {
        simple(s, "NCCL_SOCKET_NTHREADS", 0, PERF_TUNE_ALL_COLLS, "socket helper threads",
               (const char *const[]){"2", "4", "8", NULL});
        simple(s, "NCCL_NSOCKS_PERTHREAD", 0, PERF_TUNE_ALL_COLLS, "sockets per helper thread",
               (const char *const[]){"2", "4", NULL});
    } else {
        leave_out(s,
                  "NCCL_SOCKET_NTHREADS, NCCL_NSOCKS_PERTHREAD: sockets carry no traffic "
                  "(%s)",
                  net ? "RDMA fabric" : "one node");
    }
    if (net && t->nnics > 1) {
        simple(s, "NCCL_CROSS_NIC", 0, PERF_TUNE_ALL_COLLS,
               "rings and trees may change NIC between nodes",
               (const char *const[]){"0", "1", NULL});
    } else {
        leave_out(s, "NCCL_CROSS_NIC: one node or one NIC");
    }
}

void perf_tune_space_build(const perf_tune_target_t *t, perf_tune_space_t *space)
{
    memset(space, 0, sizeof(*space));
    if (t->cuda) {
        space_nccl(t, space);
        leave_out(space, "SHARC_*_ALGO, UCX_*: device buffers run through NCCL");
    } else {
        space_host(t, space);
        leave_out(space, "NCCL_*: host buffers; --device cuda tunes NCCL on GPUs");
    }
}

/* ---- the user's space file ---------------------------------------------------------------- */

int perf_tune_value_ok(const char *value)
{
    if (*value == '\0') {
        return 0;
    }
    for (const char *p = value; *p != '\0'; p++) {
        if (!isalnum((unsigned char)*p) && strchr("_.,:+-/^=@", *p) == NULL) {
            return 0;
        }
    }
    return 1;
}

static int find_knob(const perf_tune_space_t *s, const char *name)
{
    for (int k = 0; k < s->nknobs; k++) {
        if (strcmp(s->knobs[k].name, name) == 0) {
            return k;
        }
    }
    return -1;
}

static void remove_knob(perf_tune_space_t *s, int k)
{
    memmove(&s->knobs[k], &s->knobs[k + 1], (size_t)(s->nknobs - k - 1) * sizeof(s->knobs[0]));
    s->nknobs--;
}

static int env_name_ok(const char *name)
{
    static const char *const prefixes[] = {"NCCL_", "UCX_", "SHARC_", "FI_"};
    int ok = 0;

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        ok |= strncmp(name, prefixes[i], strlen(prefixes[i])) == 0;
    }
    for (const char *p = name; ok && *p != '\0'; p++) {
        ok = isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_';
    }
    return ok;
}

/* "K=V;K=V" with every K a variable of the kind env_name_ok takes, every V shell-safe */
static int assignments_ok(const char *text)
{
    char buf[PERF_TUNE_VALUE], *save = NULL;
    int n = 0;

    if (strlen(text) >= sizeof(buf)) {
        return 0;
    }
    perf_snprintf(buf, sizeof(buf), "%s", text);
    for (char *a = strtok_r(buf, ";", &save); a != NULL; a = strtok_r(NULL, ";", &save), n++) {
        char *eq = strchr(a, '=');
        if (eq == NULL) {
            return 0;
        }
        *eq = '\0';
        if (!env_name_ok(a) || !perf_tune_value_ok(eq + 1)) {
            return 0;
        }
    }
    return n > 0;
}

unsigned perf_tune_parse_colls(const char *list, char *unknown, size_t len)
{
    char buf[256], *save = NULL;
    unsigned bits = 0;

    perf_snprintf(buf, sizeof(buf), "%s", list);
    for (char *c = strtok_r(buf, ",", &save); c != NULL; c = strtok_r(NULL, ",", &save)) {
        int i = perf_coll_index(c);

        if (i < 0) {
            perf_snprintf(unknown, len, "%s", c);
            return 0;
        }
        bits |= 1u << i;
    }
    return bits;
}

/* A line's fault into @p why: -1. */
static int space_err(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int space_err(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* "drop KNOB ..." and "only KNOB ...": 0, or -1 with why. */
static int space_drop(perf_tune_space_t *space, char **words, int nw, char *why, size_t len)
{
    int keep[PERF_TUNE_MAX_KNOBS] = {0};

    if (nw < 2) {
        return space_err(why, len, "'%s' needs knob names", words[0]);
    }
    for (int i = 1; i < nw; i++) {
        int k = find_knob(space, words[i]);
        if (k < 0) {
            return space_err(why, len,
                             "unknown knob '%s' (not in the space for this cluster; 'add' "
                             "adds one)",
                             words[i]);
        }
        keep[k] = 1;
    }
    for (int k = space->nknobs - 1; k >= 0; k--) {
        if (keep[k] == (strcmp(words[0], "drop") == 0)) {
            remove_knob(space, k);
        }
    }
    return 0;
}

/* "values KNOB V1 V2 ...": 0, or -1 with why. */
static int space_values(perf_tune_space_t *space, char **words, int nw, char *why, size_t len)
{
    int k = nw >= 3 ? find_knob(space, words[1]) : -2;

    if (k == -2) {
        return space_err(why, len, "'values' needs a knob and at least one value");
    }
    if (k < 0) {
        return space_err(why, len, "unknown knob '%s'", words[1]);
    }
    if (nw - 2 > PERF_TUNE_MAX_VALUES) {
        return space_err(why, len, "at most %d values", PERF_TUNE_MAX_VALUES);
    }
    if (strchr(space->knobs[k].name, '+') != NULL || strchr(space->knobs[k].name, '=') != NULL) {
        for (int i = 2; i < nw; i++) {
            if (!is_assignment(words[i])) {
                return space_err(
                    why, len, "knob '%s' sets several variables: give values as K=V;K=V", words[1]);
            }
        }
    }
    space->knobs[k].nvalues = 0;
    for (int i = 2; i < nw; i++) {
        if (is_assignment(words[i]) ? !assignments_ok(words[i]) : !perf_tune_value_ok(words[i])) {
            return space_err(why, len,
                             "value '%s': not V or K=V;K=V of NCCL_/UCX_/SHARC_/FI_ variables "
                             "with letters, digits and _ . , : + - / ^ = @",
                             words[i]);
        }
        value(&space->knobs[k], words[i]);
    }
    return 0;
}

/* "add VAR V1 V2 ... [for COLL,COLL]": 0, or -1 with why. */
static int space_add(perf_tune_space_t *space, char **words, int nw, char *why, size_t len)
{
    int w = 1, last = nw;
    unsigned colls = PERF_TUNE_ALL_COLLS;
    perf_tune_knob_t *k;

    if (w < nw && strcmp(words[w], "per-size") == 0) {
        return space_err(why, len,
                         "an added knob is global: per-size settings need a table that "
                         "carries them (sharc's algorithms, NCCL's algorithm, protocol and "
                         "channels), and those knobs are built in");
    }
    if (nw >= 2 && strcmp(words[nw - 2], "for") == 0) {
        char unknown[PERF_TUNE_NAME];
        colls = perf_tune_parse_colls(words[nw - 1], unknown, sizeof(unknown));
        if (colls == 0) {
            return space_err(why, len, "unknown collective in '%s'", words[nw - 1]);
        }
        last = nw - 2;
    }
    if (last - w < 2) {
        return space_err(why, len, "'add' needs a variable and at least one value");
    }
    if (!env_name_ok(words[w])) {
        return space_err(why, len, "'%s' is not an NCCL_, UCX_, SHARC_ or FI_ variable", words[w]);
    }
    if (find_knob(space, words[w]) >= 0) {
        return space_err(
            why, len, "knob '%s' is already in the space ('values' changes its values)", words[w]);
    }
    if (last - w - 1 > PERF_TUNE_MAX_VALUES) {
        return space_err(why, len, "at most %d values", PERF_TUNE_MAX_VALUES);
    }
    if ((k = knob(space, words[w], 0, colls, "added by the space file")) == NULL) {
        return space_err(why, len, "too many knobs (at most %d)", PERF_TUNE_MAX_KNOBS);
    }
    for (int i = w + 1; i < last; i++) {
        if (!perf_tune_value_ok(words[i]) || is_assignment(words[i])) {
            return space_err(why, len,
                             "value '%s': not a plain value of letters, digits and "
                             "_ . , : + - / ^ = @",
                             words[i]);
        }
        value(k, words[i]);
    }
    return 0;
}

/* One line of a space file (read into @p buf, '#' comments and all): 0, or -1 with why. */
static int space_line(perf_tune_space_t *space, char *buf, char *why, size_t len)
{
    char *words[PERF_TUNE_MAX_VALUES + 8], *save = NULL, *hash = strchr(buf, '#');
    int nw = 0;

    if (hash != NULL) {
        *hash = '\0';
    }
    for (char *w = strtok_r(buf, " \t\r\n", &save); w != NULL;
         w = strtok_r(NULL, " \t\r\n", &save)) {
        if (nw == (int)(sizeof(words) / sizeof(words[0]))) {
            return space_err(why, len, "too many words (at most %d values)", PERF_TUNE_MAX_VALUES);
        }
        words[nw++] = w;
    }
    if (nw == 0) {
        return 0;
    }
    if (strcmp(words[0], "drop") == 0 || strcmp(words[0], "only") == 0) {
        return space_drop(space, words, nw, why, len);
    }
    if (strcmp(words[0], "values") == 0) {
        return space_values(space, words, nw, why, len);
    }
    if (strcmp(words[0], "add") == 0) {
        return space_add(space, words, nw, why, len);
    }
    return space_err(why, len, "unknown command '%s' (values, drop, only, add)", words[0]);
}

int perf_tune_space_file(perf_tune_space_t *space, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char buf[2048], why[sizeof(buf) + 256];
    int line = 0, ret = 0;

    if (f == NULL) {
        perf_snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    while (ret == 0 && fgets(buf, sizeof(buf), f) != NULL) {
        line++;
        if (strchr(buf, '\n') == NULL && !feof(f)) {
            ret = space_err(why, sizeof(why), "line longer than %zu characters", sizeof(buf) - 2);
        } else {
            ret = space_line(space, buf, why, sizeof(why));
        }
    }
    if (ret != 0) {
        perf_snprintf(err, errlen, "%s:%d: %s", path, line, why);
    }
    fclose(f);
    return ret;
}
