/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.h: sharc's view of the machine it runs on (internal): GPUs, NVLink/NVSwitch, RDMA
 * NICs (InfiniBand, RoCE, EFA), Ethernet interfaces, CPU sockets and NUMA nodes, and the PCI
 * distance between two devices in nvidia-smi topo's terms. The library reads it from sysfs
 * (the verbs transport picks the NIC nearest its GPU with it); sharc-topo's tool library
 * (perf/topo/topo_tool.h) adds the other inputs, the classification, recommendations and the
 * doctor. Malformed input gives a partial result plus warnings (topo->warnings), never a
 * failure.
 */
#ifndef SHARC_TOPO_H
#define SHARC_TOPO_H

#include <stdio.h>

#include <sharc/status.h>

#include "../../base/def_int.h"

#define SHARC_TOPO_MAX_GPUS    32
#define SHARC_TOPO_MAX_NICS    64 /* RDMA devices; a p5.48xlarge has 32 */
#define SHARC_TOPO_MAX_NETDEVS 32
#define SHARC_TOPO_MAX_PORTS   2
#define SHARC_TOPO_MAX_GIDS    16 /* non-empty GID entries kept per port */
#define SHARC_TOPO_MAX_NUMA    16
#define SHARC_TOPO_MAX_RECS    24
#define SHARC_TOPO_NAME_MAX    64
#define SHARC_TOPO_PATH_MAX    512

/* PCI distance in nvidia-smi topo's terms, nearest first (the order matters: rails sort on
 * it). NV means NVLink, directly or through NVSwitches; its link count is kept beside it. */
typedef enum {
    SHARC_TOPO_LINK_X = 0, /* self */
    SHARC_TOPO_LINK_NV,    /* NVLink */
    SHARC_TOPO_LINK_PIX,   /* at most one PCIe bridge (one switch) */
    SHARC_TOPO_LINK_PXB,   /* several PCIe bridges, no host bridge */
    SHARC_TOPO_LINK_PHB,   /* through a PCIe host bridge (the CPU) */
    SHARC_TOPO_LINK_NODE,  /* between host bridges of one NUMA node */
    SHARC_TOPO_LINK_SYS,   /* across the SMP interconnect between NUMA nodes */
    SHARC_TOPO_LINK_UNKNOWN,
    SHARC_TOPO_LINK_LAST
} sharc_topo_link_t;

typedef enum {
    SHARC_TOPO_FABRIC_NONE = 0, /* nothing usable between nodes */
    SHARC_TOPO_FABRIC_IB,
    SHARC_TOPO_FABRIC_ROCE,
    SHARC_TOPO_FABRIC_EFA,
    SHARC_TOPO_FABRIC_ETH, /* TCP sockets */
    SHARC_TOPO_FABRIC_UNKNOWN,
    SHARC_TOPO_FABRIC_LAST
} sharc_topo_fabric_t;

typedef enum {
    SHARC_TOPO_INTRA_NONE = 0, /* no GPU */
    SHARC_TOPO_INTRA_SINGLE,   /* one GPU: nothing to connect */
    SHARC_TOPO_INTRA_NVSWITCH,
    SHARC_TOPO_INTRA_NVLINK, /* direct NVLink between every pair */
    SHARC_TOPO_INTRA_PCIE,   /* PCIe peer-to-peer (every pair within PXB) */
    SHARC_TOPO_INTRA_HOST,   /* staged through host memory for some pairs */
    SHARC_TOPO_INTRA_LAST
} sharc_topo_intra_t;

/* Where a device sits: its PCI address and its path from the root, with components
 * separated by '/': the host bridge (sysfs "pci0000:00", XML "cpu0") and then each bridge
 * and the device itself. Empty path: unknown position. */
typedef struct {
    char busid[16]; /* "0000:05:00.0", lower case */
    char path[SHARC_TOPO_PATH_MAX];
    int numa; /* -1 unknown */
} sharc_topo_pci_t;

