/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/model/config.c: Llama configurations: the named ones (llama2.c's small models for
 * training here, Meta's published shapes for FLOP and memory accounting), Hugging Face's
 * config.json read and written with json-c, parameter and FLOP counts.
 */
#include "llama.h"
#include "../util.h"

#include <errno.h>
#include <json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *name, *what;
    int dim, n_layers, n_heads, n_kv_heads, hidden_dim, vocab, max_seq;
    double rope_theta, rope_factor;
} named_config_t;

/*
 * Small models have llama2.c's shapes (hidden = 2/3 * 4 * dim rounded up to 32) and take their
 * vocabulary from the tokenizer (4096 from trainer/scripts/prepare_data.py); 1b is TinyLlama 1.1B's
 * shape (grouped-query attention, a Llama 2 vocabulary), a model one GPU trains, for GPU
 * measurements; the large ones are Meta's. llama3.1-8b adds Llama 3.1's rope scaling (factor
 * 8, low 1, high 4, 8192).
 */
static const named_config_t named_configs[] = {
    {"tiny", "tests", 64, 2, 4, 2, 176, 4096, 64, 10000.0, 0.0},
    {"15m", "llama2.c stories15M", 288, 6, 6, 6, 768, 4096, 256, 10000.0, 0.0},
    {"42m", "llama2.c stories42M", 512, 8, 8, 8, 1376, 4096, 1024, 10000.0, 0.0},
    {"110m", "llama2.c stories110M", 768, 12, 12, 12, 2048, 4096, 1024, 10000.0, 0.0},
    {"1b", "TinyLlama 1.1B", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0, 0.0},
    {"llama2-7b", "Llama 2 7B", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0, 0.0},
    {"llama2-13b", "Llama 2 13B", 5120, 40, 40, 40, 13824, 32000, 4096, 10000.0, 0.0},
    {"llama2-70b", "Llama 2 70B", 8192, 80, 64, 8, 28672, 32000, 4096, 10000.0, 0.0},
    {"llama3-8b", "Llama 3 8B", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0, 0.0},
    {"llama3.1-8b", "Llama 3.1 8B", 4096, 32, 32, 8, 14336, 128256, 131072, 500000.0, 8.0},
};
#define NUM_NAMED (sizeof(named_configs) / sizeof(named_configs[0]))

void llama_config_list(FILE *stream)
{
    for (size_t i = 0; i < NUM_NAMED; i++) {
        const named_config_t *n = &named_configs[i];
        llama_config_t cfg;
        llama_config_named(n->name, &cfg);
        fprintf(stream,
                "  %-12s %-22s dim %5d  layers %2d  heads %2d/%-2d  ffn %5d  vocab %6d  "
                "%.1fM params\n",
                n->name, n->what, n->dim, n->n_layers, n->n_heads, n->n_kv_heads, n->hidden_dim,
                n->vocab, (double)llama_config_params(&cfg) / 1e6);
    }
}

sharc_status_t llama_config_named(const char *name, llama_config_t *cfg)
{
    for (size_t i = 0; i < NUM_NAMED; i++) {
        const named_config_t *n = &named_configs[i];
        if (strcmp(n->name, name) != 0) {
            continue;
        }
        memset(cfg, 0, sizeof(*cfg));
        snprintf(cfg->name, sizeof(cfg->name), "%s", n->name);
        cfg->dim = n->dim;
        cfg->n_layers = n->n_layers;
        cfg->n_heads = n->n_heads;
        cfg->n_kv_heads = n->n_kv_heads;
        cfg->head_dim = n->dim / n->n_heads;
        cfg->hidden_dim = n->hidden_dim;
        cfg->vocab = n->vocab;
        cfg->max_seq = n->max_seq;
        cfg->rope_theta = n->rope_theta;
        cfg->norm_eps = 1e-5;
        if (n->rope_factor > 0) {
            cfg->rope_factor = n->rope_factor;
            cfg->rope_low_freq = 1.0;
            cfg->rope_high_freq = 4.0;
            cfg->rope_orig_max = 8192;
        }
        return SHARC_OK;
    }
    llama_err("unknown model config '%s'; the named configs are:", name);
    llama_config_list(stderr);
    return SHARC_ERR_INVALID;
}

