/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topo.c: unit tests of the topology module's pure parts: the PCI distance rule, NCCL
 * device lists (^, =, ports), the conf-file parser, the nvidia-smi parser on damaged text,
 * the choice of the Ethernet interfaces, GPU and NIC numbering by PCI address, and the
 * parsers of fi_info's text and a NET plugin's version. Fixture machines are tested end to
 * end by topo_detect.sh and topo_doctor.sh.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../perf/topo/topo_tool.h"
#include "../check.h"

static sharc_topo_link_t dist(const char *a, int numa_a, const char *b, int numa_b)
{
    sharc_topo_pci_t pa = {"", "", numa_a}, pb = {"", "", numa_b};

    snprintf(pa.path, sizeof(pa.path), "%s", a);
    snprintf(pb.path, sizeof(pb.path), "%s", b);
    return sharc_topo_pci_distance(&pa, &pb);
}

static void test_distance(void)
{
    const char *sw = "pci0000:10/0000:10:01.0/0000:11:00.0";

    /* one switch: downstream port + device on each side */
    CHECK(dist("pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0", 0,
               "pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.0",
               0) == SHARC_TOPO_LINK_PIX);
    /* two cascaded switches */
    CHECK(dist("pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:13:00.0/0000:14:00.0/"
               "0000:15:00.0",
               0, "pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:16:00.0",
               0) == SHARC_TOPO_LINK_PXB);
    /* two root ports of one host bridge */
    CHECK(dist("pci0000:10/0000:10:01.0/0000:11:00.0", 0, "pci0000:10/0000:10:02.0/0000:12:00.0",
               0) == SHARC_TOPO_LINK_PHB);
    /* two host bridges: one NUMA node or two */
    CHECK(dist("pci0000:10/0000:10:01.0/0000:11:00.0", 0, "pci0000:20/0000:20:01.0/0000:21:00.0",
               0) == SHARC_TOPO_LINK_NODE);
    CHECK(dist("pci0000:10/0000:10:01.0/0000:11:00.0", 0, "pci0000:20/0000:20:01.0/0000:21:00.0",
               1) == SHARC_TOPO_LINK_SYS);
    /* two functions of one device */
    CHECK(dist("pci0000:a0/0000:a0:01.0/0000:aa:00.0", 1, "pci0000:a0/0000:a0:01.0/0000:aa:00.1",
               1) == SHARC_TOPO_LINK_PIX);
    CHECK(dist("", 0, sw, 0) == SHARC_TOPO_LINK_UNKNOWN);
    CHECK(dist("garbage", 0, sw, 0) == SHARC_TOPO_LINK_UNKNOWN);
}

static void test_spec(void)
{
    sharc_topo_spec_t spec;

    sharc_topo_spec_parse("^=mlx5_0:1,mlx5_10,,", &spec);
    CHECK(spec.exclude && spec.exact && spec.nentries == 2);
    CHECK(strcmp(spec.entries[0].name, "mlx5_0") == 0 && spec.entries[0].port == 1);
    CHECK(spec.entries[1].port == -1);
    CHECK(sharc_topo_spec_entry_matches(&spec, 1, "mlx5_10"));
    CHECK(!sharc_topo_spec_entry_matches(&spec, 0, "mlx5_01"));
    sharc_topo_spec_parse("mlx5_1", &spec);
    CHECK(!spec.exclude && !spec.exact && spec.nentries == 1);
    CHECK(sharc_topo_spec_entry_matches(&spec, 0, "mlx5_10")); /* NCCL's prefix rule */
    sharc_topo_spec_parse("", &spec);
    CHECK(spec.nentries == 0);
}

static void test_same_value(void)
{
    CHECK(sharc_topo_same_value("UCX_TLS", "rc,sm,self", "self,rc,sm"));
    CHECK(sharc_topo_same_value("NCCL_IB_HCA", "=mlx5_1:1,mlx5_0:1", "=mlx5_0:1,mlx5_1:1"));
    CHECK(!sharc_topo_same_value("NCCL_IB_HCA", "mlx5_0:1", "=mlx5_0:1")); /* prefix vs exact */
    CHECK(!sharc_topo_same_value("NCCL_IB_HCA", "mlx5_0:1", "mlx5_0:1,mlx5_1:1"));
    CHECK(sharc_topo_same_value("SHARC_TRANSPORT", "AUTO", "auto"));
    CHECK(!sharc_topo_same_value("NCCL_SOCKET_IFNAME", "=ETH0", "=eth0"));
    CHECK(sharc_topo_same_value("X", "", ""));
}

