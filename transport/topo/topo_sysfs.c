/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_sysfs.c: reads a tree laid out like /sys: GPUs and NVSwitches from bus/pci/devices,
 * RDMA devices from class/infiniband (ports, rates, states, GID tables), NUMA nodes and
 * sockets from devices/system, the DMI identity (instance type); network interfaces
 * (class/net) are read by topo_net.c. GPUs and NICs are then numbered by PCI address. The live
 * machine is root "/sys"; a fixture or a copied tree works the same, its symlinks resolved inside
 * it. Anything missing or garbled is skipped with a warning.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo.h"
#include "topo_fs.h"

static void sharc_topo_add_pci_device(sharc_topo_sysfs_t *s, const char *name)
{
    sharc_topo_t *topo = s->topo;
    char rel[PATH_MAX], real[PATH_MAX];
    unsigned vendor, cls, device = 0;
    sharc_topo_gpu_t *gpu;

    sharc_snprintf(rel, sizeof(rel), "bus/pci/devices/%s", name);
    if (sharc_topo_resolve(s, rel, real) != 0) {
        return;
    }
    if (sharc_topo_attr_hex(real, "vendor", &vendor) != 0) {
        sharc_topo_warn(topo, "%s: no readable vendor; skipped", rel);
        return;
    }
    if (vendor != SHARC_TOPO_PCI_VENDOR_NVIDIA) {
        return;
    }
    if (sharc_topo_attr_hex(real, "class", &cls) != 0) {
        sharc_topo_warn(topo, "%s: NVIDIA device without a readable class; skipped", rel);
        return;
    }
    if ((cls >> 8) == 0x0680) { /* "other bridge": the NVSwitches of HGX boards */
        if (topo->nvswitches++ == 0 || sharc_topo_busid_cmp(name, topo->nvswitch_busid) < 0) {
            sharc_snprintf(topo->nvswitch_busid, sizeof(topo->nvswitch_busid), "%.12s", name);
        }
        return;
    }
    if ((cls >> 8) != 0x0302 && (cls >> 8) != 0x0300) {
        return; /* the GPUs' audio functions, USB controllers of consumer cards */
    }
    if (topo->ngpus == SHARC_TOPO_MAX_GPUS) {
        sharc_topo_warn(topo, "%s: more than %d GPUs; the rest are ignored", rel,
                        SHARC_TOPO_MAX_GPUS);
        return;
    }
    gpu = &topo->gpus[topo->ngpus];
    memset(gpu, 0, sizeof(*gpu));
    if (sharc_topo_pci_from_path(s, real, &gpu->pci) != 0) {
        sharc_topo_warn(topo, "%s: not below a PCI host bridge; position unknown", rel);
        sharc_snprintf(gpu->pci.busid, sizeof(gpu->pci.busid), "%.12s", name);
        gpu->pci.numa = -1;
    }
    if (sharc_topo_attr_hex(real, "device", &device) != 0) {
        sharc_topo_warn(topo, "%s: no readable device id", rel);
    }
    gpu->vendor = vendor;
    gpu->device = device;
    sharc_topo_gpu_identify(gpu);
    topo->ngpus++;
}

static void sharc_topo_read_pci(sharc_topo_sysfs_t *s)
{
    struct dirent **list;
    char dir[PATH_MAX];
    int n;

    sharc_snprintf(dir, sizeof(dir), "%s/bus/pci/devices", s->root);
    n = sharc_topo_list(dir, &list);
    if (n < 0) {
        sharc_topo_warn(s->topo, "bus/pci/devices: %s; no GPUs found", strerror(errno));
        return;
    }
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            sharc_topo_add_pci_device(s, list[i]->d_name);
        }
    }
    sharc_topo_free_list(list, n);
}

/* "0000:0000:0000:0000:0000:ffff:0a00:0001" */
static int sharc_topo_gid_is_ipv4(const char *gid)
{
    return strncmp(gid, "0000:0000:0000:0000:0000:ffff:", 30) == 0 && strlen(gid) == 39;
}

