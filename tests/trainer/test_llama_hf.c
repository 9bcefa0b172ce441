/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_llama_hf: sharc-llama's forward and backward against Hugging Face transformers. The
 * fixture directory (tests/trainer/make_hf_fixture.py wrote it with LlamaForCausalLM in f32)
 * holds config.json, model.safetensors and reference.safetensors with a batch, its loss, its
 * logits and every parameter's gradient. The model is loaded through the checkpoint importer
 * and run on 1 rank (the shard engine's single-rank path): loss and logits must agree to
 * 1e-5 and every gradient to 1e-4, relative to the reference tensor's largest magnitude;
 * with and without activation recomputation.
 *
 * With --device cuda the model computes on the GPU (the engine in its CUDA mode): in f32 to
 * the same tolerances; with --compute-dtype bf16 (bf16 activations and products, f32 masters
 * and gradients) to the loss within 1e-2, the logits within 5e-2, and every gradient within
 * 1e-1 of its largest magnitude and pointing the same way (cosine similarity >= 0.99); the
 * recomputing run gathers the parameters in bf16 too. Exits 77 without a GPU.
 *
 * With --against-cpu the directories are checkpoints without a reference (shapes the
 * fixtures lack: the tiled attention's head sizes, tests/lib.sh make_hf_llama), and the
 * reference is the CPU model in f32 on a seeded random batch of 2 x 80 tokens (a full query
 * tile of the tiled attention and a partial one), to the same tolerances.
 *
 * --attention A (auto, cudnn, flash or gemm, as sharc-llama's) chooses the device model's.
 *
 *     test_llama_hf [--device cuda] [--compute-dtype bf16] [--attention A] [--against-cpu] DIR...
 */
#include "model/llama.h"
#include "ops/ops_cuda.h"
#include "io/safetensors.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static llama_device_t device = LLAMA_DEVICE_CPU;
static sharc_dtype_t compute_dtype = SHARC_DTYPE_F32;
static llama_attention_t attention = LLAMA_ATTENTION_AUTO;

/* cosine similarity of a and b (1 for two zero vectors) */
static double cosine(const float *a, const float *b, size_t n)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;

    for (size_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return (aa == 0.0 && bb == 0.0) ? 1.0 : ab / sqrt(aa * bb);
}

static float *read_all(llama_st_t *st, const char *name, size_t *count_p)
{
    const llama_st_tensor_t *t = llama_st_find(st, name);
    float *v;

    if (t == NULL) {
        fprintf(stderr, "reference has no tensor %s\n", name);
        return NULL;
    }
    v = malloc(t->count * sizeof(*v));
    if (v == NULL || llama_st_read_f32(st, t, 0, t->count, v) != SHARC_OK) {
        free(v);
        return NULL;
    }
    *count_p = t->count;
    return v;
}

/* The model's loss, logits (N x V) and every parameter's gradient (host copies, in parameter
 * order, one allocation each) after one eval and one step on x, y; 0 on success. */
typedef struct {
    float loss, *logits, **grads;
    size_t *counts;
    int nparams;
} outputs_t;

static void outputs_free(outputs_t *o)
{
    for (int i = 0; o->grads != NULL && i < o->nparams; i++) {
        free(o->grads[i]);
    }
    free(o->grads);
    free(o->counts);
    free(o->logits);
}

static int run_model(sharc_comm_h comm, const llama_config_t *cfg, const llama_run_t *run,
                     const char *dir, const int32_t *x, const int32_t *y, outputs_t *o)
{
    size_t N = (size_t)run->batch * run->seq, V = (size_t)cfg->vocab;
    llama_model_t *model = NULL;
    int before = check_failures;
    float step_loss;

    memset(o, 0, sizeof(*o));
    o->logits = malloc(N * V * sizeof(float));
    CHECK(llama_model_create(comm, cfg, run, LLAMA_INIT_HF, dir, 0, &model) == SHARC_OK);
    if (check_failures != before) {
        return -1;
    }
    CHECK(llama_model_eval(model, x, y, &o->loss, o->logits) == SHARC_OK);
    sharc_shard_group_h g = llama_model_group(model);
    CHECK(llama_model_step(model, x, y, 1.0f, 1, &step_loss) == SHARC_OK);
    CHECK(sharc_shard_finish(g) == SHARC_OK);
    o->nparams = sharc_shard_num_params(g);
    o->grads = calloc((size_t)o->nparams, sizeof(*o->grads));
    o->counts = calloc((size_t)o->nparams, sizeof(*o->counts));
    for (int i = 0; i < o->nparams && check_failures == before; i++) {
        sharc_shard_param_info_t pi;
        sharc_shard_unit_info_t ui;
        float *grad, *host;
        sharc_shard_param_info(g, i, &pi);
        sharc_shard_unit_info(g, pi.unit, &ui);
        sharc_shard_local(g, pi.unit, NULL, &grad, NULL);
        host = malloc(ui.shard_count * sizeof(float)); /* 1 rank: the shard is the unit */
        CHECK(llama_model_ops(model)->to_host(host, grad, ui.shard_count * sizeof(float)) ==
              SHARC_OK);
        o->grads[i] = malloc(pi.count * sizeof(float));
        memcpy(o->grads[i], host + pi.offset, pi.count * sizeof(float));
        o->counts[i] = pi.count;
        free(host);
    }
    llama_model_destroy(model);
    return check_failures == before ? 0 : -1;
}

/* The device model against the CPU's in f32 on checkpoint @p dir (--against-cpu). */
static void check_against_cpu(sharc_comm_h comm, const char *dir, int recompute)
{
    char path[4096];
    llama_config_t cfg;
    outputs_t ref, got;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    int bf16 = compute_dtype == SHARC_DTYPE_BF16;
    double tol_loss = bf16 ? 1e-2 : 1e-5, tol_logits = bf16 ? 5e-2 : 1e-5;
    double tol_grad = bf16 ? 1e-1 : 1e-4, worst = 0.0, worst_cos = 1.0;
    llama_run_t cpu = {.batch = 2,
                       .seq = 80,
                       .recompute = recompute,
                       .param_dtype = SHARC_DTYPE_F32,
                       .reduce_dtype = SHARC_DTYPE_F32};
    llama_run_t dev = cpu;

    snprintf(path, sizeof(path), "%s/config.json", dir);
    CHECK(llama_config_load_hf(path, &cfg) == SHARC_OK);
    if (check_failures) {
        return;
    }
    dev.device = device;
    dev.compute_dtype = compute_dtype;
    dev.attention = attention;
    dev.param_dtype = bf16 && recompute ? SHARC_DTYPE_BF16 : SHARC_DTYPE_F32;
    size_t N = (size_t)cpu.batch * cpu.seq, V = (size_t)cfg.vocab;
    int32_t *x = malloc(N * sizeof(*x)), *y = malloc(N * sizeof(*y));
    for (size_t i = 0; i < N; i++) { /* xorshift64 */
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        x[i] = (int32_t)(r % V);
        y[i] = (int32_t)((r >> 32) % V);
    }
    if (run_model(comm, &cfg, &cpu, dir, x, y, &ref) == 0 &&
        run_model(comm, &cfg, &dev, dir, x, y, &got) == 0) {
        double el = check_rel_err(&got.loss, &ref.loss, 1),
               eg = check_rel_err(got.logits, ref.logits, N * V);
        CHECK_MSG(el <= tol_loss, "%s: loss %.8f vs %.8f (rel %.2e)", dir, got.loss, ref.loss, el);
        CHECK_MSG(eg <= tol_logits, "%s: logits rel error %.2e", dir, eg);
        CHECK(got.nparams == ref.nparams);
        for (int i = 0; i < got.nparams && i < ref.nparams; i++) {
            double e = check_rel_err(got.grads[i], ref.grads[i], ref.counts[i]);
            double c = cosine(got.grads[i], ref.grads[i], ref.counts[i]);
            CHECK_MSG(e <= tol_grad, "%s: gradient %d rel error %.2e", dir, i, e);
            CHECK_MSG(!bf16 || c >= 0.99, "%s: gradient %d cosine similarity %.4f", dir, i, c);
            worst = e > worst ? e : worst;
            worst_cos = c < worst_cos ? c : worst_cos;
        }
        printf("%s%s against the CPU: loss %.7f (CPU %.7f), logits rel err %.1e; %d gradients, "
               "worst rel err %.1e, worst cosine similarity %.5f\n",
               dir, recompute ? " (recompute)" : "", got.loss, ref.loss, eg, got.nparams, worst,
               worst_cos);
        outputs_free(&got);
    }
    outputs_free(&ref);
    free(x);
    free(y);
}

/* Every parameter's gradient after the model's step against the reference's "grad.NAME" (1
 * rank: the shard is the whole unit; on the GPU it is device memory): relative error within
 * @p tol_grad, and in bf16 a cosine similarity of 0.99 at least. */
static void check_grads(llama_model_t *model, llama_st_t *ref, const char *dir, int recompute,
                        double tol_grad, int bf16)
{
    sharc_shard_group_h g = llama_model_group(model);
    double worst = 0.0, worst_cos = 1.0;
    size_t n;

    for (int i = 0; i < sharc_shard_num_params(g); i++) {
        sharc_shard_param_info_t pi;
        sharc_shard_unit_info_t ui;
        float *grad, *want, *host;
        char name[300];
        sharc_shard_param_info(g, i, &pi);
        sharc_shard_unit_info(g, pi.unit, &ui);
        sharc_shard_local(g, pi.unit, NULL, &grad, NULL);
        /* the shard is the whole unit on 1 rank; on the GPU it is device memory */
        host = malloc(ui.shard_count * sizeof(float));
        CHECK(llama_model_ops(model)->to_host(host, grad, ui.shard_count * sizeof(float)) ==
              SHARC_OK);
        snprintf(name, sizeof(name), "grad.%s", pi.name);
        want = read_all(ref, name, &n);
        CHECK_MSG(want != NULL && n == pi.count, "%s", name);
        if (want != NULL && n == pi.count) {
            double e = check_rel_err(host + pi.offset, want, n),
                   c = cosine(host + pi.offset, want, n);
            CHECK_MSG(e <= tol_grad, "%s: %s rel error %.2e", dir, name, e);
            CHECK_MSG(!bf16 || c >= 0.99, "%s: %s cosine similarity %.4f", dir, name, c);
            worst = e > worst ? e : worst;
            worst_cos = c < worst_cos ? c : worst_cos;
        }
        free(want);
        free(host);
    }
    printf("%s%s: %d gradients, worst rel err %.1e, worst cosine similarity %.5f\n", dir,
           recompute ? " (recompute)" : "", sharc_shard_num_params(g), worst, worst_cos);
}

static void check_fixture(sharc_comm_h comm, const char *dir, int recompute)
{
    char path[4096];
    llama_config_t cfg;
    llama_st_t *ref = NULL;
    llama_model_t *model = NULL;
    const llama_st_tensor_t *ids;
    int32_t *x = NULL, *y = NULL;
    float *logits = NULL, *ref_logits = NULL, *ref_loss = NULL, loss = 0.0f;
    size_t n, nl;

    snprintf(path, sizeof(path), "%s/config.json", dir);
    CHECK(llama_config_load_hf(path, &cfg) == SHARC_OK);
    snprintf(path, sizeof(path), "%s/reference.safetensors", dir);
    CHECK(llama_st_open(path, &ref) == SHARC_OK);
    if (check_failures) {
        return;
    }
    ids = llama_st_find(ref, "input_ids");
    CHECK(ids != NULL && ids->ndim == 2);
    if (ids == NULL) {
        goto out;
    }
    int bf16 = compute_dtype == SHARC_DTYPE_BF16;
    double tol_loss = bf16 ? 1e-2 : 1e-5, tol_logits = bf16 ? 5e-2 : 1e-5;
    double tol_grad = bf16 ? 1e-1 : 1e-4;
    llama_run_t run = {.batch = (int)ids->shape[0],
                       .seq = (int)ids->shape[1],
                       .recompute = recompute,
                       .param_dtype = bf16 && recompute ? SHARC_DTYPE_BF16 : SHARC_DTYPE_F32,
                       .reduce_dtype = SHARC_DTYPE_F32,
                       .device = device,
                       .compute_dtype = compute_dtype,
                       .attention = attention};
    size_t N = ids->count, V = (size_t)cfg.vocab;
    x = malloc(N * sizeof(*x));
    y = malloc(N * sizeof(*y));
    logits = malloc(N * V * sizeof(*logits));
    CHECK(llama_st_read_i32(ref, ids, 0, N, x) == SHARC_OK);
    CHECK(llama_st_read_i32(ref, llama_st_find(ref, "targets"), 0, N, y) == SHARC_OK);
    CHECK(llama_model_create(comm, &cfg, &run, LLAMA_INIT_HF, dir, 0, &model) == SHARC_OK);
    if (check_failures) {
        goto out;
    }

    /* forward: loss and logits */
    CHECK(llama_model_eval(model, x, y, &loss, logits) == SHARC_OK);
    ref_loss = read_all(ref, "loss", &n);
    ref_logits = read_all(ref, "logits", &nl);
    CHECK(ref_loss != NULL && ref_logits != NULL && nl == N * V);
    if (ref_loss != NULL && ref_logits != NULL && nl == N * V) {
        double el = check_rel_err(&loss, ref_loss, 1), eg = check_rel_err(logits, ref_logits, nl);
        CHECK_MSG(el <= tol_loss, "%s: loss %.8f vs %.8f (rel %.2e)", dir, loss, ref_loss[0], el);
        CHECK_MSG(eg <= tol_logits, "%s: logits rel error %.2e", dir, eg);
        printf("%s%s: loss %.7f (reference %.7f), logits rel err %.1e\n", dir,
               recompute ? " (recompute)" : "", loss, ref_loss[0], eg);
    }

    /* backward: every parameter's gradient (1 rank: the shard is the whole unit) */
    float step_loss;
    sharc_shard_group_h g = llama_model_group(model);
    CHECK(llama_model_step(model, x, y, 1.0f, 1, &step_loss) == SHARC_OK);
    CHECK(sharc_shard_finish(g) == SHARC_OK);
    CHECK(fabsf(step_loss - loss) <= 1e-6f * fabsf(loss));
    check_grads(model, ref, dir, recompute, tol_grad, bf16);

out:
    llama_model_destroy(model);
    llama_st_close(ref);
    free(x);
    free(y);
    free(logits);
    free(ref_logits);
    free(ref_loss);
}

int main(int argc, char **argv)
{
    sharc_context_h ctx;
    sharc_comm_h comm;
    int first = 1, against_cpu = 0;

    for (; first + 1 < argc && strncmp(argv[first], "--", 2) == 0; first += 2) {
        if (strcmp(argv[first], "--against-cpu") == 0) {
            against_cpu = 1;
            first--; /* no value */
        } else if (strcmp(argv[first], "--device") == 0 && strcmp(argv[first + 1], "cuda") == 0) {
            device = LLAMA_DEVICE_CUDA;
        } else if (strcmp(argv[first], "--compute-dtype") == 0 &&
                   strcmp(argv[first + 1], "bf16") == 0) {
            compute_dtype = SHARC_DTYPE_BF16;
        } else if (strcmp(argv[first], "--attention") == 0) {
            static const char *const names[] = {"auto", "gemm", "flash", "cudnn"};
            int a = 0;
            while (a < 4 && strcmp(argv[first + 1], names[a]) != 0) {
                a++;
            }
            if (a == 4) {
                fprintf(stderr, "test_llama_hf: --attention %s is not auto, cudnn, flash or gemm\n",
                        argv[first + 1]);
                return 2;
            }
            attention = (llama_attention_t)a; /* llama_attention_t's order */
        } else if (strcmp(argv[first], "--compute-dtype") != 0 ||
                   strcmp(argv[first + 1], "f32") != 0) {
            fprintf(stderr, "test_llama_hf: unknown option %s %s\n", argv[first], argv[first + 1]);
            return 2;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "usage: test_llama_hf [--device cuda] [--compute-dtype bf16] "
                        "[--attention A] [--against-cpu] DIR...\n");
        return 2;
    }
    if (device == LLAMA_DEVICE_CUDA && llama_cuda_pick_device() == SHARC_ERR_UNSUPPORTED) {
        printf("SKIP: no GPU to compute on (the message above says why)\n");
        return 77;
    }
    if (sharc_context_create(NULL, &ctx) != SHARC_OK ||
        sharc_comm_create(ctx, NULL, &comm) != SHARC_OK) {
        fprintf(stderr, "test_llama_hf: no communicator\n");
        return 1;
    }
    for (int i = first; i < argc; i++) {
        if (against_cpu) {
            check_against_cpu(comm, argv[i], 0);
            check_against_cpu(comm, argv[i], 1);
        } else {
            check_fixture(comm, argv[i], 0);
            check_fixture(comm, argv[i], 1);
        }
    }
    sharc_comm_destroy(comm);
    sharc_context_destroy(ctx);
    return check_result("test_llama_hf");
}
