#!/usr/bin/env bash
# Builds a Go program with `go install module/path@version`, statically, cached per version in
# $QUORATE_CACHE/tools/<name>/<version>/. Prints the binary's path. TAGS are Go build tags (to
# leave out parts of a program the project does not use, which are most of its build time).
# Usage: hack/build-tool.sh github.com/coredns/coredns v1.15.0 [TAGS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pkg=${1:?usage: build-tool.sh PACKAGE VERSION}
version=${2:?usage: build-tool.sh PACKAGE VERSION [TAGS]}
tags=${3:-}
name=$(basename "$pkg")
# A major-version suffix is not the command's name: go install names .../kustomize/v5 kustomize.
[[ $name =~ ^v[0-9]+$ ]] && name=$(basename "$(dirname "$pkg")")
dir=$QUORATE_CACHE/tools/$name/$version
if [ -x "$dir/$name" ]; then echo "$dir/$name"; exit 0; fi
build() {
  [ -x "$dir/$name" ] && return 0
  log "building $pkg@$version"
  local start=$SECONDS
  GOBIN=$dir CGO_ENABLED=0 GOFLAGS=-trimpath go install -tags "$tags" -ldflags "-s -w" "$pkg@$version"
  log "built $name $version in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir/$name"
