/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/cli/report.c: what a training run tells: its setup, each step's loss, rate, MFU and
 * where the time went (a console line on rank 0, a JSON record in --log), the validation
 * losses and the summary of medians. The figures are measured by train.c and metrics.c.
 */
#include "train.h"
#include "metrics.h"
#include "../util.h"

#include <stdlib.h>

void llama_report_start(const llama_train_t *t)
{
    const llama_opts_t *o = t->o;
    const llama_config_t *cfg = &t->cfg;
    const llama_run_t *run = &t->run;

    llama_info("sharc-llama: %s, %.2fM params, %d ranks x batch %d x seq %d x accum %d = %zu "
               "tokens/step; params %s, reduce %s%s%s%s%s%s%s%s",
               cfg->name, (double)llama_config_params(cfg) / 1e6, t->world, run->batch, run->seq,
               o->accum, t->N * o->accum * t->world, sharc_dtype_name(run->param_dtype),
               sharc_dtype_name(run->reduce_dtype), run->recompute ? ", recompute" : "",
               run->shard_size > 0 ? ", HSDP" : "", run->param_wire ? ", gathers over " : "",
               run->param_wire ? sharc_wire_name(run->param_wire) : "",
               run->reduce_wire ? ", reductions over " : "",
               run->reduce_wire ? sharc_wire_name(run->reduce_wire) : "",
               run->reshard == LLAMA_RESHARD_NODE ? ", secondary shards in the node (hpZ)" : "");
    if (run->device == LLAMA_DEVICE_CUDA) {
        static const char *const offload[] = {"none", "host", "managed"};
        llama_info("compute: cuda (%s), %s; MFU against %.1f TFLOP/s/rank (%s); offload %s",
                   llama_model_ops(t->model)->name, sharc_dtype_name(run->compute_dtype),
                   t->peak / 1e12, t->peak_what, offload[run->offload]);
    } else {
        llama_info("compute: cpu, f32, %d thread(s)/rank; MFU against %.1f GFLOP/s/rank (%s)",
                   t->threads, t->peak / 1e9, t->peak_what);
    }
    if (t->start_step > 0) {
        llama_info("resumed from %s at step %llu", o->resume_dir,
                   (unsigned long long)t->start_step);
    }
    llama_jsonl_begin(t->log, "start");
    llama_jsonl_num(t->log, "params", (double)llama_config_params(cfg));
    llama_jsonl_int(t->log, "world", t->world);
    llama_jsonl_int(t->log, "batch", run->batch);
    llama_jsonl_int(t->log, "seq", run->seq);
    llama_jsonl_int(t->log, "accum", o->accum);
    llama_jsonl_int(t->log, "vocab", cfg->vocab);
    llama_jsonl_int(t->log, "threads", t->threads);
    llama_jsonl_str(t->log, "config", cfg->name);
    llama_jsonl_num(t->log, "gemm_peak_gflops", t->peak / 1e9);
    llama_jsonl_str(t->log, "device", run->device == LLAMA_DEVICE_CUDA ? "cuda" : "cpu");
    llama_jsonl_str(t->log, "compute_dtype", sharc_dtype_name(run->compute_dtype));
    llama_jsonl_int(t->log, "offload", (int)run->offload);
    llama_jsonl_str(t->log, "peak_source", t->peak_what);
    llama_jsonl_str(t->log, "param_wire", sharc_wire_name(run->param_wire));
    llama_jsonl_str(t->log, "reduce_wire", sharc_wire_name(run->reduce_wire));
    llama_jsonl_int(t->log, "hpz", run->reshard == LLAMA_RESHARD_NODE);
    llama_jsonl_end(t->log);
}

/* The step's figures: a line every print_every steps and a JSON record every step. */
void llama_report_step(llama_train_t *t, int step, const llama_step_time_t *tm, double mean_loss,
                       float lr, float norm, double comm_s)
{
    const llama_opts_t *o = t->o;
    double tps_rank = tm->tokens_per_s / t->world;
    double mfu = t->peak > 0 ? t->fpt * tps_rank / t->peak : 0;
    double compute_s = tm->step_s - tm->data_s - tm->exposed_s;
    double dev_mib = llama_device_mem_mib(llama_model_ops(t->model));

    llama_sample_memory(t);
    if ((step + 1) % o->print_every == 0 || step == (int)t->start_step || step + 1 == o->steps) {
        llama_info("step %5d/%d | loss %.4f | lr %.2e | norm %.3f | %.0f tok/s (%.0f/rank) | "
                   "mfu %.1f%% | %.3f s: compute %.3f, exposed comm %.3f, data %.3f",
                   step + 1, o->steps, mean_loss, lr, norm, tm->tokens_per_s, tps_rank, 100.0 * mfu,
                   tm->step_s, compute_s, tm->exposed_s, tm->data_s);
    }
    llama_jsonl_begin(t->log, "step");
    llama_jsonl_int(t->log, "step", step + 1);
    llama_jsonl_num(t->log, "loss", mean_loss);
    llama_jsonl_num(t->log, "lr", (double)lr);
    llama_jsonl_num(t->log, "grad_norm", (double)norm);
    llama_jsonl_num(t->log, "tokens_per_s", tm->tokens_per_s);
    llama_jsonl_num(t->log, "tokens_per_s_rank", tps_rank);
    llama_jsonl_num(t->log, "mfu", mfu);
    llama_jsonl_num(t->log, "step_s", tm->step_s);
    llama_jsonl_num(t->log, "compute_s", compute_s);
    llama_jsonl_num(t->log, "comm_exposed_s", tm->exposed_s);
    llama_jsonl_num(t->log, "comm_s", comm_s);
    llama_jsonl_num(t->log, "secondary_mib", tm->secondary_mib);
    llama_jsonl_num(t->log, "data_s", tm->data_s);
    llama_jsonl_num(t->log, "optim_s", tm->opt_s);
    llama_jsonl_num(t->log, "peak_rss_mib", llama_peak_rss_mib());
    if (t->run.device == LLAMA_DEVICE_CUDA) {
        llama_jsonl_num(t->log, "gpu_mem_mib", dev_mib);
        llama_jsonl_num(t->log, "gpu_mem_peak_mib", t->dev_peak_mib);
    }
    llama_jsonl_end(t->log);
}

