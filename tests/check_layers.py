#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""check_layers.py SRCDIR: every #include of the library, the tools, the trainer and the C++
torch backend points to its own layer or one below it (docs/design.md draws them), no
transport backend includes another backend, and no layer reaches a function table (a struct of
function pointers, *_ops_t) of a layer further down than the one it builds on: the shard engine
calls coll/, which calls the transports' tables, not the shard engine through a communicator's
table (TABLE_USERS). Prints each upward include and each such reach with the layers; exits 1
if any.

Includes are resolved as the compiler resolves them: "..." first beside the including file,
then, as <...> are, through the build's include paths in their order: automake's
DEFAULT_INCLUDES (-I. -I$(srcdir): the build tree, then the top of the source tree) and the
-I$(top_srcdir)/... of the file's targets' CPPFLAGS in Makefile.am (AM_CPPFLAGS where a
target has none; .cu files get AM_CPPFLAGS, as the nvcc rule passes). So an include such as
"shard/shard.h", found through the top of the tree from any folder, is checked too. Files the
source tree does not hold (config.h, version.h, system headers) belong to no layer.

Calls are checked too: a call (or any use of the name) of a function another source file
defines, not static, goes to the caller's own layer or one below it, as an include does; and
no files call each other in a circle (A calls B, B calls A, or longer), within a layer or
across. Comments and string literals are not calls; a function name defined in several files
(main) is nobody's.

