#!/bin/bash
# vm.sh: run a command inside the soft-RoCE guest that tools/rdma-vm.sh prepared, and exit
# with its status. The command runs as root in the host's file system (read-only, over 9p)
# from the current directory, with rxe0 on the guest's dummy netdev sharc0 (10.77.0.1); its
# output comes back on this terminal.
#
#   tests/transport/rdma/vm.sh [--timeout S] [--dir DIR] -- COMMAND [ARGS...]
#
# Exit status 77 (skip) without QEMU or a prepared guest; 124 when the guest runs past the
# timeout (default 600 s; it is killed); 125 when the guest did not report a status.
# SPDX-License-Identifier: BSD-3-Clause
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
dir=${SHARC_RDMA_VM:-$top/build/rdma-vm}
timeout_s=600
while [ $# -gt 0 ]; do
    case "$1" in
        --timeout) timeout_s=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "vm.sh: unknown option $1"; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: vm.sh [--timeout S] [--dir DIR] -- COMMAND..."; exit 2; }
[ -d "$dir" ] && dir=$(cd "$dir" && pwd)
if ! command -v qemu-system-x86_64 > /dev/null; then
    echo "SKIP: no qemu-system-x86_64 (tools/install-deps.sh installs it)"
    exit 77
fi
if [ ! -f "$dir/vmlinuz" ] || [ ! -f "$dir/initrd.img" ]; then
    echo "SKIP: no guest in $dir (tools/rdma-vm.sh prepares it)"
    exit 77
fi

# the job: a script on the host that the guest reads through 9p (beside the guest's files:
# the guest's /tmp is its own)
job=$(mktemp "$dir/job.XXXXXX")
out=$(mktemp "$dir/out.XXXXXX")
trap 'rm -f "$job" "$out"' EXIT
{
    echo "cd $(printf '%q' "$PWD") || exit 126"
    for v in $(compgen -e); do
        case "$v" in
            SHARC_*|UCX_*|OMPI_*|LD_LIBRARY_PATH|PATH|top_srcdir|top_builddir|MPIRUN)
                echo "export $v=$(printf '%q' "${!v}")" ;;
        esac
    done
    printf '%q ' "$@"
    echo
} > "$job"

# KVM only where the CPU offers it (nested virtualization without vmx/svm cannot boot a
# stock kernel); else TCG on every host core
accel="-accel tcg,thread=multi -cpu max"
if [ -w /dev/kvm ] && grep -qE 'vmx|svm' /proc/cpuinfo; then
    accel="-accel kvm -cpu host"
fi
# shellcheck disable=SC2086
timeout -k 10 "$timeout_s" qemu-system-x86_64 $accel -smp "$(nproc)" -m 2048 -nographic \
    -no-reboot -nic none -kernel "$dir/vmlinuz" -initrd "$dir/initrd.img" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 sharc.job=$job" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    < /dev/null 2>&1 | tr -d '\r' | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' | tee "$out"
st=${PIPESTATUS[0]}
if [ "$st" = 124 ] || [ "$st" = 137 ]; then
    echo "vm.sh: the guest ran past ${timeout_s} s and was killed"
    exit 124
fi
code=$(sed -n 's/^SHARC_RDMA_EXIT=\([0-9]*\)$/\1/p' "$out" | tail -1)
if [ -z "$code" ]; then
    echo "vm.sh: the guest reported no exit status (qemu exit $st)"
    exit 125
fi
exit "$code"
