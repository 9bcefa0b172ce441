/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tune_file.c: SHARC_TUNE_FILE. A good file's rules (count, lookups at several sizes and
 * rank counts, '*', power-of-two-only rules passed over at 3 ranks), its place in selection
 * (SHARC_<COLL>_ALGO first, the built-in table last) and the selection log; and every kind
 * of bad file failing context creation with SHARC_ERR_INVALID and a message naming the line.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../coll/algorithms/tune.h"
#include "../../comm/context.h"
#include "../../base/log.h"
#include "../../base/log_cfg.h"
#include "../check.h"

static char dir[] = "/tmp/sharc-test-tune-XXXXXX";

/* Write @p len bytes to dir/name; returns the path (static: one at a time). */
static const char *write_bytes(const char *name, const char *data, size_t len)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    CHECK_MSG(f != NULL, "%s", path);
    if (f != NULL) {
        CHECK(fwrite(data, 1, len, f) == len);
        fclose(f);
    }
    return path;
}

static const char *write_text(const char *name, const char *text)
{
    return write_bytes(name, text, strlen(text));
}

static char *slurp(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n;

    buf[0] = '\0';
    if (f == NULL) {
        return buf;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/*
 * A context with SHARC_TUNE_FILE=@p path logging into a file of its own, plus an optional
 * extra knob; its status, and the log in *log_p. The log goes back to stderr afterwards.
 */
static sharc_status_t make_context(const char *path, const char *knob, const char *value,
                                   const char *level, sharc_context_h *ctx_p, char **log_p)
{
    static int serial;
    char log[300];
    sharc_config_h config;
    sharc_status_t status;

    snprintf(log, sizeof(log), "%s/log.%d", dir, serial++);
    CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &config) == SHARC_OK);
    CHECK(sharc_config_set(config, "TUNE_FILE", path) == SHARC_OK);
    CHECK(sharc_config_set(config, "LOG_FILE", log) == SHARC_OK);
    CHECK(sharc_config_set(config, "LOG_LEVEL", level) == SHARC_OK);
    CHECK(sharc_config_set(config, "LOG_SUBSYS", "core,coll") == SHARC_OK);
    if (knob != NULL) {
        CHECK(sharc_config_set(config, knob, value) == SHARC_OK);
    }
    status = sharc_context_create(config, ctx_p);
    sharc_config_destroy(config);
    *log_p = slurp(log);
    return status;
}

static void restore_log(void)
{
    sharc_log_configure(SHARC_LOG_WARN, ~0u, "");
}

/* Rule for (type, nranks, bytes): its line, or 0 when none fits. */
static size_t rule_line(const sharc_coll_tune_t *tune, sharc_coll_type_t type, int nranks,
                        size_t bytes, const char *algo)
{
    const sharc_coll_tune_rule_t *rule = sharc_coll_tune_lookup(tune, type, nranks, bytes);

    if (rule == NULL) {
        return 0;
    }
    CHECK_MSG(strcmp(rule->algo->info.name, algo) == 0, "%s %d ranks %zu B: %s, expected %s",
              sharc_coll_name(type), nranks, bytes, rule->algo->info.name, algo);
    return rule->line;
}

static const char good[] =
    "# sharc tune file v1\n"
    "# fingerprint host=test cores=2 transport=shm\n"
    "\n"
    "allgather       2   0        65535     direct\n"
    "allgather       2   65536    1048575   ring      # a comment after a rule\n"
    "reduce_scatter  *   0        18446744073709551615 RING\n"
    "allgather       *   0        1048575   recursive_doubling\n"
    "allgather       *   0        1048575   direct\n"
    "   allgather\t*\t1048576  18446744073709551615 ring\r\n"
    "broadcast       4   100      100       binomial#no blank before the comment\n"
    "alltoall        8   0        0         pairwise"; /* no newline at the end */

