/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_xml.c: libFuzzer harness for the NCCL topology XML import, followed by export of
 * whatever was imported (both walk the untrusted structure). Built and run by
 * tools/fuzz.sh, not by make check.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../perf/topo/topo_tool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    sharc_topo_t *topo;

    if (sink == NULL) {
        sink = fopen("/dev/null", "w");
    }
    if (sharc_topo_create(&topo) != SHARC_OK) {
        return 0;
    }
    if (sharc_topo_parse_nccl_xml(topo, (const char *)data, size) == SHARC_OK) {
        sharc_topo_classify(topo);
        if (sink != NULL) {
            sharc_topo_write_nccl_xml(topo, sink);
        }
    }
    sharc_topo_destroy(topo);
    return 0;
}
