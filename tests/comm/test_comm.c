/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_comm.c: one rank of a multi-rank communicator test, started by tests/launch.sh or
 * mpirun. It checks rank, size, node and local rank against what the launcher says
 * (SHARCTEST_* variables, or OpenMPI's own), then splits: by parity, per node, reversed,
 * with ranks left out, nested, and destroys parents before children; makes groups of listed
 * ranks (sharc_comm_create_group) called by their members only. With --expect-fail
 * STATUS it checks that creation fails with that status within SHARCTEST_MAX_SECONDS;
 * SHARCTEST_CRASH_RANK makes that rank die right after creation.
 * Uses the public API only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../check.h"

static int env_int(const char *a, const char *b)
{
    const char *s = getenv(a);

    if (s == NULL && b != NULL) {
        s = getenv(b);
    }
    return s ? atoi(s) : -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static sharc_status_t status_from_name(const char *name)
{
    static const struct {
        const char *name;
        sharc_status_t status;
    } map[] = {{"invalid", SHARC_ERR_INVALID},
               {"timeout", SHARC_ERR_TIMEOUT},
               {"remote", SHARC_ERR_REMOTE},
               {"io", SHARC_ERR_IO},
               {"unsupported", SHARC_ERR_UNSUPPORTED}};

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcmp(map[i].name, name) == 0) {
            return map[i].status;
        }
    }
    fprintf(stderr, "test_comm: unknown status name '%s'\n", name);
    exit(2);
}

static void check_split(sharc_comm_h comm, int color, int key, int exp_rank, int exp_size,
                        const char *what)
{
    sharc_comm_h sub = (sharc_comm_h)&sub; /* must become NULL or a communicator */
    sharc_status_t status = sharc_comm_split(comm, color, key, &sub);

    CHECK_MSG(status == SHARC_OK, "%s: %s", what, sharc_status_string(status));
    if (status != SHARC_OK) {
        return;
    }
    if (exp_size == 0) {
        CHECK_MSG(sub == NULL, "%s: a rank without color got a communicator", what);
        return;
    }
    CHECK_MSG(sharc_comm_rank(sub) == exp_rank, "%s: rank %d, expected %d", what,
              sharc_comm_rank(sub), exp_rank);
    CHECK_MSG(sharc_comm_size(sub) == exp_size, "%s: size %d, expected %d", what,
              sharc_comm_size(sub), exp_size);
    CHECK(sharc_comm_barrier(sub) == SHARC_OK);
    sharc_comm_destroy(sub);
}

/*
 * A group of @p n listed ranks of @p comm, made by those only (the caller is one): its rank and
 * size, its layout against the parent's, and an all-gather over its own transport that must
 * bring back the list itself (every member contributes its rank in @p comm). Left for the
 * caller to destroy when @p keep_p is given.
 */
static void check_group(sharc_comm_h comm, const int *ranks, int n, int tag, const char *what,
                        sharc_comm_h *keep_p)
{
    int me = sharc_comm_rank(comm), pos = -1, *got = calloc((size_t)n, sizeof(int));
    sharc_comm_h g = NULL;
    sharc_request_h req = NULL;
    sharc_status_t status = sharc_comm_create_group(comm, ranks, n, tag, &g);

    CHECK_MSG(status == SHARC_OK, "%s: %s", what, sharc_status_string(status));
    for (int i = 0; i < n; i++) {
        pos = ranks[i] == me ? i : pos;
    }
    if (status != SHARC_OK || got == NULL) {
        free(got);
        return;
    }
    CHECK_MSG(sharc_comm_rank(g) == pos && sharc_comm_size(g) == n,
              "%s: rank %d of %d, expected "
              "%d of %d",
              what, sharc_comm_rank(g), sharc_comm_size(g), pos, n);
    for (int i = 0; i < n; i++) {
        int same = sharc_comm_node_of(comm, ranks[i]) == sharc_comm_node_of(comm, me);

        CHECK_MSG(same == (sharc_comm_node_of(g, i) == sharc_comm_node(g)),
                  "%s: group rank %d's node disagrees with the parent's", what, i);
    }
    CHECK(sharc_allgather(&me, got, 1, SHARC_DTYPE_I32, g, &req) == SHARC_OK);
    CHECK(req != NULL && sharc_request_wait(req) == SHARC_OK);
    sharc_request_free(req);
    for (int i = 0; i < n; i++) {
        CHECK_MSG(got[i] == ranks[i], "%s: group rank %d is parent rank %d, expected %d", what, i,
                  got[i], ranks[i]);
    }
    free(got);
    if (keep_p != NULL) {
        *keep_p = g;
    } else {
        sharc_comm_destroy(g);
    }
}

