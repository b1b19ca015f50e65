#!/usr/bin/env bash
# Builds etcd, etcdctl and etcdutl (snapshot restore) of one release from the Go module proxy,
# statically, cached in $QUORATE_CACHE/etcd/<version>/bin. Usage: hack/build-etcd.sh v3.6.16 [ARCH]
# ARCH (amd64, arm64: linux, cross-compiled; release images are multi-architecture) builds into
# $QUORATE_CACHE/etcd/<version>/bin-linux-<ARCH> instead; this machine's own arch is bin.
#
# FAILPOINTS=1 builds etcd with its gofail failpoints enabled, as etcd's robustness tests do,
# into $QUORATE_CACHE/etcd/<version>/bin-failpoints (etcdctl and etcdutl copied from bin): the
# server module's source is copied, `gofail enable` turns its `// gofail:` comments into code,
# and the scratch module builds that copy. Set GOFAIL_HTTP=HOST:PORT in etcd's environment to
# arm failpoints over HTTP (PUT /<name> with an action such as panic or sleep(100)).
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
# GOFAIL_VERSION is the gofail etcd's own tools pin (tools/mod/go.mod of v3.6).
GOFAIL_VERSION=v0.2.0
if [ -n "${FAILPOINTS:-}" ]; then
  [ -z "$arch" ] || die "FAILPOINTS builds for this machine only"
  plain=$(FAILPOINTS= "$0" "$version")
  out=$dir/bin-failpoints
  [ -x "$out/etcd" ] && [ -x "$out/etcdctl" ] && [ -x "$out/etcdutl" ] && { echo "$out"; exit 0; }
  gofail=$("$here/build-tool.sh" go.etcd.io/gofail "$GOFAIL_VERSION")
  build_failpoints() {
    [ -x "$out/etcd" ] && [ -x "$out/etcdctl" ] && [ -x "$out/etcdutl" ] && return 0
    local src=$dir/src-failpoints start=$SECONDS
    rm -rf "$src"; mkdir -p "$src" "$out"
    log "building etcd $version with failpoints"
    (
      cd "$src"
      go mod init quorate.local/etcd-failpoints >/dev/null 2>&1
      go get "go.etcd.io/etcd/server/v3@$version" >/dev/null 2>&1 || go get "go.etcd.io/etcd/server/v3@$version"
      cp -r "$(go list -m -f '{{.Dir}}' "go.etcd.io/etcd/server/v3")" server
      chmod -R u+w server
      # Every package of the server module with a failpoint.
      mapfile -t pkgs < <(cd server && grep -rl --include='*.go' '// gofail:' . | xargs -n1 dirname | sort -u)
      [ "${#pkgs[@]}" -gt 0 ] || die "etcd $version has no gofail failpoints"
      (cd server && "$gofail" enable "${pkgs[@]}")
      go mod edit -replace go.etcd.io/etcd/server/v3=./server
      go get "go.etcd.io/gofail@$GOFAIL_VERSION" >/dev/null 2>&1 || go get "go.etcd.io/gofail@$GOFAIL_VERSION"
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
    )
    cp "$plain/etcdctl" "$plain/etcdutl" "$out/"
    log "built etcd $version with failpoints in $((SECONDS - start))s"
  }
  with_lock "$dir" build_failpoints
  echo "$out"
  exit 0
fi
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
