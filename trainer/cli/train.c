/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/train.c: one run of `sharc-llama train`, read top to bottom: the model's shape
 * and the data, the setup (threads, model, optimizer, log), the step loop (micro-batches
 * through the model, the optimizer, validation and checkpoints when due), the export. Every
 * rank runs it and all ranks agree on each outcome, so they leave together. Its figures are
 * reported by report.c.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "train.h"
#include "metrics.h"
#include "profile.h"
#include "../ops/ops.h"
#include "../util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compute_threads(const llama_opts_t *o, sharc_comm_h comm)
{
    cpu_set_t set;
    int cpus = 1;

    if (o->threads > 0) {
        return o->threads;
    }
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        cpus = CPU_COUNT(&set);
    }
    int per = cpus / sharc_comm_local_size(comm);
    return per > 0 ? per : 1;
}

static const char *path_in(char *buf, size_t len, const char *dir, const char *file)
{
    snprintf(buf, len, "%s/%s", dir, file);
    return buf;
}

/* every rank's status becomes the worst one, so all ranks leave together */
static sharc_status_t agree(sharc_comm_h comm, sharc_status_t status)
{
    int mine = (int)status, worst = 0;

    if (sharc_allreduce(&mine, &worst, 1, SHARC_DTYPE_I32, SHARC_OP_MIN, comm, NULL) != SHARC_OK) {
        return SHARC_ERR_REMOTE;
    }
    return (sharc_status_t)worst;
}

static sharc_status_t validate(llama_model_t *m, llama_data_t *val, const llama_opts_t *o,
                               sharc_comm_h comm, int32_t *x, int32_t *y, float *loss_p)
{
    int rank = sharc_comm_rank(comm), world = sharc_comm_size(comm), B = o->run.batch;
    int batches = (o->val_seqs + world * B - 1) / (world * B); /* per rank */
    double sum = 0.0, total = 0.0;
    sharc_status_t status = SHARC_OK;

    /* sequences 0 .. batches * world * B - 1 of the validation file, rank-interleaved */
    for (int k = 0; k < batches && status == SHARC_OK; k++) {
        float loss;
        status = llama_data_batch(val, ((uint64_t)k * world + rank) * B, B, x, y);
        if (status == SHARC_OK) {
            status = llama_model_eval(m, x, y, &loss, NULL);
        }
        sum += loss;
    }
    status = agree(comm, status);
    if (status != SHARC_OK) {
        return status;
    }
    sum /= batches;
    status = sharc_allreduce(&sum, &total, 1, SHARC_DTYPE_F64, SHARC_OP_AVG, comm, NULL);
    *loss_p = (float)total;
    return status;
}

/*
 * The model's shape (named, or the checkpoint's config.json) and the data: a named config
 * takes its vocabulary from the data (or --vocab). 0, or 2 for a usage error (no config, no
 * data), or 1.
 */
static int train_open(llama_train_t *t)
{
    const llama_opts_t *o = t->o;
    const char *train_path = o->train_path, *val_path = o->val_path;
    char pbuf[4096], tbuf[4096], vbuf[4096];
    sharc_status_t status;

    status = o->hf
                 ? llama_config_load_hf(path_in(pbuf, sizeof(pbuf), o->hf, "config.json"), &t->cfg)
                 : llama_config_named(o->config, &t->cfg);
    if (status != SHARC_OK) {
        return 2;
    }
    if (t->run.seq == 0) {
        t->run.seq = t->cfg.max_seq < 256 ? t->cfg.max_seq : 256;
    }
    if (o->data_dir != NULL) {
        train_path =
            train_path ? train_path : path_in(tbuf, sizeof(tbuf), o->data_dir, "train.bin");
        val_path = val_path ? val_path : path_in(vbuf, sizeof(vbuf), o->data_dir, "val.bin");
    }
    if (train_path == NULL) {
        llama_err("no training data: give --data DIR or --train FILE");
        return 2;
    }
    status = llama_data_open(train_path, 0, t->run.seq, o->data_seed, &t->train_data);
    if (status != SHARC_OK) {
        return 2;
    }
    if (o->hf == NULL) {
        if (o->vocab > 0) {
            t->cfg.vocab = o->vocab;
        } else if (llama_data_vocab(t->train_data) > 0) {
            t->cfg.vocab = (int)llama_data_vocab(t->train_data);
        }
    }
    llama_data_close(t->train_data);
    t->train_data = NULL;
    status = llama_data_open(train_path, (uint32_t)t->cfg.vocab, t->run.seq, o->data_seed,
                             &t->train_data);
    if (status == SHARC_OK && val_path != NULL && o->val_seqs > 0) {
        status = llama_data_open(val_path, (uint32_t)t->cfg.vocab, t->run.seq, o->data_seed + 1,
                                 &t->val_data);
    }
    return (status == SHARC_OK) ? 0 : 1;
}