/* sharc_comm_create_group: groups of the listed ranks, made by those only. */
static void check_groups(sharc_comm_h comm)
{
    int rank = sharc_comm_rank(comm), size = sharc_comm_size(comm), n = 0;
    int *list = calloc((size_t)size + 1, sizeof(int));
    sharc_comm_h g1 = NULL, g2 = NULL, bad = (sharc_comm_h)&bad;

    if (list == NULL) {
        CHECK(list != NULL);
        return;
    }
    for (int i = 0; i < size; i++) {
        list[i] = size - 1 - i;
    }
    check_group(comm, list, size, 0, "every rank, reversed", NULL);
    /* one list twice in a row, both alive: the second is another communicator */
    check_group(comm, list, size, 0, "the same list again", &g1);
    check_group(comm, list, size, 0, "and a third time", &g2);
    sharc_comm_destroy(g1);
    sharc_comm_destroy(g2);
    /* the ranks of one parity only: the others do not call */
    for (int i = rank % 2; i < size; i += 2) {
        list[n++] = i;
    }
    check_group(comm, list, n, 0, "one parity", NULL);
    list[0] = rank;
    check_group(comm, list, 1, 7, "this rank alone", NULL);
    /* overlapping pairs one after another: rank r is in {r-1, r} and {r, r+1} */
    for (int lo = rank - 1; lo <= rank && size > 1; lo++) {
        if (lo >= 0 && lo + 1 < size) {
            int pair[2] = {lo, lo + 1};
            check_group(comm, pair, 2, lo, "overlapping pairs", NULL);
        }
    }
    /* bad arguments fail at once, naming the fault, and leave the output alone */
    list[0] = rank;
    list[1] = rank;
    CHECK(sharc_comm_create_group(comm, list, 2, 0, &bad) == SHARC_ERR_INVALID);
    list[1] = size;
    CHECK(sharc_comm_create_group(comm, list, 2, 0, &bad) == SHARC_ERR_INVALID);
    list[0] = (rank + 1) % size;
    CHECK(size == 1 || sharc_comm_create_group(comm, list, 1, 0, &bad) == SHARC_ERR_INVALID);
    list[0] = rank;
    CHECK(sharc_comm_create_group(comm, list, 1, -1, &bad) == SHARC_ERR_INVALID);
    CHECK(sharc_comm_create_group(comm, NULL, 1, 0, &bad) == SHARC_ERR_INVALID);
    CHECK(sharc_comm_create_group(NULL, list, 1, 0, &bad) == SHARC_ERR_INVALID);
    CHECK(bad == (sharc_comm_h)&bad);
    free(list);
}