static void sharc_topo_read_gids(sharc_topo_sysfs_t *s, const char *nic, const char *portdir,
                                 sharc_topo_port_t *port)
{
    struct dirent **list;
    char dir[PATH_MAX], attrs[PATH_MAX];
    int n;

    sharc_snprintf(dir, sizeof(dir), "%s/gids", portdir);
    n = sharc_topo_list(dir, &list);
    if (n < 0) {
        return; /* EFA ports have no GID table */
    }
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        sharc_topo_gid_t *gid;
        char *end;
        long index;

        if (name[0] == '.') {
            continue;
        }
        index = strtol(name, &end, 10);
        if (*end != '\0' || index < 0 || index > 65535) {
            continue;
        }
        if (port->ngids == SHARC_TOPO_MAX_GIDS) {
            sharc_topo_warn(s->topo, "%s port %d: more than %d GIDs; the rest are ignored", nic,
                            port->num, SHARC_TOPO_MAX_GIDS);
            break;
        }
        gid = &port->gids[port->ngids];
        memset(gid, 0, sizeof(*gid));
        if (sharc_topo_attr(dir, name, gid->gid, sizeof(gid->gid)) != 0) {
            sharc_topo_warn(s->topo, "%s port %d: GID %ld unreadable", nic, port->num, index);
            continue;
        }
        if (strcmp(gid->gid, "0000:0000:0000:0000:0000:0000:0000:0000") == 0) {
            continue; /* unused entry */
        }
        gid->index = (int)index;
        gid->ipv4 = sharc_topo_gid_is_ipv4(gid->gid);
        sharc_snprintf(attrs, sizeof(attrs), "%s/gid_attrs/types", portdir);
        if (sharc_topo_attr(attrs, name, gid->type, sizeof(gid->type)) != 0) {
            gid->type[0] = '\0';
        }
        sharc_snprintf(attrs, sizeof(attrs), "%s/gid_attrs/ndevs", portdir);
        if (sharc_topo_attr(attrs, name, gid->ndev, sizeof(gid->ndev)) != 0) {
            gid->ndev[0] = '\0';
        }
        port->ngids++;
    }
    sharc_topo_free_list(list, n);
    /* by index, whatever order the directory lists them in */
    for (int i = 1; i < port->ngids; i++) {
        sharc_topo_gid_t gid = port->gids[i];
        int pos = i;

        while (pos > 0 && port->gids[pos - 1].index > gid.index) {
            port->gids[pos] = port->gids[pos - 1];
            pos--;
        }
        port->gids[pos] = gid;
    }
}

static void sharc_topo_read_port(sharc_topo_sysfs_t *s, sharc_topo_nic_t *nic, const char *portdir,
                                 int num)
{
    sharc_topo_port_t *port = &nic->ports[nic->nports];
    char rate[64];
    long state;

    memset(port, 0, sizeof(*port));
    port->num = num;
    if (sharc_topo_attr(portdir, "state", port->state, sizeof(port->state)) != 0) {
        sharc_topo_warn(s->topo, "%s port %d: no readable state; taken as down", nic->name, num);
        sharc_snprintf(port->state, sizeof(port->state), "unknown");
    }
    /* "4: ACTIVE" */
    state = strtol(port->state, NULL, 10);
    port->active = (state == 4);
    if (sharc_topo_attr(portdir, "link_layer", port->link_layer, sizeof(port->link_layer)) != 0) {
        sharc_topo_warn(s->topo, "%s port %d: no readable link_layer", nic->name, num);
    }
    /* "400 Gb/sec (4X NDR)" */
    if (sharc_topo_attr(portdir, "rate", rate, sizeof(rate)) != 0 ||
        sscanf(rate, "%lf Gb/sec", &port->rate_gbps) != 1 || !(port->rate_gbps >= 0) ||
        port->rate_gbps > 1e6) {
        sharc_topo_warn(s->topo, "%s port %d: rate unreadable; bandwidth unknown", nic->name, num);
        port->rate_gbps = 0;
    }
    sharc_topo_read_gids(s, nic->name, portdir, port);
    nic->nports++;
}

