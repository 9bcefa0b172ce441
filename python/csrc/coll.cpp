/* SPDX-License-Identifier: BSD-3-Clause */
// coll.cpp: torch's collectives of one tensor each on the C++ sharc backend, each one sharc
// collective (sharc_allreduce, sharc_reduce, sharc_gather, ...) on contiguous buffers, packed
// into or unpacked from one buffer where torch hands a list. Lists and all-to-all are
// coll_list.cpp's, point-to-point p2p.cpp's.
#include "backend.hpp"


#include "util.hpp"

namespace sharc_torch
{

using c10d::OpType;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// (contiguous input, contiguous output) of a collective of one tensor each: @shape says
// how their sizes relate (GATHER: the output is world size x the input; SCATTER: the input is
// world size x the output; SAME: equal, checked by the caller); both kept by @post.
std::pair<at::Tensor, at::Tensor> ProcessGroupSharc::oneEach(const char *name, at::Tensor &output,
                                                             at::Tensor &input, Shape shape,
                                                             Post &post)
{
    bool gather = shape == Shape::GATHER;
    const at::Tensor &big = gather ? output : input, &small = gather ? input : output;
    checkSame(name, output, input, "output");
    SHARC_TORCH_INVALID(shape == Shape::SAME || big.numel() == small.numel() * getSize(), name,
                        ": ", gather ? "output" : "input", " has ", big.numel(),
                        " elements, not world size (", getSize(), ") x ",
                        gather ? "input" : "output", "'s ", small.numel());
    at::Tensor in = readable(name, input);
    at::Tensor out = writable(name, output, post);
    post.keep = {in, out};
    post.outputs = {output};
    return {in, out};
}

// -- reductions -----------------------------------------------------------------------------

// The post of an in-place all-reduce of @t (through a contiguous stand-in if need be).
ProcessGroupSharc::PostFn ProcessGroupSharc::allreducePost(const char *name, at::Tensor &t,
                                                           const c10d::ReduceOp &op, Post &post)
{
    Reduction red = reduction(name, t, op);
    at::Tensor c = writable(name, t, post, "tensor");
    if (!c.is_same(t)) {
        c.copy_(t);
    }
    if (red.scale) {
        double f = *red.scale;
        post.fixups.insert(post.fixups.begin(), [c, f]() mutable { c.mul_(f); });
    }
    post.keep.push_back(c);
    void *p = c.data_ptr();
    sharc_comm_h comm = comm_;
    return [=](sharc_request_h *req) {
        return sharc_allreduce(p, p, red.count, red.dtype, red.op, comm, req);
    };
}

WorkPtr ProcessGroupSharc::allreduce(std::vector<at::Tensor> &tensors,
                                     const c10d::AllreduceOptions &opts)
{
    const char *name = tensors.size() == 1 ? "allreduce" : "allreduce_coalesced";
    Post post;
    std::vector<PostFn> calls;
    for (at::Tensor &t : tensors) {
        calls.push_back(allreducePost(name, t, opts.reduceOp, post));
    }
    post.outputs = tensors;
    return start(name, "sharc_allreduce", OpType::ALLREDUCE, tensors, opts.timeout, std::move(post),
                 calls);
}

WorkPtr ProcessGroupSharc::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                               const c10d::AllreduceCoalescedOptions &opts)
{
    return allreduce(tensors, opts);
}

WorkPtr ProcessGroupSharc::allreduce_sparse(std::vector<at::Tensor> &,
                                            const c10d::AllreduceOptions &)
{
    SHARC_TORCH_UNSUPPORTED(false, "allreduce_sparse: sparse tensors are not supported by the "
                                   "sharc backend (sharc reduces dense buffers)");
}

// A reduce-scatter of @input into @output, over the wire of @opts where given
// (sharc_reduce_scatter_ex: NULL is the plain collective).
WorkPtr ProcessGroupSharc::scatterFrom(const char *name, at::Tensor &output, at::Tensor &input,
                                       const c10d::ReduceOp &op, std::chrono::milliseconds timeout,
                                       const sharc_coll_opts_t *opts)
{
    Post post;
    auto [in, out] = oneEach(name, output, input, Shape::SCATTER, post);
    Reduction red = reduction(name, output, op);
    if (red.scale) {
        double f = *red.scale;
        post.fixups.insert(post.fixups.begin(), [out = out, f]() mutable { out.mul_(f); });
    }
    const void *s = in.data_ptr();
    void *r = out.data_ptr();
    sharc_comm_h comm = comm_;
    std::optional<sharc_coll_opts_t> o;
    if (opts != nullptr) {
        o = *opts;
    }
    return start(
        name, o ? "sharc_reduce_scatter_ex" : "sharc_reduce_scatter", OpType::_REDUCE_SCATTER_BASE,
        {output, input}, timeout, std::move(post), {[=](sharc_request_h *req) {
            return o ? sharc_reduce_scatter_ex(s, r, red.count, red.dtype, red.op, &*o, comm, req)
                     : sharc_reduce_scatter(s, r, red.count, red.dtype, red.op, comm, req);
        }});
}

