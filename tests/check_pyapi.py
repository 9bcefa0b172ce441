# SPDX-License-Identifier: BSD-3-Clause
"""The Python package's ctypes declarations (python/sharc/_lib.py) against the C headers
(include/sharc/*.h, version.h.in): every function it declares exists in a header with the same return type
and the same parameters, in order (enums as int, handles and streams as void*, pointers to
what they point to), and every ctypes Structure it declares (its docstring names the C type)
has the C struct's fields, in order, with the same types. Reads both as text: libsharc is not
loaded. A drift (an argument added in C, a field reordered) fails with the function or field
named. --self-test: the same check must fail on doctored declarations.

    check_pyapi.py TOP_SRCDIR [--self-test]
"""

import ast
import glob
import os
import re
import sys

CTYPES = {"c_int": "int", "c_uint": "uint", "c_ulong": "ulong", "c_size_t": "size_t",
          "c_void_p": "void*", "c_char_p": "char*", "c_double": "double", "c_uint64": "u64",
          "c_char": "char"}
SCALARS = {"int": "int", "unsigned": "uint", "unsigned int": "uint", "unsigned long": "ulong",
           "size_t": "size_t", "double": "double", "uint64_t": "u64", "char": "char",
           "void": "void", "cudaStream_t": "void*"}


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


