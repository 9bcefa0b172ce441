/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c: the process-wide logger behind log.h. Lines look like
 *   host:pid:tid [rank] sharc WARN boot: message
 * (NCCL's shape, so existing log scrapers work). Writes are serialized by a mutex; the file,
 * when SHARC_LOG_FILE is set, is opened on the first message after each configuration.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

sharc_log_filter_t sharc_log_filter = {SHARC_LOG_WARN, ~0u};

static const char *const sharc_subsys_names[SHARC_SUBSYS_LAST] = {
    [SHARC_SUBSYS_CORE] = "core", [SHARC_SUBSYS_BOOT] = "boot",   [SHARC_SUBSYS_TP] = "tp",
    [SHARC_SUBSYS_COLL] = "coll", [SHARC_SUBSYS_SHARD] = "shard", [SHARC_SUBSYS_TOPO] = "topo",
    [SHARC_SUBSYS_KERN] = "kern", [SHARC_SUBSYS_PERF] = "perf",
};

static const char *const sharc_level_tags[SHARC_LOG_LAST] = {
    [SHARC_LOG_ERROR] = "ERROR", [SHARC_LOG_WARN] = "WARN",   [SHARC_LOG_INFO] = "INFO",
    [SHARC_LOG_DEBUG] = "DEBUG", [SHARC_LOG_TRACE] = "TRACE",
};

/* The last SHARC_LOG_KEEP error messages, for sharc_log_errors; under sharc_log_out.lock. */
#define SHARC_LOG_KEEP 8
static struct {
    unsigned long count; /* errors logged so far; message i sits in msg[i % SHARC_LOG_KEEP] */
    char msg[SHARC_LOG_KEEP][1024];
} sharc_log_errs;

static struct {
    pthread_mutex_t lock;
    int rank;
    char pattern[1024]; /* SHARC_LOG_FILE, "" for stderr */
    FILE *file;         /* opened lazily; NULL means stderr */
    int file_rank;      /* rank the open file was named for */
    char host[64];
} sharc_log_out = {PTHREAD_MUTEX_INITIALIZER, -1, "", NULL, -1, ""};

int sharc_log_parse_subsys(const char *value, unsigned *mask_p)
{
    char buf[256], *save = NULL;
    int negate = 0;
    unsigned mask = 0;

    if (value == NULL || *value == '\0' || strcmp(value, "all") == 0) {
        *mask_p = ~0u;
        return 0;
    }
    if (value[0] == '^') {
        negate = 1;
        value++;
    }
    if (sharc_snprintf(buf, sizeof(buf), "%s", value) != 0) {
        return -1;
    }
    for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        int idx = sharc_name_index(sharc_subsys_names, SHARC_SUBSYS_LAST, tok);

        if (idx < 0) {
            return -1;
        }
        mask |= 1u << idx;
    }
    if (mask == 0) {
        return -1;
    }
    *mask_p = negate ? ~mask : mask;
    return 0;
}

int sharc_log_expand_path(const char *pattern, int rank, char *out, size_t size)
{
    size_t len = 0;
    char piece[128];

    for (const char *p = pattern; *p != '\0'; p++) {
        const char *add = piece;

        if (*p != '%') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            p++;
            switch (*p) {
            case 'r':
                if (rank < 0) {
                    add = "unknown";
                } else {
                    snprintf(piece, sizeof(piece), "%d", rank);
                }
                break;
            case 'p': snprintf(piece, sizeof(piece), "%ld", (long)getpid()); break;
            case 'h':
                if (gethostname(piece, sizeof(piece)) != 0) {
                    add = "unknown-host";
                }
                piece[sizeof(piece) - 1] = '\0';
                break;
            case '%': add = "%"; break;
            default: return -1; /* unknown escape, or a trailing '%' */
            }
        }
        size_t n = strlen(add);
        if (len + n + 1 > size) {
            return -1;
        }
        memcpy(out + len, add, n);
        len += n;
    }
    if (size == 0) {
        return -1;
    }
    out[len] = '\0';
    return 0;
}

void sharc_log_configure(int level, unsigned mask, const char *file_pattern)
{
    pthread_mutex_lock(&sharc_log_out.lock);
    __atomic_store_n(&sharc_log_filter.level, level, __ATOMIC_RELAXED);
    __atomic_store_n(&sharc_log_filter.mask, mask, __ATOMIC_RELAXED);
    if (strcmp(sharc_log_out.pattern, file_pattern ? file_pattern : "") != 0) {
        if (sharc_log_out.file != NULL) {
            fclose(sharc_log_out.file);
            sharc_log_out.file = NULL;
        }
        snprintf(sharc_log_out.pattern, sizeof(sharc_log_out.pattern), "%s",
                 file_pattern ? file_pattern : "");
    }
    pthread_mutex_unlock(&sharc_log_out.lock);
}