WorkPtr ProcessGroupSharc::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                const c10d::ReduceScatterOptions &opts)
{
    return scatterFrom("reduce_scatter_tensor", output, input, opts.reduceOp, opts.timeout,
                       nullptr);
}

WorkPtr ProcessGroupSharc::reduceScatterWire(at::Tensor &output, at::Tensor &input,
                                             const c10d::ReduceOp &op, sharc_wire_t wire,
                                             size_t block)
{
    sharc_coll_opts_t o = {};
    o.field_mask = SHARC_COLL_OPT_WIRE | (block ? SHARC_COLL_OPT_BLOCK : 0u);
    o.wire = wire;
    o.block = block;
    return scatterFrom("reduce_scatter_tensor", output, input, op, c10d::kUnsetTimeout, &o);
}

WorkPtr ProcessGroupSharc::reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                           std::vector<at::Tensor> &inputs,
                                                           const c10d::ReduceScatterOptions &opts)
{
    // one Work per pair, one Work for the caller: the last one's completion implies the
    // others' (sharc completes a communicator's collectives in posting order)
    SHARC_TORCH_INVALID(outputs.size() == inputs.size(),
                        "reduce_scatter_tensor_coalesced: ", outputs.size(), " outputs for ",
                        inputs.size(), " inputs");
    return coalesce("reduce_scatter_tensor_coalesced", outputs,
                    [&](size_t i) { return _reduce_scatter_base(outputs[i], inputs[i], opts); });
}

WorkPtr ProcessGroupSharc::reduce_scatter(std::vector<at::Tensor> &outputs,
                                          std::vector<std::vector<at::Tensor>> &inputs,
                                          const c10d::ReduceScatterOptions &opts)
{
    const char *name = "reduce_scatter";
    SHARC_TORCH_UNSUPPORTED(outputs.size() == 1 && inputs.size() == 1, name,
                            ": one output tensor per rank only (got ", outputs.size(), ")");
    at::Tensor &out = outputs[0];
    SHARC_TORCH_INVALID((int)inputs[0].size() == getSize(), name, ": ", inputs[0].size(),
                        " input tensors for a world size of ", getSize());
    std::vector<at::Tensor> flat;
    for (const at::Tensor &in : inputs[0]) {
        checkSame(name, out, in, "the output");
        SHARC_TORCH_INVALID(in.numel() == out.numel(), name, ": an input tensor has ", in.numel(),
                            " elements, the output ", out.numel());
        flat.push_back(in.reshape(-1));
    }
    at::Tensor cat = at::cat(flat);
    return _reduce_scatter_base(out, cat, opts);
}

// A reduction to the root, in place (the root's tensor gets the result; the others' are
// left as they were, where torch leaves them unspecified).
WorkPtr ProcessGroupSharc::reduce(std::vector<at::Tensor> &tensors, const c10d::ReduceOptions &opts)
{
    const char *name = "reduce";
    SHARC_TORCH_UNSUPPORTED(tensors.size() == 1, name, ": one tensor per rank only");
    at::Tensor t = tensors[0];
    Reduction red = reduction(name, t, opts.reduceOp);
    Post post;
    at::Tensor c = writable(name, t, post, "tensor");
    if (!c.is_same(t)) {
        c.copy_(t);
    }
    int root = (int)opts.rootRank;
    if (red.scale && getRank() == root) {
        double f = *red.scale;
        post.fixups.insert(post.fixups.begin(), [c, f]() mutable { c.mul_(f); });
    }
    post.keep = {c};
    post.outputs = tensors;
    void *p = c.data_ptr();
    sharc_comm_h comm = comm_;
    return start(name, "sharc_reduce", OpType::REDUCE, tensors, opts.timeout, std::move(post),
                 {[=](sharc_request_h *req) {
                     return sharc_reduce(p, p, red.count, red.dtype, red.op, root, comm, req);
                 }});
}

// -- data movement ----------------------------------------------------------------------------

