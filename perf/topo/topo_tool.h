/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_tool.h: sharc-topo's tool library over the topology that transport/topo/ reads: the other
 * inputs (NVML, hwloc, an `nvidia-smi topo -m` capture, NCCL topology XML), the
 * classification (intra-node path, fabric, rails), the recommended settings, the doctor that
 * checks the settings in force (and, on EFA nodes, the NET plugin and libfabric), and the
 * output formats. Linked by sharc-topo and sharc-perf;
 * not part of libsharc, which therefore needs neither libxml2 nor hwloc nor NVML.
 */
#ifndef SHARC_TOPO_TOOL_H
#define SHARC_TOPO_TOOL_H

#include <stdio.h>

#include <sharc/sharc.h>

#include "../../transport/topo/topo.h"

/* One recommended setting: set KEY=VALUE, or unset KEY, with the reason. */
typedef struct {
    char key[48];
    char value[512];
    char reason[320];
    int unset;
} sharc_topo_rec_t;

/* Something about the node that no setting fixes (a missing address), under the key it
 * concerns; the doctor repeats it as a WARN finding. */
typedef struct {
    char key[48];
    char text[512];
} sharc_topo_note_t;

#define SHARC_TOPO_MAX_NOTES 8

typedef struct {
    sharc_topo_rec_t recs[SHARC_TOPO_MAX_RECS];
    int nrecs;
    sharc_topo_note_t notes[SHARC_TOPO_MAX_NOTES];
    int nnotes;
    char transport[8];    /* SHARC_TRANSPORT to set: "auto" */
    char gpu_backend[8];  /* the backend auto picks for GPU buffers, "-" without GPUs */
    char host_backend[8]; /* and for host buffers */
    char not_built[32];   /* those of them this sharc was built without, comma-separated */
} sharc_topo_recs_t;

typedef enum {
    SHARC_TOPO_FINDING_OK = 0, /* a rule looked at the setting and found it fine */
    SHARC_TOPO_FINDING_STALE,  /* unneeded or noisy here, not harmful */
    SHARC_TOPO_FINDING_HARMFUL,
    SHARC_TOPO_FINDING_SUGGEST, /* a recommended setting that is not set */
    SHARC_TOPO_FINDING_DIFFERS, /* set to another value than the recommended one, valid */
    SHARC_TOPO_FINDING_WARN,    /* a note of the recommendation: the node needs fixing */
    SHARC_TOPO_FINDING_NOTE,    /* has no effect here; worth knowing, nothing to do */
} sharc_topo_severity_t;

typedef struct {
    sharc_topo_severity_t severity;
    char key[48];
    char value[256];
    char source[SHARC_TOPO_PATH_MAX]; /* "environment", the conf file, or "topology" */
    char reason[1024];
    int no_value; /* about the key, not about a value set (WARN) */
} sharc_topo_finding_t;

/* A setting in force: the environment overrides the NCCL conf file, as in NCCL. */
typedef struct {
    char key[48];
    char value[256];
    char source[SHARC_TOPO_PATH_MAX];
} sharc_topo_setting_t;

/* ---- more inputs (topo_nvml.c, topo_smi.c, topo_xml.c, topo_classify.c) */

/**
 * Add NVLink counts from NVML (dlopen of libnvidia-ml.so.1) for the GPUs already found.
 * Returns SHARC_ERR_UNSUPPORTED, quietly, when NVML is absent or finds no GPU.
 */
SHARC_HIDDEN sharc_status_t sharc_topo_read_nvml(sharc_topo_t *topo);

/** Live CPU sockets and NUMA nodes through hwloc; SHARC_ERR_UNSUPPORTED without hwloc. */
SHARC_HIDDEN sharc_status_t sharc_topo_read_hwloc(sharc_topo_t *topo);

/**
 * Parse the text of `nvidia-smi topo -m` (@p len bytes, need not be NUL-terminated): GPU
 * and NIC rows, NV#/PIX/PXB/PHB/NODE/SYS/X cells, the NIC legend. GPUs and NICs not yet in
 * @p topo are added (by index for GPUs, by name for NICs); the capture's distances replace
 * computed ones. Unparseable lines give warnings. SHARC_ERR_INVALID if no matrix is found.
 */
SHARC_HIDDEN sharc_status_t sharc_topo_parse_smi(sharc_topo_t *topo, const char *text, size_t len);

/** Import NCCL topology XML (NCCL_TOPO_FILE format) from memory. SHARC_ERR_UNSUPPORTED
 * without libxml2, SHARC_ERR_INVALID when it is not such a document. */
SHARC_HIDDEN sharc_status_t sharc_topo_parse_nccl_xml(sharc_topo_t *topo, const char *text,
                                                      size_t len);

/** Write @p topo as NCCL topology XML. */
SHARC_HIDDEN sharc_status_t sharc_topo_write_nccl_xml(const sharc_topo_t *topo, FILE *out);

/** Read a whole file (at most @p max bytes) into a NUL-terminated buffer to free(). */
SHARC_HIDDEN sharc_status_t sharc_topo_read_file(const char *path, size_t max, char **text_p,
                                                 size_t *len_p);