typedef struct {
    sharc_topo_pci_t pci;
    unsigned vendor, device;        /* PCI ids, 0 unknown */
    char model[48];                 /* "H100 SXM5 80GB", or "" */
    int sm;                         /* compute capability x10 (90 for Hopper), 0 unknown */
    int nvlinks_max;                /* NVLinks of the model (SXM parts), 0 unknown or none */
    int nvlinks_switch;             /* active NVLinks ending at NVSwitches */
    int rails[SHARC_TOPO_MAX_NICS]; /* nics[] indices of the fabric, nearest first */
    int nrails;
    int nnearest; /* the first nnearest rails are at the nearest distance */
    /* on Ethernet with several interfaces of the fastest class (topo->socket_ifs): those,
     * netdevs[] indices, nearest first; the first eth_nnearest are at the nearest distance */
    int eth_rails[SHARC_TOPO_MAX_NETDEVS];
    int eth_nrails;
    int eth_nnearest;
    double net_gbps; /* expected network bandwidth of this GPU, Gb/s; 0 with no network,
                      * -1 unknown (the input lacks a link speed or port rate) */
} sharc_topo_gpu_t;

typedef struct {
    int index;
    char gid[48];  /* "fe80:0000:...", as sysfs prints it */
    char type[16]; /* "RoCE v2", "IB/RoCE v1" */
    char ndev[16]; /* netdev the GID belongs to, or "" */
    int ipv4;      /* an IPv4-mapped address (::ffff:a.b.c.d) */
} sharc_topo_gid_t;

typedef struct {
    int num;
    int active;          /* state ACTIVE */
    char state[24];      /* "4: ACTIVE" */
    char link_layer[24]; /* "InfiniBand", "Ethernet", "Unspecified" */
    double rate_gbps;    /* 0 unknown */
    sharc_topo_gid_t gids[SHARC_TOPO_MAX_GIDS];
    int ngids;
} sharc_topo_port_t;

typedef struct {
    char name[SHARC_TOPO_NAME_MAX]; /* mlx5_0, rdmap16s27 */
    char driver[32];                /* mlx5_core, efa; "" unknown */
    unsigned vendor, device; /* PCI ids (0xefa1: an EFA of the second generation), 0 unknown */
    sharc_topo_fabric_t fabric;
    int captured;    /* known from a capture (nvidia-smi, XML), not from sysfs */
    char netdev[16]; /* Ethernet interface on the same PCI function, or "" */
    sharc_topo_pci_t pci;
    sharc_topo_port_t ports[SHARC_TOPO_MAX_PORTS];
    int nports;
} sharc_topo_nic_t;

typedef enum {
    SHARC_TOPO_NETDEV_PORT = 0, /* a physical port: a device behind it */
    SHARC_TOPO_NETDEV_BOND,     /* a bond over ports; listed when one of them is listed */
    SHARC_TOPO_NETDEV_BRIDGE,   /* a bridge over ports; the same */
} sharc_topo_netdev_kind_t;

typedef struct {
    char name[16];
    char driver[32]; /* "bonding" and "bridge" for those */
    sharc_topo_netdev_kind_t kind;
    char master[16];                /* the bond or bridge this port belongs to, or "" */
    int speed_mbps;                 /* -1 unknown */
    int up;                         /* operstate up */
    int ipv4;                       /* has an IPv4 address: 1, 0, -1 unknown (offline input) */
    int ipoib;                      /* IP over InfiniBand (ARP type 32): not Ethernet */
    unsigned vendor;                /* PCI vendor of the device behind it (NCCL tunes its sockets
                                     * by it: 0x1d0f AWS, 0x1ae0 Google), 0 unknown */
    char rdma[SHARC_TOPO_NAME_MAX]; /* RDMA device on the same PCI function, or "" */
    sharc_topo_pci_t pci;           /* bonds and bridges: only the NUMA node of a port */
} sharc_topo_netdev_t;

typedef struct {
    int nsockets; /* 0 unknown */
    int nnuma;
    char cpulist[SHARC_TOPO_MAX_NUMA][128]; /* per NUMA node */
} sharc_topo_cpu_t;

