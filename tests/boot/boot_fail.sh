#!/bin/bash
# Bootstrap failures: each must end with a clear error, naming the cause, within the
# bootstrap timeout plus a small margin; never a hang. The timeout is 3 s here.
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"
export SHARC_BOOTSTRAP_TIMEOUT=3s
T=3
MARGIN=4
prog="$BIN/comm/test_comm"
clean=(env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u GROUP_RANK -u MASTER_ADDR
       -u MASTER_PORT -u SLURM_PROCID -u SLURM_NTASKS -u SLURM_STEP_ID -u OMPI_COMM_WORLD_SIZE)
envjob=("${clean[@]}" MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port))

# --- launch variables: rejected at once, naming the variable ---
run_fail "RANK >= WORLD_SIZE" 2 "rank 4 is not below the size 4" \
    "${envjob[@]}" RANK=4 WORLD_SIZE=4 "$prog"
run_fail "RANK missing" 2 "RANK is not set" "${envjob[@]}" WORLD_SIZE=4 "$prog"
run_fail "WORLD_SIZE missing" 2 "WORLD_SIZE is not set" "${envjob[@]}" RANK=0 "$prog"
run_fail "RANK garbage" 2 "RANK='abc' is not an integer" \
    "${envjob[@]}" RANK=abc WORLD_SIZE=2 "$prog"
run_fail "WORLD_SIZE zero" 2 "WORLD_SIZE='0' is not an integer in \[1," \
    "${envjob[@]}" RANK=0 WORLD_SIZE=0 "$prog"
run_fail "RANK overflow" 2 "RANK='99999999999999999999' is not an integer" \
    "${envjob[@]}" RANK=99999999999999999999 WORLD_SIZE=2 "$prog"
run_fail "MASTER_ADDR missing" 2 "MASTER_ADDR is not set" \
    "${clean[@]}" RANK=0 WORLD_SIZE=2 MASTER_PORT=29500 "$prog"
run_fail "MASTER_PORT out of range" 2 "MASTER_PORT='99999' is not an integer in \[1, 65535\]" \
    "${clean[@]}" RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=99999 "$prog"
run_fail "MASTER_PORT empty" 2 "MASTER_PORT='' is not an integer" \
    "${clean[@]}" RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT= "$prog"
run_fail "LOCAL_RANK >= LOCAL_WORLD_SIZE" 2 "local rank 5 is not below the local size 2" \
    "${envjob[@]}" RANK=0 WORLD_SIZE=2 LOCAL_RANK=5 LOCAL_WORLD_SIZE=2 "$prog"
run_fail "SLURM_PROCID negative" 2 "SLURM_PROCID='-1' is not an integer" \
    "${clean[@]}" SHARC_BOOTSTRAP=slurm SLURM_PROCID=-1 SLURM_NTASKS=2 "$prog"
run_fail "Slurm node list malformed" 2 "SLURM_JOB_NODELIST='node\[01-' is not a valid Slurm host list" \
    "${clean[@]}" SHARC_BOOTSTRAP=slurm SLURM_PROCID=0 SLURM_NTASKS=2 "SLURM_JOB_NODELIST=node[01-" "$prog"
run_fail "Slurm without a master" 2 "neither MASTER_ADDR nor SLURM_STEP_NODELIST" \
    "${clean[@]}" -u SLURM_JOB_NODELIST -u SLURM_STEP_NODELIST -u SLURM_NODELIST \
    SHARC_BOOTSTRAP=slurm SLURM_PROCID=0 SLURM_NTASKS=2 "$prog"
run_fail "SHARC_BOOTSTRAP_TIMEOUT garbage" 2 "SHARC_BOOTSTRAP_TIMEOUT='soon' is not valid" \
    "${envjob[@]}" SHARC_BOOTSTRAP_TIMEOUT=soon RANK=0 WORLD_SIZE=1 "$prog"
run_fail "SHARC_BOOTSTRAP unknown" 2 "SHARC_BOOTSTRAP='pmi' is not valid" \
    "${envjob[@]}" SHARC_BOOTSTRAP=pmi "$prog"