void sharc_log_set_rank(int rank)
{
    pthread_mutex_lock(&sharc_log_out.lock);
    sharc_log_out.rank = rank;
    pthread_mutex_unlock(&sharc_log_out.lock);
}

/* Called with the lock held. Falls back to stderr (once, with a note) if the file fails. */
static FILE *sharc_log_stream(void)
{
    char path[1024];

    if (sharc_log_out.pattern[0] == '\0') {
        return stderr;
    }
    if (sharc_log_out.file != NULL && (sharc_log_out.file_rank == sharc_log_out.rank ||
                                       strstr(sharc_log_out.pattern, "%r") == NULL)) {
        return sharc_log_out.file;
    }
    if (sharc_log_out.file != NULL) {
        fclose(sharc_log_out.file);
        sharc_log_out.file = NULL;
    }
    if (sharc_log_expand_path(sharc_log_out.pattern, sharc_log_out.rank, path, sizeof(path)) != 0 ||
        (sharc_log_out.file = fopen(path, "a")) == NULL) {
        fprintf(stderr, "sharc: cannot open log file from SHARC_LOG_FILE='%s'; logging to stderr\n",
                sharc_log_out.pattern);
        sharc_log_out.pattern[0] = '\0';
        return stderr;
    }
    setvbuf(sharc_log_out.file, NULL, _IOLBF, 0);
    sharc_log_out.file_rank = sharc_log_out.rank;
    return sharc_log_out.file;
}

void sharc_log_emit(int level, int subsys, const char *file, int line, int err, const char *fmt,
                    ...)
{
    char msg[2048], rank[16];
    va_list ap;
    FILE *stream;

    /* %m in fmt reads errno: restore the caller's. */
    errno = err;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&sharc_log_out.lock);
    if (sharc_log_out.host[0] == '\0' &&
        gethostname(sharc_log_out.host, sizeof(sharc_log_out.host)) != 0) {
        snprintf(sharc_log_out.host, sizeof(sharc_log_out.host), "unknown-host");
    }
    sharc_log_out.host[sizeof(sharc_log_out.host) - 1] = '\0';
    if (sharc_log_out.rank >= 0) {
        snprintf(rank, sizeof(rank), "%d", sharc_log_out.rank);
    } else {
        snprintf(rank, sizeof(rank), "-");
    }
    if (level == SHARC_LOG_ERROR) {
        /* kept cut to its slot (longer messages are rare; the log line has all of it) */
        snprintf(sharc_log_errs.msg[sharc_log_errs.count % SHARC_LOG_KEEP],
                 sizeof(sharc_log_errs.msg[0]), "%.1023s", msg);
        sharc_log_errs.count++;
    }
    stream = sharc_log_stream();
    if (level >= SHARC_LOG_DEBUG) {
        fprintf(stream, "%s:%ld:%ld [%s] sharc %s %s: %s (%s:%d)\n", sharc_log_out.host,
                (long)getpid(), (long)syscall(SYS_gettid), rank, sharc_level_tags[level],
                sharc_subsys_names[subsys], msg, file, line);
    } else {
        fprintf(stream, "%s:%ld:%ld [%s] sharc %s %s: %s\n", sharc_log_out.host, (long)getpid(),
                (long)syscall(SYS_gettid), rank, sharc_level_tags[level],
                sharc_subsys_names[subsys], msg);
    }
    pthread_mutex_unlock(&sharc_log_out.lock);
}

unsigned long sharc_log_errors(unsigned long since, char *buf, size_t size)
{
    unsigned long count, first, i;
    size_t len = 0;

    pthread_mutex_lock(&sharc_log_out.lock);
    count = sharc_log_errs.count;
    first = count - (count < SHARC_LOG_KEEP ? count : SHARC_LOG_KEEP);
    if (since > first) {
        first = since < count ? since : count;
    }
    if (buf != NULL && size > 0) {
        /* the most recent that fit: walk back from the newest while the total fits */
        for (i = count; i > first; i--) {
            size_t n = strlen(sharc_log_errs.msg[(i - 1) % SHARC_LOG_KEEP]) + 1; /* '\n' or NUL */

            if (len + n > size) {
                break;
            }
            len += n;
        }
        if (i == count && count > first) { /* not even the newest fits: its beginning */
            snprintf(buf, size, "%s", sharc_log_errs.msg[(count - 1) % SHARC_LOG_KEEP]);
        } else {
            buf[0] = '\0';
            for (len = 0; i < count; i++) {
                const char *m = sharc_log_errs.msg[i % SHARC_LOG_KEEP];
                size_t n = strlen(m);

                memcpy(buf + len, m, n);
                len += n;
                buf[len++] = (i + 1 < count) ? '\n' : '\0';
            }
        }
    }
    pthread_mutex_unlock(&sharc_log_out.lock);
    return count;
}
