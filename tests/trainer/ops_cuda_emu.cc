/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ops_cuda_emu.cc: sharc-llama's CUDA ops table (trainer/ops/cuda/, the very sources a GPU
 * build compiles) built for the host emulation of cuda_emu.h, so that test_ops_cuda_emu runs
 * test_ops_cuda's checks of every op against the CPU's here, without a GPU: the kernels,
 * their launch geometry and synchronization, and the arguments of the cuBLAS calls. With it,
 * libsharc's CUDA runtime layer over the same emulation (gpu_emu.h): the programs link the
 * convenience library, and the shard engine runs its CUDA mode on the emulated memory.
 */
#include "cuda_emu.h"

#include "../gpu_emu.h"

#include "../../trainer/ops/cuda/state.cu"
#include "../../trainer/ops/cuda/cuda.cu"
#include "../../trainer/ops/cuda/gemm.cu"
#include "../../trainer/ops/cuda/attn.cu"
#include "../../trainer/ops/cuda/attn_pick.cu"
#include "../../trainer/ops/cuda/elem.cu"
#include "../../trainer/ops/cuda/flash.cu"
#include "../../trainer/ops/cuda/optim.cu"
#include "../../trainer/ops/cuda/events.cu"
