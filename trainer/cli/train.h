/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/train.h: one run of `sharc-llama train`: its state, shared by the run (train.c:
 * setup, the step loop, validation, checkpoints, export) and what it reports (report.c: the
 * console lines and the JSONL records). Internal to the program.
 */
#ifndef SHARC_LLAMA_TRAIN_H
#define SHARC_LLAMA_TRAIN_H

#include "opts.h"
#include "../io/data.h"
#include "../io/jsonl.h"
#include "../model/llama.h"
#include "../model/optim.h"

typedef struct {
    double step_s, data_s, exposed_s, opt_s, tokens_per_s;
    double secondary_mib; /* hpZ: the engine's peak of node-local secondary shards */
} llama_step_time_t;

/* One training run, from its setup to its summary. */
typedef struct {
    const llama_opts_t *o;
    sharc_comm_h comm;
    int rank, world, threads;
    llama_config_t cfg;
    llama_run_t run;
    llama_data_t *train_data, *val_data;
    llama_model_t *model;
    sharc_shard_group_h sg; /* the model's shard group */
    llama_optim_t *optim;
    llama_jsonl_t *log;       /* rank 0's JSON lines, or NULL */
    int32_t *x, *y;           /* (B, T) token ids and their targets */
    size_t N;                 /* tokens of one micro-batch on one rank: B * T */
    llama_step_time_t *times; /* [steps] */
    int nsteps;
    uint64_t start_step;
    double peak; /* FLOP/s per rank, for MFU */
    char peak_what[320];
    double fpt;          /* FLOPs per token of a training step */
    double dev_peak_mib; /* the device memory's high-water mark so far (GPU) */
    float val_loss;
    double final_loss;             /* the last step's loss, averaged over the ranks */
    llama_prof_t *prof;            /* --profile: the steps' marks (model/prof.h), or NULL */
    struct llama_profile *profile; /* ... and the floors and costs of its table (profile.c) */
} llama_train_t;

/** The run over @p comm, from its setup to its summary: 0, 1 (failed) or 2 (usage). */
int llama_train(const llama_opts_t *o, sharc_comm_h comm);

/** The run's first lines and "start" record. */
void llama_report_start(const llama_train_t *t);
/** A step's figures: a line every --print-every steps, a "step" record every step. */
void llama_report_step(llama_train_t *t, int step, const llama_step_time_t *tm, double mean_loss,
                       float lr, float norm, double comm_s);
/** A sample of the device memory in use, for the high-water mark (after each micro-batch). */
void llama_sample_memory(llama_train_t *t);
/** The validation loss after step @p step. */
void llama_report_val(const llama_train_t *t, int step);
/** Medians over the steps, peak memory over the ranks; collective. */
sharc_status_t llama_report_summary(llama_train_t *t);

#endif
