/* SPDX-License-Identifier: BSD-3-Clause */
// work.cpp: the Work of the C++ sharc backend: a torch collective's sharc requests, waited
// for on the host (CPU tensors) or by the current stream (CUDA tensors), then its fixups; its
// future, completed by the group's completer thread (backend.cpp) that waits inside sharc
// for any of the Works it holds (poll).
// Every wait is bounded: by wait()'s timeout, else by SHARC_TIMEOUT (sharc's wait).
#include "backend.hpp"

#include <algorithm>
#include <sched.h>
#include <time.h>

#include <ATen/core/ivalue.h>
#ifdef SHARC_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <sharc/sharc_cuda.h>
#endif

#include "util.hpp"

namespace sharc_torch
{

using Clock = std::chrono::steady_clock;

WorkSharc::WorkSharc(c10::intrusive_ptr<ProcessGroupSharc> pg, const char *name, const char *call,
                     c10d::OpType type, uint64_t seq, Post post, std::optional<at::Device> cuda,
                     std::chrono::milliseconds timeout, unsigned long mark)
    : c10d::Work(pg->getRank(), type), pg_(std::move(pg)), name_(name), call_(call), seq_(seq),
      post_(std::move(post)), cuda_(cuda), timeout_(timeout), mark_(mark),
      source_(post_.source)
{
}

WorkSharc::~WorkSharc()
{
    // a Work dropped before it completed: its buffers stay in use until sharc is done with
    // them (sharc_request_free completes a request first)
    std::lock_guard<std::mutex> lock(mutex_);
    releaseLocked();
}

void WorkSharc::releaseLocked()
{
    for (sharc_request_h r : post_.reqs) {
        sharc_request_free(r);
    }
    pg_->requestDone(post_.reqs.size());
    post_.reqs.clear();
    post_.keep.clear();
}

void WorkSharc::failLocked(sharc_status_t status, const char *call, unsigned long mark)
{
    exception_ = pg_->failure(status, call, mark);
}

// Wait for @req. First tests alone, for up to 50 us: through torch the ranks of a small
// collective arrive microseconds apart (each call's Python and dispatcher time), and sharc's
// wait yields the core as soon as a pass moves nothing, which on a loaded node can hand it to
// another process for a scheduler slice. Then sharc's own wait (its idle policy knows when
// data moved, and yields, then sleeps, so that ranks sharing cores get them; bounded by
// SHARC_TIMEOUT), or, with a deadline of wait(timeout)'s, tests until then, yielding, then
// sleeping 20 to 200 us.
static sharc_status_t waitRequest(sharc_request_h req, Clock::time_point deadline, bool bounded)
{
    auto spin = Clock::now() + std::chrono::microseconds(50);
    do {
        sharc_status_t status = sharc_request_test(req);
        if (status != SHARC_INPROGRESS) {
            return status;
        }
    } while (Clock::now() < spin);
    if (!bounded) {
        return sharc_request_wait(req);
    }
    for (long i = 0;; i++) {
        sharc_status_t status = sharc_request_test(req);

        if (status != SHARC_INPROGRESS) {
            return status;
        }
        if (Clock::now() > deadline) {
            return SHARC_INPROGRESS;
        }
        if (i < 32) {
            sched_yield();
        } else {
            struct timespec ts = {0, 1000L * std::min(200L, 20L << std::min(i - 32, 3L))};
            nanosleep(&ts, nullptr);
        }
    }
}

bool WorkSharc::finishLocked(Clock::time_point deadline, bool bounded)
{
    if (completed_) {
        return true;
    }
    while (!post_.reqs.empty() && exception_ == nullptr) {
        sharc_request_h req = post_.reqs.front();
        sharc_status_t status;
#ifdef SHARC_TORCH_CUDA
        if (cuda_) {
            // the current stream waits for the collective on the device; the host goes on
            c10::cuda::CUDAGuard guard(*cuda_);
            status = sharc_request_wait_stream(
                req, c10::cuda::getCurrentCUDAStream(cuda_->index()).stream());
        } else
#endif
        {
            status = waitRequest(req, deadline, bounded);
        }
        if (status == SHARC_INPROGRESS) {
            return false;
        }
        if (post_.recv && status == SHARC_OK) {
            sharc_recv_info_t info;
            if (sharc_request_recv_info(req, &info) == SHARC_OK) {
                source_ = info.source;
            }
        }
        sharc_request_free(req);
        pg_->requestDone(1);
        post_.reqs.erase(post_.reqs.begin());
        if (status != SHARC_OK) {
            failLocked(status, call_, mark_);
        }
    }
    if (exception_ == nullptr) {
        try {
#ifdef SHARC_TORCH_CUDA
            std::optional<c10::cuda::CUDAGuard> guard;
            if (cuda_) {
                guard.emplace(*cuda_);
            }
#endif
            for (auto &f : post_.fixups) {
                f();
            }
        } catch (...) {
            exception_ = std::current_exception();
        }
    }
    releaseLocked();
    post_.fixups.clear();
    completed_ = true;
    cv_.notify_all();
    return true;
}

bool WorkSharc::isCompleted()
{
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return false; // another thread is waiting for it
    }
    if (completed_ || cuda_) {
        return completed_;
    }
    for (sharc_request_h req : post_.reqs) {
        sharc_status_t status = sharc_request_test(req);
        if (status == SHARC_INPROGRESS) {
            return false;
        }
    }
    return finishLocked(Clock::now(), true);
}

