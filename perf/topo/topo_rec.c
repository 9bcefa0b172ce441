/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_rec.c: what to set on this node (NCCL, libfabric, UCX, sharc), each with its reason:
 * RDMA ports, RoCE GIDs, every interface of the fastest class for NCCL's sockets and UCX on
 * Ethernet and EFA nodes. A pure function of the topology; the doctor that checks the settings
 * in force is in topo_doctor.c (topo_efa.c for the libraries of EFA nodes), printing in
 * topo_out.c.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

static void sharc_topo_rec_add(sharc_topo_recs_t *recs, const char *key, int unset,
                               const char *value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A recommendation of @p key: a value or an unset, and the reason. A new one, or with
 * @p reuse the one the list has already; none when the list is full. */
static void sharc_topo_rec_vput(sharc_topo_recs_t *recs, const char *key, int reuse, int unset,
                                const char *value, const char *fmt, va_list ap)
{
    sharc_topo_rec_t *rec = NULL;

    for (int r = 0; reuse && r < recs->nrecs && rec == NULL; r++) {
        rec = strcmp(recs->recs[r].key, key) == 0 ? &recs->recs[r] : NULL;
    }
    if (rec == NULL && recs->nrecs < SHARC_TOPO_MAX_RECS) {
        rec = &recs->recs[recs->nrecs++];
        snprintf(rec->key, sizeof(rec->key), "%s", key);
    }
    if (rec != NULL) {
        snprintf(rec->value, sizeof(rec->value), "%s", value);
        rec->unset = unset;
        vsnprintf(rec->reason, sizeof(rec->reason), fmt, ap);
    }
}

static void sharc_topo_rec_add(sharc_topo_recs_t *recs, const char *key, int unset,
                               const char *value, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    sharc_topo_rec_vput(recs, key, 0, unset, value, fmt, ap);
    va_end(ap);
}

void sharc_topo_rec_set(sharc_topo_recs_t *recs, const char *key, int unset, const char *value,
                        const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    sharc_topo_rec_vput(recs, key, 1, unset, value, fmt, ap);
    va_end(ap);
}

/* "mlx5_0:1,mlx5_1:1": the active ports of the fabric's NICs. Returns how many. */
static int sharc_topo_port_list(const sharc_topo_t *topo, char *out, size_t size)
{
    size_t len = 0;
    int n = 0;

    out[0] = '\0';
    for (int k = 0; k < topo->nnics; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];

        if (nic->fabric != topo->fabric) {
            continue;
        }
        for (int p = 0; p < nic->nports; p++) {
            if (nic->ports[p].active && len < size) {
                len += (size_t)snprintf(out + len, size - len, "%s%s:%d", n > 0 ? "," : "",
                                        nic->name, nic->ports[p].num);
                n++;
            }
        }
    }
    if (len >= size) {
        out[size - 1] = '\0';
    }
    return n;
}

int sharc_topo_roce_v2_ipv4(const sharc_topo_port_t *port)
{
    for (int g = 0; g < port->ngids; g++) {
        if (strcmp(port->gids[g].type, "RoCE v2") == 0 && port->gids[g].ipv4) {
            return port->gids[g].index;
        }
    }
    return -1;
}

