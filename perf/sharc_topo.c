/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc-topo: what this node is (GPUs, NVLink/NVSwitch, NICs, fabric, PCI distances, rails)
 * and what to set for it; `sharc-topo doctor` checks the settings in force against it.
 * Reads the live machine, or offline inputs (a sysfs-shaped tree, an `nvidia-smi topo -m`
 * capture, NCCL topology XML) for bug reports and tests; on EFA nodes the doctor also checks
 * the NCCL NET plugin and libfabric (--lib-path and --fi-info stand in for another machine's).
 * Links sharc-topo's tool library (perf/topo/) over the library's detection (transport/topo/),
 * which is not public API.
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/topo_tool.h"

#define SHARC_TOPO_MAX_INPUT   (16u << 20) /* bytes read from a capture file */
#define SHARC_TOPO_MAX_SETTING 256

extern char **environ;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sharc-topo [doctor] [options]\n"
            "  (no command)            print the topology matrix, NICs, fabric, rails and the\n"
            "                          recommended settings\n"
            "  doctor                  check the environment and the NCCL conf file against\n"
            "                          this node; exit 1 if a setting is harmful\n"
            "input (default: the live machine, /sys + NVML + hwloc):\n"
            "  --sysfs-root DIR        a tree laid out like /sys\n"
            "  --nvidia-smi-topo FILE  the text of `nvidia-smi topo -m`\n"
            "  --nccl-xml FILE         an NCCL topology XML file (NCCL_TOPO_FILE format)\n"
            "  --nccl-conf FILE        doctor: the NCCL conf file (default: $NCCL_CONF_FILE,\n"
            "                          else /etc/nccl.conf)\n"
            "  --lib-path DIRS         doctor: look for the NCCL NET plugin and libfabric in\n"
            "                          these directories (colon-separated) instead of the\n"
            "                          dynamic loader's path; with offline input, the only way\n"
            "                          they are checked\n"
            "  --fi-info FILE          doctor: the text of `fi_info -p efa` instead of running it\n"
            "output:\n"
            "  --json                  JSON\n"
            "  --shell                 recommended settings as shell exports\n"
            "  --env                   recommended settings as KEY=VALUE (/etc/nccl.conf)\n"
            "  --export-xml            the topology as NCCL topology XML\n"
            "  -h, --help\n");
}

static int read_input(sharc_topo_t *topo, const char *path, int xml)
{
    sharc_status_t status;
    char *text;
    size_t len;

    status = sharc_topo_read_file(path, SHARC_TOPO_MAX_INPUT, &text, &len);
    if (status != SHARC_OK) {
        return -1;
    }
    status =
        xml ? sharc_topo_parse_nccl_xml(topo, text, len) : sharc_topo_parse_smi(topo, text, len);
    free(text);
    if (status != SHARC_OK) {
        fprintf(stderr, "sharc-topo: %s: %s\n", path, sharc_status_string(status));
        return -1;
    }
    return 0;
}

/* Settings in force: the environment, then the conf file for keys the environment lacks. */
static int gather_settings(const char *conf, sharc_topo_setting_t *settings, int max)
{
    static const char *const prefixes[] = {"NCCL_", "FI_", "UCX_", "SHARC_", "CUDA_VISIBLE_"};
    int n = 0;

    for (char **e = environ; *e != NULL && n < max; e++) {
        const char *eq = strchr(*e, '=');
        int wanted = 0;

        for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
            wanted |= (strncmp(*e, prefixes[p], strlen(prefixes[p])) == 0);
        }
        if (!wanted || eq == NULL || (size_t)(eq - *e) >= sizeof(settings[0].key) ||
            strncmp(*e, "NCCL_CONF_FILE=", 15) == 0) {
            continue;
        }
        snprintf(settings[n].key, sizeof(settings[n].key), "%.*s", (int)(eq - *e), *e);
        snprintf(settings[n].value, sizeof(settings[n].value), "%s", eq + 1);
        snprintf(settings[n].source, sizeof(settings[n].source), "environment");
        n++;
    }
    if (conf == NULL) {
        conf = getenv("NCCL_CONF_FILE");
    }
    if (conf == NULL || *conf == '\0') {
        conf = "/etc/nccl.conf";
        if (access(conf, F_OK) != 0) {
            return n;
        }
    }
    char *text;
    size_t len;
    if (sharc_topo_read_file(conf, 1u << 20, &text, &len) != SHARC_OK) {
        fprintf(stderr, "sharc-topo: cannot read the NCCL conf file %s; environment only\n", conf);
        return n;
    }
    n = sharc_topo_parse_conf(text, conf, settings, n, max);
    free(text);
    return n;
}

typedef struct {
    const char *conf;     /* --nccl-conf */
    const char *lib_path; /* --lib-path */
    const char *fi_info;  /* --fi-info */
    int live;             /* the input is this machine */
    int json;
} doctor_opts_t;

/*
 * The NET plugin and libfabric, where they matter: on EFA nodes, and wherever NCCL_NET_PLUGIN
 * names a plugin. On the live machine the loader's own search finds them (and fi_info runs);
 * offline, only what --lib-path and --fi-info give.
 */
static void probe_libs(const sharc_topo_t *topo, const doctor_opts_t *opts,
                       const sharc_topo_setting_t *settings, int n, sharc_topo_libs_t *libs)
{
    sharc_topo_libs_opts_t lopts = {opts->lib_path, opts->fi_info, NULL, opts->live,
                                    topo->fabric == SHARC_TOPO_FABRIC_EFA};

    for (int s = 0; s < n; s++) {
        if (strcmp(settings[s].key, "NCCL_NET_PLUGIN") == 0) {
            lopts.net_plugin = settings[s].value;
        }
    }
    memset(libs, 0, sizeof(*libs));
    if (lopts.efa || lopts.net_plugin != NULL) {
        sharc_topo_probe_libs(&lopts, libs);
    }
}

