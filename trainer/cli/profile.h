/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/profile.h: sharc-llama train --profile: the floors measured at start, the table
 * printed at the end (rank 0's: each op site's calls, ms and share of the step, achieved rate,
 * floor and gap; medians over the steps the summary counts), its JSON (--profile-json), and
 * the op spans as a track of the shard engine's timeline (--trace; profile_trace.c). The
 * marks are the model's (model/prof.h).
 */
#ifndef SHARC_LLAMA_PROFILE_H
#define SHARC_LLAMA_PROFILE_H

#include "train.h"

typedef struct llama_profile llama_profile_t;

/** After the model is made: the marks (t->prof), the floors, the sites' costs. Collective:
 *  every rank learns whether all could profile. */
sharc_status_t llama_profile_setup(llama_train_t *t);
/** Rank 0: the table on the console, and the JSON file. */
sharc_status_t llama_profile_report(const llama_train_t *t);
/** The marks' events back to the ops table, before the model (and its table) is destroyed. */
void llama_profile_release(llama_train_t *t);
/** After the model is destroyed (the shard engine wrote the --trace file then): rank 0 adds
 *  its op spans to it as a track. */
void llama_profile_trace(const llama_train_t *t);
void llama_profile_destroy(llama_train_t *t);

/* profile_trace.c */
/** Add the spans of @p prof (steps kept) to the Chrome trace JSON at @p path that the shard
 *  engine wrote, on rank 0's process, as their own track. Logs why not, if it cannot. */
sharc_status_t llama_profile_trace_add(const llama_prof_t *prof, const char *path);

#endif
