/*
 * cpu/cpu.h: the host kernels behind sharc_kern_cpu_ops (see kernels.h for each contract).
 */
#ifndef SHARC_KERN_CPU_H
#define SHARC_KERN_CPU_H

#include "../kernels.h"

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

#endif
