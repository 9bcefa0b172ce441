/* SPDX-License-Identifier: BSD-3-Clause */
// backend.cpp: the C++ sharc backend's life (the communicator it owns, abort and shutdown),
// how a collective starts (the checks every one shares, its sequence number, its posts, its
// Work), the failures of the group, the completer thread of futures, and memory for
// allocateTensor. The collectives themselves are coll.cpp's.
#include "backend.hpp"

#include <pthread.h>
#include <sched.h>
#include <set>
#include <time.h>

#ifdef SHARC_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <sharc/sharc_cuda.h>
#endif

#include "util.hpp"

namespace sharc_torch
{

std::atomic<size_t> allocated_{0};

// The sequence number of the torch call this thread is inside (coalesce: the collectives
// posted for one torch call share its number, as torch's own backends count them).
static thread_local std::optional<uint64_t> call_seq;

InnerCalls::InnerCalls(uint64_t seq) : outer_(call_seq)
{
    call_seq = seq;
}

InnerCalls::~InnerCalls()
{
    call_seq = outer_;
}

// The groups alive in this process, for their completers' end at exit.
static std::mutex live_mutex;
static std::set<ProcessGroupSharc *> live;

ProcessGroupSharc::ProcessGroupSharc(sharc_context_h ctx, sharc_comm_h comm, int rank, int size,
                                     std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), ctx_(ctx), comm_(comm), timeout_(timeout)
{
    std::lock_guard<std::mutex> lock(live_mutex);
    live.insert(this);
}

ProcessGroupSharc::~ProcessGroupSharc()
{
    {
        std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(this);
    }
    // every Work holds the group: none is left, so no request is either
    stopCompleter();
    for (auto &kv : pool_) {
        sharc_mem_free(ctx_, kv.second);
    }
    sharc_comm_destroy(comm_);
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupSharc::getBackendOptions()
{
    auto opts = c10::make_intrusive<Options>("sharc", timeout_);
    opts->global_ranks_in_group = global_ranks_;
    opts->group_name = group_name_;
    return opts;
}

void ProcessGroupSharc::abort()
{
    // later collectives fail at once; those in flight end as sharc ends them (the
    // communicator is failed, or SHARC_TIMEOUT)
    aborted_ = true;
    std::lock_guard<std::mutex> lock(err_mutex_);
    if (first_error_.empty()) {
        first_error_ = "the group was aborted";
    }
}

void ProcessGroupSharc::shutdown()
{
    stopCompleter();
    aborted_ = true;
    {
        std::lock_guard<std::mutex> lock(err_mutex_);
        if (first_error_.empty()) {
            first_error_ = "the group was shut down";
        }
    }
    // the peers see this rank leave now; with requests still held by Works, the
    // communicator goes with the last of them (the destructor)
    if (outstanding_ == 0 && comm_ != nullptr) {
        sharc_comm_destroy(comm_);
        comm_ = nullptr;
    }
}

std::exception_ptr ProcessGroupSharc::failure(sharc_status_t status, const std::string &call,
                                              unsigned long mark)
{
    std::string msg = call + ": " + sharc_status_string(status);
    std::string logged = loggedSince(mark);
    if (!logged.empty()) {
        msg += ": " + logged;
    }
    std::lock_guard<std::mutex> lock(err_mutex_);
    if (first_error_.empty()) {
        first_error_ = msg;
    } else if (msg.find(first_error_) == std::string::npos) {
        msg += "; the first failure on this communicator: " + first_error_;
    }
    return sharcError(status, msg);
}

void ProcessGroupSharc::checkUsable(const char *name)
{
    if (aborted_) {
        std::lock_guard<std::mutex> lock(err_mutex_);
        C10_THROW_ERROR(DistBackendError, std::string(name) +
                                              ": the sharc group cannot run "
                                              "collectives any more: " +
                                              first_error_);
    }
}

std::chrono::milliseconds ProcessGroupSharc::opTimeout(std::chrono::milliseconds t) const
{
    return t == c10d::kUnsetTimeout ? timeout_ : t;
}

// The CUDA device of the tensors (nullopt for host tensors); sharc is told the stream its
// collective must follow.
std::optional<at::Device> ProcessGroupSharc::deviceOf(const char *name,
                                                      const std::vector<at::Tensor> &ts)
{
    std::optional<at::Device> dev;
    for (const at::Tensor &t : ts) {
        if (!t.defined()) {
            continue;
        }
        SHARC_TORCH_INVALID(!dev || *dev == t.device(), name, ": tensors on several devices (",
                            *dev, ", ", t.device(), ")");
        dev = t.device();
    }
    if (!dev || dev->is_cpu()) {
        return std::nullopt;
    }
    SHARC_TORCH_UNSUPPORTED(dev->is_cuda(), name, ": ", dev->type(),
                            " tensors are not supported by the sharc backend (cpu and cuda)");
#ifdef SHARC_TORCH_CUDA
    c10::cuda::set_device(dev->index()); // NCCL runs on the current device (one per rank)
    unsigned long mark = errorMark();
    sharc_status_t status =
        sharc_comm_set_cuda_stream(comm_, c10::cuda::getCurrentCUDAStream(dev->index()).stream());
    if (status != SHARC_OK) {
        std::rethrow_exception(failure(status, "sharc_comm_set_cuda_stream", mark));
    }
    return dev;
#else
    SHARC_TORCH_UNSUPPORTED(false, name,
                            ": this build of the sharc backend has no CUDA (the "
                            "torch it was built against had none)");
#endif
}

c10::intrusive_ptr<c10d::Work> ProcessGroupSharc::start(const char *name, const char *call,
                                                        c10d::OpType type,
                                                        std::vector<at::Tensor> tensors,
                                                        std::chrono::milliseconds timeout,
                                                        Post post, const std::vector<PostFn> &calls)
{
    checkUsable(name);
    std::optional<at::Device> dev = deviceOf(name, tensors);
    uint64_t seq = call_seq ? *call_seq : seq_++;
    // the errors a request logs count from before it was posted: a receive whose message had
    // already come fails (and logs why) inside sharc_recv itself
    unsigned long first_mark = errorMark();
    for (const PostFn &post_one : calls) {
        sharc_request_h req = nullptr;
        unsigned long mark = errorMark();
        sharc_status_t status = post_one(&req);
        if (status != SHARC_OK) {
            // a rank's own bad argument fails before anything is sent: the group goes on
            for (sharc_request_h r : post.reqs) {
                sharc_request_free(r);
                outstanding_--;
            }
            if ((status == SHARC_ERR_INVALID || status == SHARC_ERR_UNSUPPORTED) &&
                post.reqs.empty()) {
                std::string msg = std::string(call) + ": " + sharc_status_string(status);
                std::string logged = loggedSince(mark);
                std::rethrow_exception(
                    sharcError(status, logged.empty() ? msg : msg + ": " + logged));
            }
            std::rethrow_exception(failure(status, call, mark));
        }
        outstanding_++;
        post.reqs.push_back(req);
    }
    post.keep.insert(post.keep.end(), tensors.begin(), tensors.end());
    auto self = c10::intrusive_ptr<ProcessGroupSharc>::unsafe_reclaim_from_nonowning(this);
    return c10::make_intrusive<WorkSharc>(self, name, call, type, seq, std::move(post), dev,
                                          opTimeout(timeout), first_mark);
}

// -- futures: one thread per group sets the futures asked for of host collectives (DDP's
// reducer waits on futures) as their requests complete, in whatever order: it waits on all of
// them at once (sharc_request_wait_any), so a receive that never completes holds back no other

void ProcessGroupSharc::enqueueFuture(c10::intrusive_ptr<WorkSharc> work)
{
    Completer &c = *completer_state_;
    std::unique_lock<std::mutex> lock(c.mutex);
    if (c.stopping) {
        lock.unlock();
        work->completeFuture(); // the group is shutting down: no thread any more
        return;
    }
    if (!completer_.joinable()) {
        completer_ = std::thread(completerLoop, completer_state_);
    }
    c.queue.push_back(std::move(work));
    c.cv.notify_one();
}

// One round of the completer over @works: the futures of those whose requests are done are
// set; on the others' requests it waits until one completes, or 10 ms (new futures are taken
// then, and the end of the group seen). With every Work busy in another thread's wait, a pause.
static void completerRound(std::vector<c10::intrusive_ptr<WorkSharc>> &works)
{
    std::vector<std::unique_lock<std::mutex>> held;
    std::vector<sharc_request_h> pending;
    bool busy = false;

    for (size_t i = 0; i < works.size();) {
        std::unique_lock<std::mutex> lock;
        switch (works[i]->poll(lock, pending)) {
        case WorkSharc::Poll::READY:
            works[i]->completeFuture();
            works.erase(works.begin() + (long)i);
            continue;
        case WorkSharc::Poll::BUSY: busy = true; break;
        case WorkSharc::Poll::PENDING: held.push_back(std::move(lock)); break;
        }
        i++;
    }
    if (!pending.empty()) {
        size_t index;
        // (a request past SHARC_TIMEOUT fails here, with its communicator: the next round
        // finishes its Work with the error)
        sharc_request_wait_any(pending.data(), pending.size(), 0.01, &index);
    } else if (busy) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, nullptr);
    }
}

