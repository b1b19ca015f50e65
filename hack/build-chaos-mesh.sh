#!/usr/bin/env bash
# Builds Chaos Mesh (chaos-controller-manager, chaos-daemon, chaos-daemon-helper, pause) from the
# Go module proxy into $QUORATE_CACHE/chaos-mesh/<version>/bin, and keeps the module source
# (helm chart) beside it, with CRDs generated from the api module in crds/. Prints the cache
# directory.
#
# The module is only served at pseudo-versions and its go.mod has replace directives, so it
# cannot be `go install`ed; a writable copy of it is built as the main module, where its own
# replace block and go.sum apply. The module zip lacks the compiled TimeChaos objects
# (pkg/time/fakeclock/*.o) the daemon embeds, so they are compiled from their C sources first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
version=${CHAOS_MESH_VERSION:-v0.9.1-0.20260902003049-47411975a8cb}
api_version=${CHAOS_MESH_API_VERSION:-v0.0.0-20260906172039-d70b66ad97ac}
dir=$QUORATE_CACHE/chaos-mesh/$version
bins=(chaos-controller-manager chaos-daemon cdh pause)
done_() { for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done; [ -f "$dir/crds/.done" ]; }
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
  if [ ! -f "$dir/src/api/go.mod" ]; then
    # go.mod replaces the api module with ./api, which the module zip leaves out (it is a
    # module of its own): put its only published version there.
    log "adding github.com/chaos-mesh/chaos-mesh/api@$api_version as ./api"
    mod=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "github.com/chaos-mesh/chaos-mesh/api@$api_version" | sed -nE 's/.*"Dir": "([^"]+)".*/\1/p')
    [ -d "$mod" ] || die "could not download chaos-mesh api $api_version"
    rm -rf "$dir/src/api.tmp" && cp -r "$mod" "$dir/src/api.tmp" && chmod -R u+w "$dir/src/api.tmp" && mv "$dir/src/api.tmp" "$dir/src/api"
  fi
  (
    cd "$dir/src/pkg/time/fakeclock"
    for c in fake_clock_gettime fake_gettimeofday; do cc -c -fPIE -O2 "$c.c" -o "$c.o"; done
  )
  if [ ! -f "$dir/crds/.done" ]; then
    # The controller is built with the published api module, which is newer than the CRDs the
    # chart ships (its NetworkChaos has partitionBehavior, defaulted by the webhook): CRDs that
    # lack a field make the apiserver prune it, and every status update of the controller is
    # then refused ("Cannot update chaos spec"). Generate the CRDs from the api module the way
    # upstream's `make config` does.
    local cg; cg=$("$here/build-tool.sh" sigs.k8s.io/controller-tools/cmd/controller-gen v0.20.1)
    rm -rf "$dir/crds" && mkdir -p "$dir/crds"
    (cd "$dir/src/api" && GOFLAGS=-mod=mod "$cg" crd:ignoreUnexportedFields=true,crdVersions=v1 paths="./..." output:crd:artifacts:config="$dir/crds")
    touch "$dir/crds/.done"
  fi
  if [ -x "$dir/bin/pause" ] && [ -x "$dir/bin/cdh" ] && [ -x "$dir/bin/chaos-daemon" ] && [ -x "$dir/bin/chaos-controller-manager" ]; then
    return 0
  fi
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
