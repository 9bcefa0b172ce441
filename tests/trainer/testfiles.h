/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tests/trainer/testfiles.h: what the trainer's parser tests share. Files live in a private
 * temporary directory (testdir_create, tmp_path, write_bytes; testdir_remove checks that
 * nothing was left behind). The tests check the one error line a bad input logs:
 * quiet_begin sends stderr to an anonymous file, quiet_end restores it and returns what was
 * written; EXPECT_ERR checks a call's status and its line. Safetensors files and indexes are
 * written from their parts (write_st, write_index).
 */
#ifndef SHARC_TESTS_TRAINER_TESTFILES_H
#define SHARC_TESTS_TRAINER_TESTFILES_H

#include "check.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

/* "<dir>/<name>", kept until the end (so a test may hold several): freed by testdir_remove. */
static char *paths[256];
static int npaths;

static const char *tmp_path(const char *name)
{
    char buf[512];
    int i;

    snprintf(buf, sizeof(buf), "%s/%s", dir, name);
    for (i = 0; i < npaths; i++) {
        if (strcmp(paths[i], buf) == 0) {
            return paths[i];
        }
    }
    if (npaths == (int)(sizeof(paths) / sizeof(paths[0]))) {
        fprintf(stderr, "tmp_path: too many paths\n");
        abort();
    }
    paths[npaths] = strdup(buf);
    return paths[npaths++];
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    CHECK_MSG(f != NULL && fwrite(data, 1, len, f) == len && fclose(f) == 0, "%s", path);
}

/* A fresh "$TMPDIR/<prefix>.XXXXXX"; 0, or -1 with the cause printed. */
static int testdir_create(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(dir, sizeof(dir), "%s/%s.XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp", prefix);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

/* The tests remove what they make: anything still in the directory is a failure. */
static void testdir_remove(void)
{
    struct dirent *e;
    DIR *d = opendir(dir);

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        CHECK_MSG(0, "left behind: %s", e->d_name);
        unlink(tmp_path(e->d_name));
    }
    if (d != NULL) {
        closedir(d);
    }
    CHECK(rmdir(dir) == 0);
    while (npaths > 0) {
        free(paths[--npaths]);
    }
}

static FILE *quiet_file;
static int quiet_saved = -1;

static void quiet_begin(void)
{
    fflush(stderr);
    quiet_file = tmpfile();
    quiet_saved = dup(2);
    if (quiet_file != NULL) {
        dup2(fileno(quiet_file), 2);
    }
}

static const char *quiet_end(void)
{
    static char log[4096];
    size_t len = 0;

    fflush(stderr);
    dup2(quiet_saved, 2);
    close(quiet_saved);
    if (quiet_file != NULL) {
        rewind(quiet_file);
        len = fread(log, 1, sizeof(log) - 1, quiet_file);
        fclose(quiet_file);
        quiet_file = NULL;
    }
    log[len] = '\0';
    return log;
}

static int count_lines(const char *s)
{
    int n = 0;

    for (; *s; s++) {
        n += *s == '\n';
    }
    return n;
}

/* _call must fail with _status, logging one line that holds _needle (a path) and _word. */
#define EXPECT_ERR(_call, _status, _needle, _word)                                                 \
    do {                                                                                           \
        sharc_status_t s_;                                                                         \
        const char *log_;                                                                          \
        quiet_begin();                                                                             \
        s_ = (_call);                                                                              \
        log_ = quiet_end();                                                                        \
        CHECK_MSG(s_ == (_status), "%s gave %d, log: %s", #_call, s_, log_);                       \
        CHECK_MSG(count_lines(log_) == 1 && strstr(log_, _needle) != NULL &&                       \
                      strstr(log_, _word) != NULL,                                                 \
                  "%s: want one line with %s and %s, got: %s", #_call, _needle, _word, log_);      \
    } while (0)

/* ---- safetensors files and indexes written here, byte by byte */

/* A safetensors file from its parts; @p hlen_field overrides the length field when not 0. */
static inline void write_st(const char *path, const char *json, const void *data, size_t len,
                            uint64_t hlen_field)
{
    size_t jlen = strlen(json);
    unsigned char *buf = malloc(8 + jlen + len + 1);
    uint64_t h = hlen_field != 0 ? hlen_field : jlen;
    int i;

    for (i = 0; i < 8; i++) {
        buf[i] = (unsigned char)(h >> (8 * i));
    }
    memcpy(buf + 8, json, jlen);
    if (len > 0) {
        memcpy(buf + 8 + jlen, data, len);
    }
    write_bytes(path, buf, 8 + jlen + len);
    free(buf);
}

/* A sharded set's index: its weight map (JSON object text) in the format's envelope. */
static inline void write_index(const char *path, const char *weight_map)
{
    char json[1024];

    snprintf(json, sizeof(json), "{\"metadata\": {\"total_size\": 100}, \"weight_map\": %s}\n",
             weight_map);
    write_bytes(path, json, strlen(json));
}

#endif