WorkPtr ProcessGroupSharc::broadcast(std::vector<at::Tensor> &tensors,
                                     const c10d::BroadcastOptions &opts)
{
    const char *name = "broadcast";
    SHARC_TORCH_UNSUPPORTED(tensors.size() == 1 && opts.rootTensor == 0, name,
                            ": one tensor per rank only (got ", tensors.size(), ")");
    Post post;
    at::Tensor c = writable(name, tensors[0], post, "tensor");
    if (!c.is_same(tensors[0])) {
        c.copy_(tensors[0]);
    }
    size_t count;
    sharc_dtype_t dtype = moveDtype(c, &count);
    post.keep = {c};
    post.outputs = tensors;
    void *p = c.data_ptr();
    int root = (int)opts.rootRank;
    sharc_comm_h comm = comm_;
    return start(name, "sharc_broadcast", OpType::BROADCAST, tensors, opts.timeout, std::move(post),
                 {[=](sharc_request_h *req) {
                     return sharc_broadcast(p, p, count, dtype, root, comm, req);
                 }});
}

// An all-gather of @input into @output, over the wire of @opts where given
// (sharc_allgather_ex: NULL is the plain collective).
WorkPtr ProcessGroupSharc::gatherInto(const char *name, at::Tensor &output, at::Tensor &input,
                                      std::chrono::milliseconds timeout,
                                      const sharc_coll_opts_t *opts)
{
    Post post;
    auto [in, out] = oneEach(name, output, input, Shape::GATHER, post);
    size_t count;
    sharc_dtype_t dtype = moveDtype(in, &count);
    const void *s = in.data_ptr();
    void *r = out.data_ptr();
    sharc_comm_h comm = comm_;
    std::optional<sharc_coll_opts_t> o;
    if (opts != nullptr) {
        o = *opts; // (sharc refuses a wire for data it cannot quantize, saying so)
    }
    return start(name, o ? "sharc_allgather_ex" : "sharc_allgather", OpType::_ALLGATHER_BASE,
                 {output, input}, timeout, std::move(post), {[=](sharc_request_h *req) {
                     return o ? sharc_allgather_ex(s, r, count, dtype, &*o, comm, req)
                              : sharc_allgather(s, r, count, dtype, comm, req);
                 }});
}

WorkPtr ProcessGroupSharc::_allgather_base(at::Tensor &output, at::Tensor &input,
                                           const c10d::AllgatherOptions &opts)
{
    return gatherInto("all_gather_into_tensor", output, input, opts.timeout, nullptr);
}

WorkPtr ProcessGroupSharc::allgatherWire(at::Tensor &output, at::Tensor &input, sharc_wire_t wire,
                                         size_t block)
{
    sharc_coll_opts_t o = {};
    o.field_mask = SHARC_COLL_OPT_WIRE | (block ? SHARC_COLL_OPT_BLOCK : 0u);
    o.wire = wire;
    o.block = block;
    return gatherInto("all_gather_into_tensor", output, input, c10d::kUnsetTimeout, &o);
}

WorkPtr ProcessGroupSharc::allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                           std::vector<at::Tensor> &inputs,
                                                           const c10d::AllgatherOptions &opts)
{
    SHARC_TORCH_INVALID(outputs.size() == inputs.size(),
                        "all_gather_into_tensor_coalesced: ", outputs.size(), " outputs for ",
                        inputs.size(), " inputs");
    return coalesce("all_gather_into_tensor_coalesced", outputs,
                    [&](size_t i) { return _allgather_base(outputs[i], inputs[i], opts); });
}

// Every rank's @in into one buffer of world size x its shape, then copied into @outs: an
// all-gather (every rank), or a gather (@root >= 0: only the root has a buffer and a list).
WorkPtr ProcessGroupSharc::gatherList(const char *name, const at::Tensor &in, int root,
                                      std::vector<at::Tensor> outs, std::vector<at::Tensor> keep,
                                      std::chrono::milliseconds timeout)
{
    std::vector<int64_t> shape{getSize()};
    shape.insert(shape.end(), in.sizes().begin(), in.sizes().end());
    bool have = root < 0 || getRank() == root;
    at::Tensor flat = have ? at::empty(shape, in.options()) : at::Tensor();
    Post post;
    if (have) {
        post.fixups.push_back([flat, outs]() mutable {
            for (size_t i = 0; i < outs.size(); i++) {
                outs[i].copy_(flat[i].view_as(outs[i]));
            }
        });
    }
    size_t count;
    sharc_dtype_t dtype = moveDtype(in, &count);
    post.keep = {in};
    if (have) {
        post.keep.push_back(flat);
    }
    post.outputs = outs;
    const void *s = in.data_ptr();
    void *r = have ? flat.data_ptr() : nullptr;
    sharc_comm_h comm = comm_;
    if (root >= 0) {
        return start(name, "sharc_gather", OpType::GATHER, keep, timeout, std::move(post),
                     {[=](sharc_request_h *req) {
                         return sharc_gather(s, r, count, dtype, root, comm, req);
                     }});
    }
    return start(
        name, "sharc_allgather", OpType::ALLGATHER, keep, timeout, std::move(post),
        {[=](sharc_request_h *req) { return sharc_allgather(s, r, count, dtype, comm, req); }});
}