static void test_conf(void)
{
    sharc_topo_setting_t set[4] = {{"NCCL_DEBUG", "WARN", "environment"}};
    int n = sharc_topo_parse_conf("# comment\n  NCCL_IB_HCA = =mlx5_0 \nNCCL_DEBUG=INFO\nnoeq\n"
                                  "=novalue\nA=1\nB=2\nC=3\n",
                                  "f.conf", set, 1, 4);

    CHECK(n == 4);
    CHECK(strcmp(set[1].key, "NCCL_IB_HCA") == 0 && strcmp(set[1].value, "=mlx5_0") == 0);
    CHECK(strcmp(set[0].value, "WARN") == 0); /* the environment wins */
    CHECK(strcmp(set[2].key, "A") == 0 && strcmp(set[3].key, "B") == 0);
}

static void test_smi(void)
{
    static const char good[] = "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\n"
                               "GPU0\t X \tNV4\tPIX\t0-7\t0\n"
                               "GPU1\tNV4\t X \tBOGUS\t0-7\t0\n"
                               "NIC Legend:\n\n  NIC0: mlx5_3\n  NIC99999: x\n  NIC1:\n";
    static const char *const bad[] = {
        "",
        "\n\n\n",
        "GPU0",
        "\tGPU0\n",
        "\tGPU0\tGPU1\nGPU0\n",
        "\tGPU0\nGPU7\t X \n",
        "\tGPU0\tGPU1\nGPU0\t X \tNV99999999999999999999\n",
        "\033[\033[\033[",
        "NIC Legend:\nNIC",
    };
    sharc_topo_t *topo;

    CHECK(sharc_topo_create(&topo) == SHARC_OK);
    CHECK(sharc_topo_parse_smi(topo, good, strlen(good)) == SHARC_OK);
    CHECK(topo->ngpus == 2 && topo->nnics == 1 && strcmp(topo->nics[0].name, "mlx5_3") == 0);
    CHECK(topo->gpu_gpu[0][1] == SHARC_TOPO_LINK_NV && topo->nvlinks[0][1] == 4);
    CHECK(topo->gpu_nic[0][0] == SHARC_TOPO_LINK_PIX);
    CHECK(topo->gpu_nic[1][0] == SHARC_TOPO_LINK_UNKNOWN); /* BOGUS */
    CHECK(topo->nwarnings >= 2);
    sharc_topo_classify(topo);
    CHECK(topo->intra == SHARC_TOPO_INTRA_NVLINK); /* NV4 between two: no switch needed */
    sharc_topo_destroy(topo);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK(sharc_topo_create(&topo) == SHARC_OK);
        (void)sharc_topo_parse_smi(topo, bad[i], strlen(bad[i]));
        sharc_topo_classify(topo);
        sharc_topo_destroy(topo);
    }
    sharc_topo_destroy(NULL);
}

static void add_netdev(sharc_topo_t *topo, const char *name, int mbps, int up, int ipv4,
                       const char *master)
{
    sharc_topo_netdev_t *nd = &topo->netdevs[topo->nnetdevs++];

    memset(nd, 0, sizeof(*nd));
    snprintf(nd->name, sizeof(nd->name), "%s", name);
    snprintf(nd->master, sizeof(nd->master), "%s", master);
    nd->speed_mbps = mbps;
    nd->up = up;
    nd->ipv4 = ipv4;
    nd->pci.numa = -1;
}

/* The interface for TCP: up, not a port of a bond or bridge, with an IPv4 address where that
 * is known, then the fastest. */
