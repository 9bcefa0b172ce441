/*
 * ops_cuda_emu.cc: sharc-llama's CUDA ops table (trainer/ops/cuda/, the very sources a GPU
 * build compiles) built for the host emulation of cuda_emu.h, so that test_ops_cuda_emu runs
 * test_ops_cuda's checks of every op against the CPU's here, without a GPU: the kernels,
 * their launch geometry and synchronization, and the arguments of the cuBLAS calls.
 */
#include "cuda_emu.h"

#include "../../trainer/ops/cuda/cuda.cu"
#include "../../trainer/ops/cuda/attn.cu"
#include "../../trainer/ops/cuda/elem.cu"
#include "../../trainer/ops/cuda/flash.cu"
#include "../../trainer/ops/cuda/optim.cu"
