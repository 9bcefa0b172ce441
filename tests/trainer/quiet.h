/*
 * tests/trainer/quiet.h: the trainer's parser tests check the one error line a bad input
 * logs. quiet_begin sends stderr to an anonymous file, quiet_end restores it and returns what
 * was written; EXPECT_ERR checks a call's status and its line.
 */
#ifndef SHARC_TESTS_TRAINER_QUIET_H
#define SHARC_TESTS_TRAINER_QUIET_H

#include "check.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

#endif
