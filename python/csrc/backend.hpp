/* SPDX-License-Identifier: BSD-3-Clause */
// backend.hpp: the "sharc" torch.distributed backend in C++: a c10d Backend over one sharc
// communicator (libsharc's public C API) and the Work it returns. Each torch collective
// posts sharc collectives and returns a WorkSharc that completes from their requests; CUDA
// tensors run on the current stream (sharc_comm_set_cuda_stream) and wait() makes the
// current stream wait (sharc_request_wait_stream), with no host synchronization. The
// rendezvous and the registration are Python's (sharc/torch/native.py).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <sharc/sharc.h>

namespace sharc_torch
{

class ProcessGroupSharc;

// bytes of sharc_mem_alloc memory allocateTensor has taken, over every group
extern std::atomic<size_t> allocated_;

// What a collective does once its requests are done (copies into non-contiguous outputs,
// unpacking of a list packed into one buffer); run on the host, or queued on the current stream.
using Fixup = std::function<void()>;

// One torch collective: its sharc requests (several for the coalesced calls), the tensors it
// reads and writes (kept alive until it completes) and its fixups.
struct Post {
    std::vector<sharc_request_h> reqs;
    std::vector<at::Tensor> keep;    // every tensor the requests use
    std::vector<at::Tensor> outputs; // what result() and the future give
    std::vector<Fixup> fixups;       // in order, once the requests are done
    bool recv = false;               // a receive: its Work tells the sender (sourceRank)
    int source = -1;                 // a receive's named sender (-1: any, known when done)
};

class WorkSharc : public c10d::Work
{
  public:
    WorkSharc(c10::intrusive_ptr<ProcessGroupSharc> pg, const char *name, const char *call,
              c10d::OpType type, uint64_t seq, Post post, std::optional<at::Device> cuda,
              std::chrono::milliseconds timeout, unsigned long mark);
    ~WorkSharc() override;

    bool isCompleted() override;
    bool isSuccess() const override;
    std::exception_ptr exception() const override;
    std::vector<at::Tensor> result() override;
    void synchronize() override;
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
    uint64_t getSequencenumber() const override;
    std::chrono::milliseconds getTimeout() const override;
    int sourceRank() const override;

    // The completer thread's call: wait, then complete the future.
    void completeFuture();

    // The completer's look at this Work, without blocking: READY (its requests are done: it
    // is finished now, and completeFuture will not wait), BUSY (another thread is inside it:
    // that one completes it), or PENDING: its requests still in flight are appended to
    // @pending and @lock holds the Work (it keeps them) until the completer has waited on them.
    enum class Poll { READY, BUSY, PENDING };
    Poll poll(std::unique_lock<std::mutex> &lock, std::vector<sharc_request_h> &pending);

  private:
    bool finishLocked(std::chrono::steady_clock::time_point deadline, bool bounded);
    void failLocked(sharc_status_t status, const char *call, unsigned long mark);
    void releaseLocked();

    c10::intrusive_ptr<ProcessGroupSharc> pg_;
    const char *name_; // torch's name of the collective
    const char *call_; // the sharc function it posts
    uint64_t seq_;
    Post post_;
    std::optional<at::Device> cuda_;
    std::chrono::milliseconds timeout_;
    unsigned long mark_; // sharc's error count before its first request was posted
    int source_ = -1;    // a receive's sender, once it is done
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// While one lives, the collectives this thread posts take sequence number @seq and do not
// count: those of one torch call (coalesce) count once, as torch's backends count them, and
// point-to-point not at all (p2p.cpp).
class InnerCalls
{
  public:
    explicit InnerCalls(uint64_t seq);
    ~InnerCalls();

  private:
    std::optional<uint64_t> outer_;
};

class ProcessGroupSharc : public c10d::Backend
{
  public:
    // @comm is made by the caller (module.cpp: sharc's explicit bootstrap, or a group of the
    // default group's communicator); the group owns it from now: shutdown() or the last
    // reference destroys it, nothing else does.
    ProcessGroupSharc(sharc_context_h ctx, sharc_comm_h comm, int rank, int size,
                      std::chrono::milliseconds timeout);
    ~ProcessGroupSharc() override;

