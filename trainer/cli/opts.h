/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/opts.h: sharc-llama's command line: the options of `train` and `flops`, their
 * defaults, and the checks that need no model or data. Parsing only: what the options do is
 * main.c's and train.c's.
 */
#ifndef SHARC_LLAMA_OPTS_H
#define SHARC_LLAMA_OPTS_H

#include <stdint.h>
#include <stdio.h>
#include <sharc/sharc.h>

#include "../model/llama.h"
#include "../model/optim.h"

typedef struct {
    const char *config, *hf, *data_dir, *train_path, *val_path, *log_path, *trace_path;
    const char *save_dir, *resume_dir, *export_dir;
    int profile;              /* --profile: every op site timed, a table at the end */
    const char *profile_json; /* --profile-json: the table as JSON, here */
    llama_run_t run;
    llama_optim_cfg_t optim;
    int accum, steps, stop_at, val_every, val_seqs, save_every, threads, vocab, print_every;
    uint64_t seed, data_seed;
    double peak_gflops;
    sharc_dtype_t export_dtype;
} llama_opts_t;

/** The usage text, every command and option. */
void llama_usage(FILE *f);

/**
 * Parse a command's arguments (@p argv[0] is its name) into @p o, from the defaults; flops'
 * --ranks goes to @p ranks. 0: ok; 1: --help; -1: bad arguments (the message is out).
 */
int llama_opts_parse(int argc, char **argv, llama_opts_t *o, int *ranks);

#endif
