/*
 * ucx_progress.c: progress of the UCX transport: the worker is driven until it has nothing
 * more to do right now; completion callbacks run inside.
 */
#include "config.h"

#include "ucx.h"

int sharc_tp_ucx_progress(sharc_tp_comm_t *tp)
{
    unsigned total = 0, n;

    pthread_mutex_lock(&tp->lock);
    do {
        n = ucp_worker_progress(tp->worker);
        total += n;
    } while (n > 0);
    pthread_mutex_unlock(&tp->lock);
    return total > 0;
}