static void sharc_topo_add_rdma(sharc_topo_sysfs_t *s, const char *name)
{
    sharc_topo_t *topo = s->topo;
    char rel[PATH_MAX], real[PATH_MAX], dir[PATH_MAX];
    struct dirent **ports;
    sharc_topo_nic_t *nic;
    int n;

    if (topo->nnics == SHARC_TOPO_MAX_NICS) {
        sharc_topo_warn(topo, "class/infiniband/%s: more than %d RDMA devices; ignored", name,
                        SHARC_TOPO_MAX_NICS);
        return;
    }
    sharc_snprintf(rel, sizeof(rel), "class/infiniband/%s", name);
    if (sharc_topo_resolve(s, rel, real) != 0) {
        return;
    }
    nic = &topo->nics[topo->nnics];
    memset(nic, 0, sizeof(*nic));
    sharc_snprintf(nic->name, sizeof(nic->name), "%s", name);
    nic->pci.numa = -1;
    sharc_snprintf(rel, sizeof(rel), "class/infiniband/%s/device", name);
    if (sharc_topo_resolve(s, rel, dir) != 0 || sharc_topo_pci_from_path(s, dir, &nic->pci) != 0) {
        sharc_topo_warn(topo, "%s: no PCI device; distances unknown", name);
    } else {
        sharc_topo_readlink_base(dir, "driver", nic->driver, sizeof(nic->driver));
        if (sharc_topo_attr_hex(dir, "vendor", &nic->vendor) != 0 ||
            sharc_topo_attr_hex(dir, "device", &nic->device) != 0) {
            nic->vendor = nic->device = 0;
        }
    }
    sharc_snprintf(dir, sizeof(dir), "%s/ports", real);
    n = sharc_topo_list(dir, &ports);
    if (n < 0) {
        sharc_topo_warn(topo, "%s: no ports directory", name);
        n = 0;
        ports = NULL;
    }
    for (int i = 0; i < n; i++) {
        char portdir[PATH_MAX], *end;
        long num = strtol(ports[i]->d_name, &end, 10);

        if (ports[i]->d_name[0] == '.' || *end != '\0' || num <= 0 || num > 255) {
            continue;
        }
        if (nic->nports == SHARC_TOPO_MAX_PORTS) {
            sharc_topo_warn(topo, "%s: more than %d ports; the rest are ignored", name,
                            SHARC_TOPO_MAX_PORTS);
            break;
        }
        sharc_snprintf(portdir, sizeof(portdir), "%s/%s", dir, ports[i]->d_name);
        sharc_topo_read_port(s, nic, portdir, (int)num);
    }
    sharc_topo_free_list(ports, n);
    for (int i = 1; i < nic->nports; i++) { /* by number: port 1 first */
        sharc_topo_port_t port = nic->ports[i];
        int pos = i;

        while (pos > 0 && nic->ports[pos - 1].num > port.num) {
            nic->ports[pos] = nic->ports[pos - 1];
            pos--;
        }
        nic->ports[pos] = port;
    }
    /* EFA by its driver: its devices are named after their PCI slot (rdmap16s27), and
     * its link layer reads "Unspecified". */
    if (strcmp(nic->driver, "efa") == 0) {
        nic->fabric = SHARC_TOPO_FABRIC_EFA;
    } else if (nic->nports > 0 && strcmp(nic->ports[0].link_layer, "InfiniBand") == 0) {
        nic->fabric = SHARC_TOPO_FABRIC_IB;
    } else if (nic->nports > 0 && strcmp(nic->ports[0].link_layer, "Ethernet") == 0) {
        nic->fabric = SHARC_TOPO_FABRIC_ROCE;
    } else {
        nic->fabric = SHARC_TOPO_FABRIC_UNKNOWN;
        nic->nports = SHARC_MAX(nic->nports, 0);
        sharc_topo_warn(topo, "%s: link layer '%s' and driver '%s' say no known fabric", name,
                        nic->nports > 0 ? nic->ports[0].link_layer : "", nic->driver);
    }
    topo->nnics++;
}

static void sharc_topo_read_rdma(sharc_topo_sysfs_t *s)
{
    struct dirent **list;
    char dir[PATH_MAX];
    int n;

    sharc_snprintf(dir, sizeof(dir), "%s/class/infiniband", s->root);
    n = sharc_topo_list(dir, &list);
    if (n < 0) {
        return; /* no RDMA devices (or no driver loaded): nothing to say */
    }
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            sharc_topo_add_rdma(s, list[i]->d_name);
        }
    }
    sharc_topo_free_list(list, n);
}

