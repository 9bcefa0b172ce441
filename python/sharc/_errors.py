# SPDX-License-Identifier: BSD-3-Clause
"""sharc_status_t as Python exceptions carrying the message sharc logged.

Every failing call raises a subclass of SharcError; each also derives from the built-in
exception a Python caller would expect (ValueError for SHARC_ERR_INVALID, TimeoutError for
SHARC_ERR_TIMEOUT, ...). The message is the name of the call, sharc's text for the status,
and the errors sharc logged while the call ran (sharc_log_errors), which say what went wrong:
the argument, the peer, the rank that died.
"""

import ctypes

from ._lib import lib

OK = 0
INPROGRESS = 1


class SharcError(RuntimeError):
    """A sharc call failed. status: the sharc_status_t; op: the call; detail: sharc's log."""

    status = None

    def __init__(self, message, op=None, detail=""):
        super().__init__(message)
        self.op = op
        self.detail = detail


class InvalidError(SharcError, ValueError):
    status = -1


class NoMemError(SharcError, MemoryError):
    status = -2


class UnsupportedError(SharcError, NotImplementedError):
    status = -3


class SharcIOError(SharcError, OSError):
    status = -4

    def __str__(self):  # OSError's would show errno fields we do not fill
        return str(self.args[0]) if self.args else ""


class SharcTimeoutError(SharcError, TimeoutError):
    status = -5

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class BackendError(SharcError):
    status = -6


class RemoteError(SharcError):
    status = -7


_BY_STATUS = {
    cls.status: cls
    for cls in (
        InvalidError,
        NoMemError,
        UnsupportedError,
        SharcIOError,
        SharcTimeoutError,
        BackendError,
        RemoteError,
    )
}


def status_string(status):
    return lib.sharc_status_string(status).decode()


def error_mark():
    """The count of errors sharc logged so far; pass it to raise_status."""
    return lib.sharc_log_errors(0, None, 0)


def logged_since(mark):
    buf = ctypes.create_string_buffer(8192)
    lib.sharc_log_errors(mark, buf, len(buf))
    return buf.value.decode(errors="replace")


def make_error(status, op, mark=None, detail=None):
    """The exception for a failed call @op that returned @status."""
    if detail is None:
        detail = logged_since(mark) if mark is not None else ""
    cls = _BY_STATUS.get(status, SharcError)
    msg = "%s: %s" % (op, status_string(status))
    if detail:
        msg += ": " + detail.replace("\n", "; ")
    err = cls(msg, op=op, detail=detail)
    if cls is SharcError:
        err.status = status
    return err


def check(status, op, mark):
    if status != OK:
        raise make_error(status, op, mark)
