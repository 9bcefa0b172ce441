#!/bin/bash
# The launch commands of README.md and docs/*.md run as written (tests/net/docs_launch.py: every
# shell block, and how a block is marked to say how it runs), on the README's setup: this
# machine as root, through the launcher each names. The multi-node ones run on the login
# node of 4 namespace nodes with a real Slurm (tools/nodes.sh), the fixture of a cluster:
# `hosts` lists the nodes, `my_app` is a sharc program (tests/comm/test_comm), mpirun reaches the
# nodes through `nodes.sh rsh` as it would through ssh, Slurm's configuration is in
# SLURM_CONF, sharc-perf is on PATH as after `make install`, and SHARC_NODES_PREFIX gives
# blocks that run tools/nodes.sh a set of their own. make check's
# OMPI_ALLOW_RUN_AS_ROOT variables are removed: a line that needs --allow-run-as-root says so.
# Long runs are stopped once they have shown their first results. Needs root (SKIP otherwise).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

if [ -n "${SHARCTEST_SANITIZE:-}" ]; then
    echo "SKIP: the documented commands are checked in the plain build (this is the sanitizer one)"
    exit 77
fi
if ! "$top_builddir/perf/sharc-info" -b | grep -q "^ucx: yes" ||
    ! "$top_builddir/perf/sharc-info" -b | grep -q "^mpi: yes"; then
    echo "SKIP: sharc was built without UCX or MPI, which the documented commands use"
    exit 77
fi
setup_nodes 4 --slurm --cpus 8
fixture=$(mktemp -d "${TMPDIR:-/tmp}/sharc-docs.XXXXXX")
# blocks that call tools/nodes.sh themselves get a set of their own
export SHARC_NODES_PREFIX=${NODES_PREFIX}d
trap 'nodes_down; NODES_PREFIX=$SHARC_NODES_PREFIX nodes_down; rm -rf "$fixture"' EXIT
src=$(cd "$top_srcdir" && pwd)
bld=$(cd "$top_builddir" && pwd)
ln -s "$bld" "$fixture/build"
for d in trainer tools tests docs; do ln -s "$src/$d" "$fixture/$d"; done
for ((i = 0; i < 4; i++)); do echo "$($NODES host $i) slots=4"; done > "$fixture/hosts"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$bld/tests/comm/test_comm" > "$fixture/my_app"
chmod +x "$fixture/my_app"

export NODES PATH="$bld/perf:$PATH" SLURM_CONF="$NODES_DIR/$NODES_PREFIX/slurm/slurm.conf"
export OMPI_MCA_plm_rsh_agent="$NODES rsh"
export SHARC_BOOTSTRAP_TIMEOUT=60s
unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
python3 "$src/tests/net/docs_launch.py" "$fixture" "$src/README.md" "$src"/docs/*.md ||
    failures=$((failures + 1))
finish
