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
# communicator (past coll/) is found; so are a call upward (coll/ calling the shard engine) and
# files calling each other in a circle, while names in comments and strings are not calls.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/coll" "$tree/shard" "$tree/trainer/model" "$tree/trainer/cli" \
    "$tree/include/sharc" "$tree/comm" "$tree/python/csrc"
printf '%s\n' 'AM_CPPFLAGS = -I$(top_srcdir)/include' \
    'TRAINER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/trainer' \
    'libx_la_SOURCES = coll/x.c' 'liby_la_SOURCES = trainer/model/m.c' \
    'liby_la_CPPFLAGS = $(TRAINER_CPPFLAGS)' > "$tree/Makefile.am"
touch "$tree/shard/shard.h" "$tree/trainer/cli/opts.h" "$tree/include/sharc/sharc.h"
printf '#include <sharc/sharc.h>\n#include "shard/shard.h"\n' > "$tree/coll/x.c"
printf '#include "cli/opts.h"\n#include <shard/shard.h>\n' > "$tree/trainer/model/m.c"
printf '#include "../../shard/shard.h"\n' > "$tree/python/csrc/b.cpp"
printf 'typedef struct {\n    const sharc_tp_ops_t *cuda_ops;\n} sharc_comm_t;\n' > "$tree/comm/comm.h"
printf 'void f(sharc_comm_t *c)\n{\n    c->cuda_ops->mem_alloc(0);\n}\n' > "$tree/shard/m.c"
printf 'int sharc_shard_up(void)\n{\n    return 1;\n}\n' > "$tree/shard/up.c"
printf 'int sharc_coll_a(void)\n{\n    return sharc_coll_b() + sharc_shard_up();\n}\n' \
    > "$tree/coll/a.c"
printf 'int sharc_coll_b(void)\n{\n    return sharc_coll_a();\n}\n' > "$tree/coll/b.c"
printf '/* sharc_coll_a() */\nconst char *s = "sharc_coll_b";\nint sharc_coll_c(void)\n{\n    return 0;\n}\n' \
    > "$tree/coll/c.c"
printf 'int sharc_coll_d(void)\n{\n    return sharc_coll_c();\n}\n' > "$tree/coll/d.c"
run_fail "the checker finds the upward includes and calls, the table reached past a layer and a circle" 30 \
    "coll/x.c \(collectives\) includes shard/shard.h .*python/csrc/b.cpp \(python\) includes shard/shard.h .*shard/m.c:3 \(sharding group\) reaches cuda_ops .*trainer/model/m.c \(trainer model\) includes trainer/cli/opts.h .*includes shard/shard.h .*coll/a.c \(collectives\) calls sharc_shard_up of shard/up.c \(sharding group\): an upward call.*a circle of 2 files calling each other: coll/a.c -> coll/b.c \(sharc_coll_b\); coll/b.c -> coll/a.c \(sharc_coll_a\).* 4 calls between files checked, 7 against the layers" \
    python3 "$top_srcdir/tests/check_layers.py" "$tree"
finish
