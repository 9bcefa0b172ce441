/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_xml.c: NCCL topology XML (the NCCL_TOPO_FILE format) in and out, through libxml2:
 *   <system version="1"><cpu numaid="0"><pci busid=.. class=..>
 *     <pci busid=..><gpu dev=.. sm=.. rank=.. gdr=..><nvlink target=.. count=.. tclass=../>
 *     </gpu></pci> <pci busid=..><nic><net name=.. dev=.. speed=.. port=.. gdr=../></nic></pci>
 *   </pci></cpu></system>
 * Nested <pci> elements are PCI switches as NCCL sees them (one element per switch); the
 * position of each device is the chain of busids below its <cpu>. The document is untrusted:
 * no network, no entity expansion, and bad elements become warnings; a damaged document gives
 * what could be read before the damage, with a warning. Built only with libxml2
 * (topo_xml_none.c otherwise).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_TOPO
#include "../../base/log.h"
#include "../../base/util.h"
#include "topo_tool.h"

#define SHARC_XML_MAX_PENDING 1024 /* nvlink elements waiting for their targets */

typedef struct {
    sharc_topo_t *topo;
    struct {
        int gpu;
        char target[16];
        int count;
        int is_switch;
    } pending[SHARC_XML_MAX_PENDING];
    int npending;
    char switches[8][16]; /* distinct NVSwitch targets seen */
    int nswitches;
} sharc_xml_import_t;

/* An attribute as a bounded, NUL-terminated string; "" when absent. */
static void sharc_xml_attr(xmlNodePtr node, const char *name, char *out, size_t size)
{
    xmlChar *value = xmlGetProp(node, (const xmlChar *)name);

    out[0] = '\0';
    if (value != NULL) {
        snprintf(out, size, "%s", (const char *)value);
        xmlFree(value);
    }
}

static long sharc_xml_attr_long(xmlNodePtr node, const char *name, long dflt)
{
    char buf[32], *end;
    long v;

    sharc_xml_attr(node, name, buf, sizeof(buf));
    v = strtol(buf, &end, 0);
    return (end == buf || *end != '\0') ? dflt : v;
}

static int sharc_xml_is(xmlNodePtr node, const char *name)
{
    return node->type == XML_ELEMENT_NODE && xmlStrcmp(node->name, (const xmlChar *)name) == 0;
}

static void sharc_xml_lower(char *s)
{
    for (; *s != '\0'; s++) {
        *s = (char)tolower((unsigned char)*s);
    }
}

static void sharc_xml_gpu(sharc_xml_import_t *im, xmlNodePtr node, const sharc_topo_pci_t *pci)
{
    sharc_topo_t *topo = im->topo;
    sharc_topo_gpu_t *gpu;
    char tclass[16];
    long vendor, device;

    if (topo->ngpus == SHARC_TOPO_MAX_GPUS) {
        sharc_topo_warn(topo, "NCCL XML: more than %d GPUs; %s ignored", SHARC_TOPO_MAX_GPUS,
                        pci->busid);
        return;
    }
    gpu = &topo->gpus[topo->ngpus];
    memset(gpu, 0, sizeof(*gpu));
    gpu->pci = *pci;
    gpu->sm = (int)sharc_xml_attr_long(node, "sm", 0);
    if (gpu->sm < 0 || gpu->sm > 1000) {
        sharc_topo_warn(topo, "NCCL XML: GPU %s: sm out of range", pci->busid);
        gpu->sm = 0;
    }
    /* the PCI ids are on the enclosing <pci> element (vendor="0x10de" device="0x2330") */
    vendor = sharc_xml_attr_long(node->parent, "vendor", SHARC_TOPO_PCI_VENDOR_NVIDIA);
    device = sharc_xml_attr_long(node->parent, "device", 0);
    gpu->vendor =
        (vendor > 0 && vendor <= 0xffff) ? (unsigned)vendor : SHARC_TOPO_PCI_VENDOR_NVIDIA;
    gpu->device = (device > 0 && device <= 0xffff) ? (unsigned)device : 0;
    sharc_topo_gpu_identify(gpu);
    gpu->nvlinks_max = 0; /* the XML lists the links there are: none are to be assumed */
    for (xmlNodePtr link = node->children; link != NULL; link = link->next) {
        long count;

        if (!sharc_xml_is(link, "nvlink")) {
            continue;
        }
        if (im->npending == SHARC_XML_MAX_PENDING) {
            sharc_topo_warn(topo, "NCCL XML: too many nvlink elements; the rest ignored");
            break;
        }
        count = sharc_xml_attr_long(link, "count", -1);
        if (count <= 0 || count > 64) {
            sharc_topo_warn(topo, "NCCL XML: GPU %s: nvlink without a valid count", pci->busid);
            continue;
        }
        sharc_xml_attr(link, "target", im->pending[im->npending].target, 16);
        sharc_xml_lower(im->pending[im->npending].target);
        sharc_xml_attr(link, "tclass", tclass, sizeof(tclass));
        im->pending[im->npending].gpu = topo->ngpus;
        im->pending[im->npending].count = (int)count;
        im->pending[im->npending].is_switch = (strcasecmp(tclass, "0x068000") == 0);
        im->npending++;
    }
    topo->ngpus++;
}