static void test_good(void)
{
    sharc_coll_tune_t *tune = NULL;
    const char *path = write_text("good", good);

    CHECK(sharc_coll_tune_load(path, &tune) == SHARC_OK && tune != NULL);
    if (tune == NULL) {
        return;
    }
    CHECK(tune->nrules == 8);
    CHECK(strcmp(tune->path, path) == 0);
    /* 2 ranks: its own rules, then '*' */
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 2, 0, "direct") == 4);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 2, 65535, "direct") == 4);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 2, 65536, "ring") == 5);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 2, 1048575, "ring") == 5);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 2, 1048576, "ring") == 9);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 2, SIZE_MAX, "ring") == 9);
    /* 4 ranks: the '*' power-of-two rule; 3 ranks: passed over for the next one */
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 4, 1000, "recursive_doubling") == 7);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 3, 1000, "direct") == 8);
    CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 3, 1048576, "ring") == 9);
    CHECK(rule_line(tune, SHARC_COLL_REDUCE_SCATTER, 5, 12345, "ring") == 6);
    /* a single size, a single rank count; outside them the built-in table decides */
    CHECK(rule_line(tune, SHARC_COLL_BROADCAST, 4, 100, "binomial") == 10);
    CHECK(rule_line(tune, SHARC_COLL_BROADCAST, 4, 99, "") == 0);
    CHECK(rule_line(tune, SHARC_COLL_BROADCAST, 4, 101, "") == 0);
    CHECK(rule_line(tune, SHARC_COLL_BROADCAST, 2, 100, "") == 0);
    CHECK(rule_line(tune, SHARC_COLL_ALLTOALL, 8, 0, "pairwise") == 11);
    CHECK(rule_line(tune, SHARC_COLL_ALLTOALL, 8, 1, "") == 0);
    CHECK(rule_line(tune, SHARC_COLL_ALLREDUCE, 2, 100, "") == 0);
    CHECK(rule_line(tune, SHARC_COLL_BARRIER, 2, 0, "") == 0);
    CHECK(sharc_coll_tune_lookup(NULL, SHARC_COLL_ALLGATHER, 2, 0) == NULL);
    sharc_coll_tune_destroy(tune);
    sharc_coll_tune_destroy(NULL);

    /* comments and blank lines only: no rules, and fine */
    tune = NULL;
    CHECK(sharc_coll_tune_load(write_text("empty", "# sharc tune file v1\n\n  \n"), &tune) ==
          SHARC_OK);
    CHECK(tune != NULL && tune->nrules == 0);
    CHECK(sharc_coll_tune_lookup(tune, SHARC_COLL_ALLGATHER, 2, 0) == NULL);
    sharc_coll_tune_destroy(tune);
}

/* Select on @p size ranks with context @p ctx's settings (select reads no more). */
static const char *select_algo(sharc_context_h ctx, int size, sharc_coll_type_t type, size_t count)
{
    sharc_coll_comm_t cc = {.cfg = sharc_coll_cfg(ctx->cfg), .tune = ctx->tune, .size = size};
    sharc_coll_args_t args = {.type = type, .count = count, .dtype = SHARC_DTYPE_F32};
    const sharc_coll_algo_t *algo = NULL;

    CHECK(sharc_coll_select(&cc, &args, &algo) == SHARC_OK && algo != NULL);
    return algo ? algo->info.name : "(none)";
}