void ProcessGroupSharc::completerLoop(std::shared_ptr<Completer> state)
{
    // SCHED_BATCH, as sharc's progress thread: the same share of the cores, but its wake-ups
    // do not take the core from the caller, which computes (DDP's backward) meanwhile
    struct sched_param batch = {};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
    std::vector<c10::intrusive_ptr<WorkSharc>> works; // futures asked for, not yet set
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(state->mutex);
            state->cv.wait(lock, [&] {
                return state->stopping || !state->queue.empty() || !works.empty();
            });
            for (; !state->queue.empty(); state->queue.pop_front()) {
                works.push_back(std::move(state->queue.front()));
            }
            if (state->exiting) {
                // the process exits: the Works still in flight are left to it (dropping one
                // here would wait in sharc_request_free for requests that may never end)
                new std::vector<c10::intrusive_ptr<WorkSharc>>(std::move(works));
                return;
            }
            if (state->stopping && works.empty()) {
                return;
            }
        }
        completerRound(works); // may drop the group's last reference: only @state is used
    }
}

void ProcessGroupSharc::stopCompleter()
{
    {
        std::lock_guard<std::mutex> lock(completer_state_->mutex);
        completer_state_->stopping = true;
        completer_state_->cv.notify_all();
    }
    if (!completer_.joinable()) {
        return;
    }
    if (completer_.get_id() != std::this_thread::get_id()) {
        completer_.join(); // after the futures still queued (their collectives complete)
    } else {
        completer_.detach(); // the group's last Work went in the thread itself
    }
}