static void sharc_xml_nic(sharc_xml_import_t *im, xmlNodePtr node, const sharc_topo_pci_t *pci)
{
    sharc_topo_t *topo = im->topo;

    for (xmlNodePtr net = node->children; net != NULL; net = net->next) {
        char name[SHARC_TOPO_NAME_MAX];
        sharc_topo_nic_t *nic = NULL;
        long speed, port;

        if (!sharc_xml_is(net, "net")) {
            continue;
        }
        sharc_xml_attr(net, "name", name, sizeof(name));
        if (name[0] == '\0') {
            sharc_topo_warn(topo, "NCCL XML: net without a name ignored");
            continue;
        }
        for (int k = 0; k < topo->nnics; k++) {
            if (strcmp(topo->nics[k].name, name) == 0) {
                nic = &topo->nics[k];
            }
        }
        if (nic == NULL) {
            if (topo->nnics == SHARC_TOPO_MAX_NICS) {
                sharc_topo_warn(topo, "NCCL XML: more than %d NICs; %s ignored",
                                SHARC_TOPO_MAX_NICS, name);
                continue;
            }
            nic = &topo->nics[topo->nnics++];
            memset(nic, 0, sizeof(*nic));
            snprintf(nic->name, sizeof(nic->name), "%s", name);
            nic->fabric = SHARC_TOPO_FABRIC_UNKNOWN; /* the XML does not say */
            nic->captured = 1;
            nic->pci = *pci;
        }
        if (nic->nports == SHARC_TOPO_MAX_PORTS) {
            continue;
        }
        /* NCCL lists the ports it can use: active ones. speed is in Mb/s. */
        speed = sharc_xml_attr_long(net, "speed", 0);
        port = sharc_xml_attr_long(net, "port", 1);
        nic->ports[nic->nports].num = (port > 0 && port < 256) ? (int)port : 1;
        nic->ports[nic->nports].active = 1;
        snprintf(nic->ports[nic->nports].state, sizeof(nic->ports[0].state), "4: ACTIVE");
        nic->ports[nic->nports].rate_gbps = (speed > 0 && speed < 100000000) ? speed / 1000.0 : 0;
        nic->nports++;
    }
}