static void test_eth_best(void)
{
    sharc_topo_t *topo;

    CHECK(sharc_topo_create(&topo) == SHARC_OK);
    add_netdev(topo, "enp1s0f0", 100000, 1, 0, "bond0"); /* a bond's port: no address */
    add_netdev(topo, "eth0", 10000, 1, 0, "");
    add_netdev(topo, "eth1", 1000, 1, 1, "");
    add_netdev(topo, "eth2", 400000, 0, 1, ""); /* down */
    sharc_topo_classify(topo);
    CHECK(topo->fabric == SHARC_TOPO_FABRIC_ETH);
    CHECK(topo->eth_best == 2); /* eth1: the one with an IPv4 address */
    for (int d = 0; d < topo->nnetdevs; d++) {
        topo->netdevs[d].ipv4 = -1; /* offline input: addresses unknown */
    }
    sharc_topo_classify(topo);
    CHECK(topo->eth_best == 1); /* eth0: the fastest that is up and no port */
    topo->netdevs[1].up = topo->netdevs[2].up = 0;
    sharc_topo_classify(topo);
    CHECK(topo->eth_best == -1 && topo->fabric == SHARC_TOPO_FABRIC_NONE); /* never the port */
    sharc_topo_destroy(topo);
}

/* Interfaces of eth_best's class: same speed (and, unknown, same driver); never IPoIB. */
static void test_socket_ifs(void)
{
    sharc_topo_t *topo;

    CHECK(sharc_topo_create(&topo) == SHARC_OK);
    add_netdev(topo, "ib0", 400000, 1, -1, ""); /* IPoIB: fastest, but not Ethernet */
    topo->netdevs[0].ipoib = 1;
    add_netdev(topo, "eth0", 200000, 1, -1, "");
    add_netdev(topo, "eth1", 200000, 1, -1, "");
    add_netdev(topo, "mgmt0", 1000, 1, -1, "");
    add_netdev(topo, "eth2", 200000, 0, -1, ""); /* down */
    sharc_topo_classify(topo);
    CHECK(topo->eth_best == 1 && topo->nsocket_ifs == 2);
    CHECK(topo->socket_ifs[0] == 1 && topo->socket_ifs[1] == 2);
    sharc_topo_destroy(topo);

    /* speeds unknown (ENA): alike only by driver */
    CHECK(sharc_topo_create(&topo) == SHARC_OK);
    add_netdev(topo, "ens16", -1, 1, -1, "");
    add_netdev(topo, "ens32", -1, 1, -1, "");
    add_netdev(topo, "virt0", -1, 1, -1, "");
    snprintf(topo->netdevs[0].driver, sizeof(topo->netdevs[0].driver), "ena");
    snprintf(topo->netdevs[1].driver, sizeof(topo->netdevs[1].driver), "ena");
    snprintf(topo->netdevs[2].driver, sizeof(topo->netdevs[2].driver), "virtio_net");
    sharc_topo_classify(topo);
    CHECK(topo->eth_best == 0 && topo->nsocket_ifs == 2);
    sharc_topo_destroy(topo);
}

static void test_busid_cmp(void)
{
    CHECK(sharc_topo_busid_cmp("0000:18:00.0", "0000:9a:00.0") < 0); /* 0x18 < 0x9a */
    CHECK(sharc_topo_busid_cmp("0000:9a:00.0", "0000:18:00.0") > 0);
    CHECK(sharc_topo_busid_cmp("0000:10:1c.0", "0000:10:1d.0") < 0); /* device */
    CHECK(sharc_topo_busid_cmp("0000:aa:00.1", "0000:aa:00.0") > 0); /* function */
    CHECK(sharc_topo_busid_cmp("0001:00:00.0", "0000:ff:1f.7") > 0); /* domain first */
    CHECK(sharc_topo_busid_cmp("0000:18:00.0", "0000:18:00.0") == 0);
    CHECK(sharc_topo_busid_cmp("", "0000:00:00.0") > 0); /* unknown addresses last */
    CHECK(sharc_topo_busid_cmp("0000:00:00.0", "garbage") < 0);
    CHECK(sharc_topo_busid_cmp("zz", "") == 0);
    CHECK(sharc_topo_busid_cmp("0000:100:00.0", "0000:ff:00.0") > 0); /* no bus 0x100 */
}

/*
 * GPUs given in any order end up numbered by PCI address, and every matrix follows: GPU i's
 * row keeps its own distances whichever index it lands on. NICs likewise, by address then name.
 */
