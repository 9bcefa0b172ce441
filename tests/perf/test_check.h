/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_check.h: what the files of test_check share (one program, test_check.c's main): one
 * count of failed checks, and the tests of test_check_plan.c.
 */
#ifndef SHARC_TEST_CHECK_PERF_H
#define SHARC_TEST_CHECK_PERF_H

#define SHARC_CHECK_SHARED /* one count of failed checks for every file of the program */
#include "../check.h"

void test_round_robin(void);
void test_greedy(void);
void test_plan(void);
void test_topo_expect(void);

#endif