static void sharc_xml_walk(sharc_xml_import_t *im, xmlNodePtr node, const char *path, int numa)
{
    for (; node != NULL; node = node->next) {
        sharc_topo_pci_t pci;

        if (sharc_xml_is(node, "system")) {
            sharc_xml_walk(im, node->children, path, numa);
        } else if (sharc_xml_is(node, "cpu")) {
            char root[32];
            long id = sharc_xml_attr_long(node, "numaid", -1);

            if (id < 0 || id > 4096) {
                sharc_topo_warn(im->topo, "NCCL XML: cpu without a valid numaid");
                id = -1;
            }
            snprintf(root, sizeof(root), "cpu%ld", id);
            sharc_xml_walk(im, node->children, root, (int)id);
        } else if (sharc_xml_is(node, "pci")) {
            memset(&pci, 0, sizeof(pci));
            pci.numa = numa;
            sharc_xml_attr(node, "busid", pci.busid, sizeof(pci.busid));
            sharc_xml_lower(pci.busid);
            if (pci.busid[0] == '\0') {
                sharc_topo_warn(im->topo, "NCCL XML: pci without a busid; its devices ignored");
                continue;
            }
            if (path[0] == '\0' ||
                sharc_snprintf(pci.path, sizeof(pci.path), "%s/%s", path, pci.busid) != 0) {
                sharc_topo_warn(im->topo, "NCCL XML: pci %s outside a cpu or nested too deep",
                                pci.busid);
                pci.path[0] = '\0';
            }
            for (xmlNodePtr child = node->children; child != NULL; child = child->next) {
                if (sharc_xml_is(child, "gpu")) {
                    sharc_xml_gpu(im, child, &pci);
                } else if (sharc_xml_is(child, "nic")) {
                    sharc_xml_nic(im, child, &pci);
                }
            }
            if (pci.path[0] != '\0') {
                sharc_xml_walk(im, node->children, pci.path, numa);
            }
        } else if (sharc_xml_is(node, "nic") && path[0] != '\0' && strchr(path, '/') == NULL) {
            /* a NIC straight under a cpu: attached to the host bridge */
            memset(&pci, 0, sizeof(pci));
            pci.numa = numa;
            snprintf(pci.path, sizeof(pci.path), "%s/nic", path);
            sharc_xml_nic(im, node, &pci);
        }
    }
}

static void sharc_xml_resolve_links(sharc_xml_import_t *im)
{
    sharc_topo_t *topo = im->topo;

    for (int p = 0; p < im->npending; p++) {
        int peer = -1;

        for (int j = 0; j < topo->ngpus && !im->pending[p].is_switch; j++) {
            if (strcmp(topo->gpus[j].pci.busid, im->pending[p].target) == 0) {
                peer = j;
            }
        }
        if (peer >= 0 && peer != im->pending[p].gpu) {
            topo->nvlinks[im->pending[p].gpu][peer] += im->pending[p].count;
            continue;
        }
        topo->gpus[im->pending[p].gpu].nvlinks_switch += im->pending[p].count;
        int seen = 0;
        for (int s = 0; s < im->nswitches; s++) {
            seen |= (strcmp(im->switches[s], im->pending[p].target) == 0);
        }
        if (!seen && im->nswitches < 8) {
            snprintf(im->switches[im->nswitches++], 16, "%s", im->pending[p].target);
        }
    }
    if (im->nswitches > 0) {
        topo->nvswitches = SHARC_MAX(topo->nvswitches, im->nswitches);
        snprintf(topo->nvswitch_busid, sizeof(topo->nvswitch_busid), "%s", im->switches[0]);
    }
}

/* The parser's first complaint, as "line N: message", for warnings and errors. */
static void sharc_xml_error(xmlParserCtxtPtr ctxt, char *out, size_t size)
{
    xmlErrorPtr err = xmlCtxtGetLastError(ctxt);
    size_t len;

    if (err == NULL || err->message == NULL) {
        snprintf(out, size, "parse error");
        return;
    }
    snprintf(out, size, "line %d: %s", err->line, err->message);
    len = strlen(out);
    while (len > 0 && isspace((unsigned char)out[len - 1])) {
        out[--len] = '\0'; /* libxml2 ends its messages with a newline */
    }
}

/*
 * Parse in libxml2's recover mode: a truncated or damaged file (a capture cut short, a
 * hand edit) still yields the elements before the damage, with a warning; a document whose
 * root is not <system>, or text from which no element can be read, is refused.
 */
