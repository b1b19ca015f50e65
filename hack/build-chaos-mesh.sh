#!/usr/bin/env bash
# Builds Chaos Mesh (chaos-controller-manager, chaos-daemon, chaos-daemon-helper, pause) from the
# Go module proxy into $QUORATE_CACHE/chaos-mesh/<version>/bin, and keeps the module source
# (helm chart, CRDs) beside it. Prints the cache directory.
#
# The module is only served at pseudo-versions and its go.mod has replace directives, so it
# cannot be `go install`ed; a writable copy of it is built as the main module, where its own
# replace block and go.sum apply. The module zip lacks the compiled TimeChaos objects
# (pkg/time/fakeclock/*.o) the daemon embeds, so they are compiled from their C sources first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
version=${CHAOS_MESH_VERSION:-v0.9.1-0.20260902003049-47411975a8cb}
dir=$QUORATE_CACHE/chaos-mesh/$version
bins=(chaos-controller-manager chaos-daemon cdh pause)
done_() { for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done; }
if done_; then echo "$dir"; exit 0; fi

build() {
  done_ && return 0
  local start=$SECONDS mod
  mkdir -p "$dir/bin"
  if [ ! -f "$dir/src/go.mod" ]; then
    log "downloading github.com/chaos-mesh/chaos-mesh@$version"
    mod=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "github.com/chaos-mesh/chaos-mesh@$version" | sed -nE 's/.*"Dir": "([^"]+)".*/\1/p')
    [ -d "$mod" ] || die "could not download chaos-mesh $version"
    rm -rf "$dir/src.tmp" && cp -r "$mod" "$dir/src.tmp" && chmod -R u+w "$dir/src.tmp" && mv "$dir/src.tmp" "$dir/src"
  fi
  (
    cd "$dir/src/pkg/time/fakeclock"
    for c in fake_clock_gettime fake_gettimeofday; do cc -c -fPIE -O2 "$c.c" -o "$c.o"; done
  )
  cd "$dir/src"
  log "building chaos-controller-manager (cold: ~5 min)"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/bin/chaos-controller-manager" ./cmd/chaos-controller-manager
  log "building chaos-daemon and chaos-daemon-helper (cgo)"
  CGO_ENABLED=1 go build -trimpath -ldflags "-s -w" -o "$dir/bin/chaos-daemon" ./cmd/chaos-daemon
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/bin/cdh" ./cmd/chaos-daemon-helper
  cc -static -O2 -o "$dir/bin/pause" hack/pause.c
  log "built Chaos Mesh $version in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir"
