#!/usr/bin/env bash
# Assembles in DIR the root file system of the CSI hostpath image (hack/images.sh csi): the
# programs the driver runs and their shared libraries, copied from this (Debian) machine.
# Usage: hack/build-csi-rootfs.sh DIR        (DIR must not exist, or be empty)
#
# The driver (hack/csi/hostpath) bind-mounts volumes with k8s.io/mount-utils, which runs
# mount(8) and umount(8) by name from PATH, and at start `umount` on a fresh directory under
# /tmp (to learn whether umount says "not mounted"): so util-linux's mount and umount, and a
# writable /tmp. It makes no file systems and mounts no block devices, so mkfs, fsck, blkid,
# blockdev and resize2fs are not needed (csi-driver-host-path's own image also has losetup,
# fallocate, tar, cp and dd for its block volumes and snapshots; this driver archives in Go).
# findmnt is there for a person debugging mounts in the container.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=${1:?usage: build-csi-rootfs.sh DIR}
progs=(mount umount findmnt)

mkdir -p "$root"
[ -z "$(ls -A "$root")" ] || die "$root is not empty"
# The host's merged /usr layout (bin -> usr/bin, lib -> usr/lib, lib64 -> usr/lib64 on Debian
# 12): the same links in the image, so that the paths the binaries and ldd name resolve alike.
for l in bin sbin lib lib64; do
  if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$root/$l"; fi
done

# copy PATH: the file (dereferenced) at the same path in the rootfs, with its directory's
# symbolic links resolved as on the host.
copy() {
  local d; d=$(readlink -f "$(dirname "$1")")
  mkdir -p "$root$d"
  cp -L "$1" "$root$d/$(basename "$1")"
}
for p in "${progs[@]}"; do
  bin=$(command -v "$p") || die "$p is missing on this machine (Debian package util-linux or mount)"
  copy "$bin"
  # ldd lines: "libmount.so.1 => /lib/x86_64-linux-gnu/libmount.so.1 (0x...)" and the loader
  # "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
  while read -r lib; do
    copy "$lib"
  done < <(ldd "$bin" | sed -nE 's#.*=> (/[^ ]+) .*#\1#p; s#^[[:space:]]*(/[^ ]+) \(0x.*#\1#p' | sort -u)
done
mkdir -p "$root/tmp" "$root/etc" "$root/proc" "$root/dev"
chmod 1777 "$root/tmp"
# libmount reads the mount table from /proc/self/mountinfo; an /etc/mtab keeps older callers
# happy.
ln -s ../proc/self/mounts "$root/etc/mtab"
log "CSI hostpath rootfs in $root: ${progs[*]} and $(find "$root" -name '*.so*' | wc -l) shared objects ($(du -sh "$root" | cut -f1))"
