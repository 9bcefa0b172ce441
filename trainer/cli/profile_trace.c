/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/profile_trace.c: --profile with --trace: the op spans as a track of the shard
 * engine's Chrome trace (written by the engine, on rank 0, when the model's group is
 * destroyed). The engine's times count from an origin of its own, which its trace gives
 * (otherData's origin_s: the host's CLOCK_MONOTONIC at its time 0): the spans are placed by
 * it exactly. A trace without it (an older libsharc) places them by a moment both know: the
 * last forward_begin of unit 0, whose call span in the engine's trace starts when the model
 * took the host's clock for it (llama_prof_anchor_here), less the call's way in (a thread
 * preempted there shifts every span).
 * Rank 0's spans only; on CUDA they are the device's times (the engine's are the host's).
 */
#include "profile.h"
#include "../util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the track's id in rank 0's process: after the caller's (0), before the queues' (100 up) */
#define LLAMA_TRACE_TID 1

/* The file's bytes, NUL-terminated; NULL (logged) when it cannot be read. */
static char *read_all(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)len + 1)) == NULL ||
        fread(buf, 1, (size_t)len, f) != (size_t)len) {
        llama_err("--profile: cannot read the trace %s: %s", path,
                  f == NULL ? strerror(errno) : "read failed");
        free(buf);
        if (f != NULL) {
            fclose(f);
        }
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    *len_p = (size_t)len;
    return buf;
}

/*
 * In the engine's lines (one event each): the start (us) of rank 0's last "forward_begin u0"
 * call, and the earliest start of any event (the first step the trace keeps). 0, or -1 when
 * the call is not there.
 */
static int engine_times(const char *buf, double *anchor_us_p, double *first_us_p)
{
    double anchor = -1.0, first = INFINITY;

    for (const char *line = buf; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n'), *ts = strstr(line, "\"ts\": ");
        if (ts != NULL && (end == NULL || ts < end)) {
            double v = strtod(ts + 6, NULL);
            first = v < first ? v : first;
            const char *name = strstr(line, "\"name\": \"forward_begin u0\"");
            const char *pid = strstr(line, "\"pid\": 0,");
            if (name != NULL && pid != NULL && (end == NULL || (name < end && pid < end)) &&
                v > anchor) {
                anchor = v;
            }
        }
        line = end != NULL ? end + 1 : NULL;
    }
    *anchor_us_p = anchor;
    *first_us_p = first;
    return anchor >= 0 ? 0 : -1;
}

/* microseconds from the origin, rounded to nanoseconds as the engine rounds its own */
static double us_of(double t, double origin)
{
    return round((t - origin) * 1e9) / 1e3;
}

/* The track's name and the spans at or after @p first_us, after @p sep. */
static void write_spans(FILE *f, const char *sep, const llama_prof_span_t *sp, size_t n,
                        double origin, double first_us)
{
    fprintf(f,
            "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %d, \"args\": "
            "{\"name\": \"ops (sharc-llama --profile: each op site; on CUDA the device's "
            "times)\"}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, \"tid\": "
            "%d, \"args\": {\"sort_index\": %d}}",
            sep, LLAMA_TRACE_TID, LLAMA_TRACE_TID, LLAMA_TRACE_TID);
    for (size_t i = 0; i < n; i++) {
        double ts = us_of(sp[i].t0, origin), te = us_of(sp[i].t1, origin);
        if (ts < first_us || te <= ts) {
            continue; /* a step the engine's trace does not keep */
        }
        fprintf(f,
                ",\n{\"name\": \"%s\", \"cat\": \"op\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, "
                "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"step\": %d, \"ms\": %.6f}}",
                llama_site_name(sp[i].site), LLAMA_TRACE_TID, ts, te - ts, sp[i].step,
                (sp[i].t1 - sp[i].t0) * 1e3);
    }
    fputs("\n]}\n", f);
}

sharc_status_t llama_profile_trace_add(const llama_prof_t *prof, const char *path)
{
    const llama_prof_span_t *sp;
    size_t n = llama_prof_spans(prof, &sp), len = 0, at;
    double anchor_us, first_us, origin, anchor = llama_prof_anchor(prof);
    char *buf = read_all(path, &len);
    const char *close, *sep;
    FILE *f;

    if (buf == NULL) {
        return SHARC_ERR_IO;
    }
    const char *o = strstr(buf, "\"origin_s\": ");
    int anchored = engine_times(buf, &anchor_us, &first_us) == 0 && anchor > 0;
    if (o != NULL && first_us < INFINITY) {
        origin = strtod(o + strlen("\"origin_s\": "), NULL);
    } else if (anchored) {
        origin = anchor - anchor_us * 1e-6;
    } else {
        llama_err("--profile: %s has neither the engine's clock origin nor a forward_begin of "
                  "unit 0 on rank 0 to place the op spans by; the trace is left as the engine "
                  "wrote it",
                  path);
        free(buf);
        return SHARC_ERR_INVALID;
    }
    /* the events' array closes with the file's last ']': the spans go after its last event */
    close = strrchr(buf, ']');
    if (close == NULL) {
        llama_err("--profile: %s does not end as a Chrome trace does", path);
        free(buf);
        return SHARC_ERR_INVALID;
    }
    while (close > buf && (close[-1] == ' ' || close[-1] == '\n')) {
        close--;
    }
    sep = close > buf && close[-1] == '[' ? "\n" : ",\n"; /* (an empty array) */
    at = (size_t)(close - buf);
    free(buf);
    f = fopen(path, "r+");
    if (f == NULL || fseek(f, (long)at, SEEK_SET) != 0) {
        llama_err("--profile: cannot write the trace %s: %s", path, strerror(errno));
        if (f != NULL) {
            fclose(f);
        }
        return SHARC_ERR_IO;
    }
    write_spans(f, sep, sp, n, origin, first_us);
    int bad = ferror(f) || fflush(f) != 0 || ftruncate(fileno(f), ftell(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad) {
        llama_err("--profile: writing the trace %s failed: %s", path, strerror(errno));
        return SHARC_ERR_IO;
    }
    llama_info("profile: op spans of rank 0 added to %s", path);
    return SHARC_OK;
}