WorkPtr ProcessGroupSharc::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                     std::vector<at::Tensor> &inputs,
                                     const c10d::AllgatherOptions &opts)
{
    const char *name = "all_gather";
    SHARC_TORCH_UNSUPPORTED(inputs.size() == 1 && outputs.size() == 1, name,
                            ": one input tensor per rank only (got ", inputs.size(), ")");
    at::Tensor in = readable(name, inputs[0]);
    std::vector<at::Tensor> &outs = outputs[0];
    SHARC_TORCH_INVALID((int)outs.size() == getSize(), name, ": ", outs.size(),
                        " output tensors for a world size of ", getSize());
    for (const at::Tensor &o : outs) {
        checkSame(name, o, in, "an output");
        SHARC_TORCH_INVALID(o.numel() == in.numel(), name, ": an output tensor has ", o.numel(),
                            " elements, the input ", in.numel(), " (sharc gathers equal blocks)");
    }
    std::vector<at::Tensor> keep{in};
    keep.insert(keep.end(), outs.begin(), outs.end());
    return gatherList(name, in, -1, outs, keep, opts.timeout);
}

WorkPtr ProcessGroupSharc::gather(std::vector<std::vector<at::Tensor>> &outputs,
                                  std::vector<at::Tensor> &inputs, const c10d::GatherOptions &opts)
{
    const char *name = "gather";
    SHARC_TORCH_UNSUPPORTED(inputs.size() == 1, name, ": one input tensor per rank only");
    at::Tensor in = readable(name, inputs[0]);
    std::vector<at::Tensor> outs;
    if (getRank() == opts.rootRank) {
        SHARC_TORCH_INVALID(!outputs.empty() && (int)outputs[0].size() == getSize(), name,
                            ": the root needs one output tensor per rank");
        outs = outputs[0];
        for (const at::Tensor &o : outs) {
            checkSame(name, o, in, "an output");
            SHARC_TORCH_INVALID(o.numel() == in.numel(), name, ": an output tensor has ",
                                o.numel(), " elements, the input ", in.numel());
        }
    }
    return gatherList(name, in, (int)opts.rootRank, outs, {in}, opts.timeout);
}

WorkPtr ProcessGroupSharc::scatter(std::vector<at::Tensor> &outputs,
                                   std::vector<std::vector<at::Tensor>> &inputs,
                                   const c10d::ScatterOptions &opts)
{
    const char *name = "scatter";
    SHARC_TORCH_UNSUPPORTED(outputs.size() == 1, name, ": one output tensor per rank only");
    int root = (int)opts.rootRank;
    at::Tensor flat; // the root's blocks, one after another
    if (getRank() == root) {
        SHARC_TORCH_INVALID(inputs.size() == 1 && (int)inputs[0].size() == getSize(), name,
                            ": the root needs one input tensor per rank");
        std::vector<at::Tensor> blocks;
        for (const at::Tensor &t : inputs[0]) {
            checkSame(name, t, outputs[0], "an input");
            SHARC_TORCH_INVALID(t.numel() == outputs[0].numel(), name, ": an input tensor has ",
                                t.numel(), " elements, the output ", outputs[0].numel());
            blocks.push_back(t.reshape(-1));
        }
        flat = at::cat(blocks);
    }
    Post post;
    at::Tensor out = writable(name, outputs[0], post);
    size_t count;
    sharc_dtype_t dtype = moveDtype(out, &count);
    post.keep = {out};
    if (flat.defined()) {
        post.keep.push_back(flat);
    }
    post.outputs = outputs;
    const void *s = flat.defined() ? flat.data_ptr() : nullptr;
    void *r = out.data_ptr();
    sharc_comm_h comm = comm_;
    return start(name, "sharc_scatter", OpType::SCATTER, outputs, opts.timeout, std::move(post),
                 {[=](sharc_request_h *req) {
                     return sharc_scatter(s, r, count, dtype, root, comm, req);
                 }});
}

WorkPtr ProcessGroupSharc::barrier(const c10d::BarrierOptions &opts)
{
    sharc_comm_h comm = comm_;
    return start("barrier", "sharc_barrier", OpType::BARRIER, {}, opts.timeout, Post(),
                 {[=](sharc_request_h *req) { return sharc_barrier(comm, req); }});
}

} // namespace sharc_torch
