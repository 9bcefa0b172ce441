/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flight_dump.c: what a communicator's flight recorder says on a hang: its head (what this
 * rank posted last, the oldest collective it has not completed and whose data it still
 * waits for), which the ranks compare for the stall verdict (stall.c, verdict.c), and its
 * dump: the head and every entry as JSON, one file per rank and communicator under a
 * directory, which `sharc-perf why` merges (why.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../base/log.h"
#include "../../base/util.h"
#include "diagnostics.h"

static const char *const sharc_coll_state_names[] = {
    [SHARC_COLL_TASK_NEW] = "new",       [SHARC_COLL_TASK_HANDED] = "handed",
    [SHARC_COLL_TASK_QUEUED] = "posted", [SHARC_COLL_TASK_RUNNING] = "running",
    [SHARC_COLL_TASK_DONE] = "done",     [SHARC_COLL_TASK_COMPLETE] = "complete",
};

const char *sharc_coll_state_name(int state, sharc_status_t status)
{
    if (state >= SHARC_COLL_TASK_DONE && status != SHARC_OK && status != SHARC_INPROGRESS) {
        return "failed";
    }
    return (state >= 0 && state <= SHARC_COLL_TASK_COMPLETE) ? sharc_coll_state_names[state] : "?";
}

/* Seconds from @p t to @p now, or -1 for what has not happened (t == 0). */
static double sharc_coll_ago(double now, double t)
{
    return (t > 0) ? now - t : -1.0;
}

void sharc_coll_head(sharc_coll_comm_t *cc, double now, sharc_coll_head_t *h)
{
    const sharc_coll_task_t *oldest = sharc_coll_oldest(cc);

    memset(h, 0, sizeof(*h));
    h->rank = cc->rank;
    h->answered = 1;
    h->posted = cc->posts;
    h->stalled = cc->posts;
    snprintf(h->host, sizeof(h->host), "%s", sharc_coll_host(cc, cc->rank));
    if (cc->posts > 0 && cc->fr.cap > 0) {
        const sharc_coll_fr_entry_t *e = &cc->fr.ring[(cc->posts - 1) % cc->fr.cap];

        h->last_type = e->type;
        h->last_dtype = e->dtype;
        h->last_op = e->op;
        h->last_state = e->state;
        h->last_status = e->status;
        h->last_count = e->count;
        h->last_age = sharc_coll_ago(now, e->t_post);
        h->last_done_age = sharc_coll_ago(now, e->t_done);
    }
    if (oldest == NULL) {
        return;
    }
    h->stalled = oldest->ordinal;
    h->st_type = oldest->args.type;
    h->st_dtype = oldest->args.dtype;
    h->st_op = oldest->args.op;
    h->st_lane = oldest->lane;
    h->st_state = oldest->state;
    h->st_count = oldest->args.count;
    h->st_age = sharc_coll_ago(now, oldest->t_post);
    h->npending = sharc_coll_fr_pending(oldest, h->pending, SHARC_COLL_HEAD_PEERS);
}

/* @p s as a JSON string (the recorder's names and host names: no control characters). */
static void sharc_coll_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', f);
        }
        fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
    }
    fputc('"', f);
}

static void sharc_coll_dump_head(FILE *f, const sharc_coll_head_t *h)
{
    fprintf(f, "\"head\": {\"posted\": %llu, \"last\": ", (unsigned long long)h->posted);
    if (h->posted > 0) {
        fprintf(f, "{\"op\": ");
        sharc_coll_json_str(f, sharc_coll_name((sharc_coll_type_t)h->last_type));
        fprintf(f, ", \"dtype\": ");
        sharc_coll_json_str(f, sharc_dtype_name((sharc_dtype_t)h->last_dtype));
        fprintf(f, ", \"count\": %llu, \"state\": ", (unsigned long long)h->last_count);
        sharc_coll_json_str(f, sharc_coll_state_name(h->last_state, h->last_status));
        fprintf(f, ", \"posted_s_ago\": %.3f, \"done_s_ago\": %.3f}", h->last_age,
                h->last_done_age);
    } else {
        fprintf(f, "null");
    }
    fprintf(f, ", \"oldest_incomplete\": ");
    if (h->stalled < h->posted) {
        fprintf(f, "{\"ordinal\": %llu, \"op\": ", (unsigned long long)h->stalled);
        sharc_coll_json_str(f, sharc_coll_name((sharc_coll_type_t)h->st_type));
        fprintf(f, ", \"dtype\": ");
        sharc_coll_json_str(f, sharc_dtype_name((sharc_dtype_t)h->st_dtype));
        fprintf(f, ", \"count\": %llu, \"lane\": %d, \"posted_s_ago\": %.3f, \"waits_for\": [",
                (unsigned long long)h->st_count, h->st_lane, h->st_age);
        for (int i = 0; i < h->npending; i++) {
            fprintf(f, "%s%d", i ? ", " : "", h->pending[i]);
        }
        fprintf(f, "]}");
    } else {
        fprintf(f, "null");
    }
    fprintf(f, "}");
}