WorkSharc::Poll WorkSharc::poll(std::unique_lock<std::mutex> &lock,
                                std::vector<sharc_request_h> &pending)
{
    size_t before = pending.size();

    lock = std::unique_lock<std::mutex>(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return Poll::BUSY;
    }
    if (!completed_) {
        for (sharc_request_h req : post_.reqs) {
            if (sharc_request_test(req) == SHARC_INPROGRESS) {
                pending.push_back(req);
            }
        }
    }
    if (pending.size() > before) {
        return Poll::PENDING; // (the lock stays: the requests stay while they are waited on)
    }
    finishLocked(Clock::now(), true); // (done: takes no time)
    lock.unlock();
    return Poll::READY;
}

bool WorkSharc::isSuccess() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ && exception_ == nullptr;
}

std::exception_ptr WorkSharc::exception() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return exception_;
}

std::vector<at::Tensor> WorkSharc::result()
{
    return post_.outputs;
}

uint64_t WorkSharc::getSequencenumber() const
{
    return seq_;
}

int WorkSharc::sourceRank() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(post_.recv, "sharc backend: sourceRank() is a receive's (recv, irecv), not ", name_,
                "'s");
    TORCH_CHECK(completed_ && exception_ == nullptr,
                "sharc backend: sourceRank() of a receive that has not completed: wait() first");
    return source_;
}

std::chrono::milliseconds WorkSharc::getTimeout() const
{
    return timeout_;
}

bool WorkSharc::wait(std::chrono::milliseconds timeout)
{
    // wait(timeout) bounds this wait only (the collective goes on); without one, sharc's wait
    // is bounded by SHARC_TIMEOUT, after which sharc fails the communicator
    bool bounded = timeout != kNoTimeout;
    auto deadline = Clock::now() + (bounded ? timeout : std::chrono::milliseconds(0));
    std::unique_lock<std::mutex> lock(mutex_);

    if (!finishLocked(deadline, bounded)) {
        C10_THROW_ERROR(DistBackendError,
                        std::string("sharc backend: ") + name_ + " (sequence number " +
                            std::to_string(seq_) + ") did not complete within the " +
                            std::to_string(timeout.count()) + " ms given to wait()");
    }
    if (exception_) {
        std::rethrow_exception(exception_);
    }
    return true;
}

void WorkSharc::synchronize()
{
    wait();
}

c10::intrusive_ptr<c10::ivalue::Future> WorkSharc::getFuture()
{
    std::unique_lock<std::mutex> lock(mutex_);
    if (future_) {
        return future_;
    }
    std::vector<c10::Device> devices;
    if (cuda_) {
        devices.push_back(*cuda_);
    }
    future_ = c10::make_intrusive<c10::ivalue::Future>(
        c10::ListType::create(c10::TensorType::get()), devices);
    if (cuda_ || completed_) {
        // CUDA: the current stream waits for the collective, so the result is ready for
        // whatever runs on it next (as ProcessGroupNCCL's futures are)
        lock.unlock();
        completeFuture();
    } else {
        lock.unlock();
        pg_->enqueueFuture(c10::intrusive_ptr<WorkSharc>::unsafe_reclaim_from_nonowning(this));
    }
    return future_;
}

void WorkSharc::completeFuture()
{
    try {
        wait();
    } catch (...) {
        future_->setError(std::current_exception());
        return;
    }
    future_->markCompleted(c10::IValue(post_.outputs));
}

} // namespace sharc_torch
