/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_net_plugin.c: stands in for an NCCL NET plugin in sharc-topo doctor's tests: the
 * symbols NCCL looks up (ncclNetPlugin_v6..v9, each a table whose first member is the name of
 * the network it registers) and, with SHARC_FAKE_VERSION, the start-up string aws-ofi-nccl
 * carries. No plugin code: the doctor loads a plugin and reads these, it never calls it. Built
 * by tests/topo/topo_doctor.sh; SHARC_FAKE_NAME sets the network's name.
 */
#ifndef SHARC_FAKE_NAME
#define SHARC_FAKE_NAME "Libfabric"
#endif

struct sharc_fake_net {
    const char *name;
    void *functions[24];
};

#define SHARC_FAKE_PLUGIN(v)                                                                       \
    __attribute__((visibility("default")))                                                         \
    const struct sharc_fake_net ncclNetPlugin_v##v = {SHARC_FAKE_NAME, {0}}

SHARC_FAKE_PLUGIN(6);
SHARC_FAKE_PLUGIN(7);
SHARC_FAKE_PLUGIN(8);
SHARC_FAKE_PLUGIN(9);

#ifdef SHARC_FAKE_VERSION
__attribute__((visibility("default"))) const char sharc_fake_banner[] =
    "Initializing aws-ofi-nccl " SHARC_FAKE_VERSION;
#endif

#ifdef SHARC_FAKE_NEEDS_FABRIC
/* a plugin linked against libfabric, as aws-ofi-nccl is: it loads only where the loader
 * finds libfabric.so.1 */
unsigned fi_version(void);
__attribute__((visibility("default"))) unsigned sharc_fake_fabric(void)
{
    return fi_version();
}
#endif