/* Compute threads, buffers, the model (resumed from a checkpoint if asked), the optimizer
 * and rank 0's log; every rank agrees on the outcome. */
static sharc_status_t train_setup(llama_train_t *t)
{
    const llama_opts_t *o = t->o;
    sharc_status_t status;

    t->threads = compute_threads(o, t->comm);
    llama_ops_cpu.set_threads(t->threads);
    t->fpt = llama_config_flops_per_token(&t->cfg, t->run.seq);
    t->N = (size_t)t->run.batch * t->run.seq;
    t->x = malloc(t->N * sizeof(*t->x));
    t->y = malloc(t->N * sizeof(*t->y));
    t->times = calloc((size_t)o->steps + 1, sizeof(*t->times));
    if (t->x == NULL || t->y == NULL || t->times == NULL) {
        return SHARC_ERR_NOMEM;
    }
    status =
        llama_model_create(t->comm, &t->cfg, &t->run, o->hf ? LLAMA_INIT_HF : LLAMA_INIT_RANDOM,
                           o->hf, o->seed, &t->model);
    if (status != SHARC_OK) {
        return status;
    }
    t->sg = llama_model_group(t->model);
    snprintf(t->peak_what, sizeof(t->peak_what), "--peak-gflops");
    t->peak = o->peak_gflops > 0
                  ? o->peak_gflops * 1e9
                  : llama_peak_flops(llama_model_ops(t->model), t->peak_what, sizeof(t->peak_what));
    if (o->profile) {
        status = agree(t->comm, llama_profile_setup(t));
        if (status != SHARC_OK) {
            return status;
        }
    }
    status = llama_optim_create(t->model, &o->optim, &t->optim);
    if (status == SHARC_OK && o->resume_dir != NULL) {
        status = sharc_shard_load(t->sg, o->resume_dir, &t->start_step);
        if (status != SHARC_OK) {
            llama_err("cannot resume from %s (see the messages above)", o->resume_dir);
        }
    }
    if (status == SHARC_OK && t->rank == 0) {
        status = llama_jsonl_open(o->log_path, &t->log);
    }
    return agree(t->comm, status);
}
/* The micro-batches of one step through the model, and the step's reductions, queued (their
 * loss is read by train_step); the time spent reading data in *data_s_p. */
static sharc_status_t train_forward_backward(llama_train_t *t, int step, double *data_s_p)
{
    const llama_opts_t *o = t->o;
    sharc_status_t status = SHARC_OK;

    for (int k = 0; k < o->accum && status == SHARC_OK; k++) {
        uint64_t micro = (uint64_t)step * o->accum + k;
        double td = llama_now();

        llama_prof_at(t->prof, LLAMA_SITE_DATA);
        status = llama_data_batch(t->train_data, (micro * t->world + t->rank) * t->run.batch,
                                  t->run.batch, t->x, t->y);
        llama_prof_end(t->prof);
        *data_s_p += llama_now() - td;
        if (status == SHARC_OK && k == o->accum - 1) { /* the engine's AdamW takes its grads */
            status = llama_optim_begin(t->optim, step);
        }
        if (status == SHARC_OK) {
            /* the loss is not read here: the host would wait for the device between the
             * backward and the optimizer (train_step reads it once the step is queued) */
            status =
                llama_model_step(t->model, t->x, t->y, 1.0f / o->accum, k == o->accum - 1, NULL);
        }
        llama_sample_memory(t); /* the device's high-water mark: after every micro-batch */
    }
    if (status == SHARC_OK) {
        llama_prof_at(t->prof, LLAMA_SITE_REDUCE);
        status = sharc_shard_finish(t->sg);
        llama_prof_end(t->prof);
    }
    return agree(t->comm, status);
}

/* After step @p step: validation and a checkpoint, when they are due. */
static sharc_status_t train_after_step(llama_train_t *t, int step)
{
    const llama_opts_t *o = t->o;
    int last = step + 1 == o->stop_at;
    sharc_status_t status;

    if (t->val_data != NULL && ((o->val_every > 0 && (step + 1) % o->val_every == 0) || last)) {
        status = validate(t->model, t->val_data, o, t->comm, t->x, t->y, &t->val_loss);
        if (status != SHARC_OK) {
            return status;
        }
        llama_report_val(t, step);
    }
    if (o->save_dir != NULL && ((o->save_every > 0 && (step + 1) % o->save_every == 0) || last)) {
        status = sharc_shard_save(t->sg, o->save_dir, (uint64_t)step + 1);
        if (status != SHARC_OK) {
            llama_err("checkpoint at step %d into %s failed", step + 1, o->save_dir);
            return status;
        }
        llama_info("step %5d/%d | saved %s", step + 1, o->steps, o->save_dir);
    }
    return SHARC_OK;
}

