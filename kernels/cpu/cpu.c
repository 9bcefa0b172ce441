/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/cpu.c: the ops table of the host kernels.
 */
#include "config.h"

#include "cpu.h"

const sharc_kern_ops_t sharc_kern_cpu_ops = {
    .name = "cpu",
    .cast = sharc_kern_cpu_cast,
    .reduce = sharc_kern_cpu_reduce,
    .scale = sharc_kern_cpu_scale,
    .pack = sharc_kern_cpu_pack,
    .unpack = sharc_kern_cpu_unpack,
    .adamw = sharc_kern_cpu_adamw,
    .sumsq = sharc_kern_cpu_sumsq,
    .quantize = sharc_kern_cpu_quantize,
    .dequantize = sharc_kern_cpu_dequantize,
    .dequantize_sum = sharc_kern_cpu_dequantize_sum,
};
