/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_config.c: the knob parsers (good and bad values: negative, overflow, garbage, empty,
 * trailing text) and the configuration object (defaults, environment, set/get, print), and
 * the warning about SHARC_ variables that name no knob (not for sharc's tools' own).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../base/config_int.h"
#include "../../comm/context.h"
#include "../../base/log.h"
#include "../../base/log_cfg.h"
#include "../../boot/boot.h"
#include "../check.h"

static void test_long(void)
{
    long v = -7;

    CHECK(sharc_cfg_parse_long("42", 0, 100, &v) == 0 && v == 42);
    CHECK(sharc_cfg_parse_long("0", 0, 100, &v) == 0 && v == 0);
    CHECK(sharc_cfg_parse_long("-3", -5, 5, &v) == 0 && v == -3);
    v = 7;
    CHECK(sharc_cfg_parse_long("-1", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long("101", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long("99999999999999999999999", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long("12a", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long("", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long(" 5", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long("5 ", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long("0x10", 0, 100, &v) == -1);
    CHECK(sharc_cfg_parse_long(NULL, 0, 100, &v) == -1);
    CHECK(v == 7); /* untouched by failures */
}

static void test_size(void)
{
    size_t v = 0;

    CHECK(sharc_cfg_parse_size("4096", &v) == 0 && v == 4096);
    CHECK(sharc_cfg_parse_size("64k", &v) == 0 && v == 65536);
    CHECK(sharc_cfg_parse_size("16M", &v) == 0 && v == 16u << 20);
    CHECK(sharc_cfg_parse_size("1g", &v) == 0 && v == 1u << 30);
    CHECK(sharc_cfg_parse_size("64KiB", &v) == 0 && v == 65536);
    CHECK(sharc_cfg_parse_size("2kb", &v) == 0 && v == 2048);
    CHECK(sharc_cfg_parse_size("0", &v) == 0 && v == 0);
    v = 5;
    CHECK(sharc_cfg_parse_size("-1", &v) == -1);
    CHECK(sharc_cfg_parse_size("1x", &v) == -1);
    CHECK(sharc_cfg_parse_size("", &v) == -1);
    CHECK(sharc_cfg_parse_size("k", &v) == -1);
    CHECK(sharc_cfg_parse_size("1kk", &v) == -1);
    CHECK(sharc_cfg_parse_size("18446744073709551616", &v) == -1);
    CHECK(sharc_cfg_parse_size("17179869184g", &v) == -1);
    CHECK(v == 5);
}

static void test_time(void)
{
    double v = 0;

    CHECK(sharc_cfg_parse_time("120", &v) == 0 && v == 120.0);
    CHECK(sharc_cfg_parse_time("120s", &v) == 0 && v == 120.0);
    CHECK(sharc_cfg_parse_time("500ms", &v) == 0 && fabs(v - 0.5) < 1e-12);
    CHECK(sharc_cfg_parse_time("2m", &v) == 0 && v == 120.0);
    CHECK(sharc_cfg_parse_time("1.5h", &v) == 0 && v == 5400.0);
    CHECK(sharc_cfg_parse_time(".25", &v) == 0 && v == 0.25);
    v = 3;
    CHECK(sharc_cfg_parse_time("-1", &v) == -1);
    CHECK(sharc_cfg_parse_time("0", &v) == -1);
    CHECK(sharc_cfg_parse_time("abc", &v) == -1);
    CHECK(sharc_cfg_parse_time("", &v) == -1);
    CHECK(sharc_cfg_parse_time("nan", &v) == -1);
    CHECK(sharc_cfg_parse_time("inf", &v) == -1);
    CHECK(sharc_cfg_parse_time("1e400", &v) == -1);
    CHECK(sharc_cfg_parse_time("5 s", &v) == -1);
    CHECK(sharc_cfg_parse_time("5d", &v) == -1);
    CHECK(sharc_cfg_parse_time("100000000", &v) == -1);
    CHECK(v == 3);
}

static void test_bool(void)
{
    int v = -1;

    CHECK(sharc_cfg_parse_bool("yes", &v) == 0 && v == 1);
    CHECK(sharc_cfg_parse_bool("Off", &v) == 0 && v == 0);
    CHECK(sharc_cfg_parse_bool("1", &v) == 0 && v == 1);
    CHECK(sharc_cfg_parse_bool("", &v) == -1);
    CHECK(sharc_cfg_parse_bool("2", &v) == -1);
    CHECK(v == 1);
}

static void test_object(void)
{
    sharc_config_h config = NULL;
    char buf[64], *text = NULL;
    size_t text_len = 0;
    FILE *mem;

    CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &config) == SHARC_OK);
    CHECK(sharc_config_get(config, "BOOTSTRAP_TIMEOUT", buf, sizeof(buf)) == SHARC_OK);
    CHECK(strcmp(buf, "120s") == 0);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->timeout == 120.0);
    CHECK(sharc_log_cfg(sharc_config_parsed(config))->level == SHARC_LOG_WARN);

    /* every spelling of a name */
    CHECK(sharc_config_set(config, "SHARC_BOOTSTRAP_TIMEOUT", "5s") == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->timeout == 5.0);
    CHECK(sharc_config_set(config, "bootstrap_timeout", "250ms") == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->timeout == 0.25);
    /* a bad value keeps the old one */
    CHECK(sharc_config_set(config, "BOOTSTRAP_TIMEOUT", "-3") == SHARC_ERR_INVALID);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->timeout == 0.25);
    CHECK(sharc_config_get(config, "BOOTSTRAP_TIMEOUT", buf, sizeof(buf)) == SHARC_OK);
    CHECK(strcmp(buf, "250ms") == 0);
    CHECK(sharc_config_set(config, "BOOTSTRAP_PORT", "65536") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "BOOTSTRAP_PORT", "29500") == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->port == 29500);
    CHECK(sharc_config_set(config, "LOG_LEVEL", "loud") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "LOG_LEVEL", "DEBUG") == SHARC_OK);
    CHECK(sharc_log_cfg(sharc_config_parsed(config))->level == SHARC_LOG_DEBUG);
    CHECK(sharc_config_set(config, "LOG_SUBSYS", "boot,nope") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "BOOTSTRAP", "pmix") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "BOOTSTRAP", "slurm") == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->mode == SHARC_BOOTSTRAP_SLURM);
    CHECK(sharc_config_set(config, "BOOTSTRAP_TOKEN", "s3cret") == SHARC_OK);
    CHECK(strcmp(sharc_boot_cfg(sharc_config_parsed(config))->token, "s3cret") == 0);
    CHECK(sharc_config_set(config, "BOOTSTRAP_MAX_MSG", "4g") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "BOOTSTRAP_MAX_MSG", "100") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "BOOTSTRAP_MAX_MSG", "1g") == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->max_msg == 1u << 30);
    CHECK(sharc_config_set(config, "NO_SUCH_KNOB", "1") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, NULL, "1") == SHARC_ERR_INVALID);
    CHECK(sharc_config_set(config, "LOG_LEVEL", NULL) == SHARC_ERR_INVALID);
    CHECK(sharc_config_get(config, "NO_SUCH_KNOB", buf, sizeof(buf)) == SHARC_ERR_INVALID);
    CHECK(sharc_config_get(config, "BOOTSTRAP_TOKEN", buf, 3) == SHARC_ERR_INVALID);

    mem = open_memstream(&text, &text_len);
    sharc_config_print(config, mem, SHARC_CONFIG_PRINT_DOC);
    fclose(mem);
    CHECK(strstr(text, "SHARC_BOOTSTRAP_TIMEOUT=250ms\n") != NULL);
    CHECK(strstr(text, "# default: 120s\n") != NULL);
    CHECK(strstr(text, "SHARC_LOG_LEVEL=DEBUG\n") != NULL);
    free(text);
    sharc_config_destroy(config);
    sharc_config_destroy(NULL);

    /* the environment overlays the defaults unless NO_ENV */
    setenv("SHARC_BOOTSTRAP_TIMEOUT", "30s", 1);
    setenv("SHARC_BOOTSTRAP_MAX_MSG", "1m", 1);
    CHECK(sharc_config_create(0, &config) == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->timeout == 30.0);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->max_msg == 1u << 20);
    sharc_config_destroy(config);
    CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &config) == SHARC_OK);
    CHECK(sharc_boot_cfg(sharc_config_parsed(config))->timeout == 120.0);
    sharc_config_destroy(config);

    /* a bad environment value fails creation and leaves the output alone */
    setenv("SHARC_BOOTSTRAP_TIMEOUT", "soon", 1);
    config = NULL;
    CHECK(sharc_config_create(0, &config) == SHARC_ERR_INVALID && config == NULL);
    setenv("SHARC_BOOTSTRAP_TIMEOUT", "", 1);
    CHECK(sharc_config_create(0, &config) == SHARC_ERR_INVALID && config == NULL);
    unsetenv("SHARC_BOOTSTRAP_TIMEOUT");
    unsetenv("SHARC_BOOTSTRAP_MAX_MSG");
    CHECK(sharc_config_create(0, NULL) == SHARC_ERR_INVALID);
}

