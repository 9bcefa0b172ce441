/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_offload_die.c: test_shard_offload's die: the last rank dies while its gradients
 * are on their way to the host; the others' step fails with SHARC_ERR_REMOTE naming it, and
 * nothing of the host's work is left in flight.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_shard_offload.h"

/* The last rank exits right after its first reduction of step 2 went down to the host; the
 * others run on until a call fails. */
void test_die(void)
{
    config_t c = {
        "host", SHARC_SHARD_OFFLOAD_HOST, 1, 0, SHARC_DTYPE_F32, SHARC_DTYPE_F32, 0, 0.05f, 0, 0};
    sharc_shard_group_h g = make_group(&c);
    sharc_status_t s = SHARC_OK;
    unsigned long errs = sharc_log_errors(0, NULL, 0);
    char msg[4096], want[64];
    float norm;

    if (g == NULL) {
        return;
    }
    for (int t = 0; t < 2; t++) {
        CHECK(engine_step(g, &c, t, &norm) == SHARC_OK);
    }
    for (int u = 0; s == SHARC_OK && u < NUNITS; u++) {
        s = sharc_shard_forward_begin(g, u);
        s = (s == SHARC_OK) ? sharc_shard_forward_end(g, u) : s;
    }
    for (int u = NUNITS - 1; s == SHARC_OK && u >= 0; u--) {
        s = sharc_shard_backward_begin(g, u);
        s = (s == SHARC_OK) ? sharc_shard_backward_end(g, u) : s;
        if (me == nranks - 1 && u == NUNITS - 1) {
            fflush(stdout);
            _exit(0); /* dies with its download queued and the others' landings in flight */
        }
    }
    s = (s == SHARC_OK) ? sharc_shard_finish(g) : s;
    CHECK_MSG(s == SHARC_ERR_REMOTE, "rank %d: the step ended with %s", me, sharc_status_string(s));
    sharc_log_errors(errs, msg, sizeof(msg));
    snprintf(want, sizeof(want), "rank %d ", nranks - 1);
    CHECK_MSG(strstr(msg, want) != NULL, "rank %d: the errors do not name rank %d: %s", me,
              nranks - 1, msg);
    CHECK_MSG(host_inflight(g) == 0,
              "rank %d: %d of the host's tasks and slots "
              "left after the failure",
              me, host_inflight(g));
    sharc_shard_destroy(g);
    printf("rank %d: the step failed (%s) naming rank %d; nothing left in flight\n", me,
           sharc_status_string(s), nranks - 1);
}
