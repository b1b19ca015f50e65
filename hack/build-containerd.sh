#!/usr/bin/env bash
# Builds containerd and its runc shim from the Go module proxy, statically, cached in
# $QUORATE_CACHE/containerd/<version>/bin. Prints that directory.
# Usage: hack/build-containerd.sh v1.7.34 (e2e/localcluster/config.go names the version).
#
# The local cluster runs this containerd, not Debian's (1.6.20), for one setting: its overlayfs
# snapshotter mounts container roots `volatile` (mount_options, containerd 1.7 on). Unmounting a
# non-volatile overlay syncs its whole upper filesystem, here the root filesystem the etcd
# members' data shares, so every container exit made every member's fsync wait for all the data
# written on the machine (docs/local-cluster.md). The btrfs, devmapper, zfs and aufs snapshotters
# are left out (cgo, unused). `go install pkg@version` refuses containerd's go.mod (it excludes a
# module), so a scratch module requires it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
version=${1:?usage: build-containerd.sh vX.Y.Z}
dir=$QUORATE_CACHE/containerd/$version
m=github.com/containerd/containerd
done_() { [ -x "$dir/bin/containerd" ] && [ -x "$dir/bin/containerd-shim-runc-v2" ]; }
if done_; then echo "$dir/bin"; exit 0; fi

build() {
  done_ && return 0
  local start=$SECONDS src=$dir/src
  rm -rf "$src"; mkdir -p "$src" "$dir/bin"
  log "building containerd $version and containerd-shim-runc-v2 (cold: a few minutes)"
  (
    cd "$src"
    scratch_module "$m" "$version" "" "$m/cmd/containerd" "$m/cmd/containerd-shim-runc-v2"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags "no_btrfs no_devmapper no_zfs no_aufs" \
      -ldflags "-s -w -X $m/version.Version=$version" -o "$dir/bin/" "$m/cmd/containerd" "$m/cmd/containerd-shim-runc-v2"
  )
  log "built containerd $version in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir/bin"
