/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune_launch.c: how `sharc-perf tune` measures one candidate: a fresh job through the
 * user's launch template, bounded by a timeout, its JSON results read back (json-c), and
 * every result appended to a journal as it comes in (results.jsonl in the output directory)
 * so that an interrupted sweep resumes where it stopped: a request already in the journal is
 * answered from it.
 *
 * The template is a shell command line with placeholders:
 *   {np}       the rank count
 *   {cmd}      the benchmark, prefixed with `env K=V ...` (the settings reach every rank
 *              with any launcher that runs a command: mpirun, srun, torchrun-style scripts)
 *   {env}      the settings as mpirun options: -x K=V -x K=V
 *   {exports}  the settings as K=V,K=V (srun --export=ALL,{exports})
 * The default is `mpirun -np {np} {cmd}`.
 */
#include "tune_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/perf_json.h"
#include "../common/perf_util.h"

static volatile sig_atomic_t tune_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    tune_interrupted = 1;
}

/* ---- the journal -------------------------------------------------------------------------- */

static void result_key(const perf_tune_launcher_t *l, int coll, size_t minb, size_t maxb,
                       const perf_tune_env_t *env, const char *tag, char *key, size_t len)
{
    char text[PERF_TUNE_MAX_KV * (PERF_TUNE_NAME + PERF_TUNE_VALUE)];

    char base[PERF_TUNE_MAX_KV * (PERF_TUNE_NAME + PERF_TUNE_VALUE)];

    perf_tune_env_text(env, text, sizeof(text));
    perf_tune_env_text(&l->base_env, base, sizeof(base));
    /* everything that changes what a job measures: a resumed run with other options
     * measures again */
    perf_snprintf(key, len, "%s|np=%d|%zu-%zu|n=%d,w=%d,%s,%s|base %s|launch %s|%s|%s",
                  sharc_coll_name((sharc_coll_type_t)(coll)), l->np, minb, maxb, l->iters,
                  l->warmup, l->dtype, l->cuda ? "cuda" : "host", base, l->launch, text, tag);
}

static void json_doubles(json_object *o, const char *name, const double *v, int n)
{
    json_object *a = json_object_new_array();

    for (int i = 0; i < n; i++) {
        json_object_array_add(a, json_object_new_double(v[i]));
    }
    json_object_object_add(o, name, a);
}

static void journal_add(perf_tune_launcher_t *l, const char *key, const perf_tune_result_t *r)
{
    json_object *o = json_object_new_object(), *sizes = json_object_new_array();

    json_object_object_add(o, "key", json_object_new_string(key));
    json_object_object_add(o, "ok", json_object_new_boolean(r->ok));
    json_object_object_add(o, "error", json_object_new_string(r->error));
    json_object_object_add(o, "seconds", json_object_new_double(r->seconds));
    for (int i = 0; i < r->n; i++) {
        json_object_array_add(sizes, json_object_new_int64((int64_t)r->size[i]));
    }
    json_object_object_add(o, "sizes", sizes);
    json_doubles(o, "busbw", r->busbw, r->n);
    json_doubles(o, "memcpy", r->memcpy, r->n);
    fprintf(l->journal, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    fflush(l->journal);
    fsync(fileno(l->journal));
    json_object_put(o);
}

/* Read one journal line into r; 0, or -1 if it is not one (a line cut by a crash). */
static int journal_parse(const char *line, char *key, size_t keylen, perf_tune_result_t *r)
{
    json_object *o = json_tokener_parse(line), *v, *sizes, *bw, *cp;
    int ret = -1;

    memset(r, 0, sizeof(*r));
    if (o == NULL || !json_object_object_get_ex(o, "key", &v) ||
        (sizes = perf_jarr(o, "sizes")) == NULL || (bw = perf_jarr(o, "busbw")) == NULL ||
        (cp = perf_jarr(o, "memcpy")) == NULL ||
        json_object_array_length(sizes) > PERF_TUNE_MAX_SIZES ||
        json_object_array_length(bw) != json_object_array_length(sizes) ||
        json_object_array_length(cp) != json_object_array_length(sizes)) {
        goto out;
    }
    perf_snprintf(key, keylen, "%s", perf_jstr(o, "key"));
    r->ok = json_object_object_get_ex(o, "ok", &v) && json_object_get_boolean(v);
    perf_snprintf(r->error, sizeof(r->error), "%s", perf_jstr(o, "error"));
    r->n = (int)json_object_array_length(sizes);
    for (int i = 0; i < r->n; i++) {
        r->size[i] = (size_t)json_object_get_int64(json_object_array_get_idx(sizes, i));
        r->busbw[i] = json_object_get_double(json_object_array_get_idx(bw, i));
        r->memcpy[i] = json_object_get_double(json_object_array_get_idx(cp, i));
    }
    ret = 0;
out:
    json_object_put(o);
    return ret;
}

static int journal_load(perf_tune_launcher_t *l, const char *path)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;

    if (f == NULL) {
        return errno == ENOENT ? 0 : -1;
    }
    while (getline(&line, &cap, f) > 0) {
        perf_tune_cached_t c;

        if (journal_parse(line, c.key, sizeof(c.key), &c.result) != 0) {
            continue;
        }
        if (l->ncached == l->capcached) {
            int cap2 = l->capcached ? 2 * l->capcached : 64;
            perf_tune_cached_t *more = realloc(l->cached, (size_t)cap2 * sizeof(*more));
            if (more == NULL) {
                break;
            }
            l->cached = more;
            l->capcached = cap2;
        }
        l->cached[l->ncached++] = c;
    }
    free(line);
    fclose(f);
    return 0;
}

