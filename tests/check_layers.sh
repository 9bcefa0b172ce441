#!/bin/bash
# The layers of docs/design.md hold: no source of the library, the tools, the trainer or the
# C++ torch backend includes a header of a layer above its own, no backend includes another,
# the tools reach the library through its public API, and no layer reaches a transport's or
# the bootstrap's function table past the layer built on it (tests/check_layers.py says which
# file breaks it; it resolves includes through the build's include paths, as the compiler
# does).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/lib.sh"

command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
run_ok "every include points down" python3 "$top_srcdir/tests/check_layers.py" "$top_srcdir"

# The checker itself, on a small tree: upward includes that only the build's include paths
# resolve (the top of the tree through automake's -I$(srcdir), a target's own -I, and <...>)
# are all found, in C++ too; and the shard engine reaching a transport's table through a
# communicator (past coll/) is found.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/coll" "$tree/shard" "$tree/trainer/model" "$tree/trainer/cli" \
    "$tree/include/sharc" "$tree/core" "$tree/python/csrc"
printf '%s\n' 'AM_CPPFLAGS = -I$(top_srcdir)/include' \
    'TRAINER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/trainer' \
    'libx_la_SOURCES = coll/x.c' 'liby_la_SOURCES = trainer/model/m.c' \
    'liby_la_CPPFLAGS = $(TRAINER_CPPFLAGS)' > "$tree/Makefile.am"
touch "$tree/shard/shard.h" "$tree/trainer/cli/opts.h" "$tree/include/sharc/sharc.h"
printf '#include <sharc/sharc.h>\n#include "shard/shard.h"\n' > "$tree/coll/x.c"
printf '#include "cli/opts.h"\n#include <shard/shard.h>\n' > "$tree/trainer/model/m.c"
printf '#include "../../shard/shard.h"\n' > "$tree/python/csrc/b.cpp"
printf 'typedef struct {\n    const sharc_tp_ops_t *gpu_ops;\n} sharc_comm_t;\n' > "$tree/core/comm.h"
printf 'void f(sharc_comm_t *c)\n{\n    c->gpu_ops->mem_alloc(0);\n}\n' > "$tree/shard/m.c"
run_fail "the checker finds the upward includes and the table reached past a layer" 30 \
    "coll/x.c \(collectives\) includes shard/shard.h .*python/csrc/b.cpp \(python\) includes shard/shard.h .*shard/m.c:3 \(sharding engine\) reaches gpu_ops .*trainer/model/m.c \(trainer model\) includes trainer/cli/opts.h .*includes shard/shard.h .* 5 against the layers" \
    python3 "$top_srcdir/tests/check_layers.py" "$tree"
finish
