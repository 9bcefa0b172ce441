/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_nvml.c: NVLink links per GPU from NVML, loaded with dlopen so that sharc neither
 * links nor needs the driver library (absent on CPU machines and in build containers).
 * Only the few NVML entry points used are declared here, with their documented C types.
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "topo_tool.h"

#define SHARC_NVML_MAX_LINKS 18 /* NVML_NVLINK_MAX_LINKS */

typedef struct sharc_nvml_device *sharc_nvml_device_t; /* nvmlDevice_t */

typedef struct { /* nvmlPciInfo_t */
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} sharc_nvml_pci_t;

typedef int (*sharc_nvml_init_fn_t)(void);
typedef int (*sharc_nvml_shutdown_fn_t)(void);
typedef int (*sharc_nvml_by_bus_fn_t)(const char *, sharc_nvml_device_t *);
typedef int (*sharc_nvml_link_state_fn_t)(sharc_nvml_device_t, unsigned, int *);
typedef int (*sharc_nvml_link_remote_fn_t)(sharc_nvml_device_t, unsigned, sharc_nvml_pci_t *);

/* NVML prints bus ids as "00000000:05:00.0" (32-bit domain); sysfs as "0000:05:00.0". */
static int sharc_topo_nvml_gpu_index(const sharc_topo_t *topo, const char *bus_id)
{
    size_t len = strlen(bus_id);

    if (len < 12) {
        return -1;
    }
    for (int i = 0; i < topo->ngpus; i++) {
        if (strcasecmp(bus_id + len - 12, topo->gpus[i].pci.busid) == 0) {
            return i;
        }
    }
    return -1;
}

sharc_status_t sharc_topo_read_nvml(sharc_topo_t *topo)
{
    sharc_nvml_init_fn_t init;
    sharc_nvml_shutdown_fn_t shutdown;
    sharc_nvml_by_bus_fn_t by_bus;
    sharc_nvml_link_state_fn_t link_state;
    sharc_nvml_link_remote_fn_t link_remote;
    void *lib;

    if (topo->ngpus == 0) {
        return SHARC_ERR_UNSUPPORTED;
    }
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        sharc_debug("NVML not loaded (%s); NVLinks are taken from the PCI view", dlerror());
        return SHARC_ERR_UNSUPPORTED;
    }
    init = (sharc_nvml_init_fn_t)dlsym(lib, "nvmlInit_v2");
    shutdown = (sharc_nvml_shutdown_fn_t)dlsym(lib, "nvmlShutdown");
    by_bus = (sharc_nvml_by_bus_fn_t)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    link_state = (sharc_nvml_link_state_fn_t)dlsym(lib, "nvmlDeviceGetNvLinkState");
    link_remote = (sharc_nvml_link_remote_fn_t)dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (init == NULL || shutdown == NULL || by_bus == NULL || link_state == NULL ||
        link_remote == NULL) {
        sharc_topo_warn(topo, "NVML lacks the NVLink entry points; NVLinks unknown");
        dlclose(lib);
        return SHARC_ERR_UNSUPPORTED;
    }
    if (init() != 0) {
        sharc_topo_warn(topo, "nvmlInit failed (no driver loaded?); NVLinks unknown");
        dlclose(lib);
        return SHARC_ERR_UNSUPPORTED;
    }
    for (int i = 0; i < topo->ngpus; i++) {
        sharc_nvml_device_t dev;

        if (by_bus(topo->gpus[i].pci.busid, &dev) != 0) {
            sharc_topo_warn(topo, "NVML does not know GPU %s", topo->gpus[i].pci.busid);
            continue;
        }
        for (unsigned link = 0; link < SHARC_NVML_MAX_LINKS; link++) {
            sharc_nvml_pci_t remote;
            int active = 0, peer;

            if (link_state(dev, link, &active) != 0 || !active) {
                continue;
            }
            memset(&remote, 0, sizeof(remote));
            if (link_remote(dev, link, &remote) != 0) {
                continue;
            }
            remote.bus_id[sizeof(remote.bus_id) - 1] = '\0';
            peer = sharc_topo_nvml_gpu_index(topo, remote.bus_id);
            if (peer >= 0) {
                topo->nvlinks[i][peer]++;
            } else {
                topo->gpus[i].nvlinks_switch++; /* the far end is not a GPU: an NVSwitch */
            }
        }
    }
    topo->nvml = 1;
    shutdown();
    dlclose(lib);
    return SHARC_OK;
}