class Headers:
    """The public headers' enums, handles, structs and SHARC_API functions."""

    def __init__(self, top):
        inc = os.path.join(top, "include", "sharc")
        paths = sorted(glob.glob(os.path.join(inc, "*.h")) + glob.glob(os.path.join(inc, "*.h.in")))
        text = "\n".join(strip_comments(open(p).read()) for p in paths)
        self.defines = dict(re.findall(r"#define\s+(\w+)\s+\(?(\d+)\)?", text))
        self.enums = set(re.findall(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text))
        self.handles = set(re.findall(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)\s*;", text))
        self.structs = {name: body for body, name in
                        re.findall(r"typedef\s+struct\s*\w*\s*\{([^}]*)\}\s*(\w+)\s*;", text)}
        self.funcs = {}
        for ret, name, args in re.findall(r"SHARC_API\s+([\w\s\*]+?)\s*\b(sharc_\w+)\s*\(([^)]*)\)\s*;",
                                          text):
            params = [] if args.strip() in ("", "void") else \
                [self.ctype(a, named=True) for a in args.split(",")]
            self.funcs[name] = (self.ctype(ret), params)

    def ctype(self, decl, named=False):
        """A declaration's type, normalized: "int", "void*", "ptr(int)", "struct X", ...
        (@named: a parameter, whose last word is its name)."""
        words = decl.replace("*", " * ").replace("[]", " * ").split()
        words = [w for w in words if w not in ("const", "struct")]
        if named and len(words) > 1 and words[-1] != "*":
            words = words[:-1]
        stars = words.count("*")
        base = " ".join(w for w in words if w != "*")
        if base in self.enums:
            t = "int"
        elif base in self.handles:
            t = "void*"
        elif base in self.structs:
            t = "struct " + base
        elif base in SCALARS:
            t = SCALARS[base]
        else:
            t = "opaque " + base  # (FILE, a function pointer: no ctypes declaration to match)
        if stars and t in ("void", "char"):
            t, stars = t + "*", stars - 1
        for _ in range(stars):
            t = "ptr(%s)" % t
        return t

    def fields(self, struct):
        """A struct's fields: [(name, type)], arrays as "char[256]" (a macro's size read from
        its #define), "int a, b;" as two."""
        out = []
        for decl in self.structs[struct].split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            m = re.match(r"(.*?)\s*(\w+)\s*\[(\w+)\]$", decl)
            if m:
                n = self.defines.get(m.group(3), m.group(3))
                out.append((m.group(2), "%s[%s]" % (self.ctype(m.group(1)), n)))
                continue
            m = re.match(r"([\w\s]*?[\s\*])\s*(\w+(?:\s*,\s*\*?\s*\w+)*)$", decl)
            for name in m.group(2).split(","):
                stars = name.count("*")
                out.append((name.replace("*", "").strip(),
                            self.ctype(m.group(1) + " *" * stars)))
        return out


class Python:
    """_lib.py's prototypes and Structures, read with ast."""

    def __init__(self, source):
        tree = ast.parse(source)
        self.classes = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                doc = ast.get_docstring(node) or ""
                self.classes[node.name] = (doc.split()[0] if doc else None, node)
        self.protos = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and \
                    node.targets[0].id in ("_PROTOS", "_OPTIONAL"):
                for entry in node.value.elts:
                    name, ret, args = entry.elts
                    self.protos[name.value] = (self.ctype(ret), [self.ctype(a) for a in args.elts])

    def ctype(self, node):
        if isinstance(node, ast.Constant) and node.value is None:
            return "void"
        if isinstance(node, ast.Name) and node.id in CTYPES:
            return CTYPES[node.id]
        if isinstance(node, ast.Name) and node.id in self.classes:
            return "struct " + self.classes[node.id][0]
        if isinstance(node, ast.Attribute) and node.attr in CTYPES:  # ctypes.c_char
            return CTYPES[node.attr]
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "P":
            return "ptr(%s)" % self.ctype(node.args[0])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # c_char * 256
            return "%s[%s]" % (self.ctype(node.left), node.right.value)
        raise ValueError("a ctypes type check_pyapi.py does not know: %s" % ast.dump(node))

    def fields(self, cls):
        for stmt in self.classes[cls][1].body:
            if isinstance(stmt, ast.Assign) and stmt.targets[0].id == "_fields_":
                return [(e.elts[0].value, self.ctype(e.elts[1])) for e in stmt.value.elts]
        return []


def check(h, py):
    """The mismatches, as lines."""
    bad = []
    for name, (ret, args) in sorted(py.protos.items()):
        if name not in h.funcs:
            bad.append("%s: declared in _lib.py, in no header" % name)
            continue
        cret, cargs = h.funcs[name]
        if ret != cret:
            bad.append("%s: returns %s in C, %s in _lib.py" % (name, cret, ret))
        if len(args) != len(cargs):
            bad.append("%s: %d parameters in C (%s), %d in _lib.py (%s)" %
                       (name, len(cargs), ", ".join(cargs), len(args), ", ".join(args)))
        else:
            for i, (a, c) in enumerate(zip(args, cargs)):
                if a != c:
                    bad.append("%s: parameter %d is %s in C, %s in _lib.py" % (name, i + 1, c, a))
    for cls, (struct, _) in sorted(py.classes.items()):
        if struct is None or not struct.endswith("_t") or struct not in h.structs:
            if struct is not None and struct.endswith("_t"):
                bad.append("%s: its C struct %s is in no header" % (cls, struct))
            continue
        cf, pf = h.fields(struct), py.fields(cls)
        if cf != pf:
            bad.append("%s (%s): fields in C %s, in _lib.py %s" % (cls, struct, cf, pf))
    return bad


def main():
    top = sys.argv[1]
    h = Headers(top)
    source = open(os.path.join(top, "python", "sharc", "_lib.py")).read()
    bad = check(h, Python(source))
    if "--self-test" in sys.argv[2:]:
        doctored = source.replace('("sharc_barrier", c_int, [c_void_p, P(c_void_p)])',
                                  '("sharc_barrier", c_int, [c_void_p])')
        doctored = doctored.replace('("source", c_int), ("tag", c_int)',
                                    '("tag", c_int), ("source", c_int)')
        found = check(h, Python(doctored))
        want = ["sharc_barrier: 2 parameters", "RecvInfo (sharc_recv_info_t)"]
        missed = [w for w in want if not any(line.startswith(w) for line in found)]
        if doctored == source or missed:
            print("FAIL: the check missed a doctored declaration: %s" % missed)
            return 1
        print("ok: a doctored prototype and a doctored struct are caught")
    for line in bad:
        print("FAIL: " + line)
    if not bad:
        print("ok: %d functions and %d structs of _lib.py match the headers "
              "(the headers declare %d functions)" %
              (len(Python(source).protos), sum(1 for c in Python(source).classes.values()
                                               if c[0] in h.structs), len(h.funcs)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
