/* SPDX-License-Identifier: BSD-3-Clause */
// coll_list.cpp: the C++ sharc backend's collectives of several tensors: all-to-all (even:
// one sharc_alltoall; uneven and lists: padded to the largest block, which the ranks agree
// on with an all-reduce of the maximum), all_gather_coalesced (packed as bytes into one
// all-gather), and the coalesced calls (one Work over the Works of each pair).
#include "backend.hpp"

#include <ATen/core/ivalue.h>

#include "util.hpp"

namespace sharc_torch
{

using c10d::OpType;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

namespace
{

// Several Works as one: done when all are; its future has every output.
class WorkList : public c10d::Work
{
  public:
    WorkList(int rank, std::vector<WorkPtr> works, std::vector<at::Tensor> outputs)
        : c10d::Work(rank, OpType::COALESCED), works_(std::move(works)),
          outputs_(std::move(outputs))
    {
    }
    bool isCompleted() override
    {
        for (auto &w : works_) {
            if (!w->isCompleted()) {
                return false;
            }
        }
        return true;
    }
    bool isSuccess() const override
    {
        for (auto &w : works_) {
            if (!w->isSuccess()) {
                return false;
            }
        }
        return true;
    }
    std::exception_ptr exception() const override
    {
        for (auto &w : works_) {
            if (auto e = w->exception()) {
                return e;
            }
        }
        return nullptr;
    }
    std::vector<at::Tensor> result() override
    {
        return outputs_;
    }
    bool wait(std::chrono::milliseconds timeout) override
    {
        for (auto &w : works_) {
            w->wait(timeout);
        }
        return true;
    }
    void synchronize() override
    {
        wait(kNoTimeout);
    }
    uint64_t getSequencenumber() const override
    {
        return works_.empty() ? 0 : works_.back()->getSequencenumber();
    }
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(
            c10::FutureType::create(c10::ListType::create(c10::TensorType::get())));
        for (auto &w : works_) {
            futures.push_back(w->getFuture());
        }
        std::vector<at::Tensor> outputs = outputs_;
        return c10::collectAll(futures)->then(
            [outputs](c10::ivalue::Future &all) {
                for (const auto &f : all.value().toList()) {
                    auto fut = f.get().toFuture();
                    if (fut->hasError()) {
                        fut->value(); // rethrows its error
                    }
                }
                return c10::IValue(outputs);
            },
            c10::ListType::create(c10::TensorType::get()));
    }

  private:
    std::vector<WorkPtr> works_;
    std::vector<at::Tensor> outputs_;
};

} // namespace

WorkPtr ProcessGroupSharc::coalesce(const char *name, const std::vector<at::Tensor> &outputs,
                                    const std::function<WorkPtr(size_t)> &one)
{
    (void)name;
    checkUsable(name);
    InnerCalls one_call(seq_++);
    std::vector<WorkPtr> works;
    for (size_t i = 0; i < outputs.size(); i++) {
        works.push_back(one(i));
    }
    return c10::make_intrusive<WorkList>(getRank(), std::move(works), outputs);
}

