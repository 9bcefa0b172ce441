#!/bin/bash
# tune_wrap.sh: a launcher for tests/perf/tune.sh that misbehaves for chosen candidates, the way a
# broken setting does on a real cluster: SHARC_COLL_CHUNK=256k hangs, 4m crashes (SIGSEGV);
# every other job runs through the launcher in TUNE_WRAP_LAUNCH with the rank count $1.
# SPDX-License-Identifier: BSD-3-Clause
np=$1; shift
case " $* " in
    *" SHARC_COLL_CHUNK=256k "*) exec sleep 600 ;;
    # a shell of its own, without the sanitizer builds' preload (which would catch the signal)
    *" SHARC_COLL_CHUNK=4m "*) exec env -u LD_PRELOAD sh -c 'kill -SEGV $$' ;;
esac
exec $TUNE_WRAP_LAUNCH -np "$np" "$@"
