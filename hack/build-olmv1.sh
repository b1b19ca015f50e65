#!/usr/bin/env bash
# Builds OLM v1 (operator-controller: catalogd and operator-controller) from the Go module proxy,
# statically, cached in $QUORATE_CACHE/olmv1/<version>/bin, and keeps its kustomize config
# beside them (config/). Prints the cache directory.
#
# Why v1.2.0 and not the newest: operator-controller v1.10.0 and v1.11.0 import
# pkg.package-operator.run/boxcutter, whose host the module proxy here refuses ("Go module host
# not permitted", 403 for every version); v1.3.0-v1.8.0 are refused outright. v1.2.0 resolves and
# builds once upstream's go.sum is merged in (sigs.k8s.io/crdify and others are not in the
# checksum database).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
OLMV1_VERSION=${OLMV1_VERSION:-v1.2.0}
dir=$QUORATE_CACHE/olmv1/$OLMV1_VERSION
m=github.com/operator-framework/operator-controller
done_() { [ -x "$dir/bin/catalogd" ] && [ -x "$dir/bin/operator-controller" ] && [ -f "$dir/config/.done" ]; }
if done_; then echo "$dir"; exit 0; fi

build() {
  done_ && return 0
  local start=$SECONDS src=$dir/src
  rm -rf "$src" "$dir/config"; mkdir -p "$src" "$dir/bin"
  log "building OLM v1 (operator-controller $OLMV1_VERSION; cold: several minutes)"
  (
    cd "$src"
    local go_line; go_line=$(goproxy_get "$m/@v/$OLMV1_VERSION.mod" | sed -n 's/^go //p' | head -1)
    printf 'module quorate.local/olmv1-build\n\ngo %s\n\nrequire %s %s\n' "$go_line" "$m" "$OLMV1_VERSION" >go.mod
    printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "%s/cmd/catalogd"\n\t_ "%s/cmd/operator-controller"\n)\n' "$m" "$m" >tools.go
    GOFLAGS=-mod=mod go mod download "$m@$OLMV1_VERSION"
    local mdir; mdir=$(GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$m")
    cp "$mdir/go.sum" go.sum && chmod u+w go.sum
    go mod tidy >/dev/null 2>&1 || go mod tidy
    for c in catalogd operator-controller; do
      CGO_ENABLED=0 go build -trimpath -tags containers_image_openpgp -ldflags "-s -w" -o "$dir/bin/$c" "$m/cmd/$c"
    done
    cp -r "$mdir/config" "$dir/config" && chmod -R u+w "$dir/config"
    touch "$dir/config/.done"
  )
  log "built OLM v1 $OLMV1_VERSION in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir"
