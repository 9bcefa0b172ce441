/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trainer/util.h: what every file of sharc-llama shares: its messages (prefixed with the
 * program name and rank, errors always printed, info on rank 0 only) and small helpers.
 * The trainer uses sharc's public API only; this is not sharc's internal logging.
 */
#ifndef SHARC_LLAMA_UTIL_H
#define SHARC_LLAMA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sharc/sharc.h>

/** Rank printed in messages (-1 until the communicator exists). */
extern int llama_log_rank;

/** An error, once, where it is detected: "sharc-llama[rank]: error: ...\n" on stderr. */
void llama_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Progress and results, rank 0 (or before the communicator exists) only, on stdout. */
void llama_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Open @p path read-only; it must be a regular file. Its descriptor, and its size in
 *  @p size_p; -1 with the cause logged (the caller's status: SHARC_ERR_IO). */
int llama_open_file(const char *path, uint64_t *size_p);

/** Write all @p bytes to @p fd (retrying short writes and EINTR); SHARC_ERR_IO naming @p path. */
sharc_status_t llama_write_all(int fd, const char *path, const void *buf, size_t bytes);

/** Seconds from a monotonic clock. */
double llama_now(void);

/** SplitMix64's mixing of @p x: counter-based random numbers (a key and a counter hashed), the
 *  same on every rank whatever it computes first. */
uint64_t llama_splitmix64(uint64_t x);

/** IEEE binary16 / bfloat16 bit patterns to f32 and back (round to nearest even). */
float llama_f16_to_f32(uint16_t h);
float llama_bf16_to_f32(uint16_t b);
uint16_t llama_f32_to_bf16(float f);
uint16_t llama_f32_to_f16(float f);

#endif
