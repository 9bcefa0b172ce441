#!/usr/bin/env python3
"""check_layers.py SRCDIR: every #include "..." of the library, the tools and the trainer
points to its own layer or one below it (docs/design.md draws them), and no transport backend
includes another backend. Prints each upward include with the two layers; exits 1 if any.

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
    ("src/base/", "base", 1),
    ("kernels/", "kernels", 2),
    ("topo/", "topology", 3),
    ("src/boot/", "bootstrap", 4),
    ("transport/", "transport", 5),
    ("coll/", "collectives", 6),
    ("core/", "core", 7),
    ("shard/shard_plan", "sharding planner", 7.5),
    ("shard/", "sharding engine", 8),
    ("src/lib/", "library root", 8.5),
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
# topology tool library (and through it topo/ and base), and the sharding engine's planner
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
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCES = (".c", ".h", ".cu", ".cuh")


def layer_of(path):
    best = None
    for prefix, name, rank in LAYERS:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, name, rank)
    return best


def backend_of(path):
    """transport/<backend>/...: the backend's folder, else None."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "transport" else None


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = checked = 0
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        if rel_dir == "." :
            rel_dir = ""
        dirnames[:] = [d for d in dirnames
                       if not d.startswith(".") and not d.startswith("build")
                       and os.path.join(rel_dir, d) not in ("tests", "config")]
        for fn in filenames:
            if not fn.endswith(SOURCES):
                continue
            src = os.path.join(rel_dir, fn)
            mine = layer_of(src)
            if mine is None:
                continue
            with open(os.path.join(top, src), errors="replace") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                target = os.path.normpath(os.path.join(rel_dir, m.group(1)))
                if not os.path.exists(os.path.join(top, target)):
                    continue  # generated (config.h) or found through -I
                theirs = layer_of(target)
                checked += 1
                if theirs is None:
                    continue
                allowed = TOOL_ALLOWED.get(mine[1])
                if allowed is not None and theirs[1] != mine[1] and theirs[1] not in allowed:
                    problem = "a tool may use the public API only"
                elif theirs[2] > mine[2] or (theirs[2] == mine[2] and theirs[0] != mine[0]):
                    problem = "an upward include"
                elif (backend_of(src) and backend_of(target) and
                      backend_of(src) != backend_of(target)):
                    problem = "a backend includes another backend"
                else:
                    continue
                print(f"{src} ({mine[1]}) includes {target} ({theirs[1]}): {problem}")
                bad += 1
    print(f"check_layers: {checked} includes checked, {bad} against the layers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
