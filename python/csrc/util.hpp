/* SPDX-License-Identifier: BSD-3-Clause */
// util.hpp: torch's arguments as sharc takes them, for the C++ backend (backend.cpp):
// dtypes and reductions by sharc's names, contiguous stand-ins, and errors as torch raises
// them (ValueError, NotImplementedError, DistBackendError) carrying sharc's message.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <sharc/sharc.h>

#include "backend.hpp"

namespace sharc_torch
{

// A reduction as sharc runs it: dtype, op, element count, and a factor to scale the result
// by afterwards (PREMUL_SUM), else nullopt.
struct Reduction {
    sharc_dtype_t dtype;
    sharc_op_t op;
    size_t count;
    std::optional<double> scale;
};

// "torch.float32" and so on, as torch prints a dtype.
std::string dtypeName(at::ScalarType t);

// The reduction of @t by @op, or NotImplementedError naming what sharc does not reduce.
Reduction reduction(const char *name, const at::Tensor &t, const c10d::ReduceOp &op);

// sharc's dtype of @t where sharc has it; data that is only moved goes as bytes otherwise.
sharc_dtype_t moveDtype(const at::Tensor &t, size_t *count);

// A dense tensor (NotImplementedError for sparse ones, ValueError for non-tensors).
void checkDense(const char *name, const at::Tensor &t, const char *what);
// @a and @b agree in dtype and device (ValueError naming @what otherwise).
void checkSame(const char *name, const at::Tensor &a, const at::Tensor &b, const char *what);
// @t, or a contiguous copy of it.
at::Tensor readable(const char *name, const at::Tensor &t, const char *what = "input");
// @t, or a contiguous stand-in that a fixup copies back into @t once the collective is done.
at::Tensor writable(const char *name, const at::Tensor &t, Post &post, const char *what = "output");

// The exception for a failed sharc call: its status's class, "call: status: sharc's log".
std::exception_ptr sharcError(sharc_status_t status, const std::string &message);
// The errors sharc logged after @mark ("; " between them).
std::string loggedSince(unsigned long mark);
inline unsigned long errorMark()
{
    return sharc_log_errors(0, nullptr, 0);
}

} // namespace sharc_torch

// Bad arguments, raised before anything is posted: ValueError / NotImplementedError.
#define SHARC_TORCH_INVALID(cond, ...)     TORCH_CHECK_VALUE(cond, __VA_ARGS__)
#define SHARC_TORCH_UNSUPPORTED(cond, ...) TORCH_CHECK_NOT_IMPLEMENTED(cond, __VA_ARGS__)