/* The parameter count in floating point, which cannot wrap: what the check bounds. */
static double llama_config_params_approx(const llama_config_t *c)
{
    double C = c->dim, hd = c->head_dim;
    double block = C * hd * c->n_heads * 2 + C * hd * c->n_kv_heads * 2 + 3 * C * c->hidden_dim +
                   2 * C;

    return c->n_layers * block + C + 2.0 * c->vocab * C;
}

sharc_status_t llama_config_check(const llama_config_t *c)
{
    const char *bad = NULL;

    if (c->dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 ||
        c->hidden_dim <= 0 || c->vocab <= 0 || c->max_seq <= 0 || c->head_dim <= 0) {
        bad = "every dimension must be positive";
    } else if (c->n_heads % c->n_kv_heads != 0) {
        bad = "num_attention_heads must be a multiple of num_key_value_heads";
    } else if (c->head_dim % 2 != 0) {
        bad = "head_dim must be even (rotary pairs)";
    } else if (!(c->rope_theta > 1.0) || !(c->norm_eps > 0.0)) {
        bad = "rope_theta must be > 1 and rms_norm_eps > 0";
    } else if (c->rope_factor != 0 && (!(c->rope_factor >= 1.0) || c->rope_orig_max <= 0 ||
                                       !(c->rope_high_freq > c->rope_low_freq))) {
        bad = "llama3 rope scaling needs factor >= 1, original_max_position_embeddings > 0 and "
              "high_freq_factor > low_freq_factor";
    } else if (llama_config_params_approx(c) > 1e13) {
        bad = "more than 10^13 parameters";
    }
    if (bad != NULL) {
        llama_err("model config '%s': %s (dim %d, layers %d, heads %d, kv heads %d, head_dim "
                  "%d, ffn %d, vocab %d)",
                  c->name, bad, c->dim, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim,
                  c->hidden_dim, c->vocab);
        return SHARC_ERR_INVALID;
    }
    return SHARC_OK;
}

/* integer member @p key of @p obj into *out; absent: 0 (keeps *out); wrong type: -1 */
static int json_int(struct json_object *obj, const char *key, int *out)
{
    struct json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_int)) {
        return -1;
    }
    int64_t x = json_object_get_int64(v);
    if (x < 0 || x > (1 << 30)) {
        return -1;
    }
    *out = (int)x;
    return 1;
}

static int json_num(struct json_object *obj, const char *key, double *out)
{
    struct json_object *v;

    if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
        return 0;
    }
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
        return -1;
    }
    *out = json_object_get_double(v);
    return 1;
}

/* rope settings from the classic keys (rope_theta, rope_scaling) or transformers 5's
 * rope_parameters */
static const char *parse_rope(struct json_object *root, llama_config_t *cfg)
{
    struct json_object *scaling = NULL, *params = NULL, *type;

    if (json_num(root, "rope_theta", &cfg->rope_theta) < 0) {
        return "rope_theta is not a number";
    }
    if (json_object_object_get_ex(root, "rope_parameters", &params) &&
        json_object_is_type(params, json_type_object)) {
        if (json_num(params, "rope_theta", &cfg->rope_theta) < 0) {
            return "rope_parameters.rope_theta is not a number";
        }
        scaling = params;
    }
    if (json_object_object_get_ex(root, "rope_scaling", &type) &&
        json_object_is_type(type, json_type_object)) {
        scaling = type;
    }
    if (scaling == NULL) {
        return NULL;
    }
    const char *rtype = NULL;
    if ((json_object_object_get_ex(scaling, "rope_type", &type) ||
         json_object_object_get_ex(scaling, "type", &type)) &&
        json_object_is_type(type, json_type_string)) {
        rtype = json_object_get_string(type);
    }
    if (rtype == NULL || strcmp(rtype, "default") == 0) {
        return NULL;
    }
    if (strcmp(rtype, "llama3") != 0) {
        return "rope scaling type is not supported (only \"default\" and \"llama3\")";
    }
    if (json_num(scaling, "factor", &cfg->rope_factor) <= 0 ||
        json_num(scaling, "low_freq_factor", &cfg->rope_low_freq) <= 0 ||
        json_num(scaling, "high_freq_factor", &cfg->rope_high_freq) <= 0 ||
        json_int(scaling, "original_max_position_embeddings", &cfg->rope_orig_max) <= 0) {
        return "llama3 rope scaling needs factor, low_freq_factor, high_freq_factor and "
               "original_max_position_embeddings";
    }
    return NULL;
}