static void test_sort(void)
{
    static const unsigned buses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
    const int n = 8;
    sharc_topo_t *topo;

    srand(20);
    for (int round = 0; round < 50; round++) {
        int order[8], nic_order[3];

        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) { /* a shuffled directory listing */
            int j = rand() % (i + 1), t = order[i];

            order[i] = order[j];
            order[j] = t;
        }
        for (int k = 0; k < 3; k++) {
            nic_order[k] = (k + round) % 3;
        }
        CHECK(sharc_topo_create(&topo) == SHARC_OK);
        topo->ngpus = n;
        topo->nnics = 3;
        for (int i = 0; i < n; i++) {
            unsigned bus = buses[order[i]];

            snprintf(topo->gpus[i].pci.busid, sizeof(topo->gpus[i].pci.busid), "0000:%02x:00.0",
                     bus);
            for (int j = 0; j < n; j++) {
                /* a distance that names both GPUs: bus of row * 1000 + bus of column */
                topo->nvlinks[i][j] = (int)(bus * 1000 + buses[order[j]]);
            }
            for (int k = 0; k < 3; k++) {
                topo->gpu_nic[i][k] = (sharc_topo_link_t)((bus + (unsigned)nic_order[k]) % 7);
            }
        }
        for (int k = 0; k < 3; k++) { /* NIC 1 has no address: last */
            snprintf(topo->nics[k].name, sizeof(topo->nics[k].name), "mlx5_%d", nic_order[k]);
            if (nic_order[k] != 1) {
                snprintf(topo->nics[k].pci.busid, sizeof(topo->nics[k].pci.busid), "0000:%02x:00.0",
                         0x10 + nic_order[k]);
            }
        }
        sharc_topo_sort(topo);
        for (int i = 0; i < n; i++) {
            char want[16];

            snprintf(want, sizeof(want), "0000:%02x:00.0", buses[i]);
            CHECK(strcmp(topo->gpus[i].pci.busid, want) == 0);
            for (int j = 0; j < n; j++) {
                CHECK(topo->nvlinks[i][j] == (int)(buses[i] * 1000 + buses[j]));
            }
        }
        CHECK(strcmp(topo->nics[0].name, "mlx5_0") == 0 &&
              strcmp(topo->nics[1].name, "mlx5_2") == 0 &&
              strcmp(topo->nics[2].name, "mlx5_1") == 0);
        for (int i = 0; i < n; i++) {
            static const int nic_of[3] = {0, 2, 1};

            for (int k = 0; k < 3; k++) {
                CHECK(topo->gpu_nic[i][k] ==
                      (sharc_topo_link_t)((buses[i] + (unsigned)nic_of[k]) % 7));
            }
        }
        sharc_topo_destroy(topo);
    }
}

static void test_fi_info(void)
{
    static const char good[] = "provider: efa\n    fabric: efa\n    domain: rdmap16s27-rdm\n"
                               "    version: 122.0\n    type: FI_EP_RDM\n"
                               "    protocol: FI_PROTO_EFA\n"
                               "provider: efa\n    fabric: efa\n    domain: rdmap16s27-dgrm\n"
                               "    version: 122.0\n    type: FI_EP_DGRAM\n"
                               "provider: efa\n    fabric: efa-direct\n"
                               "    domain: rdmap16s27-rdm\n    version: 122.0\n"
                               "    type: FI_EP_RDM\n"
                               "provider: efa\n    domain: rdmap1s0-rdm\n    type: FI_EP_RDM\n"
                               "provider: tcp;ofi_rxm\n    domain: eth0\n    type: FI_EP_RDM\n";
    static const char *const bad[] = {
        "",
        ":",
        "provider:",
        "provider: efa\nversion: 99999999999999999999\n",
        "fi_getin",
        "\n\n\n",
        "provider: efax\n    type: FI_EP_RDM\n",
        "    version: .\n",
    };
    sharc_topo_fi_info_t info;

    sharc_topo_parse_fi_info(good, strlen(good), &info);
    CHECK(info.nentries == 5 && info.nefa == 4 && info.nrdm == 3);
    CHECK(info.major == 1 && info.minor == 22);
    CHECK(info.ndomains == 2); /* one per device: efa and efa-direct share a domain name */
    CHECK(strcmp(info.domains, "rdmap16s27-rdm, rdmap1s0-rdm") == 0);
    CHECK(info.error[0] == '\0');
    sharc_topo_parse_fi_info("fi_getinfo: -61 (No data available)\n", 36, &info);
    CHECK(info.nefa == 0 && strcmp(info.error, "fi_getinfo: -61 (No data available)") == 0);
    sharc_topo_parse_fi_info("provider: efa\n    version: 203.10\n", 34, &info);
    CHECK(info.major == 2 && info.minor == 3); /* libfabric 2.3 */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sharc_topo_parse_fi_info(bad[i], strlen(bad[i]), &info);
        CHECK(info.nefa == 0 || info.major == 0);
    }
}

