/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_log.c: log file name expansion, subsystem lists, level and subsystem filtering,
 * per-rank log files, and the error messages kept for sharc_log_errors.
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_BOOT

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../base/log.h"
#include "../check.h"

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL) {
        return NULL;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(void)
{
    char out[256], expect[256], host[128], dir[] = "/tmp/sharc-test-log-XXXXXX", pattern[300];
    unsigned mask = 0;
    char *text;

    CHECK(sharc_log_expand_path("a-%r.log", 3, out, sizeof(out)) == 0);
    CHECK(strcmp(out, "a-3.log") == 0);
    CHECK(sharc_log_expand_path("a-%r.log", -1, out, sizeof(out)) == 0);
    CHECK(strcmp(out, "a-unknown.log") == 0);
    CHECK(sharc_log_expand_path("%p%%", 0, out, sizeof(out)) == 0);
    snprintf(expect, sizeof(expect), "%ld%%", (long)getpid());
    CHECK(strcmp(out, expect) == 0);
    gethostname(host, sizeof(host));
    CHECK(sharc_log_expand_path("%h", 0, out, sizeof(out)) == 0 && strcmp(out, host) == 0);
    CHECK(sharc_log_expand_path("bad%q", 0, out, sizeof(out)) == -1);
    CHECK(sharc_log_expand_path("trailing%", 0, out, sizeof(out)) == -1);
    CHECK(sharc_log_expand_path("toolong-%r", 123456, out, 8) == -1);

    CHECK(sharc_log_parse_subsys("all", &mask) == 0 && mask == ~0u);
    CHECK(sharc_log_parse_subsys("", &mask) == 0 && mask == ~0u);
    CHECK(sharc_log_parse_subsys("boot,tp", &mask) == 0);
    CHECK(mask == ((1u << SHARC_SUBSYS_BOOT) | (1u << SHARC_SUBSYS_TP)));
    CHECK(sharc_log_parse_subsys("^boot", &mask) == 0 && mask == ~(1u << SHARC_SUBSYS_BOOT));
    CHECK(sharc_log_parse_subsys("boot,bogus", &mask) == -1);
    CHECK(sharc_log_parse_subsys(",", &mask) == -1);

    /* to a per-rank file: info passes, debug does not; boot-only filter drops core */
    CHECK(mkdtemp(dir) != NULL);
    snprintf(pattern, sizeof(pattern), "%s/sharc.%%r.log", dir);
    sharc_log_configure(SHARC_LOG_INFO, 1u << SHARC_SUBSYS_BOOT, pattern);
    sharc_log_set_rank(5);
    sharc_info("hello %d", 42);
    sharc_debug("not shown");
    errno = ENOENT;
    sharc_warn("errno kept: %m");
    CHECK(errno == ENOENT);
    snprintf(out, sizeof(out), "%s/sharc.5.log", dir);
    text = slurp(out);
    CHECK_MSG(text != NULL, "%s", out);
    if (text != NULL) {
        CHECK(strstr(text, "[5] sharc INFO boot: hello 42\n") != NULL);
        CHECK(strstr(text, "not shown") == NULL);
        CHECK(strstr(text, "errno kept: No such file or directory") != NULL);
    }
    unlink(out);
    /* the rank changes: a %r file follows it */
    sharc_log_set_rank(6);
    sharc_error("to six");
    snprintf(out, sizeof(out), "%s/sharc.6.log", dir);
    text = slurp(out);
    CHECK(text != NULL && strstr(text, "[6] sharc ERROR boot: to six") != NULL);
    /* a subsystem outside the mask is dropped, errors are not */
    sharc_log_configure(SHARC_LOG_TRACE, 1u << SHARC_SUBSYS_TP, pattern);
    sharc_info("filtered out");
    sharc_error("always");
    text = slurp(out);
    CHECK(text != NULL && strstr(text, "filtered out") == NULL && strstr(text, "always") != NULL);
    unlink(out);

    /* sharc_log_errors: the messages since a count, oldest first, the last 8, the most
     * recent that fit */
    {
        char buf[64], want[64];
        unsigned long n0 = sharc_log_errors(0, NULL, 0), n;

        CHECK(n0 == 2); /* "to six", "always" */
        CHECK(sharc_log_errors(n0, buf, sizeof(buf)) == n0 && buf[0] == '\0');
        sharc_warn("a warning is not an error");
        sharc_error("first %d", 1);
        sharc_error("second");
        n = sharc_log_errors(n0, buf, sizeof(buf));
        CHECK_MSG(n == n0 + 2 && strcmp(buf, "first 1\nsecond") == 0, "%lu '%s'", n, buf);
        CHECK(sharc_log_errors(n0 + 1, buf, sizeof(buf)) == n && strcmp(buf, "second") == 0);
        CHECK(sharc_log_errors(n + 5, buf, sizeof(buf)) == n && buf[0] == '\0');
        CHECK(sharc_log_errors(n0, buf, 8) == n && strcmp(buf, "second") == 0);
        CHECK(sharc_log_errors(n0, buf, 4) == n && strcmp(buf, "sec") == 0);
        for (int i = 0; i < 10; i++) {
            sharc_error("e%d", i);
        }
        n = sharc_log_errors(0, buf, sizeof(buf));
        CHECK(n == n0 + 12);
        CHECK_MSG(strcmp(buf, "e2\ne3\ne4\ne5\ne6\ne7\ne8\ne9") == 0, "'%s'", buf);
        snprintf(want, sizeof(want), "e8\ne9");
        CHECK(sharc_log_errors(n - 2, buf, sizeof(buf)) == n && strcmp(buf, want) == 0);
    }
    sharc_log_configure(SHARC_LOG_WARN, ~0u, "");
    rmdir(dir);
    return check_result("test_log");
}
