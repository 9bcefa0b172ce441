/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_smi.c: libFuzzer harness for the `nvidia-smi topo -m` parser: any bytes must give a
 * result or SHARC_ERR_INVALID, and the classification of what was parsed must not fault.
 * Inputs whose first byte is odd are parsed over GPUs and NICs already read from sysfs (with
 * PCI positions), as `--sysfs-root` with `--nvidia-smi-topo` does, so that the check of the
 * capture's GPU order against them runs too. Built and run by tools/fuzz.sh, not by make check.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../perf/topo/topo_tool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sharc_topo_t *topo;

    if (sharc_topo_create(&topo) != SHARC_OK) {
        return 0;
    }
    if (size > 0 && (data[0] & 1)) {
        /* 8 GPUs and 8 NICs in pairs behind switches, on two NUMA nodes, as sysfs gives them */
        topo->ngpus = topo->nnics = 8;
        for (int i = 0; i < 8; i++) {
            int bus = 0x10 + 0x10 * i;

            snprintf(topo->gpus[i].pci.busid, sizeof(topo->gpus[i].pci.busid), "0000:%02x:00.0",
                     bus + 3);
            snprintf(topo->gpus[i].pci.path, sizeof(topo->gpus[i].pci.path),
                     "pci0000:%02x/0000:%02x:01.0/0000:%02x:00.0", bus, bus, bus + 3);
            topo->gpus[i].pci.numa = i / 4;
            snprintf(topo->nics[i].name, sizeof(topo->nics[i].name), "mlx5_%d", i);
            snprintf(topo->nics[i].pci.path, sizeof(topo->nics[i].pci.path),
                     "pci0000:%02x/0000:%02x:01.0/0000:%02x:00.0", bus, bus, bus + 4);
            topo->nics[i].pci.numa = i / 4;
        }
    }
    if (sharc_topo_parse_smi(topo, (const char *)data, size) == SHARC_OK) {
        sharc_topo_classify(topo);
    }
    sharc_topo_destroy(topo);
    return 0;
}