static void test_plugin_version(void)
{
    static const char lib[] = "\177ELF\0garbage\0aws-ofi-nccl requires\0"
                              "NET/OFI Initializing aws-ofi-nccl 1.13.2-aws\0more";
    char out[48];

    sharc_topo_plugin_version(lib, sizeof(lib), out, sizeof(out));
    CHECK(strcmp(out, "1.13.2-aws") == 0); /* not the "requires" line: no digit after */
    sharc_topo_plugin_version("aws-ofi-nccl git-6e504db", 24, out, sizeof(out));
    CHECK(strcmp(out, "git-6e504db") == 0);
    sharc_topo_plugin_version("aws-ofi-nccl 1", 13, out, sizeof(out)); /* cut before it */
    CHECK(out[0] == '\0');
    sharc_topo_plugin_version("aws-ofi-nccl 1.2", 16, out, 3); /* a short buffer */
    CHECK(strcmp(out, "1.") == 0);
    sharc_topo_plugin_version("", 0, out, sizeof(out));
    CHECK(out[0] == '\0');
}

/*
 * The probe as on a live EFA node, with the tools it runs and the directories it searches all
 * made here: fi_info is found on PATH and run (its output, stderr too, parsed); the plugin and
 * libfabric are looked for in an empty directory and not found, and nothing else is guessed.
 */
static void test_probe_fi_info(void)
{
    char dir[] = "/tmp/sharc_test_topo_XXXXXX", tool[64], *path = getenv("PATH");
    char *saved = path != NULL ? strdup(path) : NULL;
    sharc_topo_libs_opts_t opts = {NULL, NULL, NULL, 1, 1};
    sharc_topo_libs_t libs;
    FILE *f;

    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    snprintf(tool, sizeof(tool), "%s/fi_info", dir);
    f = fopen(tool, "w");
    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    fprintf(f, "#!/bin/sh\n[ \"$1 $2\" = \"-p efa\" ] || exit 3\n"
               "printf 'provider: efa\\n    domain: rdmap0s6-rdm\\n    version: 121.0\\n"
               "    type: FI_EP_RDM\\n'\necho 'fi_getinfo: late' >&2\n");
    fclose(f);
    CHECK(chmod(tool, 0755) == 0);
    opts.lib_path = dir; /* empty: no plugin, no libfabric */
    setenv("PATH", dir, 1);
    sharc_topo_probe_libs(&opts, &libs);
    CHECK(libs.probed && libs.searched && libs.fi.have);
    CHECK(libs.fi.info.nefa == 1 && libs.fi.info.nrdm == 1 && libs.fi.info.minor == 21);
    CHECK(strcmp(libs.fi.info.error, "fi_getinfo: late") == 0); /* stderr is read too */
    CHECK(strstr(libs.fi.source, "fi_info -p efa") != NULL);
    CHECK(!libs.plugin.found && !libs.plugin.loads && !libs.fabric.found);
    CHECK(strcmp(libs.plugin.tried, "libnccl-net.so") == 0);
    /* offline input without a path or fi_info text: nothing probed, nothing run */
    opts.live = 0;
    opts.lib_path = NULL;
    sharc_topo_probe_libs(&opts, &libs);
    CHECK(!libs.probed && !libs.fi.have);
    if (saved != NULL) {
        setenv("PATH", saved, 1);
        free(saved);
    }
    unlink(tool);
    rmdir(dir);
}

int main(void)
{
    test_distance();
    test_spec();
    test_same_value();
    test_conf();
    test_smi();
    test_eth_best();
    test_socket_ifs();
    test_busid_cmp();
    test_sort();
    test_fi_info();
    test_plugin_version();
    test_probe_fi_info();
    return check_result("test_topo");
}
