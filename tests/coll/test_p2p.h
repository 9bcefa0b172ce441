/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_p2p.h: what the files of test_p2p share (one program, test_p2p.c's main): the ranks,
 * the messages' values and their check, message buffers, a receive's info; the matching tests
 * of test_p2p_match.c.
 */
#ifndef SHARC_TEST_P2P_H
#define SHARC_TEST_P2P_H

#include <stddef.h>

#include <sharc/sharc.h>

#define SHARC_CHECK_SHARED /* one count of failed checks for every file of the program */
#include "../check.h"

extern int nranks, me;
/* SHARCTEST_MEM_ALLOC=1: the context whose sharc_mem_alloc gives the message buffers */
extern sharc_context_h shared_ctx;

/* Element i of message @p seq with @p tag from rank @p src (exact in every dtype). */
double value(int src, int tag, int seq, size_t i);
/* @p n elements of that message into @p buf. */
void fill(void *buf, sharc_dtype_t dt, size_t n, int src, int tag, int seq);
/* Elements of @p buf that are not message @p seq with @p tag from @p src. */
size_t wrong(const void *buf, sharc_dtype_t dt, size_t n, int src, int tag, int seq);
/* A message buffer of @p bytes (from shared_ctx where set), and its end. */
void *alloc_bytes(size_t bytes);
void free_bytes(void *p);
/* A receive's request completed fine from @p src with @p tag and @p count elements. */
void check_info(sharc_request_h req, int src, int tag, size_t count, const char *what);

void run_tags(sharc_comm_h comm);
void run_any_source(sharc_comm_h comm);
void run_any_order(sharc_comm_h comm);
void run_unordered(sharc_comm_h comm);

#endif
