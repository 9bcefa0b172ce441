/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_fs.c: reading a tree laid out like /sys: attributes, links and directory lists, and
 * the PCI position of a device path, resolved inside the tree so that a fixture never reads
 * the live machine. Shared by the PCI/RDMA/CPU reader (topo_sysfs.c) and the network
 * interface reader (topo_net.c).
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

/* Read a small sysfs attribute, trailing whitespace stripped. Returns 0, or -1. */
int sharc_topo_attr(const char *dir, const char *name, char *buf, size_t size)
{
    char path[PATH_MAX];
    FILE *f;
    size_t len;

    if (sharc_snprintf(path, sizeof(path), "%s/%s", dir, name) != 0) {
        return -1;
    }
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    len = fread(buf, 1, size - 1, f);
    if (ferror(f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    buf[len] = '\0';
    while (len > 0 && isspace((unsigned char)buf[len - 1])) {
        buf[--len] = '\0';
    }
    return 0;
}

int sharc_topo_attr_hex(const char *dir, const char *name, unsigned *value_p)
{
    char buf[32], *end;
    unsigned long v;

    if (sharc_topo_attr(dir, name, buf, sizeof(buf)) != 0) {
        return -1;
    }
    errno = 0;
    v = strtoul(buf, &end, 16);
    if (errno != 0 || end == buf || *end != '\0' || v > 0xffffffUL) {
        return -1;
    }
    *value_p = (unsigned)v;
    return 0;
}

int sharc_topo_attr_int(const char *dir, const char *name, long *value_p)
{
    char buf[32], *end;
    long v;

    if (sharc_topo_attr(dir, name, buf, sizeof(buf)) != 0) {
        return -1;
    }
    errno = 0;
    v = strtol(buf, &end, 10);
    if (errno != 0 || end == buf || *end != '\0') {
        return -1;
    }
    *value_p = v;
    return 0;
}

/* "0000:05:00.0" */
static int sharc_topo_is_busid(const char *s)
{
    static const char shape[] = "xxxx:xx:xx.x";

    for (int i = 0; shape[i] != '\0'; i++) {
        if (shape[i] == 'x' ? !isxdigit((unsigned char)s[i]) : s[i] != shape[i]) {
            return 0;
        }
    }
    return s[12] == '\0';
}

/*
 * Resolve root/rel inside the tree: the real path of a class entry or device. Fails (with
 * a warning) for dangling links and for links that leave the tree, which would otherwise
 * read the live machine's /sys in place of a fixture's.
 */
int sharc_topo_resolve(sharc_topo_sysfs_t *s, const char *rel, char *out)
{
    char path[PATH_MAX];
    size_t rootlen = strlen(s->root);

    if (sharc_snprintf(path, sizeof(path), "%s/%s", s->root, rel) != 0) {
        sharc_topo_warn(s->topo, "%s: path too long", rel);
        return -1;
    }
    if (realpath(path, out) == NULL) {
        sharc_topo_warn(s->topo, "%s: cannot resolve (%s); skipped", rel, strerror(errno));
        return -1;
    }
    if (rootlen > 0 && (strncmp(out, s->root, rootlen) != 0 || out[rootlen] != '/')) {
        sharc_topo_warn(s->topo, "%s: links outside the tree (to %s); skipped", rel, out);
        return -1;
    }
    return 0;
}

/*
 * The PCI position of a resolved device path: from its host bridge ("pci0000:00") to the
 * last PCI function on the way (an Ethernet interface sits below its function, sometimes
 * behind a virtio device). Returns -1 for devices not on PCI.
 */
int sharc_topo_pci_from_path(sharc_topo_sysfs_t *s, const char *real, sharc_topo_pci_t *pci)
{
    const char *start = strstr(real, "/devices/pci");
    const char *p, *last_end = NULL;
    char dir[PATH_MAX];
    long numa;

    if (start == NULL) {
        return -1;
    }
    start += strlen("/devices/");
    for (p = start; *p != '\0';) {
        const char *slash = strchr(p, '/');
        size_t len = (slash != NULL) ? (size_t)(slash - p) : strlen(p);

        if (len == 12) {
            char comp[13];

            memcpy(comp, p, 12);
            comp[12] = '\0';
            if (sharc_topo_is_busid(comp)) {
                last_end = p + len;
                memcpy(pci->busid, comp, 13);
            }
        }
        p += len;
        if (*p == '/') {
            p++;
        }
    }
    if (last_end == NULL || (size_t)(last_end - start) >= sizeof(pci->path)) {
        return -1;
    }
    sharc_snprintf(pci->path, sizeof(pci->path), "%.*s", (int)(last_end - start), start);
    for (char *c = pci->busid; *c != '\0'; c++) {
        *c = (char)tolower((unsigned char)*c);
    }
    sharc_snprintf(dir, sizeof(dir), "%.*s", (int)(last_end - real), real);
    pci->numa = -1;
    if (sharc_topo_attr_int(dir, "numa_node", &numa) == 0 && numa >= 0 &&
        numa < SHARC_TOPO_MAX_NUMA * 16) {
        pci->numa = (int)numa;
    }
    (void)s;
    return 0;
}

/* The last component of the target of the link @p dir/@p link, or "" (no such link). */
void sharc_topo_readlink_base(const char *dir, const char *link, char *out, size_t size)
{
    char path[PATH_MAX], target[PATH_MAX];
    ssize_t len;
    const char *base;

    out[0] = '\0';
    if (sharc_snprintf(path, sizeof(path), "%s/%s", dir, link) != 0) {
        return;
    }
    len = readlink(path, target, sizeof(target) - 1);
    if (len <= 0) {
        return;
    }
    target[len] = '\0';
    base = strrchr(target, '/');
    sharc_snprintf(out, size, "%s", (base != NULL) ? base + 1 : target);
}

int sharc_topo_list(const char *dir, struct dirent ***list_p)
{
    return scandir(dir, list_p, NULL, versionsort);
}

void sharc_topo_free_list(struct dirent **list, int n)
{
    for (int i = 0; i < n; i++) {
        free(list[i]);
    }
    free(list);
}
