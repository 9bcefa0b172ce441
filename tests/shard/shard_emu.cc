/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shard_emu.cc: the emulated CUDA runtime (tests/trainer/cuda_emu.h) with libsharc's runtime
 * layer and CUDA kernel table over it (tests/gpu_emu.h), for the engine's tests that run its
 * CUDA mode without a GPU (test_shard_offload).
 */
#include "../trainer/cuda_emu.h"

#include "../gpu_emu.h"