/* ---- the node's communication libraries (topo_libs.c), checked on EFA nodes */

/* What `fi_info -p efa` said. */
typedef struct {
    int nentries;      /* provider entries of any provider */
    int nefa;          /* entries of the efa provider */
    int nrdm;          /* of those, reliable datagram endpoints (FI_EP_RDM): what the plugin uses */
    int major, minor;  /* libfabric's version by the efa provider's ("122.0": 1.22); 0 unknown */
    int ndomains;      /* distinct efa RDM domains: one per EFA device it uses */
    char domains[256]; /* those ("rdmap16s27-rdm"), ", "-separated, maybe cut short */
    char error[128];   /* "fi_getinfo: -61 (No data available)" when it has no efa, or "" */
} sharc_topo_fi_info_t;

typedef struct {
    int probed;   /* 0: nothing known (offline input and no --lib-path or --fi-info) */
    int searched; /* the plugin and libfabric were looked for (live, or --lib-path) */
    char where[SHARC_TOPO_PATH_MAX]; /* the directories searched, or the loader's path */
    struct {
        int disabled;                    /* NCCL_NET_PLUGIN=none */
        int found;                       /* a file NCCL would load exists */
        int loads;                       /* and loads (dlopen, RTLD_NOW) */
        char tried[256];                 /* the names NCCL tries, in order */
        char file[SHARC_TOPO_PATH_MAX];  /* the one found */
        char error[256];                 /* the loader's message when none loads */
        char name[64];                   /* the network it registers (NCCL_NET's value) */
        int api_min, api_max;            /* ncclNetPlugin_vN symbols: NCCL's plugin API */
        char version[48];                /* package version where the library says, or "" */
        char other[SHARC_TOPO_PATH_MAX]; /* an aws-ofi-nccl NCCL does not look for by the
                                          * names tried (libnccl-net-ofi.so), or "" */
        char other_suffix[16];           /* the NCCL_NET_PLUGIN value that loads it: "ofi" */
    } plugin;
    struct {
        int found, loads;
        char file[SHARC_TOPO_PATH_MAX];
        char error[256];
        int major, minor; /* fi_version(); 0 unknown */
    } fabric;
    struct {
        int have; /* the text of `fi_info -p efa` is known */
        char source[SHARC_TOPO_PATH_MAX];
        sharc_topo_fi_info_t info;
    } fi;
} sharc_topo_libs_t;

typedef struct {
    const char *lib_path;   /* colon-separated directories to look in, or NULL: the dynamic
                             * loader's search (live machine only) */
    const char *fi_info;    /* a file with the text of `fi_info -p efa`, or NULL: run fi_info
                             * (live machine only) */
    const char *net_plugin; /* NCCL_NET_PLUGIN in force, or NULL */
    int live;               /* the node is this machine: its loader and tools may be used */
    int efa;                /* an EFA node: libfabric and fi_info too, not only the plugin */
} sharc_topo_libs_opts_t;

/**
 * Find the NET plugin NCCL would load and libfabric, load them (their constructors run, as in
 * NCCL), and read `fi_info -p efa`. Offline input without a library path or fi_info text
 * leaves @p libs unprobed. Never fails: what cannot be found or run is recorded as such.
 */
SHARC_HIDDEN void sharc_topo_probe_libs(const sharc_topo_libs_opts_t *opts,
                                        sharc_topo_libs_t *libs);

/** Parse the text of `fi_info -p efa` (@p len bytes, any content). */
SHARC_HIDDEN void sharc_topo_parse_fi_info(const char *text, size_t len,
                                           sharc_topo_fi_info_t *info);
/** The aws-ofi-nccl version a plugin's bytes carry ("1.13.2-aws"), or "" (any content). */
SHARC_HIDDEN void sharc_topo_plugin_version(const char *bytes, size_t len, char *out, size_t size);

/* ---- classification, recommendations and the doctor (topo_classify.c, topo_rec.c,
 * topo_efa.c, topo_doctor.c, topo_doc_ucx.c) */

/** Distances from PCI paths (unless captured), intra-node path, fabric, rails, bandwidth. */
SHARC_HIDDEN void sharc_topo_classify(sharc_topo_t *topo);

SHARC_HIDDEN void sharc_topo_recommend(const sharc_topo_t *topo, sharc_topo_recs_t *recs);

