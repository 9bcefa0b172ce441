/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tp_ib.c: the verbs transport's choice of NIC when SHARC_IB_HCA names none: the
 * nearest active ports first (to the rank's GPU by PCI distance, else on its NUMA node), the
 * node's ranks spread over them by local rank; all of them when none is near.
 */
#include "config.h"

#include "../../transport/ib/ib.h"
#include "../../transport/topo/topo.h"
#include "../check.h"

int main(void)
{
    /* by NUMA node (0: the rank's, 1: another or unknown): two NICs on each of two nodes */
    const int on_node1[] = {1, 1, 0, 0}, on_node0[] = {0, 0, 1, 1}, far[] = {1, 1, 1, 1};

    /* ranks on NUMA node 1 take the two NICs there, in turn */
    CHECK(sharc_tp_ib_choose_nearest(on_node1, 4, 0) == 2);
    CHECK(sharc_tp_ib_choose_nearest(on_node1, 4, 1) == 3);
    CHECK(sharc_tp_ib_choose_nearest(on_node1, 4, 2) == 2);
    CHECK(sharc_tp_ib_choose_nearest(on_node0, 4, 3) == 1);
    /* this rank's node unknown, or no NIC on it: every NIC, spread */
    CHECK(sharc_tp_ib_choose_nearest(far, 4, 3) == 3);
    CHECK(sharc_tp_ib_choose_nearest(far, 4, 6) == 2);
    CHECK(sharc_tp_ib_choose_nearest(far, 3, 4) == 1);
    /* one NIC: it */
    CHECK(sharc_tp_ib_choose_nearest(on_node1, 1, 7) == 0);
    /* by PCI distance to the rank's GPU (nvidia-smi topo's order: PIX < PXB < PHB < NODE <
     * SYS): the NIC under the GPU's switch; two equally near, spread by local rank */
    const int gpu0[] = {SHARC_TOPO_LINK_PIX, SHARC_TOPO_LINK_SYS, SHARC_TOPO_LINK_NODE,
                        SHARC_TOPO_LINK_SYS};
    const int gpu1[] = {SHARC_TOPO_LINK_NODE, SHARC_TOPO_LINK_PXB, SHARC_TOPO_LINK_SYS,
                        SHARC_TOPO_LINK_PXB};
    CHECK(sharc_tp_ib_choose_nearest(gpu0, 4, 0) == 0);
    CHECK(sharc_tp_ib_choose_nearest(gpu0, 4, 5) == 0);
    CHECK(sharc_tp_ib_choose_nearest(gpu1, 4, 0) == 1);
    CHECK(sharc_tp_ib_choose_nearest(gpu1, 4, 1) == 3);
    return check_result("test_tp_ib");
}
