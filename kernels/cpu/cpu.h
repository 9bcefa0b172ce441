/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu/cpu.h: the host kernels behind sharc_kern_cpu_ops (see kernels.h for each contract).
 */
#ifndef SHARC_KERN_CPU_H
#define SHARC_KERN_CPU_H

#include "../kernels.h"

/*
 * The loops of the host kernels are plain C that the compiler vectorizes; each marked
 * function is built for AVX-512, AVX2 and baseline x86-64 and picked at load time for the
 * CPU it runs on (function multiversioning: the runtime dispatch), so one binary is fast
 * everywhere.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SHARC_KERN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef SHARC_KERN_CLONES
#define SHARC_KERN_CLONES
#endif

SHARC_HIDDEN sharc_status_t sharc_kern_cpu_cast(void *dst, sharc_dtype_t dst_dtype, const void *src,
                                                sharc_dtype_t src_dtype, size_t count,
                                                void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_reduce(void *dst, const void *a, const void *b,
                                                  size_t count, sharc_dtype_t dtype, sharc_op_t op,
                                                  void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_scale(void *buf, size_t count, sharc_dtype_t dtype,
                                                 double factor, void *stream);

SHARC_HIDDEN sharc_status_t sharc_kern_cpu_pack(void *bucket, sharc_dtype_t bucket_dtype,
                                                const sharc_kern_piece_t *pieces, int n,
                                                sharc_dtype_t piece_dtype, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_unpack(const void *bucket, sharc_dtype_t bucket_dtype,
                                                  const sharc_kern_piece_t *pieces, int n,
                                                  sharc_dtype_t piece_dtype, void *stream);

SHARC_HIDDEN sharc_status_t sharc_kern_cpu_adamw(const sharc_kern_adamw_t *a, float *p,
                                                 const float *g, float *m, float *v, size_t count,
                                                 void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_sumsq(double *acc, const float *x, size_t count,
                                                 void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_quantize(void *seg, sharc_kern_wire_t w, const void *src,
                                                    sharc_dtype_t src_dtype, size_t count, int nseg,
                                                    void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_dequantize(void *dst, sharc_dtype_t dst_dtype,
                                                      const void *seg, sharc_kern_wire_t w,
                                                      size_t count, int nseg, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cpu_dequantize_sum(void *dst, sharc_dtype_t dst_dtype,
                                                          const float *base, const void *seg,
                                                          sharc_kern_wire_t w, size_t count,
                                                          int nseg, int skip, double factor,
                                                          void *stream);

#endif