/* The order of the sources and the log that says which one chose. */
static void test_select(void)
{
    char *log, expect[512];
    sharc_context_h ctx = NULL;
    const char *path = write_text("select", good);

    CHECK(make_context(path, NULL, NULL, "debug", &ctx, &log) == SHARC_OK && ctx != NULL);
    if (ctx == NULL) {
        restore_log();
        return;
    }
    CHECK(ctx->tune != NULL && ctx->tune->nrules == 8);
    /* 250 f32 a rank on 3 ranks: 3000 bytes, the power-of-two rule passed over */
    CHECK(strcmp(select_algo(ctx, 3, SHARC_COLL_ALLGATHER, 250), "direct") == 0);
    CHECK(strcmp(select_algo(ctx, 4, SHARC_COLL_ALLGATHER, 250), "recursive_doubling") == 0);
    /* small reduce-scatter: the built-in table says direct, the file ring */
    CHECK(strcmp(select_algo(ctx, 2, SHARC_COLL_REDUCE_SCATTER, 16), "ring") == 0);
    /* no rule: built-in (a small broadcast is binomial, a large one chain) */
    CHECK(strcmp(select_algo(ctx, 2, SHARC_COLL_BROADCAST, 1 << 20), "chain") == 0);
    log = slurp(sharc_log_cfg(ctx->cfg)->file);
    snprintf(expect, sizeof(expect), "INFO coll: tune file %s: 8 rules\n", path);
    CHECK_MSG(strstr(log, expect) != NULL, "no '%s' in:\n%s", expect, log);
    snprintf(expect, sizeof(expect), "allgather 3000 B on 3 ranks: direct (tune file %s line 8)",
             path);
    CHECK_MSG(strstr(log, expect) != NULL, "no '%s' in:\n%s", expect, log);
    snprintf(expect, sizeof(expect),
             "allgather 4000 B on 4 ranks: recursive_doubling (tune file %s line 7)", path);
    CHECK_MSG(strstr(log, expect) != NULL, "no '%s' in:\n%s", expect, log);
    CHECK(strstr(log, "broadcast 4194304 B on 2 ranks: chain (built-in rule)") != NULL);
    sharc_context_destroy(ctx);

    /* SHARC_<COLL>_ALGO wins over the file */
    ctx = NULL;
    CHECK(make_context(path, "ALLGATHER_ALGO", "ring", "debug", &ctx, &log) == SHARC_OK);
    if (ctx != NULL) {
        CHECK(strcmp(select_algo(ctx, 2, SHARC_COLL_ALLGATHER, 16), "ring") == 0);
        CHECK(strcmp(select_algo(ctx, 2, SHARC_COLL_REDUCE_SCATTER, 16), "ring") == 0);
        log = slurp(sharc_log_cfg(ctx->cfg)->file);
        CHECK_MSG(strstr(log, "allgather 128 B on 2 ranks: ring (SHARC_ALLGATHER_ALGO)") != NULL,
                  "%s", log);
        sharc_context_destroy(ctx);
    }

    /* at warn level nothing about selection is logged */
    ctx = NULL;
    CHECK(make_context(path, NULL, NULL, "warn", &ctx, &log) == SHARC_OK);
    if (ctx != NULL) {
        CHECK(strcmp(select_algo(ctx, 2, SHARC_COLL_ALLGATHER, 16), "direct") == 0);
        CHECK(strstr(slurp(sharc_log_cfg(ctx->cfg)->file), "B on 2 ranks") == NULL);
        sharc_context_destroy(ctx);
    }
    restore_log();
}

/* A bad tune file: context creation fails, *ctx_p untouched, the log names what. */
static void check_bad(const char *path, const char *expect)
{
    sharc_context_h ctx = NULL;
    sharc_status_t status;
    char *log;

    status = make_context(path, NULL, NULL, "warn", &ctx, &log);
    CHECK_MSG(status == SHARC_ERR_INVALID && ctx == NULL, "%s: status %d", path, status);
    CHECK_MSG(strstr(log, expect) != NULL, "no '%s' in the log:\n%s", expect, log);
    CHECK_MSG(strstr(log, "ERROR coll: tune file ") != NULL, "%s", log);
    restore_log();
}

static void test_bad_line(const char *line, const char *expect)
{
    char text[2048], msg[512];
    const char *path;

    /* the bad line is line 3, after a comment and a good rule */
    snprintf(text, sizeof(text), "# sharc tune file v1\nallgather 2 0 100 direct\n%s\n", line);
    path = write_text("bad", text);
    snprintf(msg, sizeof(msg), "tune file %s line 3: %s", path, expect);
    check_bad(path, msg);
}

