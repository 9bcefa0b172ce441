/* SPDX-License-Identifier: BSD-3-Clause */
// util.cpp: dtypes and reductions of torch's arguments as sharc's (by sharc's names),
// contiguous stand-ins, and sharc's statuses as torch's exceptions. Nothing here posts.
#include "util.hpp"

#include <c10/util/Exception.h>

namespace sharc_torch
{

std::string dtypeName(at::ScalarType t)
{
    return "torch." + std::string(c10::getDtypeNames(t).first);
}

static std::optional<sharc_dtype_t> sharcDtype(at::ScalarType t)
{
    switch (t) {
    case at::kFloat: return SHARC_DTYPE_F32;
    case at::kDouble: return SHARC_DTYPE_F64;
    case at::kHalf: return SHARC_DTYPE_F16;
    case at::kBFloat16: return SHARC_DTYPE_BF16;
    case at::kInt: return SHARC_DTYPE_I32;
    case at::kLong: return SHARC_DTYPE_I64;
    case at::kByte: return SHARC_DTYPE_U8;
    default: return std::nullopt;
    }
}

static std::optional<sharc_op_t> sharcOp(c10d::ReduceOp::RedOpType op)
{
    switch (op) {
    case c10d::ReduceOp::SUM: return SHARC_OP_SUM;
    case c10d::ReduceOp::AVG: return SHARC_OP_AVG;
    case c10d::ReduceOp::PRODUCT: return SHARC_OP_PROD;
    case c10d::ReduceOp::MIN: return SHARC_OP_MIN;
    case c10d::ReduceOp::MAX: return SHARC_OP_MAX;
    default: return std::nullopt;
    }
}

static const char *opName(c10d::ReduceOp::RedOpType op)
{
    switch (op) {
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::UNUSED: return "UNUSED";
    default: return "?";
    }
}

// PREMUL_SUM(f): sum(f * x_i) = f * sum(x_i), so the factor scales the result
static double premulFactor(const c10d::ReduceOp &op)
{
    auto *sup = dynamic_cast<c10d::PreMulSumSupplement *>(op.supplement_.get());
    TORCH_CHECK(sup != nullptr, "PREMUL_SUM without its factor");
    return sup->tensor_factor.defined() ? sup->tensor_factor.item<double>() : sup->double_factor;
}

Reduction reduction(const char *name, const at::Tensor &t, const c10d::ReduceOp &reduceOp)
{
    c10d::ReduceOp::RedOpType kind = reduceOp.op_;
    std::optional<double> scale;

    if (kind == c10d::ReduceOp::PREMUL_SUM) {
        scale = premulFactor(reduceOp);
        kind = c10d::ReduceOp::SUM;
    }
    auto op = sharcOp(kind);
    SHARC_TORCH_UNSUPPORTED(op.has_value(), name, ": ReduceOp.", opName(kind),
                            " is not supported by the sharc backend (sharc reduces with SUM, "
                            "AVG, PRODUCT, MIN, MAX and PREMUL_SUM)");
    size_t n = t.numel();
    if (auto d = sharcDtype(t.scalar_type())) {
        return {*d, *op, n, scale};
    }
    if (t.is_complex() && (*op == SHARC_OP_SUM || *op == SHARC_OP_AVG)) {
        // complex sums and averages are those of their real and imaginary parts
        auto d = sharcDtype(c10::toRealValueType(t.scalar_type()));
        return {*d, *op, 2 * n, scale};
    }
    if (t.scalar_type() == at::kBool && (*op == SHARC_OP_MIN || *op == SHARC_OP_MAX)) {
        return {SHARC_DTYPE_U8, *op, n, scale}; // MIN is AND, MAX is OR on 0/1 bytes
    }
    SHARC_TORCH_UNSUPPORTED(false, name, ": dtype ", dtypeName(t.scalar_type()),
                            " cannot be reduced by the sharc backend (sharc reduces float32, "
                            "float64, float16, bfloat16, int32, int64, uint8; complex with "
                            "SUM/AVG; bool with MIN/MAX)");
}

sharc_dtype_t moveDtype(const at::Tensor &t, size_t *count)
{
    if (auto d = sharcDtype(t.scalar_type())) {
        *count = t.numel();
        return *d;
    }
    *count = t.numel() * t.element_size();
    return SHARC_DTYPE_U8;
}

void checkDense(const char *name, const at::Tensor &t, const char *what)
{
    SHARC_TORCH_INVALID(t.defined(), name, ": ", what, " is not a tensor");
    SHARC_TORCH_UNSUPPORTED(t.layout() == at::kStrided, name, ": ", what, " is a ", t.layout(),
                            " tensor; the sharc backend takes dense tensors (sparse tensors "
                            "are not supported)");
}

void checkSame(const char *name, const at::Tensor &a, const at::Tensor &b, const char *what)
{
    SHARC_TORCH_INVALID(a.scalar_type() == b.scalar_type(), name, ": ", what, " dtype ",
                        dtypeName(a.scalar_type()), " differs from the input's ",
                        dtypeName(b.scalar_type()));
    SHARC_TORCH_INVALID(a.device() == b.device(), name, ": ", what, " is on ", a.device(),
                        ", the input on ", b.device());
}

at::Tensor readable(const char *name, const at::Tensor &t, const char *what)
{
    checkDense(name, t, what);
    return t.is_contiguous() ? t : t.contiguous();
}

at::Tensor writable(const char *name, const at::Tensor &t, Post &post, const char *what)
{
    checkDense(name, t, what);
    if (t.is_contiguous()) {
        return t;
    }
    at::Tensor tmp = at::empty_like(t, at::MemoryFormat::Contiguous);
    at::Tensor dst = t;
    post.fixups.push_back([dst, tmp]() mutable { dst.copy_(tmp); });
    return tmp;
}

std::string loggedSince(unsigned long mark)
{
    char buf[8192];
    std::string s;

    buf[0] = '\0';
    sharc_log_errors(mark, buf, sizeof(buf));
    s = buf;
    while (!s.empty() && s.back() == '\n') {
        s.pop_back();
    }
    for (size_t i = 0; (i = s.find('\n', i)) != std::string::npos;) {
        s.replace(i, 1, "; ");
    }
    return s;
}

std::exception_ptr sharcError(sharc_status_t status, const std::string &message)
{
    // the classes torch's own backends raise: a bad argument is a ValueError, what is not
    // done a NotImplementedError, a failed collective a DistBackendError
    try {
        switch (status) {
        case SHARC_ERR_INVALID: C10_THROW_ERROR(ValueError, message);
        case SHARC_ERR_UNSUPPORTED: C10_THROW_ERROR(NotImplementedError, message);
        case SHARC_ERR_NOMEM: C10_THROW_ERROR(Error, message);
        default: C10_THROW_ERROR(DistBackendError, message);
        }
    } catch (...) {
        return std::current_exception();
    }
}

} // namespace sharc_torch