static sharc_status_t sharc_xml_read(sharc_topo_t *topo, const char *text, size_t len,
                                     xmlDocPtr *doc_p)
{
    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    char why[256];
    xmlNodePtr root;
    xmlDocPtr doc;

    if (ctxt == NULL) {
        sharc_error("out of memory parsing NCCL XML");
        return SHARC_ERR_NOMEM;
    }
    /* XML_PARSE_NONET: no fetching of DTDs; entities stay unexpanded (no XML_PARSE_NOENT) */
    doc = xmlCtxtReadMemory(ctxt, text, (int)len, "nccl-topo.xml", NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                XML_PARSE_RECOVER);
    sharc_xml_error(ctxt, why, sizeof(why));
    root = (doc != NULL) ? xmlDocGetRootElement(doc) : NULL;
    if (root == NULL) {
        sharc_error("not XML: no element could be read (%s)", why);
        goto err_free;
    }
    if (!sharc_xml_is(root, "system")) {
        sharc_error("XML root element is <%.32s>, not <system>: not an NCCL topology",
                    (const char *)root->name);
        goto err_free;
    }
    if (!ctxt->wellFormed) {
        sharc_topo_warn(topo,
                        "NCCL XML is not well-formed (%s); the elements before the damage "
                        "are used, the rest is missing",
                        why);
    }
    xmlFreeParserCtxt(ctxt);
    *doc_p = doc;
    return SHARC_OK;

err_free:
    xmlFreeDoc(doc); /* NULL is a no-op */
    xmlFreeParserCtxt(ctxt);
    return SHARC_ERR_INVALID;
}

sharc_status_t sharc_topo_parse_nccl_xml(sharc_topo_t *topo, const char *text, size_t len)
{
    sharc_xml_import_t *im;
    sharc_status_t status;
    xmlDocPtr doc;
    xmlNodePtr root;

    if (len > (size_t)0x7fffffff) {
        sharc_error("NCCL XML of %zu bytes is too large", len);
        return SHARC_ERR_INVALID;
    }
    status = sharc_xml_read(topo, text, len, &doc);
    if (status != SHARC_OK) {
        return status;
    }
    root = xmlDocGetRootElement(doc);
    im = calloc(1, sizeof(*im));
    if (im == NULL) {
        sharc_error("out of memory importing NCCL XML");
        xmlFreeDoc(doc);
        return SHARC_ERR_NOMEM;
    }
    im->topo = topo;
    sharc_xml_walk(im, root, "", -1);
    sharc_xml_resolve_links(im);
    /* the document lists devices by NUMA node and switch; number them by PCI address */
    sharc_topo_sort(topo);
    topo->cpu.nnuma = SHARC_MAX(topo->cpu.nnuma, 0);
    if (topo->source[0] == '\0') {
        snprintf(topo->source, sizeof(topo->source), "NCCL topology XML");
    }
    free(im);
    xmlFreeDoc(doc);
    return SHARC_OK;
}

/* ---- export */

typedef struct {
    char comps[16][24]; /* busids from the cpu down, the device last */
    int ncomps;
    int gpu;  /* gpus[] index, or -1 */
    int nic;  /* nics[] index, or -1 */
    int numa; /* the <cpu> element it goes in */
} sharc_xml_dev_t;

static int sharc_xml_nic_active(const sharc_topo_nic_t *nic)
{
    for (int p = 0; p < nic->nports; p++) {
        if (nic->ports[p].active) {
            return 1;
        }
    }
    return 0;
}

/*
 * A device's chain of <pci> elements. sysfs paths list each bridge (root port, switch
 * upstream port, downstream port, ...); NCCL has one element per switch, so from the device
 * up every second component is kept: the downstream ports and the root port drop out.
 * Paths read from XML are already in that form.
 */
