#!/bin/bash
# Verbs for real on soft-RoCE: tests/transport/rdma/guest.sh (the verbs unit test, sharc's ib transport
# at 2, 3 and 4 ranks, zero-copy, the sharding engine, its fault cases) inside the QEMU guest
# (tests/transport/rdma/vm.sh), prepared on first use by tools/rdma-vm.sh into the build tree. Skips (77) without QEMU, when the guest
# cannot be prepared (no Debian mirror for the kernel package), and in sanitizer builds (the
# emulated guest would run them several times slower; the plain build covers them).
# SPDX-License-Identifier: BSD-3-Clause
. "$(dirname "$0")/../lib.sh"

vm="$top_builddir/rdma-vm"
if [ -n "${SHARCTEST_SANITIZE:-}" ]; then
    echo "SKIP: sanitizer build (the guest runs belong to the plain build)"
    exit 77
fi
if ! command -v qemu-system-x86_64 > /dev/null; then
    echo "SKIP: no qemu-system-x86_64 (tools/install-deps.sh installs it)"
    exit 77
fi
if [ ! -f "$vm/vmlinuz" ] || [ ! -f "$vm/initrd.img" ]; then
    if ! bash "$top_srcdir/tools/rdma-vm.sh" "$vm" > "$vm.log" 2>&1; then
        echo "SKIP: the guest could not be prepared: $(tail -1 "$vm.log")"
        exit 77
    fi
fi
run_ok_match "verbs and the ib transport on rxe0 in the guest" \
    "ok: verbs: .*ok: ib: every collective, 4 ranks.*ok: ib: the sharding engine's steps.*a rank killed in the middle of a transfer" \
    "$top_srcdir/tests/transport/rdma/vm.sh" --dir "$vm" --timeout 900 -- env top_srcdir="$top_srcdir" \
    top_builddir="$top_builddir" "$top_srcdir/tests/transport/rdma/guest.sh"
finish