WorkPtr ProcessGroupSharc::allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                               std::vector<at::Tensor> &inputs,
                                               const c10d::AllgatherOptions &opts)
{
    // torch indexes @outputs [rank][tensor]: outputs[r][i] receives rank r's inputs[i]; the
    // inputs (any shapes and dtypes) are packed as bytes, gathered at once, and unpacked
    const char *name = "all_gather_coalesced";
    SHARC_TORCH_INVALID((int)outputs.size() == getSize(), name, ": ", outputs.size(),
                        " output lists for a world size of ", getSize(), " (one per rank)");
    Post post;
    std::vector<at::Tensor> ins, keep;
    std::vector<std::vector<at::Tensor>> outs(outputs.size());
    for (size_t r = 0; r < outputs.size(); r++) {
        SHARC_TORCH_INVALID(outputs[r].size() == inputs.size(), name, ": the output list of rank ",
                            r, " has ", outputs[r].size(), " tensors, the input list ",
                            inputs.size());
        for (size_t i = 0; i < inputs.size(); i++) {
            checkSame(name, outputs[r][i], inputs[i], "an output");
            SHARC_TORCH_INVALID(outputs[r][i].numel() == inputs[i].numel(), name,
                                ": an output tensor has ", outputs[r][i].numel(),
                                " elements, its input ", inputs[i].numel());
            outs[r].push_back(writable(name, outputs[r][i], post));
            keep.push_back(outputs[r][i]);
        }
    }
    std::vector<at::Tensor> bytes;
    for (const at::Tensor &t : inputs) {
        ins.push_back(readable(name, t));
        bytes.push_back(ins.back().reshape(-1).view(at::kByte));
        keep.push_back(t);
    }
    at::TensorOptions byteOpts = at::TensorOptions(at::kByte).device(
        inputs.empty() ? at::Device(at::kCPU) : inputs[0].device());
    at::Tensor packed = bytes.empty() ? at::empty({0}, byteOpts) : at::cat(bytes);
    int64_t total = packed.numel();
    at::Tensor flat = at::empty({total * getSize()}, byteOpts);
    // the unpacking runs before the fixups that copy non-contiguous outputs back
    post.fixups.insert(post.fixups.begin(), [flat, outs]() mutable {
        int64_t off = 0;
        for (auto &lst : outs) {
            for (at::Tensor &o : lst) {
                int64_t nb = o.numel() * o.element_size();
                o.reshape(-1).view(at::kByte).copy_(flat.narrow(0, off, nb));
                off += nb;
            }
        }
    });
    post.keep = {packed, flat};
    for (auto &lst : outputs) {
        post.outputs.insert(post.outputs.end(), lst.begin(), lst.end());
    }
    const void *s = packed.data_ptr();
    void *r = flat.data_ptr();
    sharc_comm_h comm = comm_;
    return start(name, "sharc_allgather", OpType::ALLGATHER_COALESCED, keep, opts.timeout,
                 std::move(post), {[=](sharc_request_h *req) {
                     return sharc_allgather(s, r, total, SHARC_DTYPE_U8, comm, req);
                 }});
}

// All-to-all of blocks of any sizes: every rank learns the largest block (an all-reduce of
// the maximum, on the host), pads its blocks to it, and the exchange is one sharc_alltoall.
WorkPtr ProcessGroupSharc::alltoallv(const char *name, std::vector<at::Tensor> in,
                                     std::vector<at::Tensor> out, Post post,
                                     std::chrono::milliseconds timeout)
{
    int64_t big = 0;
    for (auto *list : {&in, &out}) {
        for (const at::Tensor &b : *list) {
            big = std::max<int64_t>(big, b.numel());
        }
    }
    checkUsable(name);
    unsigned long mark = errorMark();
    sharc_status_t status =
        sharc_allreduce(&big, &big, 1, SHARC_DTYPE_I64, SHARC_OP_MAX, comm_, nullptr);
    if (status != SHARC_OK) {
        std::rethrow_exception(failure(status, name, mark));
    }
    at::Tensor send = at::zeros({getSize() * big}, in[0].options());
    at::Tensor recv = at::empty({getSize() * big}, in[0].options());
    for (int j = 0; j < getSize(); j++) {
        send.narrow(0, j * big, in[j].numel()).copy_(in[j]);
    }
    post.fixups.insert(post.fixups.begin(), [recv, out, big]() mutable {
        for (size_t j = 0; j < out.size(); j++) {
            out[j].copy_(recv.narrow(0, j * big, out[j].numel()));
        }
    });
    size_t count;
    sharc_dtype_t dtype = moveDtype(send, &count);
    count /= getSize();
    std::vector<at::Tensor> keep = post.keep;
    post.keep = {send, recv};
    const void *s = send.data_ptr();
    void *r = recv.data_ptr();
    sharc_comm_h comm = comm_;
    return start(
        name, "sharc_alltoall", OpType::ALLTOALL, keep, timeout, std::move(post),
        {[=](sharc_request_h *req) { return sharc_alltoall(s, r, count, dtype, comm, req); }});
}

static std::vector<int64_t> splitsOr(const std::vector<int64_t> &splits, int64_t rows, int n)
{
    return splits.empty() ? std::vector<int64_t>(n, rows / n) : splits;
}

static std::string joined(const std::vector<int64_t> &v)
{
    std::string s = "[";
    for (size_t i = 0; i < v.size(); i++) {
        s += (i ? ", " : "") + std::to_string(v[i]);
    }
    return s + "]";
}

