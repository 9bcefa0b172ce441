/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_emu.cc: the emulated CUDA runtime (tests/trainer/cuda_emu.h) with libsharc's runtime
 * layer and CUDA kernel table over it (tests/gpu_emu.h), for the tests that run sharc's CUDA
 * paths without a GPU (test_shard_offload, test_p2p_memtype).
 */
#include "trainer/cuda_emu.h"

#include "gpu_emu.h"