Layers, bottom first; a file belongs to the longest prefix that matches its path. Tests are
not checked: they may look inside any layer.
"""
import os
import re
import sys

# (path prefix, layer name, rank). Equal ranks may not include each other either: only
# their own folder or a lower rank.
LAYERS = [
    ("include/", "public API", 0),
    ("base/", "base", 1),
    ("kernels/", "kernels", 2),
    ("transport/topo/", "topology", 3),
    ("boot/", "bootstrap", 4),
    ("transport/", "transport", 5),
    ("coll/api.h", "collective interface", 5.9),
    ("coll/engine/", "collective engine", 6),
    ("coll/algorithms/", "collective algorithms", 6.1),
    ("coll/device/", "collective device path", 6.2),
    ("coll/diagnostics/", "collective diagnostics", 6.2),
    ("coll/", "collectives", 6.5),
    ("comm/", "communicators", 7),
    ("shard/plan/", "sharding planner", 7.5),
    ("shard/shard.h", "sharding types", 7.55),
    ("shard/trace/", "sharding records", 7.6),
    ("shard/engine/", "sharding engine", 7.7),
    ("shard/offload/", "sharding offload", 7.8),
    ("shard/", "sharding group", 8),
    ("shard/checkpoint/", "sharding checkpoints", 8.1),
    ("lib/", "library root", 8.5),
    ("perf/topo/", "topology tool library", 9),
    ("perf/", "perf tools", 10),
    ("trainer/", "trainer", 10),
    ("trainer/ops/", "trainer ops", 10.1),
    ("trainer/io/", "trainer io", 10.1),
    ("trainer/model/", "trainer model", 10.2),
    ("trainer/cli/", "trainer cli", 10.3),
    ("python/", "python", 10),
]
# What the tools may use besides the public API and their own folder: perf's programs the
# topology tool library (and through it transport/topo/ and base), and the sharding engine's planner
# (pure, libc only: sharc-perf predict replays its decisions); the trainer nothing else.
TOOL_ALLOWED = {
    "perf tools": {"public API", "topology tool library", "sharding planner"},
    "python": {"public API"},
}
# The trainer's own layers, bottom first: its messages and helpers (trainer/*.h), then the ops
# tables and the file formats (siblings: neither includes the other), the model, the program.
# Each may use the public API and the trainer's layers below it (the ranks say which).
TRAINER_LAYERS = {"trainer", "trainer ops", "trainer io", "trainer model", "trainer cli"}
for _name in TRAINER_LAYERS:
    TOOL_ALLOWED[_name] = {"public API"} | TRAINER_LAYERS
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)
SOURCES = (".c", ".h", ".cu", ".cuh", ".cc", ".cpp", ".hpp")
# The function tables whose users are restricted, and the layers that may reach them: the
# layer that declares one and those built directly on it (coll/ drives the transports, comm/
# makes and splits them); from any other layer a reach skips the layer between.
COLL_LAYERS = {"collective interface", "collective engine", "collective algorithms",
               "collective device path", "collective diagnostics", "collectives"}
TABLE_USERS = {
    "sharc_tp_ops_t": {"transport", "communicators"} | COLL_LAYERS,
    "sharc_boot_ops_t": {"bootstrap", "transport", "communicators"} | COLL_LAYERS,
}
# a struct member holding a table: "const sharc_tp_ops_t *cuda_ops;" (or one by value). (The
# tables a transport's table points to, p2p and coll, are reached through it: watched so.)
TABLE_MEMBER = re.compile(r"\b(\w+_ops_t)\s*\*?\s*(\w+)\s*;")


def layer_of(path):
    best = None
    for prefix, name, rank in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, name, rank)
    return best


def backend_of(path):
    """transport/<backend>/...: the backend's folder, else None (transport/topo/, the topology
    the backends read, is a layer of its own below them)."""
    parts = path.split("/")
    is_backend = len(parts) > 2 and parts[0] == "transport" and parts[1] != "topo"
    return parts[1] if is_backend else None


def makefile_vars(top):
    """Makefile.am's assignments (=, +=; every branch of every conditional), continuation
    lines joined: {name: text}."""
    with open(os.path.join(top, "Makefile.am")) as f:
        text = f.read().replace("\\\n", " ")
    out = {}
    for line in text.split("\n"):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\+?=)\s*(.*)$", line)
        if m:
            name, op, value = m.groups()
            out[name] = (out.get(name, "") + " " + value) if op == "+=" else value
    return out


def expand(text, env, depth=0):
    """$(VAR) expanded from Makefile.am's own variables (others, configure's, vanish)."""
    if depth > 20:
        return text
    return re.sub(r"\$\(([A-Za-z0-9_]+)\)",
                  lambda m: expand(env.get(m.group(1), "") if m.group(1) != "top_srcdir"
                                   else "$(top_srcdir)", env, depth + 1), text)


def include_paths(top):
    """{source: [include dirs relative to the source tree]} for every file a target of
    Makefile.am lists, and the paths of a file no target lists."""
    env = makefile_vars(top)
    default = ["", ]  # DEFAULT_INCLUDES: -I. (the build tree: generated files) -I$(srcdir)
    am = re.findall(r"-I\$\(top_srcdir\)/?(\S*)", expand(env.get("AM_CPPFLAGS", ""), env))
    paths = {}
    for name, value in env.items():
        if not name.endswith("_SOURCES"):
            continue
        target = name[:-len("_SOURCES")]
        flags = expand(env.get(target + "_CPPFLAGS", "$(AM_CPPFLAGS)"), env)
        dirs = default + re.findall(r"-I\$\(top_srcdir\)/?(\S*)", flags)
        for src in expand(value, env).split():
            mine = default + am if src.endswith(".cu") else dirs
            have = paths.setdefault(src, [])
            have += [d for d in mine if d not in have]
    return paths, default + am


def resolve(top, src, quote, name, dirs):
    """The file of the source tree #include @name of @src names, or None."""
    where = ([os.path.dirname(src)] if quote == '"' else []) + dirs
    for d in where:
        cand = os.path.normpath(os.path.join(d, name))
        if not cand.startswith("..") and os.path.isfile(os.path.join(top, cand)):
            return cand
    return None


def problem_of(src, mine, target, theirs):
    allowed = TOOL_ALLOWED.get(mine[1])
    if allowed is not None and theirs[1] != mine[1] and theirs[1] not in allowed:
        return "a tool may use the public API only"
    if theirs[2] > mine[2] or (theirs[2] == mine[2] and theirs[0] != mine[0]):
        return "an upward include"
    if backend_of(src) and backend_of(target) and backend_of(src) != backend_of(target):
        return "a backend includes another backend"
    return None


def sources(top):
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        if rel_dir == ".":
            rel_dir = ""
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not d.startswith("build")
                             and os.path.join(rel_dir, d) not in ("tests", "config"))
        for fn in sorted(filenames):
            if fn.endswith(SOURCES):
                yield os.path.join(rel_dir, fn)


def table_members(top, files):
    """{member name: {table types}} of the struct members holding a restricted table, and
    only those: a name that also holds another table ("ops") is not watched."""
    members = {}
    for src in (f for f in files if f.endswith((".h", ".hpp"))):  # (locals live in .c files)
        with open(os.path.join(top, src), errors="replace") as f:
            for typ, name in TABLE_MEMBER.findall(f.read()):
                members.setdefault(name, set()).add(typ)
    return {name: types for name, types in members.items()
            if all(t in TABLE_USERS for t in types)}


