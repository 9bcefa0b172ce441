/* SPDX-License-Identifier: BSD-3-Clause */
// coll_list.cpp: the C++ sharc backend's collectives of several tensors or blocks: all-to-all
// (even: one sharc_alltoall; with split sizes and lists: one sharc_alltoallv, a list packed
// into one buffer each way), all_gather_coalesced (packed as bytes into one all-gather), and
// the coalesced calls (one Work over the Works of each pair).
#include "backend.hpp"

#include <numeric>

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

// All-to-all of blocks of any sizes, one sharc_alltoallv: @send and @recv are contiguous, of
// one dtype, block j of @send (@scounts[j] elements, one after another) goes to rank j, and
// block i of @recv (@rcounts[i]) comes from rank i.
WorkPtr ProcessGroupSharc::alltoallv(const char *name, at::Tensor send, at::Tensor recv,
                                     const std::vector<int64_t> &scounts,
                                     const std::vector<int64_t> &rcounts, Post post,
                                     std::chrono::milliseconds timeout)
{
    size_t count, per;
    sharc_dtype_t dtype = moveDtype(send.numel() ? send : recv, &count);
    per = count / std::max<int64_t>(1, send.numel() ? send.numel() : recv.numel());
    // sharc's elements: a tensor element may travel as several (complex as float pairs)
    std::vector<size_t> sc, rc;
    for (size_t j = 0; j < scounts.size(); j++) {
        sc.push_back((size_t)scounts[j] * per);
        rc.push_back((size_t)rcounts[j] * per);
    }
    std::vector<at::Tensor> keep = post.keep;
    post.keep = {send, recv};
    const void *s = send.data_ptr();
    void *r = recv.data_ptr();
    sharc_comm_h comm = comm_;
    return start(name, "sharc_alltoallv", OpType::ALLTOALL, keep, timeout, std::move(post),
                 {[=](sharc_request_h *req) {
                     return sharc_alltoallv(s, sc.data(), nullptr, r, rc.data(), nullptr, dtype,
                                            comm, req);
                 }});
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
    std::vector<int64_t> sc, rc;
    for (int j = 0; j < n; j++) {
        sc.push_back(ins[j] * rowIn);
        rc.push_back(outs[j] * rowOut);
    }
    post.keep = {output, input};
    post.outputs = {output};
    return alltoallv(name, in, out, sc, rc, std::move(post), opts.timeout);
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
    std::vector<at::Tensor> bin;
    std::vector<int64_t> sc, rc;
    for (const at::Tensor &t : inputs) {
        checkSame(name, t, inputs[0], "a tensor");
        bin.push_back(t.reshape(-1));
        sc.push_back(t.numel());
    }
    int64_t total = 0;
    for (const at::Tensor &t : outputs) {
        checkSame(name, t, inputs[0], "a tensor");
        rc.push_back(t.numel());
        total += t.numel();
    }
    // the list into one buffer each way; the received blocks back into the list
    at::Tensor send = at::cat(bin), recv = at::empty({total}, inputs[0].options());
    post.fixups.push_back([recv, outputs, rc]() mutable {
        int64_t at = 0;
        for (size_t j = 0; j < outputs.size(); j++) {
            outputs[j].copy_(recv.narrow(0, at, rc[j]).view_as(outputs[j]));
            at += rc[j];
        }
    });
    post.keep = inputs;
    post.keep.insert(post.keep.end(), outputs.begin(), outputs.end());
    post.outputs = outputs;
    return alltoallv(name, send, recv, sc, rc, std::move(post), opts.timeout);
}

} // namespace sharc_torch
