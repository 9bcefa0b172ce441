# SPDX-License-Identifier: BSD-3-Clause
"""sharc's vocabulary, as libsharc names it: element types, reduction ops, bootstraps, launchers.

Every table here is libsharc's (sharc/types.h, sharc/comm.h, sharc/launch.h): the enums are
built from its names and numbers when the package loads, and a name ("bf16", "float32",
"avg") is looked up by libsharc's own parser. Other element types (torch's, numpy's, the
buffer protocol's format codes) map onto these by name, never through a second table.
"""

import ctypes
import enum

from ._errors import OK, InvalidError
from ._lib import lib as _c


def _enum(cls_name, name_fn, doc):
    """An IntEnum of a C enum: member i is NAME_FN(i) in upper case, up to the first NULL."""
    members = {}
    while True:
        name = name_fn(len(members))
        if name is None:
            break
        members[name.decode().upper()] = len(members)
    made = enum.IntEnum(cls_name, members, module=__name__, qualname=cls_name)
    made.__doc__ = doc
    return made


Dtype = _enum("Dtype", _c.sharc_dtype_name, "sharc_dtype_t.")
Op = _enum("Op", _c.sharc_op_name, "sharc_op_t. AVG is defined for the floating-point dtypes only.")
Bootstrap = _enum("Bootstrap", _c.sharc_bootstrap_name, "sharc_bootstrap_t.")
Launcher = _enum("Launcher", _c.sharc_launcher_name, "sharc_launcher_t.")
Wire = _enum("Wire", _c.sharc_wire_name,
             "sharc_wire_t: how a collective's values travel (full, int8, fp8; sharc/types.h).")

DTYPE_LIST = ", ".join(d.name.lower() for d in Dtype)
OP_LIST = ", ".join(o.name.lower() for o in Op)

_by_name = {}  # a cache of libsharc's answers: (enum, name) -> member, or None


def _named(parse, cls, name):
    """The member of @cls that libsharc's @parse (sharc_*_from_name) makes of @name, or None."""
    key = (cls, name)
    member = _by_name.get(key)
    if member is None and key not in _by_name:
        out = ctypes.c_int()
        if parse(name.encode(), ctypes.byref(out)) == OK:
            member = cls(out.value)
        if len(_by_name) < 1024:
            _by_name[key] = member
    return member


def dtype_named(name):
    """The Dtype libsharc parses @name as ("bf16", "float32", "half", any case), or None."""
    return _named(_c.sharc_dtype_from_name, Dtype, name)


def dtype_of(value):
    """A Dtype from a Dtype, its name ("bf16", "float32", ...) or a torch/numpy dtype."""
    if isinstance(value, Dtype):
        return value
    name = value if isinstance(value, str) else str(value).replace("torch.", "")
    d = dtype_named(name)
    if d is None:
        raise InvalidError("dtype %s is not one of sharc's (%s)" % (value, DTYPE_LIST), op="dtype")
    return d


def dtype_of_torch(torch_dtype):
    """The Dtype of a torch dtype (torch.float32 is "float32" to libsharc), or None when
    sharc has no such element type (int8, bool, complex64, ...)."""
    return dtype_named(str(torch_dtype).replace("torch.", ""))


# the buffer protocol's format codes by kind: floating point, signed and unsigned integers
_FORMAT_KINDS = {"e": "f", "f": "f", "d": "f", "i": "i", "l": "i", "q": "i", "B": "u"}


def dtype_of_format(fmt, itemsize):
    """The Dtype of a buffer with struct format code @fmt and @itemsize bytes an element
    ("f" of 4 is f32, "q" of 8 is i64), or None."""
    kind = _FORMAT_KINDS.get(fmt)
    return None if kind is None else dtype_named("%s%d" % (kind, itemsize * 8))


_NUMPY_KINDS = {"f": "float", "i": "int", "u": "uint"}


def numpy_name(dtype):
    """numpy's name of a Dtype's elements ("f32" is "float32"); bf16, which numpy lacks, is
    its bits as "uint16"."""
    name = dtype_of(dtype).name.lower()
    if name == "bf16":
        return "uint16"
    return _NUMPY_KINDS[name[0]] + name[1:]


_OP_ALIASES = {"product": "prod"}  # torch's name of PROD


def op_of(value):
    """An Op from an Op or its name ("sum", "prod", "min", "max", "avg"; "product")."""
    if isinstance(value, Op):
        return value
    name = str(value).lower()
    o = _named(_c.sharc_op_from_name, Op, _OP_ALIASES.get(name, name))
    if o is None:
        raise InvalidError("op %s is not one of sharc's (%s)" % (value, OP_LIST), op="op")
    return o


def wire_of(value):
    """A Wire from a Wire or its name ("int8", "fp8", "full", "e4m3", any case; libsharc's
    parser)."""
    if isinstance(value, Wire):
        return value
    w = _named(_c.sharc_wire_from_name, Wire, str(value))
    if w is None:
        raise InvalidError("wire %s is not one of sharc's (%s)"
                           % (value, ", ".join(x.name.lower() for x in Wire)), op="wire")
    return w
