/*
 * test_tp_ib.c: the verbs transport's choice of NIC when SHARC_IB_HCA names none: the
 * active ports on the rank's NUMA node first, the node's ranks spread over them by local
 * rank; all of them when none is near (or the NUMA node is unknown).
 */
#include "config.h"

#include "../transport/ib/ib.h"
#include "check.h"

int main(void)
{
    const int two_numa[] = {0, 0, 1, 1}, unknown[] = {-1, -1, -1};

    /* ranks on NUMA node 1 take the two NICs there, in turn */
    CHECK(sharc_tp_ib_choose(two_numa, 4, 1, 0) == 2);
    CHECK(sharc_tp_ib_choose(two_numa, 4, 1, 1) == 3);
    CHECK(sharc_tp_ib_choose(two_numa, 4, 1, 2) == 2);
    CHECK(sharc_tp_ib_choose(two_numa, 4, 0, 3) == 1);
    /* this rank's node unknown, or no NIC on it: every NIC, spread */
    CHECK(sharc_tp_ib_choose(two_numa, 4, -1, 3) == 3);
    CHECK(sharc_tp_ib_choose(two_numa, 4, 5, 6) == 2);
    CHECK(sharc_tp_ib_choose(unknown, 3, 0, 4) == 1);
    /* one NIC: it */
    CHECK(sharc_tp_ib_choose(two_numa, 1, 1, 7) == 0);
    return check_result("test_tp_ib");
}