static void sharc_coll_dump_entry(FILE *f, sharc_coll_comm_t *cc, const sharc_coll_fr_entry_t *e,
                                  double now)
{
    int peers[SHARC_COLL_HEAD_PEERS], np = 0;

    for (const sharc_coll_task_t *t = cc->head; t != NULL; t = t->next) {
        if (t->state != SHARC_COLL_TASK_HANDED && t->ordinal == e->ordinal) {
            np = sharc_coll_fr_pending(t, peers, SHARC_COLL_HEAD_PEERS);
            break;
        }
    }
    fprintf(f, "    {\"ordinal\": %llu, \"seq\": %llu, \"op\": ", (unsigned long long)e->ordinal,
            (unsigned long long)e->seq);
    sharc_coll_json_str(f, sharc_coll_name((sharc_coll_type_t)e->type));
    fprintf(f, ", \"dtype\": ");
    sharc_coll_json_str(f, sharc_dtype_name((sharc_dtype_t)e->dtype));
    fprintf(f, ", \"count\": %llu, \"lane\": %d, \"algo\": ", (unsigned long long)e->count,
            e->lane);
    sharc_coll_json_str(f, e->algo);
    fprintf(f, ", \"state\": ");
    sharc_coll_json_str(f, sharc_coll_state_name(e->state, e->status));
    fprintf(f, ", \"posted_s_ago\": %.6f, \"started_s_ago\": %.6f, \"done_s_ago\": %.6f",
            sharc_coll_ago(now, e->t_post), sharc_coll_ago(now, e->t_start),
            sharc_coll_ago(now, e->t_done));
    if (np > 0) {
        fprintf(f, ", \"waits_for\": [");
        for (int i = 0; i < np; i++) {
            fprintf(f, "%s%d", i ? ", " : "", peers[i]);
        }
        fprintf(f, "]");
    }
    fprintf(f, "}");
}

/* The dump's text into @p f (lock held). */
static void sharc_coll_dump_write(FILE *f, sharc_coll_comm_t *cc, const char *reason)
{
    double now = sharc_time_now();
    uint64_t first = (cc->posts > cc->fr.cap) ? cc->posts - cc->fr.cap : 0;
    sharc_coll_head_t head;

    sharc_coll_head(cc, now, &head);
    fprintf(f, "{\"sharc_flight\": 1, \"comm\": ");
    sharc_coll_json_str(f, cc->name);
    fprintf(f, ", \"rank\": %d, \"size\": %d, \"host\": ", cc->rank, cc->size);
    sharc_coll_json_str(f, head.host);
    fprintf(f, ", \"pid\": %d, \"unix_time\": %.3f, \"reason\": ", (int)getpid(),
            (double)time(NULL));
    sharc_coll_json_str(f, reason);
    fprintf(f, ", \"failed\": ");
    sharc_coll_json_str(f, cc->failed != SHARC_OK ? cc->why : "");
    fprintf(f, ", \"verdict\": ");
    sharc_coll_json_str(f, cc->verdict);
    fprintf(f, ",\n ");
    sharc_coll_dump_head(f, &head);
    fprintf(f, ",\n \"entries\": [\n");
    for (uint64_t o = first; cc->fr.cap > 0 && o < cc->posts; o++) {
        const sharc_coll_fr_entry_t *e = &cc->fr.ring[o % cc->fr.cap];

        if (e->ordinal == o) {
            sharc_coll_dump_entry(f, cc, e, now);
            fprintf(f, "%s\n", o + 1 < cc->posts ? "," : "");
        }
    }
    fprintf(f, " ]}\n");
}

sharc_status_t sharc_coll_fr_dump(sharc_coll_comm_t *cc, const char *dir, const char *reason)
{
    char path[4096], tmp[4200];
    sharc_status_t status = SHARC_OK;
    FILE *f;

    if (dir == NULL || dir[0] == '\0') {
        return SHARC_OK; /* nowhere to dump (SHARC_FLIGHT_DIR unset) */
    }
    if (sharc_snprintf(path, sizeof(path), "%s/sharc-flight.%s.r%d.json", dir, cc->name,
                       cc->rank) != 0) {
        sharc_error("flight recorder: the dump's path under '%s' is too long", dir);
        return SHARC_ERR_INVALID;
    }
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) {
        sharc_error("flight recorder: cannot write %s: %m", tmp);
        return SHARC_ERR_IO;
    }
    sharc_coll_dump_write(f, cc, reason);
    if (ferror(f) | (fclose(f) != 0) || rename(tmp, path) != 0) {
        sharc_error("flight recorder: writing %s failed: %s", path, strerror(errno));
        unlink(tmp);
        status = SHARC_ERR_IO;
    } else {
        sharc_info("flight recorder: rank %d of %s dumped to %s (%s)", cc->rank, cc->name, path,
                   reason);
    }
    return status;
}
