/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_nodelist.c: Slurm host list expansion, against hand-expanded lists.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "../../boot/boot.h"
#include "../check.h"

static void expect(const char *list, const char *joined)
{
    char **hosts = NULL, buf[4096] = "";
    size_t n = 0, off = 0;

    CHECK_MSG(sharc_nodelist_expand(list, 1000, &hosts, &n) == SHARC_OK, "%s", list);
    for (size_t i = 0; i < n; i++) {
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? " " : "", hosts[i]);
    }
    CHECK_MSG(strcmp(buf, joined) == 0, "'%s' gave '%s', expected '%s'", list, buf, joined);
    sharc_nodelist_free(hosts, n);
}

static void reject(const char *list)
{
    char **hosts = NULL;
    size_t n = 77;

    CHECK_MSG(sharc_nodelist_expand(list, 1000, &hosts, &n) == SHARC_ERR_INVALID, "'%s'",
              list ? list : "(null)");
    CHECK(n == 77 && hosts == NULL);
}

int main(void)
{
    expect("node01", "node01");
    expect("node[01-04,07]", "node01 node02 node03 node04 node07");
    expect("node[8-10]", "node8 node9 node10");
    expect("node[08-10]", "node08 node09 node10");
    expect("a[1-2],b,c[3]", "a1 a2 b c3");
    expect("rack[1-2]-n[1-2]", "rack1-n1 rack1-n2 rack2-n1 rack2-n2");
    expect("gpu-[001-002]x", "gpu-001x gpu-002x");
    expect("login1,login2", "login1 login2");
    expect("[1-3]", "1 2 3");
    expect("ip-10-0-0-[1,5]", "ip-10-0-0-1 ip-10-0-0-5");

    reject(NULL);
    reject("");
    reject("node[01-04");
    reject("node01-04]");
    reject("node[]");
    reject("node[4-1]");
    reject("node[a-b]");
    reject("node[1-]");
    reject("node[-3]");
    reject("node[1,]");
    reject("node[[1-2]]");
    reject("a,,b");
    reject("node[1-100000]"); /* more hosts than the limit */
    reject("node[1-99999999999999999999]");
    return check_result("test_nodelist");
}