sharc_status_t llama_config_load_hf(const char *path, llama_config_t *out)
{
    struct json_object *root = json_object_from_file(path), *v;
    llama_config_t cfg;
    const char *bad = NULL;

    if (root == NULL) {
        int err = errno;
        const char *why = json_util_get_last_err();
        int len = why != NULL ? (int)strcspn(why, "\n") : 0; /* json-c ends it with a newline */
        llama_err("%s: cannot read a JSON object (%.*s)", path, len, why != NULL ? why : "");
        return err == ENOENT ? SHARC_ERR_IO : SHARC_ERR_INVALID;
    }
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.name, sizeof(cfg.name), "hf");
    cfg.rope_theta = 10000.0;
    cfg.norm_eps = 1e-6;
    cfg.max_seq = 2048;
    if (!json_object_is_type(root, json_type_object)) {
        bad = "not a JSON object";
    } else if (json_object_object_get_ex(root, "model_type", &v) &&
               strcmp(json_object_get_string(v), "llama") != 0) {
        bad = "model_type is not \"llama\"";
    } else if (json_int(root, "hidden_size", &cfg.dim) <= 0 ||
               json_int(root, "num_hidden_layers", &cfg.n_layers) <= 0 ||
               json_int(root, "num_attention_heads", &cfg.n_heads) <= 0 ||
               json_int(root, "intermediate_size", &cfg.hidden_dim) <= 0 ||
               json_int(root, "vocab_size", &cfg.vocab) <= 0) {
        bad = "hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and "
              "vocab_size must be present as non-negative integers";
    } else if (json_int(root, "num_key_value_heads", &cfg.n_kv_heads) < 0 ||
               json_int(root, "head_dim", &cfg.head_dim) < 0 ||
               json_int(root, "max_position_embeddings", &cfg.max_seq) < 0 ||
               json_num(root, "rms_norm_eps", &cfg.norm_eps) < 0) {
        bad = "num_key_value_heads, head_dim, max_position_embeddings or rms_norm_eps has the "
              "wrong type";
    } else if (json_object_object_get_ex(root, "tie_word_embeddings", &v) &&
               json_object_get_boolean(v)) {
        bad = "tied input and output embeddings are not supported (tie_word_embeddings)";
    } else if ((json_object_object_get_ex(root, "attention_bias", &v) &&
                json_object_get_boolean(v)) ||
               (json_object_object_get_ex(root, "mlp_bias", &v) && json_object_get_boolean(v))) {
        bad = "biases are not supported (attention_bias / mlp_bias)";
    } else if (json_object_object_get_ex(root, "hidden_act", &v) &&
               strcmp(json_object_get_string(v), "silu") != 0) {
        bad = "hidden_act is not \"silu\"";
    } else {
        bad = parse_rope(root, &cfg);
    }
    json_object_put(root);
    if (bad != NULL) {
        llama_err("%s: %s", path, bad);
        return SHARC_ERR_INVALID;
    }
    if (cfg.n_kv_heads == 0) {
        cfg.n_kv_heads = cfg.n_heads;
    }
    if (cfg.head_dim == 0) {
        cfg.head_dim = cfg.n_heads > 0 ? cfg.dim / cfg.n_heads : 0;
    }
    if (llama_config_check(&cfg) != SHARC_OK) {
        llama_err("%s: the config above is not a usable Llama shape", path);
        return SHARC_ERR_INVALID;
    }
    *out = cfg;
    return SHARC_OK;
}

