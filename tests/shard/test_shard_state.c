/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_shard_state.c: one rank of the sharded-checkpoint tests (public API only). Every
 * element of every master shard and optimizer state holds a value that names it (unit,
 * element, state, step), so a load can check each element wherever it came from, whatever
 * the world size was at save time.
 *
 *   test_shard_state save DIR STEP        fill from STEP and save
 *   test_shard_state load DIR STEP|any    load, check every element (and the step)
 *   test_shard_state fail DIR             the load must fail on every rank, nothing changed
 *   test_shard_state roundtrip DIR        save, scribble, load: bit for bit as before
 *   test_shard_state savedie DIR STEP     save, and die (SIGKILL) once this rank's shard file
 *                                         is being written
 *
 * SHARCTEST_SHARD_SIZE: HSDP shard size (default: every rank); SHARCTEST_MODEL=big: 4M
 * elements more (for kill tests); SHARCTEST_MODEL=other: another model; SHARCTEST_STATES:
 * the optimizer states (default "exp_avg,exp_avg_sq").
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../check.h"

static sharc_comm_h comm;
static int me;

/* The value of element x of unit u in state s (0: master) at step. Exact in f32. */
static float value(int u, size_t x, int s, uint64_t step)
{
    return (float)((double)x * 0.5 + u * 1000.0 + s * 100000.0 + (double)(step % 1000));
}

static sharc_shard_group_h make_group(int *nstates_p)
{
    static const size_t counts[] = {1001, 37, 5, 70000, 3, 9};
    static const int units[] = {0, 0, 0, 1, 2, 2};
    const char *model = getenv("SHARCTEST_MODEL"), *env;
    char states[256], *save = NULL;
    sharc_shard_param_t p[7];
    char names[7][16];
    int n = 6, shard_size;
    sharc_shard_params_t cfg = {
        .field_mask = SHARC_SHARD_PARAM_NUM_UNITS | SHARC_SHARD_PARAM_SHARD_SIZE, .num_units = 3};
    sharc_shard_group_h g = NULL;

    env = getenv("SHARCTEST_SHARD_SIZE");
    shard_size = env ? atoi(env) : sharc_comm_size(comm);
    cfg.shard_size = shard_size;
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "layer%d.w%d", units[i], i);
        p[i] = (sharc_shard_param_t){.name = names[i], .count = counts[i], .unit = units[i]};
    }
    p[3].ndim = 2;
    p[3].shape[0] = 700;
    p[3].shape[1] = 100;
    if (model != NULL && strcmp(model, "big") == 0) {
        snprintf(names[6], sizeof(names[6]), "big");
        p[n++] = (sharc_shard_param_t){.name = names[6], .count = 4u << 20, .unit = 2};
    } else if (model != NULL && strcmp(model, "other") == 0) {
        p[1].count = 38;
    }
    if (sharc_shard_create(comm, p, n, &cfg, &g) != SHARC_OK) {
        return NULL;
    }
    *nstates_p = 0;
    env = getenv("SHARCTEST_STATES");
    snprintf(states, sizeof(states), "%s", env ? env : "exp_avg,exp_avg_sq");
    for (char *tok = strtok_r(states, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        CHECK(sharc_shard_state_add(g, tok, NULL) == SHARC_OK);
        (*nstates_p)++;
    }
    return g;
}

static float *shard_of(sharc_shard_group_h g, int u, int s)
{
    float *p = NULL;

    if (s == 0) {
        CHECK(sharc_shard_local(g, u, &p, NULL, NULL) == SHARC_OK);
    } else {
        CHECK(sharc_shard_state_ptr(g, s - 1, u, &p) == SHARC_OK);
    }
    return p;
}

/* Whether element x of unit u belongs to a parameter (else it is padding: 0). */
static int is_param(sharc_shard_group_h g, int u, size_t x)
{
    sharc_shard_unit_info_t info;

    CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
    for (int i = info.first_param; i < info.first_param + info.nparams; i++) {
        sharc_shard_param_info_t pi;
        CHECK(sharc_shard_param_info(g, i, &pi) == SHARC_OK);
        if (x >= pi.offset && x < pi.offset + pi.count) {
            return 1;
        }
    }
    return 0;
}

