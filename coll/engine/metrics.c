/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.c: what a communicator counts of its finished tasks when metrics are on (engine.h:
 * sharc_coll_metrics_t): kind, size class, bytes, time from post to done. Only counting; the
 * exposition (Prometheus' text, the file, HTTP) is the diagnostics' (coll/diagnostics/).
 */
#include "config.h"

#include <stdint.h>

#include "../../base/util.h"
#include "metrics.h"

const double sharc_coll_time_bounds[SHARC_COLL_TIME_BUCKETS - 1] = {
    8e-6,      32e-6,    128e-6,   512e-6,   2.048e-3, 8.192e-3,
    32.768e-3, 0.131072, 0.524288, 2.097152, 8.388608, 33.554432,
};

const char *const sharc_coll_size_names[SHARC_COLL_SIZE_CLASSES] = {
    "4KiB", "64KiB", "1MiB", "16MiB", "256MiB", "inf",
};

const char *sharc_coll_metric_name(int kind)
{
    switch (kind) {
    case SHARC_COLL_METRIC_SEND: return "send";
    case SHARC_COLL_METRIC_RECV: return "recv";
    default: return sharc_coll_name((sharc_coll_type_t)kind);
    }
}

size_t sharc_coll_task_bytes(const sharc_coll_task_t *task)
{
    const sharc_coll_args_t *a = &task->args;
    size_t esize = sharc_dtype_size(a->dtype), n = (size_t)task->cc->size;

    if (task->kind == SHARC_COLL_KIND_RECV) {
        return task->u.p2p.bytes; /* (what arrived, at most its buffer) */
    }
    if (task->kind == SHARC_COLL_KIND_SEND) {
        return a->count * esize;
    }
    switch (a->type) {
    case SHARC_COLL_ALLGATHER:
    case SHARC_COLL_REDUCE_SCATTER:
    case SHARC_COLL_ALLTOALL:
    case SHARC_COLL_GATHER:
    case SHARC_COLL_SCATTER: return a->count * n * esize; /* the whole, as nccl-tests */
    case SHARC_COLL_BARRIER: return 0;
    default: return a->count * esize; /* all-reduce, broadcast, reduce; v: the counts' sum */
    }
}

/* The size class of @p bytes: up to 4 KiB, then by factors of 16, the last unbounded. */
static int sharc_coll_size_class(size_t bytes)
{
    int c = 0;

    for (size_t bound = 4096; c < SHARC_COLL_SIZE_CLASSES - 1 && bytes > bound; bound <<= 4) {
        c++;
    }
    return c;
}

/* One writer (the lock's holder), readers without the lock: a relaxed store of the sum is
 * enough, and costs no locked instruction. */
static inline void sharc_coll_metric_add(uint64_t *v, uint64_t n)
{
    __atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

sharc_coll_step_metrics_t *sharc_coll_step_metrics(sharc_coll_comm_t *cc)
{
    return cc != NULL && cc->metrics != NULL ? &cc->metrics->steps : NULL;
}

void sharc_coll_metrics_done(const sharc_coll_task_t *task)
{
    size_t bytes = sharc_coll_task_bytes(task);
    int kind = task->kind == SHARC_COLL_KIND_SEND   ? SHARC_COLL_METRIC_SEND
               : task->kind == SHARC_COLL_KIND_RECV ? SHARC_COLL_METRIC_RECV
                                                    : (int)task->args.type;
    sharc_coll_metric_t *m;
    double secs = task->t_done - task->t_post;
    int b = 0;

    if (kind < 0 || kind >= SHARC_COLL_METRIC_KINDS) {
        return;
    }
    m = &task->cc->metrics->m[kind][sharc_coll_size_class(bytes)];
    sharc_coll_metric_add(&m->count, 1);
    if (task->status != SHARC_OK) {
        sharc_coll_metric_add(&m->failed, 1);
        return;
    }
    secs = secs > 0 ? secs : 0;
    while (b < SHARC_COLL_TIME_BUCKETS - 1 && secs > sharc_coll_time_bounds[b]) {
        b++;
    }
    sharc_coll_metric_add(&m->bucket[b], 1);
    sharc_coll_metric_add(&m->bytes, bytes);
    sharc_coll_metric_add(&m->ns, (uint64_t)(secs * 1e9));
}