/* ---- one launch --------------------------------------------------------------------------- */

/* Append text to buf (bounded); -1 once it does not fit. */
static int put(char *buf, size_t len, size_t *used, const char *text)
{
    size_t n = strlen(text);

    if (*used + n + 1 > len) {
        return -1;
    }
    memcpy(buf + *used, text, n + 1);
    *used += n;
    return 0;
}

int perf_tune_expand(const char *templ, int np, const perf_tune_env_t *env, const char *cmd,
                     char *out, size_t len)
{
    size_t used = 0;
    int ret = 0, has_cmd = 0;

    out[0] = '\0';
    for (const char *p = templ; *p != '\0' && ret == 0;) {
        char piece[PERF_TUNE_VALUE + PERF_TUNE_NAME + 8];

        if (strncmp(p, "{np}", 4) == 0) {
            perf_snprintf(piece, sizeof(piece), "%d", np);
            ret = put(out, len, &used, piece);
            p += 4;
        } else if (strncmp(p, "{cmd}", 5) == 0) {
            ret = put(out, len, &used, cmd);
            has_cmd = 1;
            p += 5;
        } else if (strncmp(p, "{env}", 5) == 0 || strncmp(p, "{exports}", 9) == 0) {
            int mpi = p[1] == 'e' && p[2] == 'n';
            for (int i = 0; i < env->n && ret == 0; i++) {
                perf_snprintf(piece, sizeof(piece), mpi ? "%s-x %s=%s" : "%s%s=%s",
                              i ? (mpi ? " " : ",") : "", env->kv[i].key, env->kv[i].value);
                ret = put(out, len, &used, piece);
            }
            p += mpi ? 5 : 9;
        } else {
            piece[0] = *p++;
            piece[1] = '\0';
            ret = put(out, len, &used, piece);
        }
    }
    return ret == 0 && has_cmd ? 0 : -1;
}

/* The last non-empty line of a log file, for the failure message. */
static void last_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[512];

    buf[0] = '\0';
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != '\0') {
            perf_snprintf(buf, len, "%s", line);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
}