static int sharc_xml_chain(const sharc_topo_pci_t *pci, sharc_xml_dev_t *dev)
{
    char comps[32][24];
    const char *p = pci->path;
    int n = 0, from_xml = (strncmp(pci->path, "cpu", 3) == 0);

    while (*p != '\0' && n < 32) {
        const char *slash = strchr(p, '/');
        size_t len = (slash != NULL) ? (size_t)(slash - p) : strlen(p);

        snprintf(comps[n++], 24, "%.*s", (int)SHARC_MIN(len, 23), p);
        p += len + (slash != NULL);
    }
    dev->ncomps = 0;
    if (n < 2) {
        return -1;
    }
    if (from_xml) {
        for (int i = 1; i < n && dev->ncomps < 16; i++) {
            memcpy(dev->comps[dev->ncomps++], comps[i], 24);
        }
        return 0;
    }
    int keep[32], nkeep = 0;
    for (int i = n - 1; i >= 2; i -= 2) {
        keep[nkeep++] = i;
    }
    for (int i = nkeep - 1; i >= 0 && dev->ncomps < 16; i--) {
        memcpy(dev->comps[dev->ncomps++], comps[keep[i]], 24);
    }
    if (dev->ncomps == 0) { /* right on a root port */
        memcpy(dev->comps[dev->ncomps++], comps[n - 1], 24);
    }
    return 0;
}

static int sharc_xml_dev_cmp(const void *a, const void *b)
{
    const sharc_xml_dev_t *x = a, *y = b;

    for (int i = 0; i < x->ncomps && i < y->ncomps; i++) {
        int c = strcmp(x->comps[i], y->comps[i]);

        if (c != 0) {
            return c;
        }
    }
    return x->ncomps - y->ncomps;
}

static void sharc_xml_write_dev(const sharc_topo_t *topo, const sharc_xml_dev_t *dev, FILE *out,
                                int depth)
{
    if (dev->gpu >= 0) {
        const sharc_topo_gpu_t *gpu = &topo->gpus[dev->gpu];

        fprintf(out, "%*s<gpu dev=\"%d\" sm=\"%d\" rank=\"%d\" gdr=\"1\">\n", depth * 2, "",
                dev->gpu, gpu->sm, dev->gpu);
        if (gpu->nvlinks_switch > 0) {
            fprintf(out, "%*s<nvlink target=\"%s\" count=\"%d\" tclass=\"0x068000\"/>\n",
                    depth * 2 + 2, "",
                    topo->nvswitch_busid[0] != '\0' ? topo->nvswitch_busid : "ffffffff:ff:ff.0",
                    gpu->nvlinks_switch);
        }
        for (int j = 0; j < topo->ngpus; j++) {
            if (j != dev->gpu && topo->nvlinks[dev->gpu][j] > 0 && gpu->nvlinks_switch == 0) {
                fprintf(out, "%*s<nvlink target=\"%s\" count=\"%d\" tclass=\"0x030200\"/>\n",
                        depth * 2 + 2, "", topo->gpus[j].pci.busid, topo->nvlinks[dev->gpu][j]);
            }
        }
        fprintf(out, "%*s</gpu>\n", depth * 2, "");
    } else {
        const sharc_topo_nic_t *nic = &topo->nics[dev->nic];

        fprintf(out, "%*s<nic>\n", depth * 2, "");
        for (int p = 0; p < nic->nports; p++) {
            if (nic->ports[p].active) {
                fprintf(out,
                        "%*s<net name=\"%s\" dev=\"%d\" speed=\"%.0f\" port=\"%d\" "
                        "gdr=\"1\"/>\n",
                        depth * 2 + 2, "", nic->name, dev->nic, nic->ports[p].rate_gbps * 1000,
                        nic->ports[p].num);
            }
        }
        fprintf(out, "%*s</nic>\n", depth * 2, "");
    }
}