static void sharc_topo_read_cpus(sharc_topo_sysfs_t *s)
{
    sharc_topo_t *topo = s->topo;
    unsigned char seen[256] = {0};
    struct dirent **list;
    char dir[PATH_MAX];
    int n;

    sharc_snprintf(dir, sizeof(dir), "%s/devices/system/node", s->root);
    n = sharc_topo_list(dir, &list);
    for (int i = 0; i < n; i++) {
        char *end, node[PATH_MAX];
        long num;

        if (strncmp(list[i]->d_name, "node", 4) != 0) {
            continue;
        }
        num = strtol(list[i]->d_name + 4, &end, 10);
        if (*end != '\0' || num < 0 || num >= SHARC_TOPO_MAX_NUMA) {
            continue;
        }
        sharc_snprintf(node, sizeof(node), "%s/%s", dir, list[i]->d_name);
        if (sharc_topo_attr(node, "cpulist", topo->cpu.cpulist[num],
                            sizeof(topo->cpu.cpulist[num])) != 0) {
            sharc_topo_warn(topo, "NUMA node %ld: no readable cpulist", num);
        }
        topo->cpu.nnuma = SHARC_MAX(topo->cpu.nnuma, (int)num + 1);
    }
    if (n >= 0) {
        sharc_topo_free_list(list, n);
    }

    sharc_snprintf(dir, sizeof(dir), "%s/devices/system/cpu", s->root);
    n = sharc_topo_list(dir, &list);
    for (int i = 0; i < n; i++) {
        char topodir[PATH_MAX];
        long pkg;

        if (strncmp(list[i]->d_name, "cpu", 3) != 0 ||
            !isdigit((unsigned char)list[i]->d_name[3])) {
            continue;
        }
        sharc_snprintf(topodir, sizeof(topodir), "%s/%s/topology", dir, list[i]->d_name);
        if (sharc_topo_attr_int(topodir, "physical_package_id", &pkg) == 0 && pkg >= 0 &&
            pkg < (long)sizeof(seen)) {
            topo->cpu.nsockets += !seen[pkg];
            seen[pkg] = 1;
        }
    }
    if (n >= 0) {
        sharc_topo_free_list(list, n);
    }
    if (topo->cpu.nnuma == 0) {
        sharc_topo_warn(topo, "devices/system/node: no NUMA nodes found");
    }
}

/*
 * The machine's DMI identity (class/dmi/id): on a cloud VM the product name is the instance
 * type ("p4d.24xlarge", "a3-highgpu-8g"), which says what the NICs can do where sysfs does
 * not (whether an EFA device reads GPU memory). Absent on machines without DMI (arm64 boards,
 * most fixtures): nothing to say.
 */
static void sharc_topo_read_dmi(sharc_topo_sysfs_t *s)
{
    static const char *const dirs[] = {"class/dmi/id", "devices/virtual/dmi/id"};
    sharc_topo_t *topo = s->topo;
    char dir[PATH_MAX];

    for (size_t d = 0; d < SHARC_ARRAY_SIZE(dirs) && topo->product[0] == '\0'; d++) {
        char real[PATH_MAX], path[PATH_MAX];
        struct stat st;

        sharc_snprintf(path, sizeof(path), "%s/%s", s->root, dirs[d]);
        if (lstat(path, &st) != 0) {
            continue;
        }
        if (sharc_topo_resolve(s, dirs[d], real) != 0) {
            continue;
        }
        sharc_snprintf(dir, sizeof(dir), "%s", real);
        if (sharc_topo_attr(dir, "product_name", topo->product, sizeof(topo->product)) != 0) {
            topo->product[0] = '\0';
        }
        if (sharc_topo_attr(dir, "sys_vendor", topo->sys_vendor, sizeof(topo->sys_vendor)) != 0) {
            topo->sys_vendor[0] = '\0';
        }
    }
    /* printable only: the values go into reports and JSON */
    for (char *c = topo->product; *c != '\0'; c++) {
        *c = isprint((unsigned char)*c) ? *c : '?';
    }
    for (char *c = topo->sys_vendor; *c != '\0'; c++) {
        *c = isprint((unsigned char)*c) ? *c : '?';
    }
}

sharc_status_t sharc_topo_read_sysfs(sharc_topo_t *topo, const char *root)
{
    sharc_topo_sysfs_t *s;
    struct stat st;

    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        sharc_error("sysfs root %s is not a directory", root);
        return SHARC_ERR_INVALID;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        sharc_error("out of memory reading %s", root);
        return SHARC_ERR_NOMEM;
    }
    s->topo = topo;
    if (realpath(root, s->root) == NULL) {
        sharc_error("cannot resolve sysfs root %s: %m", root);
        free(s);
        return SHARC_ERR_INVALID;
    }
    if (strcmp(s->root, "/") == 0) {
        s->root[0] = '\0';
    }
    s->live = (strcmp(s->root, "/sys") == 0);
    sharc_snprintf(topo->source, sizeof(topo->source), "sysfs %s", root);
    sharc_topo_read_pci(s);
    sharc_topo_read_rdma(s);
    sharc_topo_read_net(s);
    sharc_topo_read_cpus(s);
    sharc_topo_read_dmi(s);
    sharc_topo_sort(topo);
    free(s);
    return SHARC_OK;
}