typedef struct sharc_topo {
    char source[SHARC_TOPO_PATH_MAX]; /* what it was read from, for reports */
    sharc_topo_gpu_t gpus[SHARC_TOPO_MAX_GPUS];
    int ngpus;
    sharc_topo_nic_t nics[SHARC_TOPO_MAX_NICS];
    int nnics;
    sharc_topo_netdev_t netdevs[SHARC_TOPO_MAX_NETDEVS];
    int nnetdevs;
    struct { /* every interface in class/net, virtual ones (bonds) too, for the doctor */
        char name[16];
        int up;
        char master[16]; /* the bond or bridge it is a port of, or "" */
    } ifaces[SHARC_TOPO_MAX_NETDEVS * 2];
    int nifaces;
    sharc_topo_cpu_t cpu;
    char product[64];        /* DMI product name: the instance type on a cloud VM
                              * ("p4d.24xlarge"), or "" */
    char sys_vendor[64];     /* DMI system vendor ("Amazon EC2"), or "" */
    int nvswitches;          /* NVSwitch PCI devices, or NVML/nvidia-smi evidence of them */
    char nvswitch_busid[16]; /* the lowest NVSwitch PCI address, for XML export */
    int nvml;                /* NVML was used */

    /* distances; filled from PCI paths by sharc_topo_classify() unless a capture set them */
    sharc_topo_link_t gpu_gpu[SHARC_TOPO_MAX_GPUS][SHARC_TOPO_MAX_GPUS];
    int nvlinks[SHARC_TOPO_MAX_GPUS][SHARC_TOPO_MAX_GPUS]; /* NV# per pair */
    sharc_topo_link_t gpu_nic[SHARC_TOPO_MAX_GPUS][SHARC_TOPO_MAX_NICS];
    int links_given; /* gpu_gpu, nvlinks and gpu_nic came from a capture */

    /* classification */
    sharc_topo_intra_t intra;
    sharc_topo_fabric_t fabric;
    int eth_best; /* netdevs[] index of the interface for TCP (sharc_topo_classify), or -1 */
    /* every usable interface of eth_best's class (same speed and kind, not IPoIB): what NCCL's
     * sockets and UCX should spread over, in PCI order; eth_best is one of them */
    int socket_ifs[SHARC_TOPO_MAX_NETDEVS];
    int nsocket_ifs;

    char **warnings; /* malformed or missing input, one line each */
    int nwarnings;
} sharc_topo_t;

/* ---- lifecycle and input (topo.c, topo_sysfs.c, topo_net.c) */

/** Allocate an empty topology. */
SHARC_HIDDEN sharc_status_t sharc_topo_create(sharc_topo_t **topo_p);
/** Free it; NULL is a no-op. */
SHARC_HIDDEN void sharc_topo_destroy(sharc_topo_t *topo);
/** Record a warning about the input (also logged). */
SHARC_HIDDEN void sharc_topo_warn(sharc_topo_t *topo, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/**
 * Read GPUs, NVSwitches, RDMA NICs, Ethernet interfaces and CPU/NUMA from a tree laid out
 * like /sys (root "/sys" for the live machine; symlinks are resolved inside the tree). Missing
 * or garbled entries are skipped with a warning. Fails only for a root that is not a
 * directory or for lack of memory.
 */
SHARC_HIDDEN sharc_status_t sharc_topo_read_sysfs(sharc_topo_t *topo, const char *root);

#define SHARC_TOPO_PCI_VENDOR_NVIDIA 0x10de

/** Model, compute capability and NVLink count of a GPU from its PCI ids, where known. */
SHARC_HIDDEN void sharc_topo_gpu_identify(sharc_topo_gpu_t *gpu);

/** Order of two PCI addresses ("dddd:bb:dd.f") by domain, bus, device, function; an address
 *  that does not parse sorts after every one that does. */
SHARC_HIDDEN int sharc_topo_busid_cmp(const char *a, const char *b);

/**
 * Number GPUs by PCI address (domain, bus, device, function), as nvidia-smi, NVML and CUDA
 * with CUDA_DEVICE_ORDER=PCI_BUS_ID do, and NICs the same way (then by name); the distance
 * matrices follow. GPUs and NICs without an address keep their order, after the others. The
 * readers call it; a device's index never depends on the order a directory lists it in.
 */
SHARC_HIDDEN void sharc_topo_sort(sharc_topo_t *topo);

/** Distance between two PCI positions (the path rule is in topo.c). */
SHARC_HIDDEN sharc_topo_link_t sharc_topo_pci_distance(const sharc_topo_pci_t *a,
                                                       const sharc_topo_pci_t *b);

#endif
