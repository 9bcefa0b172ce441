/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_fs.h: what the readers of a sysfs-shaped tree share (topo_sysfs.c: PCI, RDMA, CPUs;
 * topo_net.c: network interfaces): the tree being read and its attribute helpers
 * (topo_fs.c). Internal to transport/topo/.
 */
#ifndef SHARC_TOPO_FS_H
#define SHARC_TOPO_FS_H

#include <dirent.h>
#include <limits.h>

#include "topo.h"

typedef struct {
    sharc_topo_t *topo;
    char root[PATH_MAX]; /* real path of the tree's root, no trailing '/' ("" for "/") */
    int live;            /* the root is this machine's /sys: its addresses are this tree's */
} sharc_topo_sysfs_t;

/** Read a small attribute, trailing whitespace stripped. Returns 0, or -1. */
SHARC_HIDDEN int sharc_topo_attr(const char *dir, const char *name, char *buf, size_t size);
/** A hexadecimal attribute (PCI ids and classes), at most 0xffffff. Returns 0, or -1. */
SHARC_HIDDEN int sharc_topo_attr_hex(const char *dir, const char *name, unsigned *value_p);
/** A decimal attribute. Returns 0, or -1. */
SHARC_HIDDEN int sharc_topo_attr_int(const char *dir, const char *name, long *value_p);
/** The real path of root/rel, which must stay inside the tree (else -1 and a warning). */
SHARC_HIDDEN int sharc_topo_resolve(sharc_topo_sysfs_t *s, const char *rel, char *out);
/** The PCI position of a resolved device path; -1 for devices not on PCI. */
SHARC_HIDDEN int sharc_topo_pci_from_path(sharc_topo_sysfs_t *s, const char *real,
                                          sharc_topo_pci_t *pci);
/** The last component of where the link @p dir/@p link points ("driver": the driver bound
 *  to a device; "master": the bond or bridge an interface is a port of), or "". */
SHARC_HIDDEN void sharc_topo_readlink_base(const char *dir, const char *link, char *out,
                                           size_t size);
/** scandir in version order (eth2 before eth10), never the directory's own order, which on a
 *  real /sys is unsorted; free with sharc_topo_free_list. PCI addresses are hexadecimal, so
 *  version order is not PCI order: GPUs and NICs are numbered by sharc_topo_sort. */
SHARC_HIDDEN int sharc_topo_list(const char *dir, struct dirent ***list_p);
SHARC_HIDDEN void sharc_topo_free_list(struct dirent **list, int n);

/** Network interfaces from class/net (topo_net.c). */
SHARC_HIDDEN void sharc_topo_read_net(sharc_topo_sysfs_t *s);

#endif
