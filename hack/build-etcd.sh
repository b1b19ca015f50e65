#!/usr/bin/env bash
# Builds etcd, etcdctl and etcdutl (snapshot restore) of one release from the Go module proxy,
# statically, cached in $QUORATE_CACHE/etcd/<version>/bin. Usage: hack/build-etcd.sh v3.6.16 [ARCH]
# ARCH (amd64, arm64: linux, cross-compiled; release images are multi-architecture) builds into
# $QUORATE_CACHE/etcd/<version>/bin-linux-<ARCH> instead; this machine's own arch is bin.
#
# `go install go.etcd.io/etcd/server/v3@...` fails because etcd's go.mod has replace directives;
# a scratch module that requires the server (and etcdctl) modules builds them (main.go is at each
# module's root).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

version=${1:?usage: build-etcd.sh v3.X.Y [ARCH]}
[[ $version =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "etcd version must look like v3.6.16, got '$version'"
arch=${2:-}
dir=$QUORATE_CACHE/etcd/$version
out=$dir/bin
goenv=()
if [ -n "$arch" ] && [ "$arch" != "$(go env GOHOSTARCH)" ]; then
  [[ $arch =~ ^(amd64|arm64)$ ]] || die "ARCH must be amd64 or arm64, got '$arch'"
  out=$dir/bin-linux-$arch
  goenv=(GOOS=linux "GOARCH=$arch")
fi
built() { [ -x "$out/etcd" ] && [ -x "$out/etcdctl" ] && [ -x "$out/etcdutl" ]; }
if built; then echo "$out"; exit 0; fi

build() {
  built && return 0
  local src=$dir/src
  rm -rf "$src"; mkdir -p "$src" "$out"
  log "building etcd $version ${arch:+for $arch }(cold: ~1.5 min)"
  local start=$SECONDS
  (
    cd "$src"
    go mod init quorate.local/etcd-build >/dev/null 2>&1
    mods=("go.etcd.io/etcd/server/v3@$version" "go.etcd.io/etcd/etcdctl/v3@$version" "go.etcd.io/etcd/etcdutl/v3@$version")
    go get "${mods[@]}" >/dev/null 2>&1 || go get "${mods[@]}"
    for m in server etcdctl etcdutl; do
      local b=$m; [ "$m" = server ] && b=etcd
      env "${goenv[@]}" CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/$b" "go.etcd.io/etcd/$m/v3"
    done
  )
  log "built etcd $version in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$out"