sharc_status_t llama_config_save_hf(const llama_config_t *c, const char *path)
{
    struct json_object *root = json_object_new_object(), *arch = json_object_new_array();
    char tmp[4096];
    sharc_status_t status = SHARC_OK;

    json_object_array_add(arch, json_object_new_string("LlamaForCausalLM"));
    json_object_object_add(root, "architectures", arch);
    json_object_object_add(root, "model_type", json_object_new_string("llama"));
    json_object_object_add(root, "hidden_size", json_object_new_int(c->dim));
    json_object_object_add(root, "num_hidden_layers", json_object_new_int(c->n_layers));
    json_object_object_add(root, "num_attention_heads", json_object_new_int(c->n_heads));
    json_object_object_add(root, "num_key_value_heads", json_object_new_int(c->n_kv_heads));
    json_object_object_add(root, "head_dim", json_object_new_int(c->head_dim));
    json_object_object_add(root, "intermediate_size", json_object_new_int(c->hidden_dim));
    json_object_object_add(root, "vocab_size", json_object_new_int(c->vocab));
    json_object_object_add(root, "max_position_embeddings", json_object_new_int(c->max_seq));
    json_object_object_add(root, "rms_norm_eps", json_object_new_double(c->norm_eps));
    json_object_object_add(root, "rope_theta", json_object_new_double(c->rope_theta));
    if (c->rope_factor != 0) {
        struct json_object *s = json_object_new_object();
        json_object_object_add(s, "rope_type", json_object_new_string("llama3"));
        json_object_object_add(s, "factor", json_object_new_double(c->rope_factor));
        json_object_object_add(s, "low_freq_factor", json_object_new_double(c->rope_low_freq));
        json_object_object_add(s, "high_freq_factor", json_object_new_double(c->rope_high_freq));
        json_object_object_add(s, "original_max_position_embeddings",
                               json_object_new_int(c->rope_orig_max));
        json_object_object_add(root, "rope_scaling", s);
    }
    json_object_object_add(root, "hidden_act", json_object_new_string("silu"));
    json_object_object_add(root, "tie_word_embeddings", json_object_new_boolean(0));
    json_object_object_add(root, "attention_bias", json_object_new_boolean(0));
    json_object_object_add(root, "mlp_bias", json_object_new_boolean(0));
    json_object_object_add(root, "bos_token_id", json_object_new_int(1));
    json_object_object_add(root, "eos_token_id", json_object_new_int(2));
    json_object_object_add(root, "torch_dtype", json_object_new_string("float32"));
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    if (json_object_to_file_ext(tmp, root, JSON_C_TO_STRING_PRETTY) != 0 ||
        rename(tmp, path) != 0) {
        llama_err("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        status = SHARC_ERR_IO;
    }
    json_object_put(root);
    return status;
}

size_t llama_config_params_nonembed(const llama_config_t *c)
{
    size_t C = (size_t)c->dim, hd = (size_t)c->head_dim;
    size_t attn = C * hd * (size_t)c->n_heads * 2 + C * hd * (size_t)c->n_kv_heads * 2;
    size_t mlp = 3 * C * (size_t)c->hidden_dim;
    size_t block = attn + mlp + 2 * C;

    return (size_t)c->n_layers * block + C + (size_t)c->vocab * C;
}

size_t llama_config_params(const llama_config_t *c)
{
    return llama_config_params_nonembed(c) + (size_t)c->vocab * (size_t)c->dim;
}

double llama_config_flops_per_token(const llama_config_t *c, int T)
{
    return 6.0 * (double)llama_config_params_nonembed(c) +
           12.0 * c->n_layers * c->n_heads * c->head_dim * (double)T;
}
