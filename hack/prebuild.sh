#!/usr/bin/env bash
# Builds, at the lowest CPU priority, the upstream programs the later stages of CI need (Chaos
# Mesh and its rootfs, helm, OLM v0 and v1, operator-sdk, versitygw), so that on a cold machine they build
# while the conformance suite's scenarios mostly wait on their workload. Every builder caches
# per version under $QUORATE_CACHE and holds a lock while it builds: a later stage that needs
# one waits for it and then finds it built. Does nothing that is cached already.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start=$SECONDS
run() {
  if ! nice -n 19 "$@" >/dev/null; then
    log "prebuild: $* failed (the stage that needs it builds it again and reports)"
  fi
}
run "$here/build-chaos-mesh.sh"
run "$here/build-chaos-rootfs.sh"
run "$here/build-tool.sh" helm.sh/helm/v3/cmd/helm "${HELM_VERSION:-v3.22.0}"
run "$here/build-olm.sh"
run "$here/build-olmv1.sh"
run "$here/build-operator-sdk.sh"
run "$here/build-tool.sh" github.com/versity/versitygw/cmd/versitygw "${VERSITYGW_VERSION:-v1.8.0}"
log "prebuild: done in $((SECONDS - start))s"
