#!/bin/bash
# The layers of docs/design.md hold: no source of the library, the tools or the trainer
# includes a header of a layer above its own, no backend includes another, and the tools
# reach the library through its public API (tests/check_layers.py says which file breaks it).
. "$(dirname "$0")/lib.sh"

command -v python3 > /dev/null || { echo "SKIP: no python3"; exit 77; }
run_ok "every include points down" python3 "$top_srcdir/tests/check_layers.py" "$top_srcdir"
finish