static int doctor(const sharc_topo_t *topo, sharc_topo_recs_t *recs, const doctor_opts_t *opts)
{
    sharc_topo_setting_t *settings = calloc(SHARC_TOPO_MAX_SETTING, sizeof(*settings));
    sharc_topo_finding_t *findings = calloc(SHARC_TOPO_MAX_SETTING * 2, sizeof(*findings));
    sharc_topo_libs_t *libs = calloc(1, sizeof(*libs));
    int n, nfind, harmful = 0, json = opts->json;

    if (settings == NULL || findings == NULL || libs == NULL) {
        fprintf(stderr, "sharc-topo: out of memory\n");
        free(settings);
        free(findings);
        free(libs);
        return 2;
    }
    n = gather_settings(opts->conf, settings, SHARC_TOPO_MAX_SETTING);
    probe_libs(topo, opts, settings, n, libs);
    sharc_topo_recommend_libs(topo, libs, recs);
    nfind = sharc_topo_doctor(topo, recs, libs, settings, n, findings, SHARC_TOPO_MAX_SETTING * 2,
                              &harmful);
    if (!json) {
        printf("sharc-topo doctor: %s; %d GPU(s), intra-node %s, fabric %s\n", topo->source,
               topo->ngpus, sharc_topo_intra_name(topo->intra),
               sharc_topo_fabric_name(topo->fabric));
    }
    sharc_topo_print_doctor(findings, nfind, json, stdout);
    if (!json) {
        printf("%s\n", harmful ? "harmful settings found" : "no harmful settings found");
    }
    free(settings);
    free(findings);
    free(libs);
    return harmful ? 1 : 0;
}

int main(int argc, char **argv)
{
    enum {
        OPT_SYSFS = 256,
        OPT_SMI,
        OPT_XML,
        OPT_CONF,
        OPT_SHELL,
        OPT_ENV,
        OPT_EXPORT_XML,
        OPT_LIB_PATH,
        OPT_FI_INFO
    };
    static const struct option opts[] = {
        {"sysfs-root", required_argument, NULL, OPT_SYSFS},
        {"nvidia-smi-topo", required_argument, NULL, OPT_SMI},
        {"nccl-xml", required_argument, NULL, OPT_XML},
        {"nccl-conf", required_argument, NULL, OPT_CONF},
        {"lib-path", required_argument, NULL, OPT_LIB_PATH},
        {"fi-info", required_argument, NULL, OPT_FI_INFO},
        {"json", no_argument, NULL, 'j'},
        {"shell", no_argument, NULL, OPT_SHELL},
        {"env", no_argument, NULL, OPT_ENV},
        {"export-xml", no_argument, NULL, OPT_EXPORT_XML},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *sysfs = NULL, *smi = NULL, *xml = NULL;
    doctor_opts_t dopts = {NULL, NULL, NULL, 0, 0};
    sharc_topo_fmt_t fmt = SHARC_TOPO_FMT_TEXT;
    int c, export_xml = 0, is_doctor = 0, ret = 0;
    sharc_topo_recs_t recs;
    sharc_topo_t *topo;

    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_SYSFS: sysfs = optarg; break;
        case OPT_SMI: smi = optarg; break;
        case OPT_XML: xml = optarg; break;
        case OPT_CONF: dopts.conf = optarg; break;
        case OPT_LIB_PATH: dopts.lib_path = optarg; break;
        case OPT_FI_INFO: dopts.fi_info = optarg; break;
        case 'j': fmt = SHARC_TOPO_FMT_JSON; break;
        case OPT_SHELL: fmt = SHARC_TOPO_FMT_SHELL; break;
        case OPT_ENV: fmt = SHARC_TOPO_FMT_ENV; break;
        case OPT_EXPORT_XML: export_xml = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc && strcmp(argv[optind], "doctor") == 0) {
        is_doctor = 1;
        optind++;
    }
    if (optind < argc) {
        fprintf(stderr, "sharc-topo: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (sharc_topo_create(&topo) != SHARC_OK) {
        return 2;
    }
    if (sysfs != NULL || (smi == NULL && xml == NULL)) {
        int live = (sysfs == NULL);

        if (sharc_topo_read_sysfs(topo, live ? "/sys" : sysfs) != SHARC_OK) {
            sharc_topo_destroy(topo);
            return 2;
        }
        if (live) {
            (void)sharc_topo_read_nvml(topo);  /* absent on CPU nodes: fine */
            (void)sharc_topo_read_hwloc(topo); /* absent in minimal builds: fine */
        }
    }
    if ((xml != NULL && read_input(topo, xml, 1) != 0) ||
        (smi != NULL && read_input(topo, smi, 0) != 0)) {
        sharc_topo_destroy(topo);
        return 2;
    }
    sharc_topo_classify(topo);
    sharc_topo_recommend(topo, &recs);
    if (is_doctor) {
        dopts.live = (sysfs == NULL && smi == NULL && xml == NULL);
        dopts.json = (fmt == SHARC_TOPO_FMT_JSON);
        ret = doctor(topo, &recs, &dopts);
    } else if (export_xml) {
        ret = sharc_topo_write_nccl_xml(topo, stdout) == SHARC_OK ? 0 : 2;
    } else {
        ret = sharc_topo_print(topo, &recs, fmt, stdout) == SHARC_OK ? 0 : 2;
    }
    sharc_topo_destroy(topo);
    return ret;
}
