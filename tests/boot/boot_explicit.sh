#!/bin/bash
# The explicit bootstrap: the caller passes rank, size and the store address.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

for n in 1 2 3 4 8; do
    run_ok "explicit, $n ranks" "$LAUNCH" --mode explicit -n $n -- "$BIN/comm/test_comm"
done
finish
