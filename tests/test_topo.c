/*
 * test_topo.c: unit tests of the topology module's pure parts: the PCI distance rule, NCCL
 * device lists (^, =, ports), the conf-file parser, the nvidia-smi parser on damaged text
 * and the choice of the Ethernet interface. Fixture machines are tested end to end by
 * topo_detect.sh and topo_doctor.sh.
 */
#include "config.h"

#include <string.h>

#include "../perf/topo/topo_tool.h"
#include "check.h"

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

int main(void)
{
    test_distance();
    test_spec();
    test_same_value();
    test_conf();
    test_smi();
    test_eth_best();
    return check_result("test_topo");
}
