/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/cudnn_sdpa.cc: causal grouped-query attention by cuDNN's fused scaled
 * dot-product attention (its graph API, through the header-only cudnn-frontend): bf16 q, k, v
 * and out, f32 scores, softmax and accumulation. The forward keeps the log-sum-exp of each
 * query row (the stats, (B,H,T) f32: attention_bytes' state); the backward computes dq, dk,
 * dv from them in the workspace its plan asks for (attention_bytes' scratch). The ops' buffers
 * are read in place: (B,T,heads,hd) row-major is the [B,heads,T,hd] view of attn_pick.h.
 * A graph and its execution plan are built at a shape's first use, for both directions, and
 * kept for the process (freed at the table's teardown); a shape cuDNN does not take (head
 * sizes other than 64 and 128, or one its engines refuse on this GPU) takes the tiled
 * kernel's path of attn.cu, forward and backward alike.
 * cuDNN is opened at run time, as libsharc opens NCCL: libcudnn.so.9 from the loader's path,
 * else from where configure found it; nothing links it, so a machine without it runs the
 * other attentions. Host C++ (no kernels), compiled where configure found cuDNN and its
 * frontend (HAVE_CUDNN), never in the emulation of CUDA.
 */

/* the frontend reads cuDNN's entry points (and the CUDA runtime's) with dlsym from the library
 * this file opens; graphs are not serialized (no JSON library) */
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING 1
#define CUDNN_FRONTEND_SKIP_JSON_LIB          1
#include <cudnn_frontend.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn_pick.h"
#include "host.h" /* (and config.h: SHARC_CUDNN_LIBDIR) */

extern "C" {
#include "../../util.h"
}

namespace cudnn_frontend
{
/* libcudnn.so.9 as open_library opened it: the frontend's dynamic loading reads it */
void *cudnn_dlhandle;
} // namespace cudnn_frontend

namespace llama_cuda
{

namespace fe = cudnn_frontend;

/* the graphs' tensors, by uid */
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV };

/* a graph with its execution plan, built for one shape and direction */
struct plan_t {
    llama_cudnn_key_t key;
    std::shared_ptr<fe::graph::Graph> graph; /* NULL: not built (why) */
    int64_t workspace = 0;                   /* bytes its execution needs */
    /* attention_bytes reported the workspace: the backward's scratch holds it */
    bool sized = false;
    bool told = false; /* the fall back to the tiled kernel was said */
    std::string why;
};

/* cuDNN on the ops' stream: made at the first use, deleted at teardown (never by a static
 * destructor at exit, when the frontend's objects could no longer call cuDNN) */
struct dnn_t {
    bool tried = false;
    std::string why; /* why cuDNN does not run here */
    cudnnHandle_t handle = nullptr;
    std::vector<std::unique_ptr<plan_t>> plans;
    void *workspace = nullptr; /* the workspace of a plan whose caller gives none */
    size_t workspace_cap = 0;
};

static dnn_t *dnn;

/* The library stays open for the process once opened: the frontend keeps the entry points it
 * looked up (static pointers in its shim). */
static void *lib;
static std::string *lib_why; /* why it does not open (NULL: not tried) */

/* ---- opening cuDNN -------------------------------------------------------------------------- */

/*
 * The frontend's own CUDA runtime calls (device properties, stream capture) go to the library
 * CUDNN_FRONTEND_CUDART_LIB_NAME names, else to libcudart.so.12 or .13 by name, which could be
 * another runtime than the one the ops' stream belongs to: this program's runtime, where it is
 * a shared library and the user set none.
 */
static void same_runtime(void)
{
    Dl_info info;

    if (getenv("CUDNN_FRONTEND_CUDART_LIB_NAME") == NULL &&
        dladdr(reinterpret_cast<void *>(&cudaRuntimeGetVersion), &info) != 0 &&
        info.dli_fname != NULL && strstr(info.dli_fname, "libcudart.so") != NULL) {
        setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", info.dli_fname, 0);
    }
}

/* libcudnn.so.9: the loader's path first (LD_LIBRARY_PATH; tests/gpu/run.sh puts the Python
 * package's folder there), then where configure found it. NULL, or why not. */
static const char *open_library(void)
{
    std::vector<std::string> paths = {"libcudnn.so.9"};
    std::string errs;

    if (lib_why != NULL) {
        return lib_why->empty() ? NULL : lib_why->c_str();
    }
    lib_why = new std::string;
    if (SHARC_CUDNN_LIBDIR[0] != '\0') {
        paths.push_back(std::string(SHARC_CUDNN_LIBDIR) + "/libcudnn.so.9");
    }
    for (const std::string &path : paths) {
        lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib != NULL) {
            break;
        }
        const char *e = dlerror();
        errs += (errs.empty() ? "" : "; ") + std::string(e != NULL ? e : path.c_str());
    }
    if (lib == NULL) {
        *lib_why = "cannot open libcudnn.so.9 (" + errs + ")";
        return lib_why->c_str();
    }
    fe::cudnn_dlhandle = lib;
    same_runtime();
    try {
        size_t version = fe::detail::get_backend_version();
        if (version < 90000) {
            *lib_why = "libcudnn.so.9 says it is cuDNN " + std::to_string(version) + ", not 9";
        }
    } catch (const std::exception &e) {
        *lib_why = std::string("libcudnn.so.9: ") + e.what();
    }
    return lib_why->empty() ? NULL : lib_why->c_str();
}

/* cuDNN opened, with a handle on the ops' stream; false with dnn->why (tried once a setup) */
static bool ready(void)
{
    const char *why;

    if (dnn == nullptr) {
        dnn = new dnn_t;
    }
    if (dnn->handle != nullptr || dnn->tried) {
        return dnn->handle != nullptr;
    }
    dnn->tried = true;
    if ((why = open_library()) != NULL) {
        dnn->why = why;
        return false;
    }
    try {
        cudnnStatus_t st = fe::detail::create_handle(&dnn->handle);
        if (st != CUDNN_STATUS_SUCCESS) {
            dnn->handle = nullptr;
            dnn->why = std::string("cudnnCreate: ") + fe::detail::get_error_string(st);
        } else if ((st = fe::detail::set_stream(dnn->handle, g.stream)) != CUDNN_STATUS_SUCCESS) {
            dnn->why = std::string("cudnnSetStream: ") + fe::detail::get_error_string(st);
            fe::detail::destroy_handle(dnn->handle);
            dnn->handle = nullptr;
        }
    } catch (const std::exception &e) {
        dnn->handle = nullptr;
        dnn->why = std::string("cudnnCreate: ") + e.what();
    }
    return dnn->handle != nullptr;
}

/* ---- the graphs ----------------------------------------------------------------------------- */

typedef std::shared_ptr<fe::graph::Tensor_attributes> tensor_t;

/* @p t as one of the ops' (B,T,heads,hd) buffers */
static void as_view(fe::graph::Tensor_attributes &t, int uid, int B, int T, int heads, int hd)
{
    int64_t d[4], s[4];

    llama_cudnn_view(B, T, heads, hd, d, s);
    t.set_uid(uid).set_dim({d[0], d[1], d[2], d[3]}).set_stride({s[0], s[1], s[2], s[3]});
}

static tensor_t input(fe::graph::Graph &gr, const char *name, int uid, int B, int T, int heads,
                      int hd)
{
    fe::graph::Tensor_attributes t;

    t.set_name(name);
    as_view(t, uid, B, T, heads, hd);
    return gr.tensor(t);
}

/* the stats, (B,H,T) f32 */
static void as_stats(fe::graph::Tensor_attributes &t, const llama_cudnn_key_t *k)
{
    int64_t d[4], s[4];

    llama_cudnn_stats_view(k->B, k->T, k->H, d, s);
    t.set_uid(UID_STATS)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({d[0], d[1], d[2], d[3]})
        .set_stride({s[0], s[1], s[2], s[3]});
}

/* The graph of @p k's direction: the causal mask aligned top-left (query t sees keys 0..t),
 * scores scaled by 1 / sqrt(hd) */
static std::shared_ptr<fe::graph::Graph> describe(const llama_cudnn_key_t *k)
{
    auto gr = std::make_shared<fe::graph::Graph>();
    float scale = 1.0f / sqrtf((float)k->hd);

    gr->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    tensor_t q = input(*gr, "q", UID_Q, k->B, k->T, k->H, k->hd);
    tensor_t kk = input(*gr, "k", UID_K, k->B, k->T, k->KV, k->hd);
    tensor_t v = input(*gr, "v", UID_V, k->B, k->T, k->KV, k->hd);
    if (!k->bwd) {
        auto opts = fe::graph::SDPA_attributes()
                        .set_name("attention")
                        .set_generate_stats(true)
                        .set_causal_mask(true)
                        .set_attn_scale(scale);
        auto outs = gr->sdpa(q, kk, v, opts); /* out, stats */
        as_view(outs[0]->set_output(true), UID_O, k->B, k->T, k->H, k->hd);
        as_stats(outs[1]->set_output(true), k);
        return gr;
    }
    tensor_t o = input(*gr, "out", UID_O, k->B, k->T, k->H, k->hd);
    tensor_t dout = input(*gr, "dout", UID_DO, k->B, k->T, k->H, k->hd);
    fe::graph::Tensor_attributes st;
    st.set_name("stats");
    as_stats(st, k);
    tensor_t stats = gr->tensor(st);
    auto opts = fe::graph::SDPA_backward_attributes()
                    .set_name("attention backward")
                    .set_causal_mask(true)
                    .set_attn_scale(scale);
    auto grads = gr->sdpa_backward(q, kk, v, o, dout, stats, opts); /* dq, dk, dv */
    as_view(grads[0]->set_output(true), UID_DQ, k->B, k->T, k->H, k->hd);
    as_view(grads[1]->set_output(true), UID_DK, k->B, k->T, k->KV, k->hd);
    as_view(grads[2]->set_output(true), UID_DV, k->B, k->T, k->KV, k->hd);
    return gr;
}

/* The plan of @p key, built at its first use (a failure is kept too); dnn ready. */
static plan_t *plan_of(const llama_cudnn_key_t &key)
{
    for (auto &p : dnn->plans) {
        if (llama_cudnn_key_eq(&p->key, &key)) {
            return p.get();
        }
    }
    auto p = std::make_unique<plan_t>();
    p->key = key;
    try {
        auto gr = describe(&key);
        fe::error_t err = gr->build(dnn->handle, {fe::HeurMode_t::A});
        if (err.is_good()) {
            err = gr->get_workspace_size(p->workspace);
        }
        if (err.is_good()) {
            p->graph = gr;
        } else {
            p->why = err.get_message();
        }
    } catch (const std::exception &e) {
        p->why = e.what();
    }
    if (p->graph == nullptr && p->why.empty()) {
        p->why = "no engine of cuDNN's takes it";
    }
    dnn->plans.push_back(std::move(p));
    return dnn->plans.back().get();
}

/* The plans of a shape, both built (else NULL, with the why of the one that failed, said once
 * with @p tell): a shape runs both directions through cuDNN or neither, since the stats are
 * its own. Returns the forward's, the backward's in *bwd_p. */
static plan_t *plans_of(int B, int T, int H, int KV, int hd, plan_t **bwd_p, std::string *why,
                        bool tell = true)
{
    plan_t *f, *b;

    if (llama_cudnn_shape_why(1, hd) != NULL || !ready()) {
        *why = dnn != nullptr && !dnn->why.empty() ? dnn->why : llama_cudnn_shape_why(1, hd);
        return NULL;
    }
    f = plan_of(llama_cudnn_key(B, T, H, KV, hd, 0));
    b = plan_of(llama_cudnn_key(B, T, H, KV, hd, 1));
    if (f->graph == nullptr || b->graph == nullptr) {
        *why = (f->graph == nullptr ? "forward: " + f->why : "backward: " + b->why);
        if (tell && !f->told) {
            llama_info("attention: cuDNN's does not run B %d, T %d, heads %d/%d of %d (%s); the "
                       "tiled kernel's path",
                       B, T, H, KV, hd, why->c_str());
        }
        f->told = true;
        return NULL;
    }
    *bwd_p = b;
    return f;
}

/* Device memory of at least @p bytes for a plan's workspace, kept and grown in whole MiB (at a
 * shape's first use: cudaFree waits for the device); NULL (logged) where it cannot be had */
static void *workspace(size_t bytes)
{
    size_t cap = (bytes + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);

    if (bytes <= dnn->workspace_cap) {
        return dnn->workspace;
    }
    cudaFree(dnn->workspace);
    dnn->workspace = nullptr;
    dnn->workspace_cap = 0;
    if (!ok(cudaMalloc(&dnn->workspace, cap), "cuDNN's attention workspace")) {
        dnn->workspace = nullptr;
        return NULL;
    }
    dnn->workspace_cap = cap;
    return dnn->workspace;
}

/* Run @p p on the ops' stream; a failure is the first-error rule's (state.cu). */
static void run(plan_t *p, std::unordered_map<int64_t, void *> &pack, void *ws, const char *what)
{
    if (p->workspace > 0 && ws == NULL) {
        return; /* its allocation failed, logged */
    }
    try {
        fe::error_t err = p->graph->execute(dnn->handle, pack, ws);
        if (!err.is_good()) {
            failed_call("cuDNN", what, err.get_message().c_str());
        }
    } catch (const std::exception &e) {
        failed_call("cuDNN", what, e.what());
    }
}

/* ---- the table's attention ------------------------------------------------------------------ */

void attention_fwd_cudnn(float *out, float *state, const float *q, const float *k, const float *v,
                         int B, int T_, int H, int KV, int hd)
{
    std::string why;
    plan_t *bwd, *p = plans_of(B, T_, H, KV, hd, &bwd, &why);

    if (p == NULL) {
        attention_fwd_flash(out, state, q, k, v, B, T_, H, KV, hd);
        return;
    }
    std::unordered_map<int64_t, void *> pack = {
        {UID_Q, (void *)q}, {UID_K, (void *)k}, {UID_V, (void *)v},
        {UID_O, out},       {UID_STATS, state},
    };
    run(p, pack, p->workspace > 0 ? workspace((size_t)p->workspace) : NULL, "attention forward");
}

void attention_bwd_cudnn(float *dq, float *dk, float *dv, float *scr, const float *dout,
                         const float *q, const float *k, const float *v, const float *out,
                         const float *state, int B, int T_, int H, int KV, int hd)
{
    std::string why;
    plan_t *p = NULL;
    void *ws = NULL;

    if (plans_of(B, T_, H, KV, hd, &p, &why) == NULL) {
        attention_bwd_flash(dq, dk, dv, scr, dout, q, k, v, out, state, B, T_, H, KV, hd);
        return;
    }
    /* the scratch attention_bytes reported for this shape, else a kept buffer */
    if (p->workspace > 0) {
        ws = p->sized ? (void *)scr : workspace((size_t)p->workspace);
    }
    std::unordered_map<int64_t, void *> pack = {
        {UID_Q, (void *)q},   {UID_K, (void *)k},     {UID_V, (void *)v},
        {UID_O, (void *)out}, {UID_DO, (void *)dout}, {UID_STATS, (void *)state},
        {UID_DQ, dq},         {UID_DK, dk},           {UID_DV, dv},
    };
    run(p, pack, ws, "attention backward");
}

/* the stats, a float per query row; the backward's workspace as the scratch */
void attention_bytes_cudnn(int B, int T_, int H, int KV, int hd, size_t *state_p, size_t *scratch_p)
{
    std::string why;
    plan_t *bwd, *p = plans_of(B, T_, H, KV, hd, &bwd, &why);

    if (p == NULL) {
        attention_bytes_flash(B, T_, H, KV, hd, state_p, scratch_p);
        return;
    }
    bwd->sized = true;
    *state_p = (size_t)B * H * T_ * sizeof(float);
    *scratch_p = (size_t)bwd->workspace;
}

bool cudnn_usable(const llama_cuda_attn_shape_t *shape, char *why, size_t len)
{
    std::string reason;
    plan_t *bwd, *p;

    if (!ready()) {
        snprintf(why, len, "%s", dnn->why.c_str());
        return false;
    }
    if (shape == NULL) {
        return true;
    }
    /* (said by the caller) */
    p = plans_of(shape->B, shape->T, shape->H, shape->KV, shape->hd, &bwd, &reason, false);
    if (p == NULL) {
        snprintf(why, len, "cuDNN builds no plan for B %d, T %d, heads %d/%d of %d: %s", shape->B,
                 shape->T, shape->H, shape->KV, shape->hd, reason.c_str());
        for (char *c = why; *c != '\0'; c++) {
            *c = *c == '\n' ? ' ' : *c; /* one line: cuDNN's messages may hold several */
        }
        return false;
    }
    return true;
}

void cudnn_teardown(void)
{
    if (dnn == nullptr) {
        return;
    }
    dnn->plans.clear(); /* the graphs and their execution plans, before the handle */
    cudaFree(dnn->workspace);
    if (dnn->handle != nullptr) {
        try {
            fe::detail::destroy_handle(dnn->handle);
        } catch (...) {
            /* the process is closing the GPU: nothing left to tell */
        }
    }
    delete dnn;
    dnn = nullptr;
}

} // namespace llama_cuda
