/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/model_int.h: the model's insides, shared by model.c (parameters, creation),
 * weights.c (initial values, export), acts.c (buffers), step.c (forward and backward through
 * the shard engine) and optim.c.
 */
#ifndef SHARC_LLAMA_MODEL_INT_H
#define SHARC_LLAMA_MODEL_INT_H

#include "llama.h"

/* A block's parameters, in unit order, with Hugging Face's names under model.layers.<l>. */
enum {
    LLAMA_W_LN1, /* input_layernorm.weight          (C) */
    LLAMA_W_Q,   /* self_attn.q_proj.weight         (H*hd, C) */
    LLAMA_W_K,   /* self_attn.k_proj.weight         (KV*hd, C) */
    LLAMA_W_V,   /* self_attn.v_proj.weight         (KV*hd, C) */
    LLAMA_W_O,   /* self_attn.o_proj.weight         (C, H*hd) */
    LLAMA_W_LN2, /* post_attention_layernorm.weight (C) */
    LLAMA_W_G,   /* mlp.gate_proj.weight            (F, C) */
    LLAMA_W_U,   /* mlp.up_proj.weight              (F, C) */
    LLAMA_W_D,   /* mlp.down_proj.weight            (C, F) */
    LLAMA_W_BLOCK
};
/* The head unit: model.norm.weight (C), lm_head.weight (V, C). */
enum { LLAMA_W_NORM, LLAMA_W_OUT, LLAMA_W_HEAD };

#define LLAMA_MAX_UNIT_PARAMS LLAMA_W_BLOCK

/*
 * One block's activations for backward (N = B*T rows). Every buffer of the model is the ops
 * table's memory (host or device) and holds elements of its act_dtype (f32 on the CPU, f32 or
 * bf16 on CUDA: ops.h), except the rstd rows, the rope tables, gbuf and loss, which are f32
 * (f64 for loss) whatever it computes in.
 */
typedef struct {
    const float *x; /* (N,C) block input: the residual stream */
    float *ln1;     /* (N,C) */
    float *rstd1;   /* (N) */
    float *q;       /* (N,H*hd) after rope */
    float *k, *v;   /* (N,KV*hd), k after rope */
    float *probs;   /* (B,H,T,T) probabilities, or the ops' attention state (attention_bytes) */
    float *atty;    /* (N,H*hd) attention output, before o_proj */
    float *x2;      /* (N,C) residual after attention */
    float *ln2;     /* (N,C) */
    float *rstd2;   /* (N) */
    float *g, *u;   /* (N,F) gate and up projections */
    float *h;       /* (N,F) silu(g) * u */
} llama_acts_t;

struct llama_model {
    llama_config_t cfg;
    llama_run_t run;
    const llama_ops_t *ops;
    size_t act_size;         /* bytes of one element of ops->act_dtype */
    sharc_comm_h comm;       /* the caller's */
    sharc_comm_h shard_comm; /* ranks of this rank's shard group (HSDP); comm without */
    sharc_shard_group_h group;
    int rank, world, nunits, nparams;
    char **names;    /* [nparams] Hugging Face names */
    size_t *offsets; /* [nparams] element offset in the unit */
    int *first;      /* [nunits] first parameter of each unit */

    float *wbuf;       /* one gathered unit cast to act_dtype when the param dtype differs */
    float *gbuf;       /* f32 gradients of one unit when reduction is bf16 */
    size_t max_unit;   /* most elements of a unit */
    size_t max_padded; /* most elements of a unit's unsharded buffer */

    float *rope_cos, *rope_sin; /* (T, hd/2), f32 */
    double *loss;               /* (1) the micro-batch's summed loss, f64 */
    float **xs;         /* [L+1] (N,C) residual stream into each block, and out of the last */
    llama_acts_t *acts; /* [L], or [1] with recomputation */
    /* the head: */
    float *hn;     /* (N,C) final norm */
    float *rstdf;  /* (N) */
    float *logits; /* (llama_head_rows,V): a chunk's logits, then their gradient */
    /* backward scratch: */
    float *dres;                 /* (N,C) gradient of the residual stream */
    float *dln, *tmp;            /* (N,C) */
    float *dh, *dg, *du;         /* (N,F) */
    float *datty, *dq, *dk, *dv; /* (N,H*hd), (N,KV*hd) */
    float *dscores;              /* (B,KV,T,T), or the ops' attention scratch */
    int loss_batches;            /* micro-batches summed into loss and not read yet */
    llama_prof_t *prof;          /* the caller's profile of the steps, or NULL */
    void **bufs;                 /* every buffer above, for destroy */
    int nbufs, cap_bufs;
};

/* The head's logits buffer when run.head_rows is 0: large enough that each chunk's products
 * run at the GEMMs' rate (M of thousands of rows), small beside the logits of a large batch. */
#define LLAMA_HEAD_CHUNK_BYTES ((size_t)256 << 20)

/* Rows of the (N,V) logits the head computes at once (step.c's head_loss), at most N. */
static inline int llama_head_rows(const llama_model_t *m)
{
    size_t N = (size_t)m->run.batch * m->run.seq, row = (size_t)m->cfg.vocab * m->act_size;
    size_t rows = m->run.head_rows > 0 ? (size_t)m->run.head_rows : LLAMA_HEAD_CHUNK_BYTES / row;

    if (m->run.head_rows <= 0 && rows >= 128) {
        rows &= ~(size_t)127; /* whole tiles of the products' M, chunk offsets aligned */
    }
    rows = rows < 1 ? 1 : rows;
    return (int)(rows < N ? rows : N);
}

/* Pointers to the f32 weights of a unit that is gathered (up-cast into wbuf for bf16). */
sharc_status_t llama_unit_weights(llama_model_t *m, int unit, float **w);
/* Pointers to where a unit's f32 gradients go; llama_unit_grads_done after writing them. */
sharc_status_t llama_unit_grads(llama_model_t *m, int unit, float **g);
sharc_status_t llama_unit_grads_done(llama_model_t *m, int unit);

/* Elements [*lo_p, *hi_p) of its unit that parameter @p pi has in this rank's shard of the unit
 * @p ui (none when *lo_p >= *hi_p). */
static inline void llama_shard_slice(const sharc_shard_unit_info_t *ui,
                                     const sharc_shard_param_info_t *pi, size_t *lo_p, size_t *hi_p)
{
    size_t lo = pi->offset > ui->shard_offset ? pi->offset : ui->shard_offset;
    size_t hi = pi->offset + pi->count;

    *lo_p = lo;
    *hi_p = hi < ui->shard_offset + ui->shard_count ? hi : ui->shard_offset + ui->shard_count;
}

/* Initial values of this rank's shards, random (@p seed) or from the Hugging Face checkpoint
 * at @p hf_path; collective: every rank learns whether all of them succeeded (weights.c). */
sharc_status_t llama_weights_init(llama_model_t *m, llama_init_t init, const char *hf_path,
                                  uint64_t seed);

/* Activation buffers and rope tables for run->batch x run->seq (acts.c). */
sharc_status_t llama_acts_create(llama_model_t *m);
void llama_acts_destroy(llama_model_t *m);

#endif
