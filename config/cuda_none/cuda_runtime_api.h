/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda_runtime_api.h, for building libsharc without CUDA: the one type the public
 * <sharc/sharc_cuda.h> takes from CUDA's runtime header, declared as CUDA declares it, so
 * that the library's definitions of that header's calls (comm/comm_cuda.c) see their one
 * public declaration in every build. Never installed; never seen by users.
 */
#ifndef SHARC_CUDA_NONE_RUNTIME_API_H
#define SHARC_CUDA_NONE_RUNTIME_API_H

typedef struct CUstream_st *cudaStream_t;

#endif
