/*
 * fuzz_smi.c: libFuzzer harness for the `nvidia-smi topo -m` parser: any bytes must give a
 * result or SHARC_ERR_INVALID, and the classification of what was parsed must not fault.
 * Built and run by tools/fuzz.sh, not by make check.
 */
#include <stddef.h>
#include <stdint.h>

#include "../../perf/topo/topo_tool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sharc_topo_t *topo;

    if (sharc_topo_create(&topo) != SHARC_OK) {
        return 0;
    }
    if (sharc_topo_parse_smi(topo, (const char *)data, size) == SHARC_OK) {
        sharc_topo_classify(topo);
    }
    sharc_topo_destroy(topo);
    return 0;
}