static void sharc_topo_note(sharc_topo_recs_t *recs, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sharc_topo_note(sharc_topo_recs_t *recs, const char *key, const char *fmt, ...)
{
    sharc_topo_note_t *note;
    va_list ap;

    if (recs->nnotes == SHARC_TOPO_MAX_NOTES) {
        return;
    }
    note = &recs->notes[recs->nnotes++];
    snprintf(note->key, sizeof(note->key), "%s", key);
    va_start(ap, fmt);
    vsnprintf(note->text, sizeof(note->text), fmt, ap);
    va_end(ap);
}

/* The interface a RoCE port's GIDs belong to, for telling where an address is missing. */
static const char *sharc_topo_port_netdev(const sharc_topo_nic_t *nic,
                                          const sharc_topo_port_t *port)
{
    for (int g = 0; g < port->ngids; g++) {
        if (port->gids[g].ndev[0] != '\0') {
            return port->gids[g].ndev;
        }
    }
    return nic->netdev[0] != '\0' ? nic->netdev : "its interface";
}

/*
 * NCCL_IB_GID_INDEX: the RoCE v2 GID with an IPv4 address, the one that routes (UDP/IP) and
 * that every node has at the same index when configured alike. Active ports without one get a
 * note (and the doctor a warning): the kernel adds that GID when the interface gets an IPv4
 * address, and without it NCCL and UCX fall back to a link-local or RoCE v1 GID that does not
 * leave the subnet. No port with one: nothing to recommend.
 */
static void sharc_topo_recommend_roce(const sharc_topo_t *topo, sharc_topo_recs_t *recs)
{
    int index = -1, agree = 1, nmissing = 0;
    char first[SHARC_TOPO_NAME_MAX + 8] = "", missing[384] = "";
    size_t len = 0;
    char value[16];

    for (int k = 0; k < topo->nnics; k++) {
        const sharc_topo_nic_t *nic = &topo->nics[k];

        for (int p = 0; p < nic->nports && nic->fabric == SHARC_TOPO_FABRIC_ROCE; p++) {
            int gid = sharc_topo_roce_v2_ipv4(&nic->ports[p]);

            if (!nic->ports[p].active) {
                continue;
            }
            if (gid < 0) {
                if (len < sizeof(missing)) {
                    len +=
                        (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%s port %d on %s",
                                         nmissing > 0 ? ", " : "", nic->name, nic->ports[p].num,
                                         sharc_topo_port_netdev(nic, &nic->ports[p]));
                }
                nmissing++;
            } else if (index < 0) {
                index = gid;
                snprintf(first, sizeof(first), "%s port %d", nic->name, nic->ports[p].num);
            } else if (gid != index) {
                agree = 0;
            }
        }
    }
    if (nmissing > 0) {
        sharc_topo_note(recs, "NCCL_IB_GID_INDEX",
                        "%s RoCE v2 GID with an IPv4 address (%s): NCCL and UCX fall back to a "
                        "link-local or RoCE v1 GID, which does not route beyond the subnet; "
                        "configure an IPv4 address on the interface and the kernel adds the "
                        "GID%s",
                        index < 0 ? "no active RoCE port has a" : "some active RoCE ports have no",
                        missing, index < 0 ? ", then sharc-topo recommends its index" : "");
    }
    if (index < 0) {
        return; /* nothing to pin; the note above says why */
    }
    snprintf(value, sizeof(value), "%d", index);
    sharc_topo_rec_add(recs, "NCCL_IB_GID_INDEX", 0, value,
                       "GID %d of %s is RoCE v2 with an IPv4 address: routable (UDP), and the "
                       "same choice on every node%s",
                       index, first,
                       agree ? "" : "; other ports have it at another index: check their tables");
    sharc_topo_rec_add(recs, "UCX_IB_GID_INDEX", 0, value, "the same GID for UCX");
}

/*
 * SHARC_TRANSPORT=auto on every node: sharc picks the backend per buffer (GPU buffers through
 * NCCL, host buffers through shm inside the node and ucx between nodes). Naming one backend
 * forces it on both kinds of buffer, which no single backend carries well. The backends named
 * are checked against this build's registry, so the report says when one is not built in.
 */
static void sharc_topo_recommend_transport(const sharc_topo_t *topo, sharc_topo_recs_t *recs)
{
    static const char *const used[] = {"nccl", "shm", "ucx"};
    int rdma = topo->fabric == SHARC_TOPO_FABRIC_IB || topo->fabric == SHARC_TOPO_FABRIC_ROCE;
    /* what UCX runs over between nodes; a capture that names NICs only does not say */
    const char *ucx = rdma                                        ? "ucx (verbs)"
                      : topo->fabric == SHARC_TOPO_FABRIC_UNKNOWN ? "ucx"
                                                                  : "ucx (TCP)";
    size_t len = 0;

    snprintf(recs->transport, sizeof(recs->transport), "auto");
    snprintf(recs->gpu_backend, sizeof(recs->gpu_backend), "%s", topo->ngpus > 0 ? "nccl" : "-");
    snprintf(recs->host_backend, sizeof(recs->host_backend), "shm+ucx");
    for (size_t i = topo->ngpus > 0 ? 0 : 1; i < SHARC_ARRAY_SIZE(used); i++) {
        if (!sharc_build_has_transport(used[i]) && len < sizeof(recs->not_built)) {
            len += (size_t)snprintf(recs->not_built + len, sizeof(recs->not_built) - len, "%s%s",
                                    len > 0 ? "," : "", used[i]);
        }
    }
    if (topo->ngpus == 0) {
        sharc_topo_rec_add(recs, "SHARC_TRANSPORT", 0, "auto",
                           "no GPU: auto sends host buffers through shm inside the node and %s "
                           "between nodes",
                           ucx);
        return;
    }
    sharc_topo_rec_add(
        recs, "SHARC_TRANSPORT", 0, "auto",
        "%d GPU(s): auto sends GPU buffers through NCCL (%s inside the node, %s "
        "between nodes) and host buffers through shm inside the node and %s "
        "between nodes; naming one backend forces it on both kinds%s",
        topo->ngpus, sharc_topo_intra_name(topo->intra), sharc_topo_fabric_name(topo->fabric), ucx,
        !sharc_build_has_transport("nccl") ? "; this sharc has no nccl backend yet" : "");
}

/* "a,b,c" (or "=a,b,c"): the interfaces of the fastest class, at most @p max. */
static void sharc_topo_if_list(const sharc_topo_t *topo, const char *prefix, int max, char *out,
                               size_t size)
{
    size_t len = (size_t)snprintf(out, size, "%s", prefix);

    for (int s = 0; s < topo->nsocket_ifs && s < max && len < size; s++) {
        len += (size_t)snprintf(out + len, size - len, "%s%s", s > 0 ? "," : "",
                                topo->netdevs[topo->socket_ifs[s]].name);
    }
}

/* Interfaces NCCL's socket transport takes at most (MAX_IFS in its socket code). */
#define SHARC_TOPO_NCCL_MAX_IFS 16
/* Rails UCX is asked to split one rendezvous over at most: a UCX endpoint has 8 lanes in all
 * in current releases (6 in older ones), which its eager and control lanes share. */
#define SHARC_TOPO_UCX_MAX_RAILS 4

/*
 * NCCL's socket helpers. By default NCCL opens one socket per connection and no helper
 * thread, except on the NICs it knows (PCI vendor 0x1d0f, AWS: 2 threads x 8 sockets; 0x1ae0,
 * Google: 4 threads): one TCP stream, one core, a fraction of 100 Gb/s. NCCL's documentation
 * gives 4 threads for generic 100G networks; 4 sockets per thread makes 16 streams (the
 * product may not pass 64).
 */
static void sharc_topo_recommend_nsocks(const sharc_topo_netdev_t *eth, sharc_topo_recs_t *recs,
                                        char *tuned, size_t size)
{
    tuned[0] = '\0';
    if (eth->vendor == 0x1d0f || eth->vendor == 0x1ae0) {
        snprintf(tuned, size, "; NCCL picks its socket threads for %s's NICs by itself (%s)",
                 eth->vendor == 0x1d0f ? "AWS" : "Google Cloud",
                 eth->vendor == 0x1d0f ? "2 threads x 8 sockets" : "4 threads");
        return;
    }
    if (eth->speed_mbps < 100000) {
        return; /* below 100 Gb/s one stream per connection keeps up; unknown: nothing to say */
    }
    sharc_topo_rec_add(recs, "NCCL_SOCKET_NTHREADS", 0, "4",
                       "%d Gb/s per interface, and NCCL's default for this NIC (PCI vendor "
                       "0x%04x) is one TCP stream per connection, no helper thread: one core "
                       "cannot fill the link; NCCL's documentation gives 4 for generic 100G "
                       "networks",
                       eth->speed_mbps / 1000, eth->vendor);
    sharc_topo_rec_add(recs, "NCCL_NSOCKS_PERTHREAD", 0, "4",
                       "4 sockets per helper thread: 16 TCP streams per connection (threads x "
                       "sockets may not pass 64)");
}

/* UCX over TCP on every interface of the class: UCX_NET_DEVICES names them, and a rendezvous
 * (large message) is split over up to UCX_MAX_RNDV_RAILS of them (UCX's default is 2). */
static void sharc_topo_recommend_ucx_tcp(const sharc_topo_t *topo, const char *speed, int efa,
                                         sharc_topo_recs_t *recs)
{
    const sharc_topo_netdev_t *eth = &topo->netdevs[topo->eth_best];
    char list[512], value[16];

    if (topo->nsocket_ifs <= 1 && efa) {
        sharc_topo_rec_add(recs, "UCX_NET_DEVICES", 0, eth->name,
                           "UCX has no EFA transport: host buffers go over TCP on %s (%s)",
                           eth->name, speed);
    } else if (topo->nsocket_ifs <= 1) {
        sharc_topo_rec_add(recs, "UCX_NET_DEVICES", 0, eth->name,
                           "host-buffer traffic on the same interface");
    } else {
        sharc_topo_if_list(topo, "", SHARC_TOPO_MAX_NETDEVS, list, sizeof(list));
        sharc_topo_rec_add(recs, "UCX_NET_DEVICES", 0, list,
                           "%sthe %d interfaces of the fastest class (%s%s): UCX spreads over "
                           "them all, where naming one leaves the others idle",
                           efa ? "UCX has no EFA transport: host buffers go over TCP on "
                               : "host-buffer traffic on ",
                           topo->nsocket_ifs, speed, eth->speed_mbps >= 0 ? " each" : "");
    }
    if (topo->nsocket_ifs > 2) {
        snprintf(value, sizeof(value), "%d",
                 SHARC_MIN(topo->nsocket_ifs, SHARC_TOPO_UCX_MAX_RAILS));
        sharc_topo_rec_add(recs, "UCX_MAX_RNDV_RAILS", 0, value,
                           "a large message is split over at most this many of them (UCX's "
                           "default is 2); at most %d, as a UCX endpoint has 8 lanes in all "
                           "(fewer in older releases) and needs some for other traffic",
                           SHARC_TOPO_UCX_MAX_RAILS);
    }
    sharc_topo_rec_add(recs, "UCX_TLS", 0, "tcp,sm,self",
                       "TCP between nodes, shared memory inside one");
}

/*
 * EFA: NCCL reaches it through the aws-ofi-nccl NET plugin over libfabric. FI_PROVIDER pins
 * libfabric to its EFA provider; device RDMA (GPUDirect) is libfabric's own choice since its
 * API 1.18, where the device reads remote memory; NCCL_PROTO=simple was advice for old plugins.
 * What the node's libraries say (the plugin, libfabric's version) is the doctor's (topo_efa.c).
 */
static void sharc_topo_recommend_efa(const sharc_topo_t *topo, sharc_topo_recs_t *recs)
{
    char why[192];
    int rdma = sharc_topo_efa_rdma_read(topo, why, sizeof(why));

    sharc_topo_rec_add(recs, "FI_PROVIDER", 0, "efa",
                       "libfabric offers the OFI plugin its EFA provider only: the plugin "
                       "otherwise takes the first provider with the features it needs, which is "
                       "TCP when EFA is unusable, and the job runs at a fraction of the speed "
                       "without an error");
    if (rdma == 0) {
        sharc_topo_rec_add(recs, "FI_EFA_USE_DEVICE_RDMA", 1, "",
                           "%s: there is no device RDMA to turn on, and 1 makes libfabric abort "
                           "the job",
                           why);
    } else {
        sharc_topo_rec_add(recs, "FI_EFA_USE_DEVICE_RDMA", 1, "",
                           "%s; libfabric 1.18+ turns device RDMA on by itself where the EFA "
                           "device reads remote memory: setting it is stale, 0 disables "
                           "GPUDirect RDMA",
                           why);
    }
    sharc_topo_rec_add(recs, "NCCL_PROTO", 1, "",
                       "'simple' was advice for old aws-ofi-nccl; current plugins support "
                       "LL128 and NCCL picks protocols per size, forcing Simple costs "
                       "latency");
}

/* NCCL over TCP sockets: every interface of the fastest class, each a NET device (rail). */
static void sharc_topo_recommend_sockets(const sharc_topo_t *topo, const char *speed,
                                         sharc_topo_recs_t *recs)
{
    const sharc_topo_netdev_t *eth = &topo->netdevs[topo->eth_best];
    char value[520], tuned[160];

    sharc_topo_recommend_nsocks(eth, recs, tuned, sizeof(tuned));
    sharc_topo_if_list(topo, "=", SHARC_TOPO_NCCL_MAX_IFS, value, sizeof(value));
    if (topo->nsocket_ifs <= 1) {
        sharc_topo_rec_add(recs, "NCCL_SOCKET_IFNAME", 0, value,
                           "%s is the fastest interface that is up%s (%s, %s)%s; NCCL would "
                           "otherwise take the first non-loopback one%s",
                           eth->name, eth->ipv4 == 1 ? " with an IPv4 address" : "", speed,
                           eth->driver[0] ? eth->driver : "driver ?",
                           eth->kind == SHARC_TOPO_NETDEV_PORT
                               ? ""
                               : "; its ports have no address of their own and stay out",
                           tuned);
    } else {
        sharc_topo_rec_add(recs, "NCCL_SOCKET_IFNAME", 0, value,
                           "the %d interfaces of the fastest class that are up%s (%s%s, %s)%s: "
                           "NCCL makes each a NET device and gives every GPU the nearest (its "
                           "rails), where naming one leaves %d idle; '=' matches names "
                           "exactly%s",
                           topo->nsocket_ifs, eth->ipv4 == 1 ? " with an IPv4 address" : "", speed,
                           eth->speed_mbps >= 0 ? " each" : "",
                           eth->driver[0] ? eth->driver : "driver ?",
                           topo->nsocket_ifs > SHARC_TOPO_NCCL_MAX_IFS
                               ? "; NCCL takes 16 at most, the first 16 are named"
                               : "",
                           topo->nsocket_ifs - 1, tuned);
    }
}

void sharc_topo_recommend(const sharc_topo_t *topo, sharc_topo_recs_t *recs)
{
    const sharc_topo_netdev_t *eth = topo->eth_best >= 0 ? &topo->netdevs[topo->eth_best] : NULL;
    char ports[512], value[520], speed[32] = "speed unknown";
    int nports = sharc_topo_port_list(topo, ports, sizeof(ports));

    memset(recs, 0, sizeof(*recs));
    if (eth != NULL && eth->speed_mbps >= 0) {
        snprintf(speed, sizeof(speed), "%d Mb/s", eth->speed_mbps);
    }

    switch (topo->fabric) {
    case SHARC_TOPO_FABRIC_IB:
    case SHARC_TOPO_FABRIC_ROCE:
        snprintf(value, sizeof(value), "=%s", ports);
        sharc_topo_rec_add(recs, "NCCL_IB_HCA", 0, value,
                           "the %d active %s port(s); '=' matches the names exactly, so mlx5_1 "
                           "does not also select mlx5_10.., and ports of other fabrics stay out",
                           nports, sharc_topo_fabric_name(topo->fabric));
        if (topo->fabric == SHARC_TOPO_FABRIC_ROCE) {
            sharc_topo_recommend_roce(topo, recs);
        }
        sharc_topo_rec_add(recs, "UCX_NET_DEVICES", 0, ports,
                           "host-buffer traffic on the same %s ports",
                           sharc_topo_fabric_name(topo->fabric));
        sharc_topo_rec_add(recs, "UCX_TLS", 0, "rc,sm,self",
                           "reliable connected verbs between nodes, shared memory inside one");
        break;
    case SHARC_TOPO_FABRIC_EFA:
        sharc_topo_recommend_efa(topo, recs);
        if (eth != NULL) {
            sharc_topo_recommend_ucx_tcp(topo, speed, 1, recs);
        }
        break;
    case SHARC_TOPO_FABRIC_ETH:
        sharc_topo_recommend_sockets(topo, speed, recs);
        sharc_topo_rec_add(recs, "NCCL_IB_DISABLE", 0, "1",
                           "no active RDMA port: skip the verbs probe and use sockets");
        sharc_topo_recommend_ucx_tcp(topo, speed, 0, recs);
        break;
    default: break;
    }
    sharc_topo_recommend_transport(topo, recs);
}
