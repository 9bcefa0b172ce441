/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cuda/cuda.h: the CUDA kernels behind sharc_kern_cuda_ops (see kernels.h for each
 * contract). Every one is queued on the caller's stream and returns without waiting.
 */
#ifndef SHARC_KERN_CUDA_H
#define SHARC_KERN_CUDA_H

#include "../kernels.h"

SHARC_BEGIN_DECLS

SHARC_HIDDEN sharc_status_t sharc_kern_cuda_cast(void *dst, sharc_dtype_t dst_dtype,
                                                 const void *src, sharc_dtype_t src_dtype,
                                                 size_t count, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_reduce(void *dst, const void *a, const void *b,
                                                   size_t count, sharc_dtype_t dtype, sharc_op_t op,
                                                   void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_scale(void *buf, size_t count, sharc_dtype_t dtype,
                                                  double factor, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_pack(void *bucket, sharc_dtype_t bucket_dtype,
                                                 const sharc_kern_piece_t *pieces, int n,
                                                 sharc_dtype_t piece_dtype, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_unpack(const void *bucket, sharc_dtype_t bucket_dtype,
                                                   const sharc_kern_piece_t *pieces, int n,
                                                   sharc_dtype_t piece_dtype, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_quantize(void *seg, sharc_kern_wire_t w,
                                                     const void *src, sharc_dtype_t src_dtype,
                                                     size_t count, int nseg, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_dequantize(void *dst, sharc_dtype_t dst_dtype,
                                                       const void *seg, sharc_kern_wire_t w,
                                                       size_t count, int nseg, void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_dequantize_sum(void *dst, sharc_dtype_t dst_dtype,
                                                           const float *base, const void *seg,
                                                           sharc_kern_wire_t w, size_t count,
                                                           int nseg, int skip, double factor,
                                                           void *stream);

SHARC_HIDDEN sharc_status_t sharc_kern_cuda_adamw(const sharc_kern_adamw_t *a, float *p,
                                                  const float *g, float *m, float *v, size_t count,
                                                  void *stream);
SHARC_HIDDEN sharc_status_t sharc_kern_cuda_sumsq(double *acc, const float *x, size_t count,
                                                  void *stream);

SHARC_END_DECLS

#endif
