/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_libfabric.c: stands in for libfabric.so.1 in sharc-topo doctor's tests: fi_version()
 * only, returning 1.SHARC_FAKE_FI_MINOR as FI_VERSION encodes it (major << 16 | minor). Built
 * by tests/topo_doctor.sh.
 */
#ifndef SHARC_FAKE_FI_MINOR
#define SHARC_FAKE_FI_MINOR 22
#endif

__attribute__((visibility("default"))) unsigned fi_version(void)
{
    return (1u << 16) | SHARC_FAKE_FI_MINOR;
}