WorkPtr ProcessGroupSharc::alltoall_base(at::Tensor &output, at::Tensor &input,
                                         std::vector<int64_t> &outputSplits,
                                         std::vector<int64_t> &inputSplits,
                                         const c10d::AllToAllOptions &opts)
{
    const char *name = "all_to_all_single";
    int n = getSize();
    checkSame(name, output, input, "output");
    Post post;
    if (outputSplits.empty() && inputSplits.empty()) {
        SHARC_TORCH_INVALID(input.numel() == output.numel() && input.numel() % n == 0, name,
                            ": input (", input.numel(), " elements) and output (", output.numel(),
                            ") must be equal and divide by the world size (", n,
                            ") without split sizes");
        auto [in, out] = oneEach(name, output, input, Shape::SAME, post);
        size_t count;
        sharc_dtype_t dtype = moveDtype(in, &count);
        count /= n;
        const void *s = in.data_ptr();
        void *r = out.data_ptr();
        sharc_comm_h comm = comm_;
        return start(name, "sharc_alltoall", OpType::ALLTOALL_BASE, {output, input}, opts.timeout,
                     std::move(post), {[=](sharc_request_h *req) {
                         return sharc_alltoall(s, r, count, dtype, comm, req);
                     }});
    }
    // uneven: dim-0 rows per peer
    int64_t rowsIn = input.dim() ? input.size(0) : 1, rowsOut = output.dim() ? output.size(0) : 1;
    int64_t rowIn = rowsIn ? input.numel() / rowsIn : 1;
    int64_t rowOut = rowsOut ? output.numel() / rowsOut : 1;
    std::vector<int64_t> ins = splitsOr(inputSplits, rowsIn, n);
    std::vector<int64_t> outs = splitsOr(outputSplits, rowsOut, n);
    bool fits = (int)ins.size() == n && (int)outs.size() == n &&
                std::accumulate(ins.begin(), ins.end(), int64_t(0)) == rowsIn &&
                std::accumulate(outs.begin(), outs.end(), int64_t(0)) == rowsOut &&
                (rowIn == rowOut || !input.numel() || !output.numel());
    SHARC_TORCH_INVALID(fits, name, ": split sizes ", joined(ins), " / ", joined(outs),
                        " do not fit input rows ", rowsIn, " / output rows ", rowsOut,
                        " for a world size of ", n);
    at::Tensor in = readable(name, input).reshape(-1);
    at::Tensor out = writable(name, output, post).reshape(-1);
    std::vector<at::Tensor> bin, bout;
    int64_t oi = 0, oo = 0;
    for (int j = 0; j < n; j++) {
        bin.push_back(in.narrow(0, oi * rowIn, ins[j] * rowIn));
        bout.push_back(out.narrow(0, oo * rowOut, outs[j] * rowOut));
        oi += ins[j];
        oo += outs[j];
    }
    post.keep = {output, input};
    post.outputs = {output};
    return alltoallv(name, bin, bout, std::move(post), opts.timeout);
}

WorkPtr ProcessGroupSharc::alltoall(std::vector<at::Tensor> &outputs,
                                    std::vector<at::Tensor> &inputs,
                                    const c10d::AllToAllOptions &opts)
{
    const char *name = "all_to_all";
    SHARC_TORCH_INVALID((int)outputs.size() == getSize() && (int)inputs.size() == getSize(), name,
                        ": ", inputs.size(), " inputs and ", outputs.size(),
                        " outputs for a world size of ", getSize());
    Post post;
    std::vector<at::Tensor> bin, bout;
    for (const at::Tensor &t : inputs) {
        checkSame(name, t, inputs[0], "a tensor");
        bin.push_back(readable(name, t).reshape(-1));
    }
    for (const at::Tensor &t : outputs) {
        checkSame(name, t, inputs[0], "a tensor");
        bout.push_back(writable(name, t, post).reshape(-1));
    }
    post.keep = inputs;
    post.keep.insert(post.keep.end(), outputs.begin(), outputs.end());
    post.outputs = outputs;
    return alltoallv(name, bin, bout, std::move(post), opts.timeout);
}

} // namespace sharc_torch