    const std::string getBackendName() const override
    {
        return "sharc";
    }
    c10::intrusive_ptr<Options> getBackendOptions() override;
    // what getBackendOptions reports: the group's ranks in the default group, torch's name
    void describe(std::vector<uint64_t> global_ranks, std::string group_name)
    {
        global_ranks_ = std::move(global_ranks);
        group_name_ = std::move(group_name);
    }
    uint64_t getSequenceNumberForGroup() override
    {
        return seq_.load();
    }
    void setTimeout(std::chrono::milliseconds timeout) override
    {
        timeout_ = timeout;
    }
    void abort() override;
    void shutdown() override;

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                             const c10d::BroadcastOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                             const c10d::AllreduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allreduce_coalesced(std::vector<at::Tensor> &tensors,
                        const c10d::AllreduceCoalescedOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce_sparse(std::vector<at::Tensor> &tensors,
                                                    const c10d::AllreduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                          const c10d::ReduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                             std::vector<at::Tensor> &inputs,
                                             const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                        std::vector<at::Tensor> &inputs,
                        const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                    std::vector<at::Tensor> &inputs,
                                    const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::GatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                           std::vector<std::vector<at::Tensor>> &inputs,
                                           const c10d::ScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                  std::vector<std::vector<at::Tensor>> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                         const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                    std::vector<at::Tensor> &inputs,
                                    const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                                 std::vector<int64_t> &outputSplits,
                                                 std::vector<int64_t> &inputSplits,
                                                 const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                                 int tag) override;

    // FSDP2's hooks over a quantized wire (sharc_allgather_ex, sharc_reduce_scatter_ex;
    // sharc/torch/fsdp.py): as _allgather_base / _reduce_scatter_base, one torch call
    c10::intrusive_ptr<c10d::Work> allgatherWire(at::Tensor &output, at::Tensor &input,
                                                 sharc_wire_t wire, size_t block);
    c10::intrusive_ptr<c10d::Work> reduceScatterWire(at::Tensor &output, at::Tensor &input,
                                                     const c10d::ReduceOp &op, sharc_wire_t wire,
                                                     size_t block);

    bool supportsTensorAlloc(c10::DeviceIndex device) override;
    at::Tensor allocateTensor(long size, at::TensorOptions options) override;

    // neither aborted nor shut down: groups may be made from its communicator
    bool usable() const
    {
        return comm_ != nullptr && !aborted_;
    }
    // the communicator, nullptr once shut down
    sharc_comm_h comm() const
    {
        return comm_;
    }
    sharc_context_h context() const
    {
        return ctx_;
    }

    // --- for WorkSharc -------------------------------------------------------------------
    // Turn a failed status into the exception to raise: sharc's message, and the first
    // failure of this group (a failed collective fails the communicator).
    std::exception_ptr failure(sharc_status_t status, const std::string &call, unsigned long mark);
    void enqueueFuture(c10::intrusive_ptr<WorkSharc> work);
    void requestDone(size_t n)
    {
        outstanding_ -= n;
    }

  private:
    // futures of host collectives are completed by one thread that waits inside sharc; its
    // state is shared with it, since the group may go with the last Work it completes
    struct Completer {
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<c10::intrusive_ptr<WorkSharc>> queue;
        bool stopping = false; // end once the futures asked for are set
        bool exiting = false;  // end now: the process exits
    };

    using PostFn = std::function<sharc_status_t(sharc_request_h *)>;

    c10::intrusive_ptr<c10d::Work> start(const char *name, const char *call, c10d::OpType type,
                                         std::vector<at::Tensor> tensors,
                                         std::chrono::milliseconds timeout, Post post,
                                         const std::vector<PostFn> &calls);
    std::optional<at::Device> deviceOf(const char *name, const std::vector<at::Tensor> &ts);
    void checkUsable(const char *name);
    std::chrono::milliseconds opTimeout(std::chrono::milliseconds t) const;
    enum class Shape { GATHER, SCATTER, SAME };
    std::pair<at::Tensor, at::Tensor> oneEach(const char *name, at::Tensor &output,
                                              at::Tensor &input, Shape shape, Post &post);
    PostFn allreducePost(const char *name, at::Tensor &t, const c10d::ReduceOp &op, Post &post);
    c10::intrusive_ptr<c10d::Work> gatherList(const char *name, const at::Tensor &in, int root,
                                              std::vector<at::Tensor> outs,
                                              std::vector<at::Tensor> keep,
                                              std::chrono::milliseconds timeout);
    c10::intrusive_ptr<c10d::Work> alltoallv(const char *name, at::Tensor send, at::Tensor recv,
                                             const std::vector<int64_t> &scounts,
                                             const std::vector<int64_t> &rcounts, Post post,
                                             std::chrono::milliseconds timeout);
    at::Tensor p2pTensor(const char *name, std::vector<at::Tensor> &tensors, int peer, int tag);
    c10::intrusive_ptr<c10d::Work> recvFrom(const char *name, std::vector<at::Tensor> &tensors,
                                            int src, int tag);
    c10::intrusive_ptr<c10d::Work> gatherInto(const char *name, at::Tensor &output,
                                              at::Tensor &input, std::chrono::milliseconds timeout,
                                              const sharc_coll_opts_t *opts);
    c10::intrusive_ptr<c10d::Work> scatterFrom(const char *name, at::Tensor &output,
                                               at::Tensor &input, const c10d::ReduceOp &op,
                                               std::chrono::milliseconds timeout,
                                               const sharc_coll_opts_t *opts);
    c10::intrusive_ptr<c10d::Work>
    coalesce(const char *name, const std::vector<at::Tensor> &outputs,
             const std::function<c10::intrusive_ptr<c10d::Work>(size_t)> &one);
    void stopCompleter();
    static void completerLoop(std::shared_ptr<Completer> state);

  public:
    // At the interpreter's exit (module.cpp registers it with atexit, called without the GIL):
    // every group's completer ends now, while the interpreter is whole, leaving the futures
    // whose requests are still in flight unset.
    static void stopAllCompleters();

  private:

    sharc_context_h ctx_;
    sharc_comm_h comm_;
    std::chrono::milliseconds timeout_;
    std::vector<uint64_t> global_ranks_;
    std::string group_name_;
    std::atomic<uint64_t> seq_{0};     // torch calls so far (getSequenceNumberForGroup)
    std::atomic<long> outstanding_{0}; // requests not yet freed
    std::atomic<bool> aborted_{false};
    std::mutex err_mutex_;
    std::string first_error_; // the first failure of a collective of this group

    std::shared_ptr<Completer> completer_state_ = std::make_shared<Completer>();
    std::thread completer_;

    // sharc_mem_alloc memory for allocateTensor, recycled by size
    std::mutex pool_mutex_;
    std::multimap<size_t, void *> pool_;
};

} // namespace sharc_torch
