/* SPDX-License-Identifier: BSD-3-Clause */
// p2p.cpp: torch's point-to-point on the C++ sharc backend: send, recv and recv from any rank
// (isend / irecv / batch_isend_irecv are torch's calls of these), each one sharc_send or
// sharc_recv on the tensor's memory (CUDA tensors through sharc's NCCL path on the current
// stream); a receive's Work says its sender (sourceRank) from sharc_request_recv_info.
#include "backend.hpp"

#include "util.hpp"

namespace sharc_torch
{

using c10d::OpType;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// The one tensor of a send or a receive, with its peer checked (ValueError otherwise).
at::Tensor ProcessGroupSharc::p2pTensor(const char *name, std::vector<at::Tensor> &tensors,
                                        int peer, int tag)
{
    SHARC_TORCH_INVALID(tensors.size() == 1, name, ": one tensor only (got ", tensors.size(), ")");
    checkDense(name, tensors[0], "tensor");
    SHARC_TORCH_INVALID(peer == SHARC_ANY_SOURCE || (peer >= 0 && peer < getSize()), name,
                        ": rank ", peer, " is not a rank of the group (size ", getSize(), ")");
    SHARC_TORCH_INVALID(tag >= 0, name, ": the tag ", tag, " is negative (sharc's tags are 0 .. ",
                        SHARC_TAG_MAX, ")");
    return tensors[0];
}

// Sends and receives take no sequence number, as NCCL's (its collective sequence): gloo
// counts them on the two ranks only, and its debug wrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL)
// then finds the numbers differ at the next collective of a group larger than the pair.
WorkPtr ProcessGroupSharc::send(std::vector<at::Tensor> &tensors, int dst, int tag)
{
    const char *name = "send";
    InnerCalls uncounted(seq_.load());
    at::Tensor t = p2pTensor(name, tensors, dst, tag);
    Post post;
    at::Tensor c = readable(name, t, "tensor");
    size_t count;
    sharc_dtype_t dtype = moveDtype(c, &count);
    post.keep = {c};
    const void *p = c.data_ptr();
    sharc_comm_h comm = comm_;
    return start(
        name, "sharc_send", OpType::SEND, tensors, c10d::kUnsetTimeout, std::move(post),
        {[=](sharc_request_h *req) { return sharc_send(p, count, dtype, dst, tag, comm, req); }});
}

WorkPtr ProcessGroupSharc::recvFrom(const char *name, std::vector<at::Tensor> &tensors, int src,
                                    int tag)
{
    at::Tensor t = p2pTensor(name, tensors, src, tag);
    InnerCalls uncounted(seq_.load());
    Post post;
    at::Tensor c = writable(name, t, post, "tensor");
    size_t count;
    sharc_dtype_t dtype = moveDtype(c, &count);
    post.keep = {c};
    post.outputs = tensors;
    post.recv = true;
    post.source = src;
    void *p = c.data_ptr();
    sharc_comm_h comm = comm_;
    return start(
        name, "sharc_recv", OpType::RECV, tensors, c10d::kUnsetTimeout, std::move(post),
        {[=](sharc_request_h *req) { return sharc_recv(p, count, dtype, src, tag, comm, req); }});
}

WorkPtr ProcessGroupSharc::recv(std::vector<at::Tensor> &tensors, int src, int tag)
{
    return recvFrom("recv", tensors, src, tag);
}

// the Work's sourceRank() names the sender once it is done (torch's recv(src=None))
WorkPtr ProcessGroupSharc::recvAnysource(std::vector<at::Tensor> &tensors, int tag)
{
    return recvFrom("recv_anysource", tensors, SHARC_ANY_SOURCE, tag);
}

} // namespace sharc_torch
