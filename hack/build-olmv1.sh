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
    scratch_module "$m" "$OLMV1_VERSION" "" "$m/cmd/catalogd" "$m/cmd/operator-controller"
    local mdir; mdir=$(GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$m")
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