/** Set (or add) the recommendation for @p key: value, or unset, and the reason. */
SHARC_HIDDEN void sharc_topo_rec_set(sharc_topo_recs_t *recs, const char *key, int unset,
                                     const char *value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* topo_efa_caps.c: the EFA devices' PCI device id if they all share one, else 0; their number
 * in *count_p. */
SHARC_HIDDEN unsigned sharc_topo_efa_device(const sharc_topo_t *topo, int *count_p);

/**
 * topo_efa_caps.c: whether this node's EFA devices read remote memory (RDMA read), which
 * GPUDirect RDMA over EFA needs: 1 yes, 0 no, -1 unknown; @p why says from what (the instance
 * type, the device).
 */
SHARC_HIDDEN int sharc_topo_efa_rdma_read(const sharc_topo_t *topo, char *why, size_t size);

/**
 * What the node's libraries change in the recommendation on an EFA node (NCCL_NET_PLUGIN where
 * the plugin has a name NCCL does not look for; FI_EFA_USE_DEVICE_RDMA where libfabric is too
 * old to turn device RDMA on by itself). Nothing when @p libs was not probed.
 */
SHARC_HIDDEN void sharc_topo_recommend_libs(const sharc_topo_t *topo, const sharc_topo_libs_t *libs,
                                            sharc_topo_recs_t *recs);

/** Index of the RoCE v2 GID with an IPv4 address on a port, or -1. */
SHARC_HIDDEN int sharc_topo_roce_v2_ipv4(const sharc_topo_port_t *port);

/**
 * Check @p settings against the topology and the recommendation. Fills up to @p max
 * findings and returns how many; *harmful_p is set to whether any is harmful. Each setting
 * gets the findings of the rules for its key; one set to another value than recommended
 * also gets the recommended value and its reason (DIFFERS, or added to the rule's finding
 * when the rule found something wrong); a recommended key that is not set is a SUGGEST;
 * each note of the recommendation is a WARN. On an EFA node @p libs (NULL: not known) adds
 * findings on the NET plugin, libfabric, GPUDirect RDMA and the network NCCL will use.
 */
SHARC_HIDDEN int sharc_topo_doctor(const sharc_topo_t *topo, const sharc_topo_recs_t *recs,
                                   const sharc_topo_libs_t *libs,
                                   const sharc_topo_setting_t *settings, int nsettings,
                                   sharc_topo_finding_t *findings, int max, int *harmful_p);

/* ---- the syntax of settings (topo_conf.c) */

/* An NCCL device list (NCCL_IB_HCA, NCCL_SOCKET_IFNAME): "^" excludes, "=" matches names
 * exactly instead of as prefixes, entries are comma-separated, ":N" selects a port. */
#define SHARC_TOPO_SPEC_MAX 32
typedef struct {
    int exclude, exact;
    struct {
        char name[SHARC_TOPO_NAME_MAX];
        int port; /* -1: any */
    } entries[SHARC_TOPO_SPEC_MAX];
    int nentries;
} sharc_topo_spec_t;

SHARC_HIDDEN void sharc_topo_spec_parse(const char *value, sharc_topo_spec_t *spec);
/** Whether entry @p i of @p spec names device @p name (port not considered). */
SHARC_HIDDEN int sharc_topo_spec_entry_matches(const sharc_topo_spec_t *spec, int i,
                                               const char *name);
/** Whether two values of @p key name the same set: comma-separated items in any order, after
 * the same "^"/"=" prefix; case-insensitive for sharc's own knobs. */
SHARC_HIDDEN int sharc_topo_same_value(const char *key, const char *a, const char *b);

/**
 * Parse an NCCL conf file's text (KEY=VALUE lines, '#' comments) into @p settings after
 * the @p n already there, without replacing keys that are already set. Returns the new count.
 */
SHARC_HIDDEN int sharc_topo_parse_conf(const char *text, const char *source,
                                       sharc_topo_setting_t *settings, int n, int max);

/* ---- output (topo_out.c) */

typedef enum {
    SHARC_TOPO_FMT_TEXT = 0, /* matrix, NICs, classification, recommendations */
    SHARC_TOPO_FMT_SHELL,    /* export KEY=VALUE lines */
    SHARC_TOPO_FMT_ENV,      /* KEY=VALUE lines, the /etc/nccl.conf format */
    SHARC_TOPO_FMT_JSON,
} sharc_topo_fmt_t;

SHARC_HIDDEN sharc_status_t sharc_topo_print(const sharc_topo_t *topo,
                                             const sharc_topo_recs_t *recs, sharc_topo_fmt_t fmt,
                                             FILE *out);
SHARC_HIDDEN sharc_status_t sharc_topo_print_doctor(const sharc_topo_finding_t *findings, int n,
                                                    int json, FILE *out);

/* JSON through json-c (topo_json.c; topo_json_none.c says json-c is missing). */
SHARC_HIDDEN sharc_status_t sharc_topo_print_json(const sharc_topo_t *topo,
                                                  const sharc_topo_recs_t *recs, FILE *out);
SHARC_HIDDEN sharc_status_t sharc_topo_print_doctor_json(const sharc_topo_finding_t *findings,
                                                         int n, FILE *out);

/* A matrix cell in nvidia-smi's words ("NV18", "PIX", ...), and the doctor's severities as
 * printed ("ok", "HARMFUL", ...), for the text and JSON outputs (topo_out.c). */
SHARC_HIDDEN const char *sharc_topo_cell(sharc_topo_link_t link, int nvlinks, char *buf,
                                         size_t size);
extern SHARC_HIDDEN const char *const sharc_topo_severity_names[];

SHARC_HIDDEN const char *sharc_topo_link_name(sharc_topo_link_t link);
SHARC_HIDDEN const char *sharc_topo_fabric_name(sharc_topo_fabric_t fabric);
SHARC_HIDDEN const char *sharc_topo_intra_name(sharc_topo_intra_t intra);

#endif
