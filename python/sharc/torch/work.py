# SPDX-License-Identifier: BSD-3-Clause
"""The Work the sharc backend returns: one collective in flight, as torch waits for it.

A Work holds sharc requests (sharc.Request) and what to do when they are done (copies back
into non-contiguous outputs, unpacking of emulated collectives); GroupWork is several Works
posted together (the coalesced calls). Futures are completed by one helper thread that waits
inside sharc without the GIL. Posting is the backend's (backend.py).
"""

import atexit
import datetime
import queue
import threading
import time

import torch
import torch.distributed as dist

import sharc

_completer = None  # the futures thread's queue, and the thread
_completer_thread = None
_completer_lock = threading.Lock()


class _Failed:
    """A future's result that stands for an error (see Work.get_future)."""

    def __init__(self, error):
        self.error = error


def _unwrap(fut):
    value = fut.value()
    if isinstance(value, _Failed):
        raise value.error
    return value


def _complete_futures(q):
    """A thread that waits (without the GIL: inside sharc) for the works whose futures were
    asked for, and sets them: DDP's reducer waits on futures, not on works. None ends it."""
    while True:
        item = q.get()
        if item is None:
            return
        work, base = item
        work._complete(base)


@atexit.register
def _stop_completer():
    """Ends the futures thread at exit, once the futures asked for are set, while the
    interpreter is whole: a daemon thread left inside torch's C++ (setting a future) when the
    interpreter stops its threads aborts the process ("terminate called without an active
    exception"). Registered before backend.py's exit handler, so it runs after the groups
    are shut down (which ends what is still in flight)."""
    global _completer, _completer_thread
    with _completer_lock:
        q, t = _completer, _completer_thread
        _completer = _completer_thread = None
    if q is not None:
        q.put(None)
        t.join(10.0)


class Work(dist.Work):
    """One collective posted to sharc (one request, or several for the emulated ones).
    wait() waits for it on the host, or, for CUDA tensors, makes the current stream wait for
    it and returns at once; then copies results where an emulation or a non-contiguous
    output needs it. Errors are sharc's, raised as sharc's exceptions."""

    def __init__(self, name, reqs, outputs, fixups=(), cuda_device=None):
        super().__init__()
        self._name = name
        self._reqs = [r for r in reqs if r is not None]
        self._outputs = outputs
        self._fixups = list(fixups)
        self._cuda = cuda_device
        self._lock = threading.Lock()
        self._done = False
        self._error = None
        self._future = None

    def _finish(self):
        try:
            stream = (torch.cuda.current_stream(self._cuda).cuda_stream
                      if self._cuda is not None else None)
            for r in self._reqs:
                if stream is not None:
                    r.wait_stream(stream)
                else:
                    r.wait()
            for f in self._fixups:
                f()
        except Exception as e:
            self._error = e
            for r in self._reqs:
                r.free()
        finally:
            self._done = True
            self._reqs = []

    def _complete(self, base):
        """Wait, and set the future @base to the outputs or to the error."""
        try:
            self.wait()
            base.set_result(self._outputs)
        except Exception as e:
            base.set_result(_Failed(e))

    def wait(self, timeout=None):
        if timeout and timeout != datetime.timedelta(0) and not self._done:
            deadline = datetime.datetime.now() + timeout
            while not self.is_completed():
                if datetime.datetime.now() > deadline:
                    raise sharc.SharcTimeoutError(
                        "%s: not done within the timeout of %s given to wait()" %
                        (self._name, timeout), op=self._name)
                time.sleep(0.0002)
        with self._lock:
            if not self._done:
                self._finish()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        with self._lock:
            if self._done:
                return True
            if self._cuda is None:
                try:
                    if not all(r.test() for r in self._reqs):
                        return False
                except Exception:
                    pass  # wait() raises it
            else:
                return False
            self._finish()
            return True

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self):
        return self._outputs

    def synchronize(self):
        self.wait()

    def get_future(self):
        """A future of the outputs. Its error is one C++ sees too: torch's
        Future.set_exception only makes Python's value() raise (DDP's reducer, in C++, would
        take the exception object for the result), so the error is raised in a then()
        callback, which marks the future failed for every reader."""
        global _completer, _completer_thread
        if self._future is None:
            base = torch.futures.Future()
            self._future = base.then(_unwrap)
            if self._cuda is not None or self._done:
                # CUDA: the current stream waits for the collective, so the result is ready
                # for whatever runs on it next (as ProcessGroupNCCL's futures)
                self._complete(base)
            else:
                with _completer_lock:
                    if _completer is None:
                        _completer = queue.SimpleQueue()
                        _completer_thread = threading.Thread(
                            target=_complete_futures, args=(_completer,), name="sharc-futures",
                            daemon=True)
                        _completer_thread.start()
                    _completer.put((self, base))
        return self._future


class GroupWork(Work):
    """Works posted together (the coalesced calls): done when all are."""

    def __init__(self, name, works, outputs):
        super().__init__(name, [], outputs)
        self._works = works

    def _finish(self):
        try:
            for w in self._works:
                w.wait()
        except Exception as e:
            self._error = e
        finally:
            self._done = True

    def is_completed(self):
        return all(w.is_completed() for w in self._works)


class RecvWork(Work):
    """A receive (recv, irecv; from any rank: @src None): once done, _source_rank() is the
    sender's rank in the group (torch's recv(src=None) returns it)."""

    def __init__(self, name, reqs, outputs, fixups, cuda_device, src):
        super().__init__(name, reqs, outputs, fixups, cuda_device)
        self._req, self._src = reqs[0], src

    def _finish(self):
        req = self._req
        super()._finish()
        if self._src is None and self._error is None:
            self._src = req.source

    def _source_rank(self):
        if not self._done or self._error is not None:
            raise RuntimeError("sharc backend: _source_rank() of a receive that has not "
                               "completed: wait() first")
        return self._src

    source_rank = _source_rank
