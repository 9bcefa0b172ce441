/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharc_perf.h: sharc-perf's subcommands, each a main of its own that the dispatcher
 * (sharc_perf.c) calls with the whole command line (argv[1] names the subcommand). Each
 * returns the program's exit status.
 */
#ifndef SHARC_PERF_H
#define SHARC_PERF_H

/* The collective benchmarks (bench/): argv[1] is a collective, or asks for the usage. */
int perf_bench_main(int argc, char **argv);

/* sharc-perf overlap (bench/overlap*.c): the sharding engine's overlap. */
int perf_overlap_main(int argc, char **argv);

/* sharc-perf tune (tune/; tune_none.c in a build without json-c). */
int perf_tune_main(int argc, char **argv);

/* sharc-perf check (check/). */
int perf_check_main(int argc, char **argv);

/* sharc-perf predict (predict/). */
int perf_predict_main(int argc, char **argv);

/* sharc-perf why (why/): the stall verdict from a job's flight dumps. */
int perf_why_main(int argc, char **argv);

#endif
