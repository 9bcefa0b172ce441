/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/ops/cuda_none.c: sharc-llama built without CUDA (or without cuBLAS): --device cuda
 * is refused with the reason; cuda/cuda.cu is the table when CUDA is there.
 */
#include "ops_cuda.h"
#include "../util.h"

sharc_status_t llama_cuda_open(sharc_comm_h comm, sharc_dtype_t act_dtype,
                               llama_cuda_attention_t attention,
                               const llama_cuda_attn_shape_t *shape, const llama_ops_t **ops_p,
                               void **stream_p)
{
    llama_err("--device cuda: this sharc-llama was built without CUDA and cuBLAS (configure "
              "--with-cuda=DIR with a toolkit that has cuBLAS)");
    return SHARC_ERR_UNSUPPORTED;
}

const char *llama_cuda_cudnn_missing(void)
{
    return "this sharc-llama was built without CUDA, so without cuDNN";
}

sharc_status_t llama_cuda_pick_device(void)
{
    return llama_cuda_open(NULL, SHARC_DTYPE_F32, LLAMA_CUDA_ATTENTION_AUTO, NULL, NULL, NULL);
}

void llama_cuda_close(void)
{
}
