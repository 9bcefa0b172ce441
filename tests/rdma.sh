#!/bin/bash
# Verbs for real on soft-RoCE: tests/rdma/test_verbs inside the QEMU guest (tests/rdma/vm.sh),
# prepared on first use by tools/rdma-vm.sh into the build tree. Skips (77) without QEMU, or
# when the guest cannot be prepared (no Debian mirror for the kernel package).
. "$(dirname "$0")/lib.sh"

vm="$top_builddir/rdma-vm"
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
run_ok_match "verbs on rxe0 in the guest: RC QPs, RDMA write with immediate, faults" \
    "device rxe0.*RoCE.*rdma write with immediate of [0-9]+ bytes: ok.*QP in error: Work Request Flushed Error.*registering an unmapped range: Bad address" \
    "$top_srcdir/tests/rdma/vm.sh" --dir "$vm" --timeout 300 -- "$BIN/rdma/test_verbs"
finish
