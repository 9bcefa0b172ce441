/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_efa_caps.c: what an EFA node's devices can do, from its instance type and their PCI
 * device ids: whether they read remote memory (RDMA read), which GPUDirect RDMA over EFA
 * needs. The doctor's EFA rules (topo_efa.c) and the recommendation (topo_rec.c) ask it.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "../../base/util.h"
#include "topo_doc.h"
#include "topo_tool.h"

/*
 * EC2 instance families by whether their EFA devices read remote memory (RDMA read), which
 * GPUDirect RDMA over EFA needs. Others are judged by the device: libfabric takes devices of
 * the third generation on (PCI ids 0xefa2, 0xefa3) to have RDMA read; for 0xefa0 and 0xefa1
 * it depends on the instance (p4d has it, g5 does not).
 */
static const char *const sharc_efa_rdma_families[] = {
    "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200", "trn1", "trn1n", "trn2",
};
static const char *const sharc_efa_no_rdma_families[] = {"c5n", "p3dn", "g4dn", "g5"};

/* The instance family of a DMI product name ("p4d.24xlarge" -> "p4d"), or "". */
static void sharc_efa_family(const sharc_topo_t *topo, char *out, size_t size)
{
    const char *dot = strchr(topo->product, '.');

    out[0] = '\0';
    if (dot != NULL && dot != topo->product && (size_t)(dot - topo->product) < size) {
        snprintf(out, size, "%.*s", (int)(dot - topo->product), topo->product);
    }
}

unsigned sharc_topo_efa_device(const sharc_topo_t *topo, int *count_p)
{
    unsigned device = 0;
    int n = 0;

    for (int k = 0; k < topo->nnics; k++) {
        if (topo->nics[k].fabric != SHARC_TOPO_FABRIC_EFA) {
            continue;
        }
        device = (n == 0 || device == topo->nics[k].device) ? topo->nics[k].device : 0;
        n++;
    }
    *count_p = n;
    return device;
}

int sharc_topo_efa_rdma_read(const sharc_topo_t *topo, char *why, size_t size)
{
    char family[32];
    unsigned device;
    int n;

    sharc_efa_family(topo, family, sizeof(family));
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_efa_rdma_families) && family[0]; i++) {
        if (strcmp(family, sharc_efa_rdma_families[i]) == 0) {
            snprintf(why, size, "%s: its EFA reads remote memory (RDMA read)", topo->product);
            return 1;
        }
    }
    for (size_t i = 0; i < SHARC_ARRAY_SIZE(sharc_efa_no_rdma_families) && family[0]; i++) {
        if (strcmp(family, sharc_efa_no_rdma_families[i]) == 0) {
            snprintf(why, size, "%s: its EFA has no RDMA read", topo->product);
            return 0;
        }
    }
    device = sharc_topo_efa_device(topo, &n);
    if (device >= 0xefa2 && device <= 0xefaf) {
        snprintf(why, size, "EFA device 0x%04x: the third generation on reads remote memory",
                 device);
        return 1;
    }
    if (topo->product[0] != '\0') {
        snprintf(why, size,
                 "instance type %s, not one sharc knows: whether its EFA reads "
                 "remote memory (GPUDirect RDMA) is not known",
                 topo->product);
    } else {
        snprintf(why, size,
                 "instance type unknown (no DMI product name): whether its EFA reads "
                 "remote memory (GPUDirect RDMA) is not known");
    }
    return -1;
}
