#!/usr/bin/env bash
# Builds a Go program with `go install module/path@version`, statically, cached per version in
# $QUORATE_CACHE/tools/<name>/<version>/. Prints the binary's path.
# Usage: hack/build-tool.sh github.com/coredns/coredns v1.15.0
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pkg=${1:?usage: build-tool.sh PACKAGE VERSION}
version=${2:?usage: build-tool.sh PACKAGE VERSION}
name=$(basename "$pkg")
dir=$QUORATE_CACHE/tools/$name/$version
if [ -x "$dir/$name" ]; then echo "$dir/$name"; exit 0; fi
build() {
  [ -x "$dir/$name" ] && return 0
  log "building $pkg@$version"
  local start=$SECONDS
  GOBIN=$dir CGO_ENABLED=0 GOFLAGS=-trimpath go install -ldflags "-s -w" "$pkg@$version"
  log "built $name $version in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir/$name"