static void run_checks(sharc_comm_h comm)
{
    int rank = sharc_comm_rank(comm), size = sharc_comm_size(comm);
    int exp_rank = env_int("SHARCTEST_RANK", "OMPI_COMM_WORLD_RANK");
    int exp_size = env_int("SHARCTEST_SIZE", "OMPI_COMM_WORLD_SIZE");
    int exp_node = env_int("SHARCTEST_NODE", NULL);
    int exp_nnodes = env_int("SHARCTEST_NNODES", NULL);
    int exp_lrank = env_int("SHARCTEST_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
    int exp_lsize = env_int("SHARCTEST_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE");
    int node = sharc_comm_node(comm), lrank = sharc_comm_local_rank(comm);
    int lsize = sharc_comm_local_size(comm);
    sharc_comm_h a = NULL, b = NULL, c = NULL;

    CHECK_MSG(exp_rank < 0 || rank == exp_rank, "rank %d, expected %d", rank, exp_rank);
    CHECK_MSG(exp_size < 0 || size == exp_size, "size %d, expected %d", size, exp_size);
    CHECK_MSG(exp_node < 0 || node == exp_node, "node %d, expected %d", node, exp_node);
    CHECK_MSG(exp_nnodes < 0 || sharc_comm_nnodes(comm) == exp_nnodes, "nnodes %d, expected %d",
              sharc_comm_nnodes(comm), exp_nnodes);
    CHECK_MSG(exp_lrank < 0 || lrank == exp_lrank, "local rank %d, expected %d", lrank, exp_lrank);
    CHECK_MSG(exp_lsize < 0 || lsize == exp_lsize, "local size %d, expected %d", lsize, exp_lsize);
    CHECK(sharc_comm_node_of(comm, rank) == node && sharc_comm_node_of(comm, size) == -1);
    CHECK(sharc_comm_bootstrap(comm) != SHARC_BOOTSTRAP_AUTO);

    CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    check_split(comm, rank % 2, rank, rank / 2, (size + 1 - rank % 2) / 2, "parity");
    check_split(comm, node, lrank, lrank, lsize, "per node");
    check_split(comm, 0, -rank, size - 1 - rank, size, "reversed");
    check_split(comm, 5, 0, rank, size, "equal keys keep the old order");
    check_split(comm, rank == 0 ? SHARC_COMM_SPLIT_NOCOLOR : 1, 0, rank - 1,
                rank == 0 ? 0 : size - 1, "rank 0 left out");
    check_groups(comm);
    /* a bad color on one rank fails the split on every rank, at once */
    CHECK(sharc_comm_split(comm, rank == size - 1 ? -5 : 0, 0, &a) == SHARC_ERR_INVALID);
    CHECK(a == NULL);

    /* nested: parity, then halves of each parity group; parents die first */
    CHECK(sharc_comm_split(comm, rank % 2, rank, &a) == SHARC_OK);
    if (a != NULL) {
        int ar = sharc_comm_rank(a), as = sharc_comm_size(a);
        CHECK(sharc_comm_split(a, ar < as / 2, ar, &b) == SHARC_OK);
        CHECK(sharc_comm_split(comm, 0, rank, &c) == SHARC_OK);
        if (as >= 2 && ar < 2) {
            int first_two[2] = {1, 0};
            check_group(a, first_two, 2, 0, "a group of a split communicator", NULL);
        }
        sharc_comm_destroy(a);
        if (b != NULL) {
            int half = as / 2, exp = ar < half ? half : as - half;
            CHECK_MSG(sharc_comm_size(b) == exp, "nested size %d, expected %d", sharc_comm_size(b),
                      exp);
            CHECK(sharc_comm_barrier(b) == SHARC_OK);
        }
        sharc_comm_destroy(b);
        if (c != NULL) {
            CHECK(sharc_comm_barrier(c) == SHARC_OK);
            CHECK(sharc_comm_size(c) == size && sharc_comm_rank(c) == rank);
        }
    }
    for (int i = 0; i < 3; i++) {
        CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    }
    /* c outlives the communicator it came from */
    sharc_comm_destroy(comm);
    if (c != NULL) {
        CHECK(sharc_comm_barrier(c) == SHARC_OK);
        sharc_comm_destroy(c);
    }
    printf("rank %d of %d: node %d of %d, local rank %d of %d: %s\n", rank, size, node, exp_nnodes,
           lrank, lsize, check_failures ? "FAILED" : "ok");
}

/*
 * The last rank never joins a group of every rank: the others fail with SHARC_ERR_TIMEOUT
 * within SHARCTEST_MAX_SECONDS, and the log names the rank (it waits half of that meanwhile,
 * past the bootstrap timeout the test sets, then every rank leaves together).
 */
static void check_group_missing(sharc_comm_h comm)
{
    int size = sharc_comm_size(comm), *all = calloc((size_t)size, sizeof(int));
    sharc_comm_h g = NULL;
    double t0 = now(), max_s = env_int("SHARCTEST_MAX_SECONDS", NULL);
    sharc_status_t status;

    for (int i = 0; all != NULL && i < size; i++) {
        all[i] = i;
    }
    if (all != NULL && sharc_comm_rank(comm) != size - 1) {
        status = sharc_comm_create_group(comm, all, size, 0, &g);
        CHECK_MSG(status == SHARC_ERR_TIMEOUT, "got '%s', expected a timeout",
                  sharc_status_string(status));
        CHECK_MSG(max_s < 0 || now() - t0 <= max_s, "failed after %.1f s, limit %.0f s", now() - t0,
                  max_s);
        printf("group without rank %d: %s after %.1f s\n", size - 1, sharc_status_string(status),
               now() - t0);
    } else {
        usleep((useconds_t)((max_s > 0 ? max_s : 10) * 5e5)); /* past the others' timeout */
    }
    CHECK(sharc_comm_barrier(comm) == SHARC_OK);
    free(all);
    sharc_comm_destroy(comm);
}

int main(int argc, char **argv)
{
    sharc_comm_params_t params = {0}, *pp = NULL;
    const char *expect_fail = NULL;
    sharc_context_h ctx;
    sharc_comm_h comm = NULL;
    sharc_status_t status;
    int creates = 1, group_missing = 0;
    double t0, max_s;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-fail") == 0 && i + 1 < argc) {
            expect_fail = argv[++i];
        } else if (strcmp(argv[i], "--explicit") == 0 && i + 1 < argc) {
            params.field_mask = SHARC_COMM_PARAM_RANK | SHARC_COMM_PARAM_STORE_ADDR;
            params.rank = env_int("SHARCTEST_RANK", NULL);
            params.size = env_int("SHARCTEST_SIZE", NULL);
            params.store_addr = argv[++i];
            pp = &params;
        } else if (strcmp(argv[i], "--group-missing") == 0) {
            group_missing = 1;
        } else if (strcmp(argv[i], "--creates") == 0 && i + 1 < argc) {
            creates = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: test_comm [--expect-fail STATUS] [--explicit ADDR] "
                            "[--creates N] [--group-missing]\n");
            return 2;
        }
    }
    if (sharc_context_create(NULL, &ctx) != SHARC_OK) {
        if (expect_fail != NULL && strcmp(expect_fail, "invalid") == 0) {
            printf("context creation failed as expected\n");
            return 0;
        }
        return 1;
    }
    for (int round = 0; round < creates; round++) {
        t0 = now();
        status = sharc_comm_create(ctx, pp, &comm);
        if (expect_fail != NULL) {
            max_s = env_int("SHARCTEST_MAX_SECONDS", NULL);
            CHECK_MSG(status == status_from_name(expect_fail), "got '%s', expected %s",
                      sharc_status_string(status), expect_fail);
            CHECK_MSG(max_s < 0 || now() - t0 <= max_s, "failed after %.1f s, limit %.0f s",
                      now() - t0, max_s);
            if (status == SHARC_OK) {
                sharc_comm_destroy(comm);
            }
            printf("failed as expected: %s after %.1f s\n", sharc_status_string(status),
                   now() - t0);
            break;
        }
        CHECK_MSG(status == SHARC_OK, "sharc_comm_create: %s", sharc_status_string(status));
        if (status != SHARC_OK) {
            break;
        }
        if (sharc_comm_rank(comm) == env_int("SHARCTEST_CRASH_RANK", NULL)) {
            fprintf(stderr, "rank %d: crashing on purpose\n", sharc_comm_rank(comm));
            _exit(3); /* as a crash would: no goodbye to the store */
        }
        if (group_missing) {
            check_group_missing(comm);
            break;
        }
        run_checks(comm);
    }
    sharc_context_destroy(ctx);
    return check_result("test_comm");
}