/* Run the shell line with output to log, at most timeout_s. Fills r->ok/error on failure. */
static int run_job(perf_tune_launcher_t *l, const char *line, const char *log,
                   perf_tune_result_t *r)
{
    double t0 = perf_now();
    pid_t pid;
    int status = 0;

    pid = fork();
    if (pid < 0) {
        perf_snprintf(r->error, sizeof(r->error), "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int null = open("/dev/null", O_RDONLY);
        setpgid(0, 0);   /* its own group, so a timeout stops all of it */
        if (null >= 0) { /* a launcher reading a terminal from the background would stop */
            dup2(null, 0);
            close(null);
        }
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            break;
        }
        if (tune_interrupted || perf_now() - t0 > l->timeout_s) {
            kill(-pid, SIGTERM);
            for (int i = 0; i < 60 && waitpid(pid, &status, WNOHANG) == 0; i++) {
                struct timespec ts = {0, 50 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            perf_snprintf(r->error, sizeof(r->error),
                          tune_interrupted ? "interrupted" : "timed out after %.0f s (killed)",
                          l->timeout_s);
            r->seconds = perf_now() - t0;
            return -1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    r->seconds = perf_now() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char last[200];
        last_line(log, last, sizeof(last));
        /* the shell reports a job killed by a signal as 128 + the signal */
        int sig = WIFSIGNALED(status) ? WTERMSIG(status)
                  : WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65
                      ? WEXITSTATUS(status) - 128
                      : 0;
        if (sig != 0) {
            perf_snprintf(r->error, sizeof(r->error), "killed by signal %d: %s", sig, last);
        } else {
            perf_snprintf(r->error, sizeof(r->error), "exit status %d: %s", WEXITSTATUS(status),
                          last);
        }
        return -1;
    }
    return 0;
}

/* sharc-perf's -J file into r: out-of-place busbw per size; wrong results fail it. */
static int read_results(const char *path, perf_tune_result_t *r)
{
    json_object *o = json_object_from_file(path), *results, *v;
    int ret = -1;

    if (o == NULL || !json_object_object_get_ex(o, "results", &results) ||
        json_object_get_type(results) != json_type_array) {
        perf_snprintf(r->error, sizeof(r->error), "no results in %s", path);
        goto out;
    }
    r->n = 0;
    for (size_t i = 0; i < json_object_array_length(results) && r->n < PERF_TUNE_MAX_SIZES; i++) {
        json_object *e = json_object_array_get_idx(results, i), *oop, *ip;
        if (!json_object_object_get_ex(e, "size", &v) ||
            !json_object_object_get_ex(e, "out_of_place", &oop) ||
            !json_object_object_get_ex(e, "in_place", &ip)) {
            perf_snprintf(r->error, sizeof(r->error), "malformed results in %s", path);
            goto out;
        }
        r->size[r->n] = (size_t)json_object_get_int64(v);
        if (!json_object_object_get_ex(oop, "busbw_gbps", &v)) {
            perf_snprintf(r->error, sizeof(r->error), "no busbw in %s", path);
            goto out;
        }
        r->busbw[r->n] = json_object_get_double(v);
        r->memcpy[r->n] =
            json_object_object_get_ex(e, "memcpy_gbps", &v) ? json_object_get_double(v) : 0;
        int64_t wrong = 0;
        if (json_object_object_get_ex(oop, "wrong", &v)) {
            wrong += json_object_get_int64(v);
        }
        if (json_object_object_get_ex(ip, "wrong", &v)) {
            wrong += json_object_get_int64(v);
        }
        if (wrong != 0) {
            perf_snprintf(r->error, sizeof(r->error), "wrong results at %zu bytes (%lld elements)",
                          r->size[r->n], (long long)wrong);
            goto out;
        }
        r->n++;
    }
    ret = r->n > 0 ? 0 : -1;
    if (r->n == 0) {
        perf_snprintf(r->error, sizeof(r->error), "no sizes in %s", path);
    }
out:
    json_object_put(o);
    return ret;
}

int perf_tune_measure(void *arg, int coll, size_t minb, size_t maxb, const perf_tune_env_t *env,
                      const char *tag, perf_tune_result_t *r)
{
    perf_tune_launcher_t *l = arg;
    char key[sizeof(l->cached[0].key)], json[PERF_TUNE_PATH + 32], log[PERF_TUNE_PATH + 32];
    char cmd[8192], line[16384], args[PERF_TUNE_PATH * 2];
    perf_tune_env_t all;
    size_t used = 0;

    if (tune_interrupted) {
        return -1;
    }
    result_key(l, coll, minb, maxb, env, tag, key, sizeof(key));
    for (int i = 0; i < l->ncached; i++) {
        if (strcmp(l->cached[i].key, key) == 0) {
            *r = l->cached[i].result;
            r->seconds = 0; /* from the journal: no launch */
            return 0;
        }
    }
    l->seq++;
    perf_snprintf(json, sizeof(json), "%s/runs/%04d.json", l->dir, l->seq);
    perf_snprintf(log, sizeof(log), "%s/logs/%04d.log", l->dir, l->seq);
    unlink(json);
    perf_tune_env_merge(&all, &l->base_env, env);
    put(cmd, sizeof(cmd), &used, "env");
    for (int i = 0; i < all.n; i++) {
        char kv[PERF_TUNE_NAME + PERF_TUNE_VALUE + 4];
        perf_snprintf(kv, sizeof(kv), " %s=%s", all.kv[i].key, all.kv[i].value);
        put(cmd, sizeof(cmd), &used, kv);
    }
    perf_snprintf(args, sizeof(args), " %s %s -b %zu -e %zu -f 2 -n %d -w %d -c 1 -d %s -J %s%s",
                  l->perf, sharc_coll_name((sharc_coll_type_t)(coll)), minb, maxb, l->iters,
                  l->warmup, l->dtype, json, l->cuda ? " --device cuda" : " --vs-memcpy");
    if (put(cmd, sizeof(cmd), &used, args) != 0 ||
        perf_tune_expand(l->launch, l->np, &all, cmd, line, sizeof(line)) != 0) {
        perf_snprintf(r->error, sizeof(r->error), "launch line too long");
    } else {
        FILE *f = fopen(log, "w");
        if (f != NULL) {
            fprintf(f, "# %s\n# %s\n", key, line);
            fclose(f);
        }
        if (run_job(l, line, log, r) == 0 && read_results(json, r) == 0) {
            r->ok = 1;
            r->error[0] = '\0';
        }
    }
    if (tune_interrupted) {
        return -1; /* not journaled: measured again on resume */
    }
    if (r->seconds == 0 && !r->ok) {
        return 0; /* the job never ran (fork failed, line too long): not journaled */
    }
    if (!r->ok) {
        char tail[sizeof(r->error) - 40];
        perf_snprintf(tail, sizeof(tail), "%s", r->error);
        perf_snprintf(r->error, sizeof(r->error), "%s (log %s)", tail, log);
    }
    journal_add(l, key, r);
    return 0;
}

/* ---- open and close ----------------------------------------------------------------------- */

static int make_dir(const char *path)
{
    return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

int perf_tune_launcher_open(perf_tune_launcher_t *l, char *err, size_t errlen)
{
    char path[PERF_TUNE_PATH + 32];
    struct sigaction sa;

    perf_snprintf(path, sizeof(path), "%s/logs", l->dir);
    if (make_dir(l->dir) != 0 || make_dir(path) != 0) {
        perf_snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    perf_snprintf(path, sizeof(path), "%s/runs", l->dir);
    if (make_dir(path) != 0) {
        perf_snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    perf_snprintf(path, sizeof(path), "%s/results.jsonl", l->dir);
    if (journal_load(l, path) != 0 || (l->journal = fopen(path, "a+")) == NULL) {
        perf_snprintf(err, errlen, "cannot use the journal %s: %s", path, strerror(errno));
        return -1;
    }
    /* a line cut by a crash is ended, so that the next record starts on its own line */
    if (fseek(l->journal, -1, SEEK_END) == 0 && fgetc(l->journal) != '\n') {
        fputc('\n', l->journal);
    }
    fseek(l->journal, 0, SEEK_END);
    /* numbering of logs continues after what an earlier run left */
    for (l->seq = 0;; l->seq++) {
        perf_snprintf(path, sizeof(path), "%s/logs/%04d.log", l->dir, l->seq + 1);
        if (access(path, F_OK) != 0) {
            break;
        }
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return 0;
}

void perf_tune_launcher_close(perf_tune_launcher_t *l)
{
    if (l->journal != NULL) {
        fclose(l->journal);
    }
    free(l->cached);
    l->journal = NULL;
    l->cached = NULL;
}

int perf_tune_interrupted(void)
{
    return tune_interrupted;
}
