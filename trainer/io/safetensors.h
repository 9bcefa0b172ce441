/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/io/safetensors.h: Hugging Face safetensors files, read and written. A reader opens a
 * single file, a sharded set through its model.safetensors.index.json, or a directory holding
 * either; the JSON header is parsed with json-c and checked in full (sizes matching dtype x
 * shape, tensors tiling the data exactly: no overlaps, holes or trailing bytes) before any
 * tensor is read; tensor data is read with pread, a slice at a time, so a rank reads only what
 * it owns.
 */
#ifndef SHARC_LLAMA_SAFETENSORS_H
#define SHARC_LLAMA_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/sharc.h>

#define LLAMA_ST_MAX_DIMS 8

/** One tensor of an opened set. */
typedef struct {
    const char *name;
    sharc_dtype_t dtype; /**< F32, F16, BF16, I32, I64 (and F64, U8 listed but not readable) */
    int ndim;
    size_t shape[LLAMA_ST_MAX_DIMS];
    size_t count;    /**< product of shape (1 for a scalar) */
    int file;        /**< which file of the set */
    uint64_t offset; /**< absolute byte offset of its data in that file */
    uint64_t bytes;
} llama_st_tensor_t;

typedef struct llama_st llama_st_t;

/**
 * Open @p path: a .safetensors file, a *.safetensors.index.json, or a directory holding
 * model.safetensors.index.json or model.safetensors. Every file's header is validated.
 * @return SHARC_OK; SHARC_ERR_IO (missing, unreadable); SHARC_ERR_INVALID (truncated file,
 *         bad header: the message names the file and what is wrong); SHARC_ERR_NOMEM.
 */
sharc_status_t llama_st_open(const char *path, llama_st_t **st_p);
void llama_st_close(llama_st_t *st); /**< NULL is a no-op */

int llama_st_num_tensors(const llama_st_t *st);
const llama_st_tensor_t *llama_st_tensor(const llama_st_t *st, int index);
/** NULL when absent (not logged: a query). */
const llama_st_tensor_t *llama_st_find(const llama_st_t *st, const char *name);

/**
 * Read elements [start, start + n) of @p t (row-major flat index) converted to f32 (from
 * F32, F16 or BF16). SHARC_ERR_INVALID for a range outside the tensor or another dtype;
 * SHARC_ERR_IO for a failed or short read.
 */
sharc_status_t llama_st_read_f32(const llama_st_t *st, const llama_st_tensor_t *t, size_t start,
                                 size_t n, float *out);
/** The same for integer tensors (I32, or I64 within int32's range) into int32. */
sharc_status_t llama_st_read_i32(const llama_st_t *st, const llama_st_tensor_t *t, size_t start,
                                 size_t n, int32_t *out);

/** A tensor to write: its data are given later, as f32, and stored in @p dtype. */
typedef struct {
    const char *name;
    sharc_dtype_t dtype; /**< F32, BF16 or F16 */
    int ndim;
    size_t shape[LLAMA_ST_MAX_DIMS];
} llama_st_out_t;

typedef struct llama_st_writer llama_st_writer_t;

/**
 * Start writing a safetensors file: the header (with @p meta: NULL, or key, value, ..., NULL
 * as "__metadata__") goes out at once into "<path>.tmp.<pid>"; data follow tensor by tensor.
 */
sharc_status_t llama_st_writer_open(const char *path, const llama_st_out_t *tensors, int n,
                                    const char *const *meta, llama_st_writer_t **w_p);
/** Append the next @p count f32 elements of the tensors' data, in the order they were given
 *  (any split into calls). */
sharc_status_t llama_st_writer_put(llama_st_writer_t *w, const float *data, size_t count);
/**
 * Finish: with @p commit and every element written, fsync and rename onto path (atomic);
 * otherwise remove the temporary file. Frees @p w in every case.
 */
sharc_status_t llama_st_writer_close(llama_st_writer_t *w, int commit);

#endif
