/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.c: the checks every rank makes on its own collective before communicating, so that a
 * bad call fails on the rank that made it and nothing is sent: the dtype, the op, the root,
 * the sizes (no overflow), NULL buffers, and the overlaps each collective's in-place form
 * allows (sharc/coll.h states them). Also how many bytes of each buffer this rank uses, which
 * routing asks too. Not the checks across ranks (SHARC_CHECK: queue.c).
 */
#include "config.h"

#define SHARC_THIS_SUBSYS SHARC_SUBSYS_COLL

#include <stdint.h>
#include <stdlib.h>

#include "../base/log.h"
#include "coll.h"
#include "algorithms/quant.h"

/* Do [a, a + alen) and [b, b + blen) overlap? */
static int sharc_coll_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

/* The elements an uneven collective's blocks span (the largest displacement + count), or
 * SIZE_MAX when one overflows. */
static size_t sharc_coll_extent(const size_t *counts, const size_t *displs, size_t n)
{
    size_t end = 0, at = 0;

    for (size_t i = 0; i < n; i++) {
        size_t d = displs != NULL ? displs[i] : at;

        if (counts[i] > SIZE_MAX - d || (displs == NULL && counts[i] > SIZE_MAX - at)) {
            return SIZE_MAX;
        }
        at += counts[i];
        end = SHARC_MAX(end, d + counts[i]);
    }
    return end;
}

/* The bytes of each buffer this rank reads (*send_p) and writes (*recv_p), or
 * SHARC_ERR_INVALID (logged) when they overflow or the counts are missing. */
sharc_status_t sharc_coll_bytes(const sharc_coll_comm_t *cc, const sharc_coll_args_t *a,
                                size_t *send_p, size_t *recv_p)
{
    const char *name = sharc_coll_name(a->type);
    size_t esize = sharc_dtype_size(a->dtype), n = (size_t)cc->size, r = (size_t)cc->rank;
    size_t s = 0, v = 0, lim = (esize > 0) ? SIZE_MAX / esize / n : 0;
    int root = cc->rank == a->root, uneven = a->type >= SHARC_COLL_ALLGATHERV;

    if (uneven && (a->counts == NULL || (a->type == SHARC_COLL_ALLTOALLV && a->scounts == NULL))) {
        sharc_error("%s: %s is NULL", name, a->counts == NULL ? "recvcounts" : "sendcounts");
        return SHARC_ERR_INVALID;
    }
    if (uneven) { /* elements: the blocks' extents, on each side */
        size_t ext = sharc_coll_extent(a->counts, a->displs, n);
        size_t sext = a->scounts ? sharc_coll_extent(a->scounts, a->sdispls, n) : 0;

        s = a->type == SHARC_COLL_ALLGATHERV ? a->counts[r] : a->scounts ? sext : ext;
        v = a->type == SHARC_COLL_REDUCE_SCATTERV ? a->counts[r] : ext;
        if (ext == SIZE_MAX || sext == SIZE_MAX || s > lim * n || v > lim * n) {
            sharc_error("%s: the counts and displacements overflow the address space", name);
            return SHARC_ERR_INVALID;
        }
        *send_p = s * esize;
        *recv_p = v * esize;
        return SHARC_OK;
    }
    if (a->type != SHARC_COLL_BARRIER && a->count > lim) {
        sharc_error("%s: %zu elements of %s on %zu ranks overflow the address space", name,
                    a->count, sharc_dtype_name(a->dtype), n);
        return SHARC_ERR_INVALID;
    }
    s = v = a->count * esize;
    switch (a->type) {
    case SHARC_COLL_ALLGATHER: v *= n; break;
    case SHARC_COLL_REDUCE_SCATTER: s *= n; break;
    case SHARC_COLL_ALLTOALL: s *= n, v *= n; break;
    case SHARC_COLL_BROADCAST: s = root ? s : 0; break;
    case SHARC_COLL_REDUCE: v = root ? v : 0; break;
    case SHARC_COLL_GATHER: v = root ? v * n : 0; break;
    case SHARC_COLL_SCATTER: s = root ? s * n : 0; break;
    case SHARC_COLL_BARRIER: s = v = 0; break;
    default: break;
    }
    *send_p = s;
    *recv_p = v;
    return SHARC_OK;
}

/* Do the blocks of an uneven collective's buffer overlap each other? (sorted by where they
 * start; empty blocks take no room) */
static int sharc_coll_pair_cmp(const void *x, const void *y)
{
    const size_t *a = x, *b = y;

    return (a[0] > b[0]) - (a[0] < b[0]);
}

static int sharc_coll_blocks_overlap(const size_t *counts, const size_t *displs, size_t n)
{
    size_t *pairs, end = 0;
    int bad = 0;

    if (displs == NULL || n < 2) {
        return 0; /* packed: one after another */
    }
    pairs = malloc(2 * n * sizeof(*pairs));
    if (pairs == NULL) {
        return 0; /* (not checked without memory; the collective's own allocation fails) */
    }
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = displs[i];
        pairs[2 * i + 1] = counts[i];
    }
    qsort(pairs, n, 2 * sizeof(*pairs), sharc_coll_pair_cmp);
    for (size_t i = 0; i < n && !bad; i++) {
        if (pairs[2 * i + 1] == 0) {
            continue;
        }
        bad = pairs[2 * i] < end;
        end = pairs[2 * i] + pairs[2 * i + 1];
    }
    free(pairs);
    return bad;
}

