/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_none.c: a build without CUDA has no device kernels (the pair of kernels/cuda/).
 */
#include "config.h"

#include "kernels.h"

const sharc_kern_ops_t *sharc_kern_cuda(void)
{
    return NULL;
}