/* Fill (check == 0) or count the elements that differ from value(..., step). */
static size_t walk(sharc_shard_group_h g, int nstates, uint64_t step, int check)
{
    size_t wrong = 0;

    for (int u = 0; u < sharc_shard_num_units(g); u++) {
        sharc_shard_unit_info_t info;

        CHECK(sharc_shard_unit_info(g, u, &info) == SHARC_OK);
        for (int s = 0; s <= nstates; s++) {
            float *p = shard_of(g, u, s);

            for (size_t k = 0; p != NULL && k < info.shard_count; k++) {
                size_t x = info.shard_offset + k;
                float want = is_param(g, u, x) ? value(u, x, s, step) : 0.0f;

                if (!check) {
                    p[k] = want;
                } else if (p[k] != want && wrong++ < 3) {
                    fprintf(stderr, "rank %d: unit %d state %d element %zu: %g, want %g\n", me, u,
                            s, x, p[k], want);
                }
            }
        }
    }
    return wrong;
}

struct save_args {
    sharc_shard_group_h g;
    const char *dir;
    uint64_t step;
};

static void *save_thread(void *arg)
{
    struct save_args *a = arg;

    sharc_shard_save(a->g, a->dir, a->step);
    return NULL;
}

/* Save in a thread; die the moment a temporary file of this rank's shard appears. */
static void save_and_die(sharc_shard_group_h g, const char *dir, uint64_t step)
{
    struct save_args a = {g, dir, step};
    char suffix[32];
    pthread_t t;

    snprintf(suffix, sizeof(suffix), "-r%d.bin.tmp.", me);
    pthread_create(&t, NULL, save_thread, &a);
    for (;;) {
        DIR *d = opendir(dir);
        struct dirent *e;

        while (d != NULL && (e = readdir(d)) != NULL) {
            if (strstr(e->d_name, suffix) != NULL) {
                raise(SIGKILL);
            }
        }
        if (d != NULL) {
            closedir(d);
        }
        usleep(200);
    }
}

int main(int argc, char **argv)
{
    sharc_context_h ctx;
    sharc_shard_group_h g;
    int nstates = 0;
    uint64_t step = 0;
    sharc_status_t status;

    if (argc < 3) {
        fprintf(stderr, "usage: test_shard_state save|load|fail|roundtrip DIR [STEP|any]\n");
        return 2;
    }
    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_shard_state: no communicator\n");
        return 1;
    }
    me = sharc_comm_rank(comm);
    g = make_group(&nstates);
    CHECK(g != NULL);
    if (g != NULL && strcmp(argv[1], "save") == 0 && argc > 3) {
        step = strtoull(argv[3], NULL, 10);
        walk(g, nstates, step, 0);
        status = sharc_shard_save(g, argv[2], step);
        CHECK_MSG(status == SHARC_OK, "rank %d: save: %s", me, sharc_status_string(status));
    } else if (g != NULL && strcmp(argv[1], "savedie") == 0 && argc > 3) {
        walk(g, nstates, 99, 0);
        save_and_die(g, argv[2], strtoull(argv[3], NULL, 10));
    } else if (g != NULL && strcmp(argv[1], "load") == 0 && argc > 3) {
        status = sharc_shard_load(g, argv[2], &step);
        CHECK_MSG(status == SHARC_OK, "rank %d: load: %s", me, sharc_status_string(status));
        if (strcmp(argv[3], "any") != 0) {
            CHECK_MSG(step == strtoull(argv[3], NULL, 10), "rank %d: loaded step %llu", me,
                      (unsigned long long)step);
        }
        CHECK(walk(g, nstates, step, 1) == 0);
        printf("rank %d: loaded step %llu\n", me, (unsigned long long)step);
    } else if (g != NULL && strcmp(argv[1], "fail") == 0) {
        walk(g, nstates, 777, 0);
        status = sharc_shard_load(g, argv[2], &step);
        CHECK_MSG(status == SHARC_ERR_INVALID || status == SHARC_ERR_IO ||
                      status == SHARC_ERR_REMOTE,
                  "rank %d: load of a bad checkpoint: %s", me, sharc_status_string(status));
        CHECK(walk(g, nstates, 777, 1) == 0); /* nothing changed */
        printf("rank %d: refused (%s)\n", me, sharc_status_string(status));
    } else if (g != NULL && strcmp(argv[1], "roundtrip") == 0) {
        walk(g, nstates, 5, 0);
        CHECK(sharc_shard_save(g, argv[2], 5) == SHARC_OK);
        walk(g, nstates, 6, 0);
        CHECK(sharc_shard_load(g, argv[2], &step) == SHARC_OK && step == 5);
        CHECK(walk(g, nstates, 5, 1) == 0);
        /* a second save replaces the first, and only its files remain */
        walk(g, nstates, 7, 0);
        CHECK(sharc_shard_save(g, argv[2], 7) == SHARC_OK);
        CHECK(sharc_shard_load(g, argv[2], &step) == SHARC_OK && step == 7);
        CHECK(walk(g, nstates, 7, 1) == 0);
        printf("rank %d: roundtrip ok\n", me);
    }
    sharc_shard_destroy(g);
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_shard_state");
}