void llama_sample_memory(llama_train_t *t)
{
    double peak = llama_device_mem_peak_mib(llama_model_ops(t->model));

    t->dev_peak_mib = peak > t->dev_peak_mib ? peak : t->dev_peak_mib;
}

/* The shard engine's memory on the host (offloaded state and its slots), in MiB. */
static double engine_host_mib(const llama_train_t *t)
{
    size_t host = 0;

    sharc_shard_memory(t->sg, NULL, &host);
    return (double)host / (1 << 20);
}

void llama_report_val(const llama_train_t *t, int step)
{
    llama_info("step %5d/%d | val loss %.4f", step + 1, t->o->steps, t->val_loss);
    llama_jsonl_begin(t->log, "val");
    llama_jsonl_int(t->log, "step", step + 1);
    llama_jsonl_num(t->log, "val_loss", (double)t->val_loss);
    llama_jsonl_end(t->log);
}

/* Medians over the steps after the first two (schedule recording, warm caches). */
sharc_status_t llama_report_summary(llama_train_t *t)
{
    int skip = t->nsteps > 4 ? 2 : 0, n = t->nsteps - skip, world = t->world;
    double *v = malloc(sizeof(double) * (size_t)n * 5), rss = llama_peak_rss_mib(), rss_max;
    double dev_max = 0.0, host = engine_host_mib(t), host_max = 0.0;

    if (v == NULL) {
        return SHARC_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        const llama_step_time_t *tm = &t->times[skip + i];

        v[i] = tm->tokens_per_s;
        v[n + i] = tm->step_s;
        v[2 * n + i] = tm->exposed_s;
        v[3 * n + i] = tm->data_s;
        v[4 * n + i] = tm->exposed_s / tm->step_s;
    }
    double tps = llama_median(v, n), step_s = llama_median(v + n, n);
    double exposed = llama_median(v + 2 * n, n), data_s = llama_median(v + 3 * n, n);
    double share = llama_median(v + 4 * n, n);
    double mfu = t->peak > 0 ? t->fpt * tps / world / t->peak : 0;
    free(v);
    sharc_allreduce(&rss, &rss_max, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, t->comm, NULL);
    sharc_allreduce(&t->dev_peak_mib, &dev_max, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, t->comm, NULL);
    sharc_allreduce(&host, &host_max, 1, SHARC_DTYPE_F64, SHARC_OP_MAX, t->comm, NULL);
    llama_info("summary: %d ranks | %.0f tok/s (%.0f/rank) | step %.3f s | exposed comm "
               "%.1f%% | mfu %.1f%% | peak rss %.0f MiB/rank | final loss %.4f",
               world, tps, tps / world, step_s, 100.0 * share, 100.0 * mfu, rss_max, t->final_loss);
    if (t->run.device == LLAMA_DEVICE_CUDA) {
        llama_info("summary: peak GPU memory %.0f MiB/rank (high-water mark); host memory %.0f "
                   "MiB/rank peak resident, %.0f MiB of it the engine's offloaded state",
                   dev_max, rss_max, host_max);
    }
    if (t->val_loss >= 0) {
        llama_info("summary: val loss %.4f", (double)t->val_loss);
    }
    llama_jsonl_begin(t->log, "summary");
    llama_jsonl_int(t->log, "world", world);
    llama_jsonl_num(t->log, "tokens_per_s", tps);
    llama_jsonl_num(t->log, "tokens_per_s_rank", tps / world);
    llama_jsonl_num(t->log, "step_s", step_s);
    llama_jsonl_num(t->log, "comm_exposed_s", exposed);
    llama_jsonl_num(t->log, "comm_exposed_share", share);
    llama_jsonl_num(t->log, "data_s", data_s);
    llama_jsonl_num(t->log, "mfu", mfu);
    llama_jsonl_num(t->log, "gemm_peak_gflops", t->peak / 1e9);
    llama_jsonl_num(t->log, "peak_rss_mib", rss_max);
    if (t->run.device == LLAMA_DEVICE_CUDA) {
        llama_jsonl_num(t->log, "peak_gpu_mem_mib", dev_max);
        llama_jsonl_num(t->log, "offload_host_mib", host_max);
    }
    llama_jsonl_num(t->log, "val_loss", (double)t->val_loss);
    llama_jsonl_int(t->log, "steps", t->nsteps);
    llama_jsonl_end(t->log);
    return SHARC_OK;
}