static void test_unknown_env(void)
{
    char dir[] = "/tmp/sharc-test-config.XXXXXX", path[64], text[4096] = "";
    sharc_config_h config;
    size_t n = 0;
    FILE *f;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/log", dir);
    sharc_log_configure(SHARC_LOG_WARN, ~0u, path);
    setenv("SHARC_NO_SUCH_KNOB_X", "1", 1);
    setenv("SHARC_NODES_PREFIX", "t", 1); /* tools/nodes.sh's, handed to its commands */
    CHECK(sharc_config_create(SHARC_CONFIG_NO_ENV, &config) == SHARC_OK);
    sharc_config_warn_unknown_env(config);
    sharc_config_destroy(config);
    sharc_log_configure(SHARC_LOG_WARN, ~0u, NULL);
    unsetenv("SHARC_NO_SUCH_KNOB_X");
    unsetenv("SHARC_NODES_PREFIX");
    f = fopen(path, "r");
    if (f != NULL) {
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
    }
    text[n] = '\0';
    CHECK_MSG(strstr(text, "SHARC_NO_SUCH_KNOB_X names no sharc knob") != NULL, "%s", text);
    CHECK_MSG(strstr(text, "SHARC_NODES_PREFIX") == NULL, "%s", text);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    test_long();
    test_size();
    test_time();
    test_bool();
    test_object();
    test_unknown_env();
    return check_result("test_config");
}
