/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * child.c: a collective run inside another, as one of its steps (the quantized wires' byte
 * exchanges, a staged collective's chunks): a task of its own with the host algorithm
 * selection picks for it, and a sequence number from the parent's block.
 */
#include "config.h"

#include "algorithms.h"

sharc_status_t sharc_coll_child_start(sharc_coll_task_t *task, const sharc_coll_args_t *args,
                                      size_t index, sharc_coll_task_t **child_p)
{
    sharc_coll_task_t *child = sharc_coll_task_new(task->cc, args, task->lane);
    sharc_status_t status;

    if (child == NULL) {
        return SHARC_ERR_NOMEM;
    }
    child->seq = (task->seq + 1 + index) & SHARC_COLL_SEQ_MASK; /* the collectives' half */
    status = sharc_coll_select(task->cc, &child->args, &child->algo);
    if (status == SHARC_OK) {
        status = child->algo->init(child);
    }
    if (status != SHARC_OK) {
        sharc_coll_task_free(child);
        return status;
    }
    *child_p = child;
    return SHARC_OK;
}

sharc_status_t sharc_coll_child_progress(sharc_coll_task_t *task, sharc_coll_task_t *child)
{
    sharc_status_t status = child->algo->progress(child);

    task->await_peer = (status == SHARC_INPROGRESS) ? child->await_peer : -1;
    if (status == SHARC_OK) {
        sharc_coll_scratch_put(child); /* for the parent's next step, or the next task */
    }
    return status;
}
