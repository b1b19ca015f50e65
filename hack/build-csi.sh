#!/usr/bin/env bash
# Builds the kubernetes-csi sidecars and the snapshot controller of the CSI stack
# (hack/csi.sh) from the Go module proxy, statically (CGO_ENABLED=0), into
# $QUORATE_CACHE/csi/<hash of the versions below>/bin, with the snapshot CRDs of the same
# release in crds/. Prints that directory; a second run returns at once.
#
#   csi-provisioner      github.com/kubernetes-csi/external-provisioner/v5   v5.3.0
#   csi-resizer          github.com/kubernetes-csi/external-resizer          v1.14.0
#   csi-snapshotter      github.com/kubernetes-csi/external-snapshotter/v8   v8.7.0
#   snapshot-controller  (the same module)
#
# Refused by the module proxy here (403 "This module version is not available", asked 2026-11-28; a
# refusal is final, so the script does not ask again):
#   github.com/kubernetes-csi/csi-driver-host-path        v1.17.0 (and v1.14.0 to v1.16.1)
#   github.com/kubernetes-csi/node-driver-registrar/v2    v2.15.0 (and v2.12.0 to v2.14.0)
#   github.com/kubernetes-csi/livenessprobe/v2            v2.12.0 to v2.17.0
#   github.com/kubernetes-csi/external-provisioner/v6     v6.0.0, v6.0.1, v6.1.0
#   github.com/kubernetes-csi/external-resizer            v2.0.0
# The hostpath plugin and the registrar's job are therefore done by Quorate's own driver,
# hack/csi/hostpath (built by hack/images.sh csi), which registers itself with the kubelet.
#
# Every module's go.mod has replace directives (k8s.io/* pinned), so `go install pkg@version`
# refuses them: a writable copy of each module is built as the main module, where its own
# replace block and go.sum apply (GOFLAGS=-mod=mod: the zips carry no vendor/ directory).
# external-snapshotter also replaces its client module with ./client, a nested module its zip
# leaves out: the client module of the same version is put there (it also holds the CRDs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

PROVISIONER_VERSION=v5.3.0
RESIZER_VERSION=v1.14.0
SNAPSHOTTER_VERSION=v8.7.0
mods=(
  "github.com/kubernetes-csi/external-provisioner/v5@$PROVISIONER_VERSION"
  "github.com/kubernetes-csi/external-resizer@$RESIZER_VERSION"
  "github.com/kubernetes-csi/external-snapshotter/v8@$SNAPSHOTTER_VERSION"
)
# "b1": the build recipe; bump it when the way the binaries are built changes.
hash=$(printf '%s\n' b1 "${mods[@]}" | sha256sum | cut -c1-12)
dir=$QUORATE_CACHE/csi/$hash
bins=(csi-provisioner csi-resizer csi-snapshotter snapshot-controller)
done_() { for b in "${bins[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done; [ -f "$dir/crds/.done" ]; }
if done_; then echo "$dir"; exit 0; fi

# fetch_module MODULE@VERSION DEST: a writable copy of the module's source at DEST.
fetch_module() {
  [ -f "$2/go.mod" ] && return 0
  local mod
  mod=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$1" | sed -nE 's/.*"Dir": "([^"]+)".*/\1/p')
  [ -d "$mod" ] || die "could not download $1 from the module proxy"
  rm -rf "$2.tmp" && cp -r "$mod" "$2.tmp" && chmod -R u+w "$2.tmp" && mv "$2.tmp" "$2"
}

# gobuild SRC VERSION NAME: builds SRC/cmd/NAME into bin/NAME, stamped with VERSION as the
# release's own Makefile does (-X main.version).
gobuild() {
  [ -x "$dir/bin/$3" ] && return 0
  log "building $3 $2"
  local start=$SECONDS
  (cd "$1" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOFLAGS=-mod=mod \
    go build -trimpath -ldflags "-s -w -X main.version=$2" -o "$dir/bin/$3.tmp" "./cmd/$3")
  mv "$dir/bin/$3.tmp" "$dir/bin/$3"
  log "built $3 in $((SECONDS - start))s ($(du -h "$dir/bin/$3" | cut -f1))"
}

build() {
  done_ && return 0
  local start=$SECONDS
  mkdir -p "$dir/bin" "$dir/src"
  printf '%s\n' "${mods[@]}" >"$dir/versions"
  fetch_module "${mods[0]}" "$dir/src/external-provisioner"
  fetch_module "${mods[1]}" "$dir/src/external-resizer"
  fetch_module "${mods[2]}" "$dir/src/external-snapshotter"
  fetch_module "github.com/kubernetes-csi/external-snapshotter/client/v8@$SNAPSHOTTER_VERSION" "$dir/src/external-snapshotter/client"
  gobuild "$dir/src/external-provisioner" "$PROVISIONER_VERSION" csi-provisioner
  gobuild "$dir/src/external-resizer" "$RESIZER_VERSION" csi-resizer
  gobuild "$dir/src/external-snapshotter" "$SNAPSHOTTER_VERSION" csi-snapshotter
  gobuild "$dir/src/external-snapshotter" "$SNAPSHOTTER_VERSION" snapshot-controller
  # The v1 snapshot CRDs (the group snapshot CRDs too: the snapshot controller watches them
  # when its --feature-gates enable group snapshots, and they cost nothing otherwise).
  rm -rf "$dir/crds" && mkdir -p "$dir/crds"
  cp "$dir/src/external-snapshotter/client/config/crd/"*.yaml "$dir/crds/"
  rm -f "$dir/crds/kustomization.yaml"
  touch "$dir/crds/.done"
  log "built the CSI sidecars in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$dir"
