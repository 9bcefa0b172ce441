#!/bin/bash
# rdma-vm.sh: prepare the throw-away QEMU guest in which sharc's verbs code runs for real on
# soft-RoCE (rdma_rxe), on a machine without RDMA hardware or kernel modules of its own.
#
#   tools/rdma-vm.sh [DIR]        (default: build/rdma-vm)
#
# It needs qemu-system-x86, busybox-static and cpio (tools/install-deps.sh installs them) and
# Debian's package mirror: the guest kernel is Debian's stock one, downloaded with
# `apt-get download` and unpacked with dpkg-deb (not installed), its modules indexed with
# depmod. DIR then holds vmlinuz, initrd.img (busybox, the rdma_rxe / ib_uverbs / 9p modules
# and their dependencies, and /init) and kernel.version. tests/transport/rdma/vm.sh boots it.
#
# The guest has no root file system of its own: /init mounts the host's / read-only over
# virtio-9p and runs the test command chrooted into it, so every library and every program
# built on the host runs inside unchanged. Writable: /tmp (an overlay on the host's, changes
# kept in the guest), /run and /dev/shm (tmpfs).
# SPDX-License-Identifier: BSD-3-Clause
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/rdma-vm}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

for tool in qemu-system-x86_64 cpio depmod modprobe dpkg-deb apt-get; do
    command -v "$tool" > /dev/null || { echo "rdma-vm: $tool missing (tools/install-deps.sh)"; exit 1; }
done
[ -x /bin/busybox ] || { echo "rdma-vm: /bin/busybox missing (busybox-static)"; exit 1; }

# the kernel: the one linux-image-amd64 points to
pkg=$(apt-cache depends linux-image-amd64 2> /dev/null | sed -n 's/.*Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1)
[ -n "$pkg" ] || { echo "rdma-vm: no linux-image-amd64 in the package lists (apt-get update)"; exit 1; }
ver=${pkg#linux-image-}
if [ ! -f "$dir/kernel/boot/vmlinuz-$ver" ]; then
    rm -rf "$dir/kernel" "$dir/deb"
    mkdir -p "$dir/deb" "$dir/kernel"
    chmod 777 "$dir/deb" # apt's sandbox user writes there
    (cd "$dir/deb" && apt-get download "$pkg" > /dev/null)
    dpkg-deb -x "$dir"/deb/*.deb "$dir/kernel"
    rm -rf "$dir/deb"
    depmod -b "$dir/kernel" "$ver"
fi
cp "$dir/kernel/boot/vmlinuz-$ver" "$dir/vmlinuz"
echo "$ver" > "$dir/kernel.version"

# the initramfs: busybox, the modules the guest loads (with what they depend on), /init
root=$dir/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,host,lib/modules}
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
# crc32_generic: rxe checksums its packets with the crypto API's crc32
mods="virtio_pci 9pnet_virtio 9p overlay dummy crc32_generic rdma_rxe ib_uverbs rdma_ucm"
moddir=$dir/kernel/lib/modules/$ver
mkdir -p "$root/lib/modules/$ver"
for m in $mods; do
    modprobe -d "$dir/kernel" -S "$ver" --show-depends "$m" 2> /dev/null |
        sed -n 's/^insmod \([^ ]*\).*/\1/p'
done | sort -u | while read -r ko; do
    rel=${ko#"$dir/kernel"}
    mkdir -p "$root$(dirname "$rel")"
    cp "$ko" "$root$rel"
done
cp "$moddir"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$ver/" 2> /dev/null || true
depmod -b "$root" "$ver"
echo "$mods" > "$root/modules.list"
cat > "$root/init" << 'INIT'
#!/bin/sh
# The guest's init: modules, the host's / over 9p, soft-RoCE on a dummy netdev, the job,
# its exit status on the console, power off.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do
    modprobe "$m" || echo "rdma-vm: modprobe $m failed"
done
job=$(sed -n 's/.*sharc\.job=\([^ ]*\).*/\1/p' /proc/cmdline)
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /host || {
    echo "rdma-vm: cannot mount the host's file system"; echo "SHARC_RDMA_EXIT=125"; poweroff -f; }
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/shm /host/dev/pts 2> /dev/null
ln -sf /proc/self/fd /host/dev/fd
ln -sf /proc/self/fd/0 /host/dev/stdin
ln -sf /proc/self/fd/1 /host/dev/stdout
ln -sf /proc/self/fd/2 /host/dev/stderr
mount -t tmpfs tmpfs /host/dev/shm
mount -t devpts devpts /host/dev/pts
# /tmp: the host's, made writable by an overlay (a build tree may live there), changes kept
# in the guest's memory
mkdir -p /ovl && mount -t tmpfs tmpfs /ovl && mkdir -p /ovl/upper /ovl/work
mount -t overlay overlay -o lowerdir=/host/tmp,upperdir=/ovl/upper,workdir=/ovl/work /host/tmp ||
    mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
# the host's iproute2 (busybox's ip has no dummy links, and no rdma tool)
chroot /host ip link set lo up
chroot /host ip link add sharc0 type dummy
chroot /host ip addr add 10.77.0.1/24 dev sharc0
chroot /host ip link set sharc0 up
chroot /host rdma link add rxe0 type rxe netdev sharc0 || echo "rdma-vm: rdma link add failed"
chroot /host /bin/sh "$job"
echo "SHARC_RDMA_EXIT=$?"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$dir/initrd.img"
rm -rf "$root"
echo "rdma-vm: $dir ready (kernel $ver)"
