#!/usr/bin/env bash
# Shared helpers for Quorate's build scripts. Sourced, never executed.

# QUORATE_CACHE holds built upstream binaries and images per version. It lives outside the
# repository so that a fresh clone (CI) finds the previous builds of this machine.
QUORATE_CACHE=${QUORATE_CACHE:-$HOME/.cache/quorate}
export QUORATE_CACHE

# Versions of the local cluster's add-ons (e2e/localcluster/config.go names their images) and of
# the object stores, read by hack/images.sh, hack/s3.sh and hack/prebuild.sh.
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-v0.0.30}
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
# The cloud stores' emulators (hack/stores.sh): fake-gcs-server from the module proxy, Azurite
# from the npm registry as hack/images/azurite/package-lock.json pins it (3.35.0: later
# releases ask for Node.js 22; the machine's is 20).
FAKE_GCS_VERSION=${FAKE_GCS_VERSION:-v1.56.1}
AZURITE_VERSION=${AZURITE_VERSION:-3.35.0}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# pulled_as REF [HOST]: the image REF of the local registry as the cluster's nodes pull it, under
# the registry host name HOST when one is given (the foreign profile's registry.foreign.internal).
pulled_as() {
  [ -n "$1" ] || die "pulled_as: no image reference (did the image build fail?)"
  if [ -n "${2:-}" ]; then echo "$2/${1#*/}"; else echo "$1"; fi
}
# require_foreign_cluster KUBECTL: dies unless KUBECONFIG's cluster is a local cluster of the
# foreign profile (node 1 in the system pool, StorageClass standard-rwo), so that a script made
# for it never installs into a cluster of someone else's.
require_foreign_cluster() {
  local pool class
  pool=$("$1" get nodes -l node.quorate.dev/pool=system -o jsonpath='{.items[*].metadata.name}' 2>/dev/null) || true
  class=$("$1" get storageclass standard-rwo -o jsonpath='{.provisioner}' 2>/dev/null) || true
  [[ $pool == *-node-1 && $class == hostpath.csi.quorate.dev ]] ||
    die "the cluster of KUBECONFIG=${KUBECONFIG:-} is not a local cluster of the foreign profile (make cluster-up PROFILE=foreign): node 1 of the system pool '${pool}', StorageClass standard-rwo's provisioner '${class}'"
}

# with_lock DIR CMD...: runs CMD while holding an exclusive lock on DIR/.lock, so that two
# builds of the same cached artefact (say make test and make cluster-up at once) never race.
with_lock() {
  local dir=$1; shift
  mkdir -p "$dir"
  (
    flock 9
    "$@"
  ) 9>"$dir/.lock"
}

# goproxy_get PATH: fetches a file from the Go module proxy (used to read upstream go.mod files).
goproxy_get() {
  local proxy=${GOPROXY:-https://proxy.golang.org}
  proxy=${proxy%%,*}
  [ "$proxy" = direct ] && proxy=https://proxy.golang.org
  curl -fsSL --retry 3 "$proxy/$1"
}

# scratch_module MODULE VERSION GOMOD_EXTRA PACKAGE...: in the working directory, writes a Go
# module that requires MODULE at VERSION (GOMOD_EXTRA: further go.mod lines, or "") and imports
# each PACKAGE in tools.go, starts its go.sum from MODULE's own and tidies it; the caller then
# `go build`s the packages there. For upstream commands that `go install pkg@version` refuses
# (their go.mod replaces or excludes modules). Its go line is MODULE's own.
scratch_module() {
  local m=$1 v=$2 extra=$3; shift 3
  {
    printf 'module quorate.local/%s-build\n\ngo %s\n\nrequire %s %s\n' "$(basename "$m")" \
      "$(goproxy_get "$m/@v/$v.mod" | sed -n 's/^go //p' | head -1)" "$m" "$v"
    [ -z "$extra" ] || printf '\n%s\n' "$extra"
  } >go.mod
  { printf '//go:build tools\n\npackage tools\n\nimport (\n'; printf '\t_ "%s"\n' "$@"; printf ')\n'; } >tools.go
  GOFLAGS=-mod=mod go mod download "$m@$v"
  cp "$(GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' "$m")/go.sum" go.sum && chmod u+w go.sum
  # -e: containerd's go.mod excludes a module tidy cannot then resolve; what is really missing
  # fails the build that follows, which names it.
  GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
}

# kubelet_args NODE: the arguments, one a line, of the kubelet on this machine whose
# --hostname-override is NODE (the local cluster's kubelets); fails when none runs here.
kubelet_args() {
  local p args
  for p in /proc/[0-9]*; do
    [ "$(basename "$(readlink "$p/exe" 2>/dev/null)")" = kubelet ] || continue
    args=$(tr '\0' '\n' <"$p/cmdline" 2>/dev/null) || continue
    [ "$(sed -n 's/^--hostname-override=//p' <<<"$args")" = "$1" ] || continue
    echo "$args"
    return 0
  done
  return 1
}