run_fail "MASTER_ADDR that does not resolve" $((T + MARGIN)) "cannot listen for the bootstrap store" \
    "${clean[@]}" RANK=0 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid MASTER_PORT=29500 "$prog"

# --- ranks that disagree, or never come: timeouts name the missing ranks ---
run_fail "wrong MASTER_PORT on rank 1" $((T + MARGIN)) \
    "cannot reach the bootstrap store \(rank 1\) at 127.0.0.1:9 .*Connection refused" \
    "$LAUNCH" --mode env -n 2 --rank-env 1:MASTER_PORT=9 -- "$prog"
run_fail "wrong MASTER_PORT: rank 0 names the absent rank" $((T + MARGIN)) \
    "rank\(s\) 1 of 2 did not arrive" \
    "$LAUNCH" --mode env -n 2 --rank-env 1:MASTER_PORT=9 -- "$prog"
run_fail "rank 2 never arrives" $((T + MARGIN)) "rank\(s\) 2 of 3 did not arrive" \
    "$LAUNCH" --mode env -n 3 --ranks "0 1" -- "$prog"
# (test_comm checks the status and the time itself: the ranks that fail are the test's own)
run_ok_match "a member never joins a group of some ranks: the others name it" \
    "timed out .* communicator 'w0.g[0-9a-f]+': rank\(s\) 2 of 3 did not arrive" \
    env SHARCTEST_MAX_SECONDS=$((T + MARGIN)) "$LAUNCH" --mode env -n 3 -- "$prog" --group-missing
run_fail "rank 0 (the store) never arrives" $((T + MARGIN)) \
    "cannot reach the bootstrap store \(rank 1\)" \
    "$LAUNCH" --mode env -n 3 --ranks "1 2" -- "$prog"
run_fail "duplicate RANK=1" $((T + MARGIN)) "already connected from .*duplicate RANK" \
    "$LAUNCH" --mode env -n 3 --ranks "0 1 1" -- "$prog"
run_fail "duplicate RANK=1: the others name rank 2" $((T + MARGIN)) "rank\(s\) 2 of 3 did not arrive" \
    "$LAUNCH" --mode env -n 3 --ranks "0 1 1" -- "$prog"
run_fail "WORLD_SIZE differs on rank 1" $((T + MARGIN)) "refused this rank" \
    "$LAUNCH" --mode env -n 2 --rank-env 1:WORLD_SIZE=3 -- "$prog"
run_fail "a wrong job token" $((T + MARGIN)) "refused this rank: wrong job token" \
    "$LAUNCH" --mode env -n 2 --rank-env 1:SHARC_BOOTSTRAP_TOKEN=other -- "$prog"
run_fail "LOCAL_WORLD_SIZE differs on rank 1" $((T + MARGIN)) \
    "rank 1 was told its node has 3 ranks, but 2 ranks share node 0" \
    "$LAUNCH" --mode env -n 2 --rank-env 1:LOCAL_WORLD_SIZE=3 -- "$prog"
run_fail "two ranks with one LOCAL_RANK" $((T + MARGIN)) "both have local rank 0" \
    "$LAUNCH" --mode env -n 2 --rank-env 1:LOCAL_RANK=0 -- "$prog"
run_fail "some ranks know their node, some do not" $((T + MARGIN)) \
    "1 of 2 ranks know their node index" \
    "$LAUNCH" --mode slurm -n 2 --rank-env 1:-SLURM_NODEID -- "$prog"

# --- a peer dies after the job started ---
run_fail "rank 2 crashes: the others fail at once, naming it" 2 \
    "rank 2 of this communicator is gone" \
    "$LAUNCH" --mode env -n 4 --rank-env 2:SHARCTEST_CRASH_RANK=2 -- "$prog"
run_fail "rank 0 crashes: the others lose the store" $((T + MARGIN)) \
    "lost the store at 127.0.0.1:[0-9]+[: ].*did rank 0 fail" \
    "$LAUNCH" --mode env -n 3 --rank-env 0:SHARCTEST_CRASH_RANK=0 -- "$prog"
finish
