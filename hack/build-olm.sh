#!/usr/bin/env bash
# Builds OLM v0 (operator-lifecycle-manager: olm, catalog, package-server, copy-content, cpb) and
# opm (operator-registry) from the Go module proxy, statically, cached in
# $QUORATE_CACHE/olm/<olm version>/bin, and keeps OLM's install manifests
# (deploy/upstream/quickstart) beside them. Prints the cache directory.
#
# Both modules are only served at exact versions (the list endpoint is refused), and
# `go install .../opm@v1.74.0` fails (it looks up deprecations through the list endpoint): a
# scratch module that requires the pinned versions builds them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OLM_VERSION=${OLM_VERSION:-v0.42.0}
REGISTRY_VERSION=${OPERATOR_REGISTRY_VERSION:-v1.74.0}
dir=$QUORATE_CACHE/olm/$OLM_VERSION
bins=(olm catalog package-server copy-content cpb opm)
done_() { for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done; [ -f "$dir/manifests/olm.yaml" ]; }
# OLM's current CRDs are those of its Helm chart (deploy/chart/crds): the quickstart's crds.yaml
# lacks OLMConfig, which olm-operator v0.42.0 watches (it then never reconciles a CSV).
crds() {
  [ -f "$dir/manifests/crds/.done" ] && return 0
  local mdir
  mdir=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "github.com/operator-framework/operator-lifecycle-manager@$OLM_VERSION" | sed -nE 's/.*"Dir": "([^"]+)".*/\1/p')
  [ -d "$mdir/deploy/chart/crds" ] || die "no deploy/chart/crds in operator-lifecycle-manager@$OLM_VERSION"
  rm -rf "$dir/manifests/crds" && mkdir -p "$dir/manifests/crds" && cp "$mdir"/deploy/chart/crds/*.yaml "$dir/manifests/crds/"
  touch "$dir/manifests/crds/.done"
}
# OLM probes catalog pods with grpc_health_probe, so the catalog image carries it. Its module is
# refused by the list endpoint too: a scratch module builds it.
PROBE_VERSION=${GRPC_HEALTH_PROBE_VERSION:-v0.4.53}
probe() {
  [ -x "$dir/bin/grpc_health_probe" ] && return 0
  mkdir -p "$dir/src/probe" && (
    cd "$dir/src/probe"
    [ -f go.mod ] || go mod init quorate.local/probe-build >/dev/null 2>&1
    go get "github.com/grpc-ecosystem/grpc-health-probe@$PROBE_VERSION" >/dev/null
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/bin/grpc_health_probe" github.com/grpc-ecosystem/grpc-health-probe
  )
}
# The CRDs and the probe are kept under the lock too: a stage that finds OLM built while the
# background prebuild still copies the CRDs must not remove them under it (a cold CI run on a
# loaded machine did: "cannot touch .../manifests/crds/.done").
if done_; then with_lock "$dir" crds; with_lock "$dir" probe; echo "$dir"; exit 0; fi

build() {
  done_ && return 0
  local start=$SECONDS src=$dir/src
  rm -rf "$src"; mkdir -p "$src" "$dir/bin" "$dir/manifests"
  log "building OLM $OLM_VERSION and opm $REGISTRY_VERSION (cold: several minutes)"
  local m=github.com/operator-framework/operator-lifecycle-manager r=github.com/operator-framework/operator-registry
  (
    # OLM and opm in scratch modules of their own, each with its packages' dependencies.
    mkdir -p "$src/olm" && cd "$src/olm"
    go mod init quorate.local/olm-build >/dev/null 2>&1
    go get "$m/cmd/olm@$OLM_VERSION" "$m/cmd/catalog@$OLM_VERSION" "$m/cmd/package-server@$OLM_VERSION" \
      "$m/cmd/copy-content@$OLM_VERSION" "$m/util/cpb@$OLM_VERSION" >/dev/null
    for c in olm catalog package-server copy-content; do
      CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/bin/$c" "$m/cmd/$c"
    done
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/bin/cpb" "$m/util/cpb"
    local mdir; mdir=$(go list -m -f '{{.Dir}}' "$m")
    cp "$mdir"/deploy/upstream/quickstart/crds.yaml "$mdir"/deploy/upstream/quickstart/olm.yaml "$dir/manifests/"
  )
  (
    mkdir -p "$src/opm" && cd "$src/opm"
    go mod init quorate.local/opm-build >/dev/null 2>&1
    go get "$r/cmd/opm@$REGISTRY_VERSION" >/dev/null
    CGO_ENABLED=0 go build -trimpath -tags containers_image_openpgp -ldflags "-s -w" -o "$dir/bin/opm" "$r/cmd/opm"
  )
  log "built OLM $OLM_VERSION and opm in $((SECONDS - start))s"
}
with_lock "$dir" build
with_lock "$dir" crds
with_lock "$dir" probe
echo "$dir"