def table_reaches(src, mine, text, members):
    """Lines of @src (layer @mine) that read a table member none of whose types its layer
    may use: "->cuda_ops", ".tp_ops" (a read, whether called at once or through a copy)."""
    out = []
    for m in re.finditer(r"(?:->|\.)(\w+)\b(?!\s*\()", text):
        types = members.get(m.group(1))
        if types and not any(mine[1] in TABLE_USERS[t] for t in types) and \
                not src.startswith("include/"):
            line = text.count("\n", 0, m.start()) + 1
            out.append(f"{src}:{line} ({mine[1]}) reaches {m.group(1)} "
                       f"({' or '.join(sorted(types))}), a table for "
                       f"{', '.join(sorted(TABLE_USERS[min(types)]))} only")
    return out


# a function's definition at the start of a line, not static: "type name(args) {" (the
# arguments may span lines; K&R braces on the next line too)
FUNC_DEF = re.compile(r"^(?!static\b)(?:[A-Za-z_][\w\s\*]*?[\s\*])?([A-Za-z_]\w*)\s*\([^;{)]*\)"
                      r"\s*\{", re.M)
CODE_FILES = (".c", ".cu", ".cc", ".cpp")
NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else"}


def code_of(top, src):
    """@src without comments and string or character literals (a line count kept)."""
    with open(os.path.join(top, src), errors="replace") as f:
        text = f.read()
    return NOT_CODE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def call_graph(top, files):
    """{caller file: {callee file: [names]}} over the layered code files: the uses of a
    function another of them defines (not static, defined in that file only)."""
    code = {src: code_of(top, src) for src in files
            if src.endswith(CODE_FILES) and layer_of(src) is not None}
    owner, seen = {}, set()
    for src, text in code.items():
        for name in set(FUNC_DEF.findall(text)) - KEYWORDS:
            if "_" not in name.strip("_"):
                continue  # (a short name, cast or ok, is a member or a local as often)
            if name in seen:
                owner.pop(name, None)  # defined twice (main, a backend's twin): nobody's
            else:
                seen.add(name)
                owner[name] = src
    graph = {}
    for src, text in code.items():
        # a name after . or -> is a member of that name, not the function
        for name in set(re.findall(r"(?<![\w.>])[A-Za-z_]\w*\b", text)) & owner.keys():
            if owner[name] != src:
                graph.setdefault(src, {}).setdefault(owner[name], []).append(name)
    return graph


def upward_calls(graph):
    out = []
    for src, callees in sorted(graph.items()):
        mine = layer_of(src)
        for target, names in sorted(callees.items()):
            theirs = layer_of(target)
            if theirs[2] > mine[2] or (theirs[2] == mine[2] and theirs[0] != mine[0]):
                out.append(f"{src} ({mine[1]}) calls {', '.join(sorted(names))} of {target} "
                           f"({theirs[1]}): an upward call")
    return out


def circles(graph):
    """The circles of files calling each other: each strongly connected set of more than one
    file, with the calls inside it (Tarjan's algorithm, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    inside = [f"{a} -> {b} ({', '.join(sorted(graph[a][b]))})"
                              for a in sorted(comp) for b in sorted(graph.get(a, {}))
                              if b in comp]
                    out.append(f"a circle of {len(comp)} files calling each other: " +
                               "; ".join(inside))
    return out


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    paths, unlisted = include_paths(top)
    files = list(sources(top))
    members = table_members(top, files)
    bad = checked = 0
    for src in files:
        mine = layer_of(src)
        if mine is None:
            continue
        with open(os.path.join(top, src), errors="replace") as f:
            text = f.read()
        for line in table_reaches(src, mine, text, members):
            print(line)
            bad += 1
        for m in INCLUDE.finditer(text):
            target = resolve(top, src, m.group(1), m.group(2), paths.get(src, unlisted))
            theirs = layer_of(target) if target is not None else None
            if theirs is None:
                continue  # generated (config.h, version.h) or a system header
            checked += 1
            problem = problem_of(src, mine, target, theirs)
            if problem is not None:
                print(f"{src} ({mine[1]}) includes {target} ({theirs[1]}): {problem}")
                bad += 1
    graph = call_graph(top, files)
    for line in upward_calls(graph) + circles(graph):
        print(line)
        bad += 1
    ncalls = sum(len(c) for c in graph.values())
    print(f"check_layers: {checked} includes and {ncalls} calls between files checked, {bad} "
          f"against the layers ({len(members)} table members watched)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
