#!/bin/bash
# The layers of docs/design.md hold: no source of the library, the tools or the trainer
# includes a header of a layer above its own, no backend includes another, and the tools
# reach the library through its public API (tests/check_layers.py says which file breaks it;
# it resolves includes through the build's include paths, as the compiler does).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/lib.sh"

command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
run_ok "every include points down" python3 "$top_srcdir/tests/check_layers.py" "$top_srcdir"

# The checker itself, on a small tree: upward includes that only the build's include paths
# resolve (the top of the tree through automake's -I$(srcdir), a target's own -I, and <...>)
# are all found.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/coll" "$tree/shard" "$tree/trainer/model" "$tree/trainer/cli" \
    "$tree/include/sharc"
printf '%s\n' 'AM_CPPFLAGS = -I$(top_srcdir)/include' \
    'TRAINER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/trainer' \
    'libx_la_SOURCES = coll/x.c' 'liby_la_SOURCES = trainer/model/m.c' \
    'liby_la_CPPFLAGS = $(TRAINER_CPPFLAGS)' > "$tree/Makefile.am"
touch "$tree/shard/shard.h" "$tree/trainer/cli/opts.h" "$tree/include/sharc/sharc.h"
printf '#include <sharc/sharc.h>\n#include "shard/shard.h"\n' > "$tree/coll/x.c"
printf '#include "cli/opts.h"\n#include <shard/shard.h>\n' > "$tree/trainer/model/m.c"
run_fail "the checker finds the upward includes the include paths resolve" 30 \
    "coll/x.c \(collectives\) includes shard/shard.h .*trainer/model/m.c \(trainer model\) includes trainer/cli/opts.h .*includes shard/shard.h .* 3 against the layers" \
    python3 "$top_srcdir/tests/check_layers.py" "$tree"
finish