/* One training step: forward and backward of its micro-batches, the optimizer, the figures,
 * and what is due after it. */
static sharc_status_t train_step(llama_train_t *t, int step)
{
    const llama_opts_t *o = t->o;
    double t0 = llama_now(), data_s = 0.0, mean_loss = 0.0, local_loss = 0.0;
    sharc_shard_stats_t st;
    sharc_status_t status;
    float norm = 0.0f, lr, loss = 0.0f;

    llama_prof_step_begin(t->prof);
    status = train_forward_backward(t, step, &data_s);
    if (status != SHARC_OK) {
        llama_err("step %d failed: %s", step, sharc_status_string(status));
        return status;
    }
    double to = llama_now();
    /* the update and the gradients' zeroing are queued behind the backward, and only then
     * does the host wait for the device, once, to read the loss and the norm for the log: a
     * read between backward and update would leave the device idle while the host queues the
     * optimizer */
    status = llama_optim_step(t->optim, step, NULL, &lr);
    llama_prof_at(t->prof, LLAMA_SITE_ZERO);
    if (status == SHARC_OK) {
        status = sharc_shard_zero_grads(t->sg);
    }
    llama_prof_end(t->prof);
    if (status == SHARC_OK) {
        status = llama_optim_norm(t->optim, &norm);
    }
    if (status == SHARC_OK) {
        status = llama_model_loss(t->model, &loss);
        local_loss = (double)loss; /* (the mean over the step's micro-batches) */
    }
    llama_prof_at(t->prof, LLAMA_SITE_ALLREDUCE);
    if (status == SHARC_OK) {
        status = sharc_allreduce(&local_loss, &mean_loss, 1, SHARC_DTYPE_F64, SHARC_OP_AVG, t->comm,
                                 NULL);
    }
    double t1 = llama_now();
    if (status == SHARC_OK) { /* (after the step's waits: its events are read without one) */
        status = llama_prof_step_end(t->prof);
    }
    if (status != SHARC_OK) {
        llama_err("optimizer step %d failed: %s", step, sharc_status_string(status));
        return status;
    }
    llama_step_time_t *tm = &t->times[t->nsteps++];

    sharc_shard_stats(t->sg, -1, &st);
    tm->step_s = t1 - t0;
    tm->data_s = data_s;
    tm->exposed_s = st.exposed_s;
    tm->secondary_mib = (double)st.peak_secondary_bytes / 1048576.0;
    tm->opt_s = t1 - to;
    tm->tokens_per_s = (double)(t->N * o->accum * t->world) / tm->step_s;
    llama_report_step(t, step, tm, mean_loss, lr, norm, st.comm_s);
    t->final_loss = mean_loss;
    return train_after_step(t, step);
}

static void train_close(llama_train_t *t)
{
    llama_jsonl_close(t->log);
    llama_optim_destroy(t->optim);
    llama_profile_release(t);      /* (the events are the model's table's) */
    llama_model_destroy(t->model); /* (the shard engine writes --trace now) */
    llama_profile_trace(t);
    llama_profile_destroy(t);
    llama_data_close(t->train_data);
    llama_data_close(t->val_data);
    free(t->x);
    free(t->y);
    free(t->times);
}

int llama_train(const llama_opts_t *o, sharc_comm_h comm)
{
    llama_train_t t = {.o = o,
                       .comm = comm,
                       .rank = sharc_comm_rank(comm),
                       .world = sharc_comm_size(comm),
                       .run = o->run,
                       .val_loss = -1.0f};
    sharc_status_t status;
    int rc = train_open(&t);

    if (rc != 0) {
        train_close(&t);
        return rc;
    }
    status = train_setup(&t);
    if (status == SHARC_OK) {
        llama_report_start(&t);
    }
    for (int step = (int)t.start_step; status == SHARC_OK && step < o->stop_at; step++) {
        status = train_step(&t, step);
    }
    if (status == SHARC_OK && o->export_dir != NULL) {
        status = llama_model_export(t.model, comm, o->export_dir, o->export_dtype);
        if (status == SHARC_OK) {
            llama_info("exported %s/model.safetensors and config.json", o->export_dir);
        }
    }
    if (status == SHARC_OK && t.nsteps > 0) {
        status = llama_report_summary(&t);
    }
    if (status == SHARC_OK && t.nsteps > 0) {
        status = llama_profile_report(&t);
    }
    train_close(&t);
    return (status == SHARC_OK) ? 0 : 1;
}