/* Where rank @p r's block starts, in elements: at its displacement, or after the blocks
 * before it (packed). */
static size_t sharc_coll_vat(const size_t *counts, const size_t *displs, size_t r)
{
    size_t at = 0;

    if (displs != NULL) {
        return displs[r];
    }
    for (size_t i = 0; i < r; i++) {
        at += counts[i];
    }
    return at;
}

/* The in-place form each collective allows, and no other overlap (sharc/coll.h). */
static sharc_status_t sharc_coll_check_overlap(const sharc_coll_comm_t *cc,
                                               const sharc_coll_args_t *a, size_t sbytes,
                                               size_t rbytes)
{
    const char *name = sharc_coll_name(a->type), *send = a->sendbuf;
    char *recv = a->recvbuf;
    size_t esize = sharc_dtype_size(a->dtype), r = (size_t)cc->rank, n = (size_t)cc->size;
    const char *in_place = NULL; /* sendbuf's in-place address, or recvbuf's (recv_side) */
    int recv_side = 0;

    switch (a->type) {
    case SHARC_COLL_ALLGATHER:
    case SHARC_COLL_GATHER: in_place = recv + r * sbytes; break;
    case SHARC_COLL_ALLGATHERV:
        in_place = recv + sharc_coll_vat(a->counts, a->displs, r) * esize;
        break;
    case SHARC_COLL_REDUCE_SCATTER:
    case SHARC_COLL_SCATTER: in_place = send + r * rbytes, recv_side = 1; break;
    case SHARC_COLL_REDUCE_SCATTERV:
        in_place = send + sharc_coll_vat(a->counts, NULL, r) * esize, recv_side = 1;
        break;
    case SHARC_COLL_ALLTOALLV: break; /* no in-place form */
    default: in_place = recv; break;  /* allreduce, broadcast, alltoall, reduce: equal */
    }
    if (a->type >= SHARC_COLL_ALLGATHERV &&
        (sharc_coll_blocks_overlap(a->counts, a->displs, n) ||
         (a->scounts != NULL && sharc_coll_blocks_overlap(a->scounts, a->sdispls, n)))) {
        sharc_error("%s: two blocks of a buffer overlap (the displacements)", name);
        return SHARC_ERR_INVALID;
    }
    if ((in_place == NULL || (recv_side ? (const char *)recv != in_place : send != in_place)) &&
        sharc_coll_overlap(send, sbytes, recv, rbytes)) {
        if (in_place == NULL) {
            sharc_error("%s: sendbuf and recvbuf overlap (it has no in-place form)", name);
        } else {
            sharc_error("%s: sendbuf and recvbuf overlap without being its in-place form (%s)",
                        name,
                        recv_side ? "recvbuf at this rank's block of sendbuf"
                                  : "sendbuf at this rank's block of recvbuf, or equal");
        }
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

sharc_status_t sharc_coll_check(const sharc_coll_comm_t *cc, const sharc_coll_args_t *a)
{
    const char *name = sharc_coll_name(a->type);
    int reduces = a->type == SHARC_COLL_REDUCE_SCATTER || a->type == SHARC_COLL_ALLREDUCE ||
                  a->type == SHARC_COLL_REDUCE || a->type == SHARC_COLL_REDUCE_SCATTERV;
    int rooted = a->type == SHARC_COLL_BROADCAST || a->type == SHARC_COLL_REDUCE ||
                 a->type == SHARC_COLL_GATHER || a->type == SHARC_COLL_SCATTER;
    size_t sbytes = 0, rbytes = 0;
    sharc_status_t status = sharc_coll_wire_check(a);

    if (status != SHARC_OK) {
        return status;
    }
    if (a->type != SHARC_COLL_BARRIER && sharc_dtype_size(a->dtype) == 0) {
        sharc_error("%s: dtype %d is not a sharc_dtype_t", name, (int)a->dtype);
        return SHARC_ERR_INVALID;
    }
    if (reduces && !sharc_kern_op_valid(a->dtype, a->op)) {
        sharc_error("%s: op %s is not defined for %s", name,
                    sharc_op_name(a->op) ? sharc_op_name(a->op) : "(invalid)",
                    sharc_dtype_name(a->dtype));
        return SHARC_ERR_INVALID;
    }
    if (rooted && (a->root < 0 || a->root >= cc->size)) {
        sharc_error("%s: root %d is not a rank of this %d-rank communicator", name, a->root,
                    cc->size);
        return SHARC_ERR_INVALID;
    }
    status = sharc_coll_bytes(cc, a, &sbytes, &rbytes);
    if (status != SHARC_OK) {
        return status;
    }
    if ((sbytes > 0 && a->sendbuf == NULL) || (rbytes > 0 && a->recvbuf == NULL)) {
        sharc_error("%s: %s is NULL with %zu bytes to %s", name,
                    (rbytes > 0 && a->recvbuf == NULL) ? "recvbuf" : "sendbuf",
                    (rbytes > 0 && a->recvbuf == NULL) ? rbytes : sbytes,
                    (rbytes > 0 && a->recvbuf == NULL) ? "write" : "read");
        return SHARC_ERR_INVALID;
    }
    return sharc_coll_check_overlap(cc, a, sbytes, rbytes);
}