static void test_bad(void)
{
    char msg[512], path[300], *big;
    size_t len = 0;

    snprintf(path, sizeof(path), "%s/no-such-file", dir);
    snprintf(msg, sizeof(msg), "tune file %s (SHARC_TUNE_FILE): cannot open: No such file", path);
    check_bad(path, msg);
    snprintf(msg, sizeof(msg), "tune file %s line 1: cannot read: Is a directory", dir);
    check_bad(dir, msg);

    test_bad_line("allgathr 2 0 100 ring", "unknown collective 'allgathr'");
    test_bad_line("barrier * 0 100 dissemination", "unknown collective 'barrier'");
    test_bad_line("allreduce * 0 100 direct",
                  "allreduce has no algorithm 'direct' (expected ring or recursive_doubling)");
    test_bad_line("allgather * 0 100 auto", "allgather has no algorithm 'auto'");
    test_bad_line("broadcast * 0 100 ring", "broadcast has no algorithm 'ring'");
    test_bad_line("allgather 0 0 100 ring", "rank count '0' is not a positive integer or *");
    test_bad_line("allgather -2 0 100 ring", "rank count '-2' is not");
    test_bad_line("allgather two 0 100 ring", "rank count 'two' is not");
    test_bad_line("allgather 99999999999 0 100 ring", "rank count '99999999999' is not");
    test_bad_line("allgather ** 0 100 ring", "rank count '**' is not");
    test_bad_line("allgather 2 x 100 ring", "min_bytes 'x' is not a decimal byte count");
    test_bad_line("allgather 2 -1 100 ring", "min_bytes '-1' is not");
    test_bad_line("allgather 2 +1 100 ring", "min_bytes '+1' is not");
    test_bad_line("allgather 2 0 64k ring", "max_bytes '64k' is not");
    test_bad_line("allgather 2 0 0x10 ring", "max_bytes '0x10' is not");
    test_bad_line("allgather 2 0 18446744073709551616 ring", "max_bytes '18446744073709551616'");
    test_bad_line("allgather 2 0 99999999999999999999999 ring", "max_bytes '9999");
    test_bad_line("allgather 2 200 100 ring", "min_bytes 200 is above max_bytes 100");
    test_bad_line(
        "allgather 2 0 100",
        "4 of 5 fields (collective, rank count, min_bytes, max_bytes, algorithm): no algorithm");
    test_bad_line(
        "allgather",
        "1 of 5 fields (collective, rank count, min_bytes, max_bytes, algorithm): no rank count");
    test_bad_line("allgather 2 0 100 ring extra", "unexpected field 'extra' after the algorithm");
    test_bad_line("allgather 2 0 100 ring 7 8", "unexpected field '7'");
    test_bad_line("allgather 2 0 100 ring direct", "unexpected field 'direct'");

    /* lines of 1024 characters are fine, 1025 are not */
    big = malloc(1 << 20); /* 4097 rules of under 40 characters */
    CHECK(big != NULL);
    if (big == NULL) {
        return;
    }
    memset(big, '#', 1024);
    big[1024] = '\n';
    big[1025] = '\0';
    {
        sharc_coll_tune_t *tune = NULL;

        CHECK(sharc_coll_tune_load(write_text("long", big), &tune) == SHARC_OK);
        sharc_coll_tune_destroy(tune);
    }
    memset(big, '#', 1025);
    big[1025] = '\n';
    big[1026] = '\0';
    test_bad_line(big, "longer than 1024 characters");
    big[1025] = '\0'; /* and at the end of the file, without a newline */
    snprintf(path, sizeof(path), "%s", write_text("long", big));
    snprintf(msg, sizeof(msg), "tune file %s line 1: longer than 1024 characters", path);
    check_bad(path, msg);

    /* a NUL byte */
    snprintf(path, sizeof(path), "%s", write_bytes("nul", "allgather 2 0 1\0 ring\n", 22));
    snprintf(msg, sizeof(msg), "tune file %s line 1: a NUL byte", path);
    check_bad(path, msg);

    /* 4096 rules are fine, 4097 are not */
    for (int i = 0; i < 4096; i++) {
        len += (size_t)sprintf(big + len, "allgather %d 0 100 ring\n", i + 1);
    }
    {
        sharc_coll_tune_t *tune = NULL;

        CHECK(sharc_coll_tune_load(write_text("many", big), &tune) == SHARC_OK);
        CHECK(tune != NULL && tune->nrules == 4096);
        CHECK(rule_line(tune, SHARC_COLL_ALLGATHER, 4096, 100, "ring") == 4096);
        sharc_coll_tune_destroy(tune);
    }
    sprintf(big + len, "# a comment\nallgather 1 0 100 ring\n");
    snprintf(path, sizeof(path), "%s", write_text("many", big));
    snprintf(msg, sizeof(msg), "tune file %s line 4098: more than 4096 rules", path);
    check_bad(path, msg);
    free(big);
}

int main(void)
{
    char cmd[300];

    CHECK(mkdtemp(dir) != NULL);
    test_good();
    test_select();
    test_bad();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_result("test_tune_file");
}
