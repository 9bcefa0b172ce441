/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_fi_info.c: libFuzzer harness for the EFA doctor's parsers: the text of
 * `fi_info -p efa` and the scan of a NET plugin's bytes for its version. Any bytes must give a
 * result (counts, a version, bounded printable strings) and never fault. Built and run by
 * tools/fuzz.sh, not by make check.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../perf/topo/topo_tool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sharc_topo_fi_info_t info;
    char version[48];

    sharc_topo_parse_fi_info((const char *)data, size, &info);
    if (strlen(info.domains) >= sizeof(info.domains) || strlen(info.error) >= sizeof(info.error) ||
        info.nrdm > info.nefa || info.nefa > info.nentries || info.ndomains > info.nrdm) {
        __builtin_trap();
    }
    for (size_t cut = 1; cut <= sizeof(version); cut *= 4) {
        sharc_topo_plugin_version((const char *)data, size, version, cut);
        if (strlen(version) >= cut) {
            __builtin_trap();
        }
    }
    return 0;
}