/* The devices of one NUMA node, sorted by chain, as nested <pci> elements. */
static void sharc_xml_write_cpu(const sharc_topo_t *topo, sharc_xml_dev_t *devs, int n, FILE *out)
{
    int open = 0; /* <pci> elements open, devs[i-1].comps[0..open) */

    qsort(devs, (size_t)n, sizeof(*devs), sharc_xml_dev_cmp);
    for (int i = 0; i < n; i++) {
        int common = 0;

        while (i > 0 && common < open && common < devs[i].ncomps - 1 &&
               strcmp(devs[i].comps[common], devs[i - 1].comps[common]) == 0) {
            common++;
        }
        for (; open > common; open--) {
            fprintf(out, "%*s</pci>\n", open * 2 + 2, "");
        }
        for (; open < devs[i].ncomps; open++) {
            int leaf = (open == devs[i].ncomps - 1);
            const char *cls = !leaf ? "0x060400" : devs[i].gpu >= 0 ? "0x030200" : "0x020700";
            char ids[48] = "";

            if (leaf && devs[i].gpu >= 0 && topo->gpus[devs[i].gpu].device != 0) {
                snprintf(ids, sizeof(ids), " vendor=\"0x%04x\" device=\"0x%04x\"",
                         topo->gpus[devs[i].gpu].vendor, topo->gpus[devs[i].gpu].device);
            }
            fprintf(out, "%*s<pci busid=\"%s\" class=\"%s\"%s>\n", open * 2 + 4, "",
                    devs[i].comps[open], cls, ids);
        }
        sharc_xml_write_dev(topo, &devs[i], out, open + 2);
        fprintf(out, "%*s</pci>\n", open * 2 + 2, "");
        open--;
    }
    for (; open > 0; open--) {
        fprintf(out, "%*s</pci>\n", open * 2 + 2, "");
    }
}

sharc_status_t sharc_topo_write_nccl_xml(const sharc_topo_t *topo, FILE *out)
{
    int max = SHARC_TOPO_MAX_GPUS + SHARC_TOPO_MAX_NICS, numa_max = 0;
    sharc_xml_dev_t *devs = calloc((size_t)max, sizeof(*devs));
    sharc_xml_dev_t *sel = calloc((size_t)max, sizeof(*sel));
    int n = 0;

    if (devs == NULL || sel == NULL) {
        sharc_error("out of memory writing NCCL XML");
        free(devs);
        free(sel);
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < topo->ngpus + topo->nnics; i++) {
        const sharc_topo_pci_t *pci =
            (i < topo->ngpus) ? &topo->gpus[i].pci : &topo->nics[i - topo->ngpus].pci;
        int is_nic = (i >= topo->ngpus);

        if (is_nic && (topo->nics[i - topo->ngpus].fabric != topo->fabric ||
                       !sharc_xml_nic_active(&topo->nics[i - topo->ngpus]))) {
            continue; /* NCCL lists the NICs of its network only, and ports that are up */
        }
        if (sharc_xml_chain(pci, &devs[n]) != 0) {
            sharc_warn("%s %s has no PCI position; left out of the XML", is_nic ? "NIC" : "GPU",
                       is_nic ? topo->nics[i - topo->ngpus].name : pci->busid);
            continue;
        }
        devs[n].gpu = is_nic ? -1 : i;
        devs[n].nic = is_nic ? i - topo->ngpus : -1;
        /* NCCL wants a NUMA node: an unknown one (-1) is node 0, in node 0's element */
        devs[n].numa = SHARC_MAX(pci->numa, 0);
        numa_max = SHARC_MAX(numa_max, devs[n].numa);
        n++;
    }
    fprintf(out, "<system version=\"1\">\n");
    for (int numa = 0; numa <= numa_max; numa++) {
        int nsel = 0;

        for (int i = 0; i < n; i++) {
            if (devs[i].numa == numa) {
                sel[nsel++] = devs[i];
            }
        }
        if (nsel == 0) {
            continue;
        }
        fprintf(out, "  <cpu numaid=\"%d\">\n", numa);
        sharc_xml_write_cpu(topo, sel, nsel, out);
        fprintf(out, "  </cpu>\n");
    }
    fprintf(out, "</system>\n");
    free(devs);
    free(sel);
    return ferror(out) ? SHARC_ERR_IO : SHARC_OK;
}