void ProcessGroupSharc::stopAllCompleters()
{
    std::vector<std::thread> threads;
    {
        // the threads are taken from their groups, and joined without the lock: a completer
        // may drop its group's last reference, whose destructor takes the lock
        std::lock_guard<std::mutex> lock(live_mutex);
        for (ProcessGroupSharc *pg : live) {
            std::lock_guard<std::mutex> state(pg->completer_state_->mutex);
            pg->completer_state_->stopping = pg->completer_state_->exiting = true;
            pg->completer_state_->cv.notify_all();
            if (pg->completer_.joinable()) {
                threads.push_back(std::move(pg->completer_));
            }
        }
    }
    for (std::thread &t : threads) {
        t.join(); // within a round: 10 ms
    }
}

// -- memory the peers of a node copy straight from (FSDP2's allocate-from-process-group)

bool ProcessGroupSharc::supportsTensorAlloc(c10::DeviceIndex device)
{
    return device < 0; // the CPU: sharc_mem_alloc memory
}

at::Tensor ProcessGroupSharc::allocateTensor(long size, at::TensorOptions options)
{
    size_t bytes =
        std::max<size_t>(1, size * c10::elementSize(c10::typeMetaToScalarType(options.dtype())));
    void *ptr = nullptr;
    {
        std::lock_guard<std::mutex> lock(pool_mutex_);
        auto it = pool_.find(bytes);
        if (it != pool_.end()) {
            ptr = it->second;
            pool_.erase(it);
        }
    }
    if (ptr == nullptr) {
        unsigned long mark = errorMark();
        sharc_status_t status = sharc_mem_alloc(ctx_, bytes, &ptr);
        if (status != SHARC_OK) {
            std::rethrow_exception(failure(status, "sharc_mem_alloc", mark));
        }
        allocated_ += bytes;
    }
    // the memory goes back to the pool with the last view; the pool holds the group
    auto self = c10::intrusive_ptr<ProcessGroupSharc>::unsafe_reclaim_from_nonowning(this);
    return at::from_blob(
        ptr, {size},
        [self, bytes](void *p) {
            std::lock_guard<std::mutex> lock(self->pool_mutex_);
            self->pool_.emplace(bytes, p);
        },
        options.device(at::kCPU));
}

} // namespace sharc_torch
