#!/usr/bin/env bash
# Builds upstream Kubernetes binaries of one release from the Go module proxy and caches them in
# $QUORATE_CACHE/k8s/<version>/bin. Usage: hack/build-k8s.sh v1.35.4 [binary ...]
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces every k8s.io/<staging> module
# with ./staging/src/... . A scratch module requires k8s.io/kubernetes and replaces each staging
# module with its published v0.<minor>.<patch> release instead. Version ldflags make the binaries
# report the real version (kubectl refuses to parse the default v0.0.0-master+$Format:%H$).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

version=${1:?usage: build-k8s.sh vX.Y.Z [binary ...]}
shift || true
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "K8S version must look like v1.35.4, got '$version'"
minor=${BASH_REMATCH[1]}
staging="v0.${minor}.${BASH_REMATCH[2]}"
all=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
want=("$@")
[ ${#want[@]} -gt 0 ] || want=("${all[@]}")

dir=$QUORATE_CACHE/k8s/$version
out=$dir/bin

missing=()
for b in "${want[@]}"; do [ -x "$out/$b" ] || missing+=("$b"); done
[ ${#missing[@]} -eq 0 ] && { echo "$out"; exit 0; }

build() {
  # Re-check under the lock: another build may have finished meanwhile.
  local todo=()
  for b in "${missing[@]}"; do [ -x "$out/$b" ] || todo+=("$b"); done
  [ ${#todo[@]} -eq 0 ] && return 0
  local src=$dir/src
  mkdir -p "$src" "$out"
  if [ ! -f "$src/go.mod" ] || ! grep -q "k8s.io/kubernetes $version" "$src/go.mod"; then
    log "preparing scratch module for k8s.io/kubernetes $version"
    local upstream
    upstream=$(goproxy_get "k8s.io/kubernetes/@v/$version.mod") || die "the module proxy does not serve k8s.io/kubernetes $version"
    {
      echo "module quorate.local/k8s-build"
      echo
      echo "go $(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')"
      echo
      echo "require k8s.io/kubernetes $version"
      echo
      echo "replace ("
      echo "$upstream" | sed -nE "s#^[[:space:]]*(k8s\.io/[A-Za-z0-9._-]+) => \./staging/src/.*#\t\1 => \1 ${staging}#p"
      echo ")"
    } >"$src/go.mod"
    rm -f "$src/go.sum"
    printf 'package tools\n' >"$src/tools.go"
  fi
  local pkgs=()
  for b in "${todo[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  local date
  date=$(goproxy_get "k8s.io/kubernetes/@v/$version.info" | sed -nE 's/.*"Time":"([^"]+)".*/\1/p')
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=${date:-1970-01-01T00:00:00Z}"
  done
  log "building ${todo[*]} $version (cold: ~9 min for all six on 2 cores)"
  local start=$SECONDS
  (cd "$src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ld" -o "$out/" "${pkgs[@]}")
  log "built ${todo[*]} $version in $((SECONDS - start))s"
}
with_lock "$dir" build
echo "$out"
