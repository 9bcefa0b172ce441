/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda/attn_pick.cu: which attention a CUDA table computes with (--attention), by
 * the rules of attn_pick.h: whether cuDNN's fused attention runs the model's shape here (this
 * build has it, the head size is one it takes, its library opens and its plans build), and
 * what is said where an attention asked for cannot run. Host code; cuda.cu maps the choice to
 * its tables.
 */
#include "attn_pick.h"
#include "host.h"

#include <stdio.h>

extern "C" {
#include "../../util.h"
}

namespace llama_cuda
{

/* NULL where cuDNN's attention runs in bf16 here, with @p shape's plans built (NULL: any
 * shape), else why not (in @p buf or a constant) */
static const char *cudnn_why(const llama_cuda_attn_shape_t *shape, char *buf, size_t len)
{
    const char *why = llama_cuda_cudnn_missing();

    if (why == NULL && shape != NULL && (why = llama_cudnn_shape_why(1, shape->hd)) != NULL) {
        snprintf(buf, len, "head size %d: %s", shape->hd, why);
        return buf;
    }
#ifdef LLAMA_CUDA_CUDNN
    if (why == NULL && !cudnn_usable(shape, buf, len)) {
        return buf;
    }
#else
    (void)buf;
    (void)len;
#endif
    return why;
}

llama_cuda_attention_t attention_pick(sharc_dtype_t act_dtype, llama_cuda_attention_t attention,
                                      const llama_cuda_attn_shape_t *shape)
{
    static const char *const names[] = {"auto", "gemm", "flash", "cudnn"};
    int bf16 = act_dtype == SHARC_DTYPE_BF16;
    char buf[512];
    const char *cudnn, *why = "";
    llama_cuda_attention_t picked;

    /* cuDNN's plans are built only where they may be taken */
    if (!bf16) {
        cudnn = llama_cudnn_shape_why(0, 0);
    } else if (attention == LLAMA_CUDA_ATTENTION_AUTO || attention == LLAMA_CUDA_ATTENTION_CUDNN) {
        cudnn = cudnn_why(shape, buf, sizeof(buf));
    } else {
        cudnn = "not asked for";
    }
    picked = llama_cuda_attention_pick(attention, bf16, cudnn, &why);
    if (picked == LLAMA_CUDA_ATTENTION_AUTO) {
        llama_err("--attention %s: %s",
                  (unsigned)attention < sizeof(names) / sizeof(names[0]) ? names[attention] : "?",
                  why);
    }
    if (attention == LLAMA_CUDA_ATTENTION_AUTO && bf16 && picked != LLAMA_CUDA_ATTENTION_CUDNN &&
        llama_cuda_cudnn_missing() == NULL) {
        /* a build with cuDNN, whose attention does not run here */
        llama_info("attention: cuDNN's does not run here (%s); the tiled kernel's path", cudnn);
    }
    return picked;
}

} // namespace llama_cuda

extern "C" const char *llama_cuda_cudnn_missing(void)
{
#if defined(LLAMA_CUDA_CUDNN)
    return NULL;
#elif defined(LLAMA_CUDA_EMU)
    return "the host emulation of CUDA has no cuDNN";
#else
    return "this sharc-llama was built without cuDNN (configure --with-cudnn=DIR, or "
           "tools/install-deps.sh --cudnn for the one configure finds by itself)";
#endif
}
