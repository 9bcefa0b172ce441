/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_coll.c: one rank of the multi-rank collective test (public API only). Every
 * collective (alltoall included) x dtype x op x in-place/out-of-place at counts 0, 1, 7,
 * 4097 (and 1M + 3 for some), with inputs whose exact result is known (small integers, so
 * float sums are exact; AVG checked against the same one rounding the library promises; each
 * alltoall block marked with its source and destination), guard bytes around every output,
 * several collectives in flight at once, and bad arguments refused on the calling rank before
 * any communication.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sharc/sharc.h>

#include "../../kernels/kernels.h"
#include "../check.h"
#include "../elem.h"

#define GUARD      64
#define GUARD_BYTE 0xa5

static int nranks, me;

static int is_float(sharc_dtype_t dt)
{
    return dt == SHARC_DTYPE_F32 || dt == SHARC_DTYPE_F64 || dt == SHARC_DTYPE_F16 ||
           dt == SHARC_DTYPE_BF16;
}

/* The input element i of rank r: small integers (1 or 2 for products). */
static double input(int r, size_t i, sharc_op_t op)
{
    return op == SHARC_OP_PROD ? 1.0 + (double)((r + i) % 2) : 1.0 + (double)((r * 3 + i * 7) % 8);
}

/* The exact result of op over all ranks' element i, rounded as the library rounds AVG. */
static double expected(sharc_dtype_t dt, sharc_op_t op, size_t i)
{
    double acc = input(0, i, op);

    for (int r = 1; r < nranks; r++) {
        double v = input(r, i, op);
        switch (op) {
        case SHARC_OP_PROD: acc *= v; break;
        case SHARC_OP_MIN: acc = v < acc ? v : acc; break;
        case SHARC_OP_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (op == SHARC_OP_AVG) {
        acc = (dt == SHARC_DTYPE_F64) ? acc * (1.0 / nranks)
                                      : (double)((float)acc * (float)(1.0 / nranks));
    }
    if (dt == SHARC_DTYPE_U8) {
        acc = (double)((uint64_t)acc & 0xff);
    }
    return acc;
}

/* SHARCTEST_MEM_ALLOC=1: buffers come from sharc_mem_alloc (peers map them) */
static sharc_context_h shared_ctx;

/* A buffer of n elements with guard bytes on both sides. */
static char *alloc_guarded(size_t bytes)
{
    char *p = NULL;

    if (shared_ctx != NULL) {
        CHECK(sharc_mem_alloc(shared_ctx, bytes + 2 * GUARD, (void **)&p) == SHARC_OK);
    } else {
        p = malloc(bytes + 2 * GUARD);
    }
    memset(p, GUARD_BYTE, bytes + 2 * GUARD);
    return p + GUARD;
}

static void free_guarded(char *p)
{
    if (shared_ctx != NULL) {
        CHECK(sharc_mem_free(shared_ctx, p - GUARD) == SHARC_OK);
    } else {
        free(p - GUARD);
    }
}

static int guards_ok(const char *p, size_t bytes)
{
    for (size_t i = 0; i < GUARD; i++) {
        if ((unsigned char)p[-1 - (long)i] != GUARD_BYTE ||
            (unsigned char)p[bytes + i] != GUARD_BYTE) {
            return 0;
        }
    }
    return 1;
}

/* Count elements of buf that differ from want(i) as stored in dt. */
static size_t count_wrong(const void *buf, sharc_dtype_t dt, size_t off, size_t n,
                          double (*want)(size_t, void *), void *arg)
{
    size_t esize = sharc_dtype_size(dt), wrong = 0;
    char expect[8];

    for (size_t i = 0; i < n; i++) {
        elem_put(expect, dt, 0, want(off + i, arg));
        wrong += memcmp((const char *)buf + i * esize, expect, esize) != 0;
    }
    return wrong;
}

typedef struct {
    sharc_dtype_t dt;
    sharc_op_t op;
    int rank; /* for inputs of one rank */
    size_t count;
} want_arg_t;

static double want_reduced(size_t i, void *arg)
{
    want_arg_t *a = arg;
    return expected(a->dt, a->op, i);
}

static double want_input(size_t i, void *arg)
{
    want_arg_t *a = arg;
    /* element i of the gathered vector: rank i / count's element i % count */
    return input((int)(i / a->count), i % a->count, a->op);
}

static void run_allgather(sharc_comm_h comm, sharc_dtype_t dt, size_t count, int inplace)
{
    size_t esize = sharc_dtype_size(dt), total = count * (size_t)nranks;
    char *recv = alloc_guarded(total * esize),
         *send = inplace ? NULL : alloc_guarded(count * esize);
    char *mine = inplace ? recv + (size_t)me * count * esize : send;
    want_arg_t a = {dt, SHARC_OP_SUM, me, count};
    sharc_status_t st;

    for (size_t i = 0; i < count; i++) {
        elem_put(mine, dt, i, input(me, i, SHARC_OP_SUM));
    }
    st = sharc_allgather(mine, recv, count, dt, comm, NULL);
    CHECK_MSG(st == SHARC_OK, "allgather %s %zu: %s", sharc_dtype_name(dt), count,
              sharc_status_string(st));
    CHECK_MSG(count_wrong(recv, dt, 0, total, want_input, &a) == 0, "allgather %s %zu %s wrong",
              sharc_dtype_name(dt), count, inplace ? "in place" : "");
    CHECK_MSG(guards_ok(recv, total * esize), "allgather %s %zu wrote outside recvbuf",
              sharc_dtype_name(dt), count);
    free_guarded(recv);
    if (send != NULL) {
        free_guarded(send);
    }
}

static void run_reduce_scatter(sharc_comm_h comm, sharc_dtype_t dt, sharc_op_t op, size_t count,
                               int inplace)
{
    size_t esize = sharc_dtype_size(dt), total = count * (size_t)nranks;
    char *send = alloc_guarded(total * esize),
         *recv = inplace ? send + (size_t)me * count * esize : alloc_guarded(count * esize);
    want_arg_t a = {dt, op, me, count};
    sharc_status_t st;

    for (size_t i = 0; i < total; i++) {
        elem_put(send, dt, i, input(me, i % count, op)); /* block b element i: input(me, i) */
    }
    st = sharc_reduce_scatter(send, recv, count, dt, op, comm, NULL);
    CHECK_MSG(st == SHARC_OK, "reduce_scatter %s %s %zu: %s", sharc_dtype_name(dt),
              sharc_op_name(op), count, sharc_status_string(st));
    CHECK_MSG(count_wrong(recv, dt, 0, count, want_reduced, &a) == 0,
              "reduce_scatter %s %s %zu %s wrong", sharc_dtype_name(dt), sharc_op_name(op), count,
              inplace ? "in place" : "");
    CHECK_MSG(guards_ok(send, total * esize) && (inplace || guards_ok(recv, count * esize)),
              "reduce_scatter %s %zu wrote outside its buffers", sharc_dtype_name(dt), count);
    free_guarded(send);
    if (!inplace) {
        free_guarded(recv);
    }
}

static void run_allreduce(sharc_comm_h comm, sharc_dtype_t dt, sharc_op_t op, size_t count,
                          int inplace)
{
    size_t esize = sharc_dtype_size(dt);
    char *recv = alloc_guarded(count * esize),
         *send = inplace ? recv : alloc_guarded(count * esize);
    want_arg_t a = {dt, op, me, count};
    sharc_status_t st;

    for (size_t i = 0; i < count; i++) {
        elem_put(send, dt, i, input(me, i, op));
    }
    st = sharc_allreduce(send, recv, count, dt, op, comm, NULL);
    CHECK_MSG(st == SHARC_OK, "allreduce %s %s %zu: %s", sharc_dtype_name(dt), sharc_op_name(op),
              count, sharc_status_string(st));
    CHECK_MSG(count_wrong(recv, dt, 0, count, want_reduced, &a) == 0,
              "allreduce %s %s %zu %s wrong", sharc_dtype_name(dt), sharc_op_name(op), count,
              inplace ? "in place" : "");
    CHECK_MSG(guards_ok(recv, count * esize), "allreduce %s %zu wrote outside recvbuf",
              sharc_dtype_name(dt), count);
    free_guarded(recv);
    if (!inplace) {
        free_guarded(send);
    }
}

static double want_root(size_t i, void *arg)
{
    want_arg_t *a = arg;
    return input(a->rank, i, SHARC_OP_SUM);
}

static void run_broadcast(sharc_comm_h comm, sharc_dtype_t dt, size_t count, int root, int inplace)
{
    size_t esize = sharc_dtype_size(dt);
    char *recv = alloc_guarded(count * esize),
         *send = inplace ? recv : alloc_guarded(count * esize);
    want_arg_t a = {dt, SHARC_OP_SUM, root, count};
    sharc_status_t st;

    for (size_t i = 0; i < count; i++) {
        elem_put(send, dt, i, me == root ? input(root, i, SHARC_OP_SUM) : -1.0);
    }
    st = sharc_broadcast(send, recv, count, dt, root, comm, NULL);
    CHECK_MSG(st == SHARC_OK, "broadcast %s %zu: %s", sharc_dtype_name(dt), count,
              sharc_status_string(st));
    CHECK_MSG(count_wrong(recv, dt, 0, count, want_root, &a) == 0, "broadcast %s %zu root %d wrong",
              sharc_dtype_name(dt), count, root);
    CHECK(guards_ok(recv, count * esize));
    free_guarded(recv);
    if (!inplace) {
        free_guarded(send);
    }
}

/*
 * All-to-all element i of the block rank src sends to rank dst: a small integer (exact in
 * every dtype, u8 and bf16 included) that differs between the blocks of any two (src, dst)
 * pairs of up to 8 ranks at the same i, and between neighbouring elements of one block.
 */
static double a2a_value(int src, int dst, size_t i)
{
    return 1.0 + (double)(((size_t)src * 8 + (size_t)dst + i * 5) % 251);
}

static double want_a2a(size_t i, void *arg)
{
    want_arg_t *a = arg;
    /* recvbuf element i of rank a->rank: block i / count came from rank i / count */
    return a2a_value((int)(i / a->count), a->rank, i % a->count);
}

static double want_a2a_sent(size_t i, void *arg)
{
    want_arg_t *a = arg;
    return a2a_value(a->rank, (int)(i / a->count), i % a->count);
}

static void run_alltoall(sharc_comm_h comm, sharc_dtype_t dt, size_t count, int inplace)
{
    size_t esize = sharc_dtype_size(dt), total = count * (size_t)nranks;
    char *recv = alloc_guarded(total * esize),
         *send = inplace ? recv : alloc_guarded(total * esize);
    want_arg_t a = {dt, SHARC_OP_SUM, me, count};
    sharc_status_t st;

    for (size_t i = 0; i < total; i++) {
        elem_put(send, dt, i, a2a_value(me, (int)(i / count), i % count));
    }
    st = sharc_alltoall(send, recv, count, dt, comm, NULL);
    CHECK_MSG(st == SHARC_OK, "alltoall %s %zu: %s", sharc_dtype_name(dt), count,
              sharc_status_string(st));
    CHECK_MSG(count_wrong(recv, dt, 0, total, want_a2a, &a) == 0, "alltoall %s %zu %s wrong",
              sharc_dtype_name(dt), count, inplace ? "in place" : "");
    CHECK_MSG(guards_ok(recv, total * esize), "alltoall %s %zu wrote outside recvbuf",
              sharc_dtype_name(dt), count);
    if (!inplace) {
        CHECK_MSG(count_wrong(send, dt, 0, total, want_a2a_sent, &a) == 0 &&
                      guards_ok(send, total * esize),
                  "alltoall %s %zu changed sendbuf", sharc_dtype_name(dt), count);
        free_guarded(send);
    }
    free_guarded(recv);
}

/* Four collectives in flight, waited for in reverse: they still complete in posting order. */
static void run_inflight(sharc_comm_h comm)
{
    size_t n = 10007;
    float *ag = malloc(n * nranks * 4), *ar = malloc(n * 4), *rs = malloc(n * nranks * 4);
    float *rsout = malloc(n * 4), *bc = malloc(n * 4), *aa = malloc(n * nranks * 4);
    sharc_request_h req[6];
    want_arg_t a = {SHARC_DTYPE_F32, SHARC_OP_SUM, me, n};

    for (size_t i = 0; i < n; i++) {
        ag[me * n + i] = (float)input(me, i, SHARC_OP_SUM);
        ar[i] = (float)input(me, i, SHARC_OP_SUM);
        bc[i] = me == 0 ? (float)input(0, i, SHARC_OP_SUM) : 0;
    }
    for (size_t i = 0; i < n * nranks; i++) {
        rs[i] = (float)input(me, i % n, SHARC_OP_SUM);
        aa[i] = (float)a2a_value(me, (int)(i / n), i % n);
    }
    CHECK(sharc_allgather(ag + me * n, ag, n, SHARC_DTYPE_F32, comm, &req[0]) == SHARC_OK);
    CHECK(sharc_allreduce(ar, ar, n, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, &req[1]) == SHARC_OK);
    CHECK(sharc_reduce_scatter(rs, rsout, n, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, &req[2]) ==
          SHARC_OK);
    CHECK(sharc_broadcast(bc, bc, n, SHARC_DTYPE_F32, 0, comm, &req[3]) == SHARC_OK);
    CHECK(sharc_alltoall(aa, aa, n, SHARC_DTYPE_F32, comm, &req[4]) == SHARC_OK);
    CHECK(sharc_barrier(comm, &req[5]) == SHARC_OK);
    CHECK(sharc_request_wait(req[5]) == SHARC_OK);
    for (int k = 0; k < 5; k++) { /* posted earlier, so complete already */
        CHECK_MSG(sharc_request_test(req[k]) == SHARC_OK, "request %d not complete", k);
    }
    for (int k = 5; k >= 0; k--) {
        sharc_request_free(req[k]);
    }
    CHECK(count_wrong(ag, SHARC_DTYPE_F32, 0, n * nranks, want_input, &a) == 0);
    CHECK(count_wrong(ar, SHARC_DTYPE_F32, 0, n, want_reduced, &a) == 0);
    CHECK(count_wrong(rsout, SHARC_DTYPE_F32, 0, n, want_reduced, &a) == 0);
    a.rank = 0;
    CHECK(count_wrong(bc, SHARC_DTYPE_F32, 0, n, want_root, &a) == 0);
    a.rank = me;
    CHECK(count_wrong(aa, SHARC_DTYPE_F32, 0, n * nranks, want_a2a, &a) == 0);
    free(aa);
    free(ag);
    free(ar);
    free(rs);
    free(rsout);
    free(bc);
}

/*
 * With SHARC_PROGRESS_THREAD=1 a posted collective completes while the caller does not call
 * into sharc at all (here: sleeps, as a rank waiting on its GPU would).
 */
static void run_background(sharc_comm_h comm)
{
    const char *env = getenv("SHARC_PROGRESS_THREAD");
    size_t n = 4u << 20;
    float *v = malloc(n * 4);
    struct timespec pause = {1, 500000000};
    sharc_request_h req;
    sharc_status_t st;
    want_arg_t a = {SHARC_DTYPE_F32, SHARC_OP_SUM, me, n};

    if (env == NULL || strcmp(env, "1") != 0 || nranks == 1) {
        free(v);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        v[i] = (float)input(me, i, SHARC_OP_SUM);
    }
    CHECK(sharc_allreduce(v, v, n, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, &req) == SHARC_OK);
    nanosleep(&pause, NULL);
    st = sharc_request_test(req);
    CHECK_MSG(st == SHARC_OK,
              "the progress thread did not complete a 16 MiB allreduce in 1.5 s "
              "(%s)",
              sharc_status_string(st));
    CHECK(sharc_request_wait(req) == SHARC_OK);
    sharc_request_free(req);
    CHECK(count_wrong(v, SHARC_DTYPE_F32, 0, n, want_reduced, &a) == 0);
    free(v);
}

/* Bad arguments fail on the calling rank alone, before any communication. */
static void run_bad_args(sharc_comm_h comm)
{
    float buf[64];

    if (me == 0) {
        CHECK(sharc_allgather(NULL, buf, 4, SHARC_DTYPE_F32, comm, NULL) == SHARC_ERR_INVALID);
        CHECK(sharc_allreduce(buf, buf, 4, SHARC_DTYPE_I32, SHARC_OP_AVG, comm, NULL) ==
              SHARC_ERR_INVALID);
        CHECK(sharc_allreduce(buf, buf, 4, (sharc_dtype_t)42, SHARC_OP_SUM, comm, NULL) ==
              SHARC_ERR_INVALID);
        CHECK(sharc_allreduce(buf, buf, 4, SHARC_DTYPE_F32, (sharc_op_t)9, comm, NULL) ==
              SHARC_ERR_INVALID);
        CHECK(sharc_allreduce(buf, buf + 1, 4, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL) ==
              SHARC_ERR_INVALID);
        CHECK(sharc_broadcast(buf, buf, 4, SHARC_DTYPE_F32, nranks, comm, NULL) ==
              SHARC_ERR_INVALID);
        if (nranks > 1) {
            CHECK(sharc_allgather(buf + 1, buf, 4, SHARC_DTYPE_F32, comm, NULL) ==
                  SHARC_ERR_INVALID);
        }
        /* alltoall: in place only when equal; an overlap of one element is refused */
        CHECK(sharc_alltoall(buf + 1, buf, 64 / (size_t)nranks - 1, SHARC_DTYPE_F32, comm, NULL) ==
              SHARC_ERR_INVALID);
        CHECK(sharc_alltoall(NULL, buf, 1, SHARC_DTYPE_F32, comm, NULL) == SHARC_ERR_INVALID);
        CHECK(sharc_alltoall(buf, NULL, 1, SHARC_DTYPE_F32, comm, NULL) == SHARC_ERR_INVALID);
        CHECK(sharc_alltoall(buf, buf, 1, (sharc_dtype_t)42, comm, NULL) == SHARC_ERR_INVALID);
        CHECK(sharc_alltoall(buf, buf + 32, SIZE_MAX / 2, SHARC_DTYPE_F32, comm, NULL) ==
              SHARC_ERR_INVALID);
        CHECK(sharc_request_wait(NULL) == SHARC_ERR_INVALID);
        CHECK(sharc_allreduce(buf, buf, 4, SHARC_DTYPE_F32, SHARC_OP_SUM, NULL, NULL) ==
              SHARC_ERR_INVALID);
    }
    CHECK(sharc_barrier(comm, NULL) == SHARC_OK); /* nobody was left waiting */
}

/*
 * A peer dies before a collective: the others' wait ends with an error within SHARC_TIMEOUT
 * naming a rank it waited for, and later collectives on the communicator fail at once.
 * Returns 1 (failure) on the surviving ranks when all of that held, so the caller's script
 * can check the message; 0 would mean the collective wrongly succeeded.
 */
static int run_crash(sharc_comm_h comm, int victim)
{
    float v[1024] = {0};
    sharc_status_t st;

    /* every rank's communicator is up before the victim goes: it dies in the job, not in
     * the middle of the others' setup */
    CHECK(sharc_barrier(comm, NULL) == SHARC_OK);
    if (me == victim) {
        fprintf(stderr, "rank %d: crashing on purpose\n", me);
        _exit(3);
    }
    st = sharc_allreduce(v, v, 1024, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    fprintf(stderr, "rank %d: allreduce after rank %d died: %s\n", me, victim,
            sharc_status_string(st));
    if (st == SHARC_OK) {
        return 0;
    }
    st = sharc_allreduce(v, v, 1024, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    fprintf(stderr, "rank %d: the next collective: %s\n", me, sharc_status_string(st));
    return 1;
}

/*
 * Under SHARC_CHECK=1 one rank posts a different collective: every rank fails with
 * SHARC_ERR_REMOTE (the script checks the message), and nothing hangs.
 */
static int run_mismatch(sharc_comm_h comm, int odd)
{
    float v[4096 * 8] = {0};
    sharc_status_t st;

    CHECK(sharc_allreduce(v, v, 16, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL) == SHARC_OK);
    if (me == odd && getenv("SHARCTEST_MISMATCH_ALLTOALL") != NULL) {
        st = sharc_alltoall(v, v, 4096, SHARC_DTYPE_F32, comm, NULL);
    } else if (me == odd) {
        st = sharc_allgather(v + me * 4096, v, 4096, SHARC_DTYPE_F32, comm, NULL);
    } else {
        st =
            sharc_reduce_scatter(v, v + me * 4096, 4096, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
    }
    CHECK_MSG(st == SHARC_ERR_REMOTE, "a mismatched collective returned %s",
              sharc_status_string(st));
    return check_result("test_coll");
}

int main(int argc, char **argv)
{
    static const size_t counts[] = {0, 1, 7, 4097};
    size_t big = (argc > 1) ? strtoul(argv[1], NULL, 10) : (1u << 20) + 3;
    sharc_context_h ctx;
    sharc_comm_h comm;
    int iter = 0;

    CHECK(sharc_context_create(NULL, &ctx) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_coll"); /* e.g. a bad SHARC_TUNE_FILE (tune_file.sh) */
    }
    CHECK(sharc_comm_create(ctx, NULL, &comm) == SHARC_OK);
    if (check_failures != 0) {
        return check_result("test_coll");
    }
    nranks = sharc_comm_size(comm);
    if (getenv("SHARCTEST_MEM_ALLOC") != NULL) {
        shared_ctx = ctx;
    }
    me = sharc_comm_rank(comm);
    if (getenv("SHARCTEST_MISMATCH_RANK") != NULL) {
        int ret = run_mismatch(comm, atoi(getenv("SHARCTEST_MISMATCH_RANK")));
        sharc_comm_destroy(comm);
        sharc_context_destroy(ctx);
        return ret;
    }
    if (getenv("SHARCTEST_ONE_ALLREDUCE") != NULL) { /* for checks of a single call */
        float v[7] = {0};
        sharc_status_t st = sharc_allreduce(v, v, 7, SHARC_DTYPE_F32, SHARC_OP_SUM, comm, NULL);
        fprintf(stderr, "rank %d: allreduce: %s\n", me, sharc_status_string(st));
        sharc_comm_destroy(comm);
        sharc_context_destroy(ctx);
        return st == SHARC_OK ? 0 : 1;
    }
    if (getenv("SHARCTEST_CRASH_RANK") != NULL) {
        return run_crash(comm, atoi(getenv("SHARCTEST_CRASH_RANK")));
    }
    for (int dt = 0; dt < SHARC_DTYPE_LAST; dt++) {
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                run_allgather(comm, (sharc_dtype_t)dt, counts[c], inplace);
                run_broadcast(comm, (sharc_dtype_t)dt, counts[c], iter++ % nranks, inplace);
                run_alltoall(comm, (sharc_dtype_t)dt, counts[c], inplace);
                for (int op = 0; op < SHARC_OP_LAST; op++) {
                    if (op == SHARC_OP_AVG && !is_float((sharc_dtype_t)dt)) {
                        continue; /* refused: see run_bad_args */
                    }
                    run_reduce_scatter(comm, (sharc_dtype_t)dt, (sharc_op_t)op, counts[c], inplace);
                    run_allreduce(comm, (sharc_dtype_t)dt, (sharc_op_t)op, counts[c], inplace);
                }
            }
        }
    }
    /* large: several chunks per block, uneven allreduce blocks */
    run_allgather(comm, SHARC_DTYPE_F32, big, 0);
    run_reduce_scatter(comm, SHARC_DTYPE_F32, SHARC_OP_SUM, big, 1);
    run_reduce_scatter(comm, SHARC_DTYPE_BF16, SHARC_OP_AVG, big, 0);
    run_allreduce(comm, SHARC_DTYPE_F32, SHARC_OP_SUM, big, 0);
    run_allreduce(comm, SHARC_DTYPE_BF16, SHARC_OP_MAX, big, 1);
    run_broadcast(comm, SHARC_DTYPE_U8, big, nranks - 1, 0);
    run_alltoall(comm, SHARC_DTYPE_F32, big, 0);
    run_alltoall(comm, SHARC_DTYPE_U8, big, 1);
    run_inflight(comm);
    run_background(comm);
    run_bad_args(comm);
    printf("rank %d of %d: collectives %s\n", me, nranks, check_failures ? "FAILED" : "ok");
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_coll");
}
