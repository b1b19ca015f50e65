#!/usr/bin/env bash
# Builds the Sonobuoy CLI (github.com/vmware-tanzu/sonobuoy v0.57.3) from the Go module proxy,
# statically (CGO_ENABLED=0, as upstream's build does), into
# $QUORATE_CACHE/sonobuoy/<hash of the version and recipe>/bin/sonobuoy. Prints that
# directory; a second run returns at once.
#
# One binary is all of Sonobuoy: the CLI (sonobuoy run, status, retrieve, results, delete), the
# aggregator (sonobuoy aggregator) and the plugins' worker sidecar (sonobuoy worker); `sonobuoy
# retrieve` runs `/sonobuoy splat` in the aggregator's container. hack/images.sh sonobuoy puts it
# at /sonobuoy in an image; config/sonobuoy and hack/sonobuoy-run.sh use both.
#
# The module's go.mod has no replace or exclude directives, but `go install pkg@version` still
# fails here: it looks the module up for deprecation in its version list (@v/list), which the
# module proxy refuses (403; it serves v0.57.3 itself, so ask for exact versions only). So the
# module is downloaded at that version and built as the main module, in place in the module cache
# (read-only, which is fine: its go.sum is complete and the build writes nothing there). Its
# version is stamped as upstream's scripts/build_funcs.sh does (-X pkg/buildinfo.Version;
# pkg/buildinfo already says v0.57.3); GitSHA stays empty (the module zip has no git history).
#
# The Go toolchain is upstream's, go1.23.6 (scripts/build_funcs.sh: BUILD_IMAGE=golang:1.23.6),
# which the go command fetches from the module proxy (golang.org/toolchain) once. Not this
# machine's: a newer net/url (this machine's Go 1.26 has it) refuses an IPv4 address in brackets
# ("invalid IP-literal"), and Sonobuoy's aggregator hands its workers
# AGGREGATOR_URL=https://[<pod IP>]:8080, brackets even for IPv4; a worker built with Go 1.26 exits at once ("parsing AggregatorURL") and the
# plugin's results never reach the aggregator.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

SONOBUOY_VERSION=v0.57.3
GO_TOOLCHAIN=go1.23.6
mod=github.com/vmware-tanzu/sonobuoy@$SONOBUOY_VERSION
# "b2": the build recipe (b1 built with the machine's Go); bump it when the way the binary is
# built changes.
hash=$(printf '%s\n' b2 "$mod" "$GO_TOOLCHAIN" | sha256sum | cut -c1-12)
dir=$QUORATE_CACHE/sonobuoy/$hash
if [ -x "$dir/bin/sonobuoy" ]; then echo "$dir"; exit 0; fi

build() {
  [ -x "$dir/bin/sonobuoy" ] && return 0
  log "building sonobuoy $SONOBUOY_VERSION"
  local start=$SECONDS
  mkdir -p "$dir/bin"
  echo "$mod $GO_TOOLCHAIN" >"$dir/version"
  local src
  src=$(cd "$dir" && GOTOOLCHAIN=$GO_TOOLCHAIN go mod download -json "$mod" | sed -nE 's/.*"Dir": "([^"]+)".*/\1/p')
  [ -f "$src/go.mod" ] || die "could not download $mod from the module proxy"
  # -trimpath: the binary holds no path of this machine.
  (cd "$src" && GOTOOLCHAIN=$GO_TOOLCHAIN CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOFLAGS=-mod=readonly \
    go build -trimpath -ldflags "-s -w -X github.com/vmware-tanzu/sonobuoy/pkg/buildinfo.Version=$SONOBUOY_VERSION" \
      -o "$dir/bin/sonobuoy.tmp" .)
  mv "$dir/bin/sonobuoy.tmp" "$dir/bin/sonobuoy"
  log "built sonobuoy $SONOBUOY_VERSION in $((SECONDS - start))s ($(du -h "$dir/bin/sonobuoy" | cut -f1))"
}
with_lock "$dir" build
echo "$dir"
