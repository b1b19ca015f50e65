#!/usr/bin/env bash
# Builds, at low CPU priority, the upstream programs CI needs beyond make test, in the
# order its stages need them: the etcd release to upgrade from (every make e2e builds its image),
# the nodes' containerd (e2e/localcluster/config.go names its version), CoreDNS and the volume
# provisioner; the S3 gateway (backup scenarios); the first Kubernetes version's binaries (make
# test's envtest builds its kube-apiserver and kubectl); Chaos Mesh and its rootfs, helm; OLM v0
# and v1; operator-sdk (scorecard); last, a second Kubernetes version's binaries (CI's last stage
# runs on the oldest of the matrix). Usage: hack/prebuild.sh [k8s-version [second-k8s-version]]
# On a cold machine they build in the CPU time the foreground leaves (downloads, scenarios
# waiting on their workload). Every builder caches per version under $QUORATE_CACHE and holds
# a lock while it builds: a stage that needs one waits for it and then finds it built. Does
# nothing that is cached already.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start=$SECONDS
# What make test and the first stages need builds at nice 19. What only later stages need
# (Chaos Mesh, OLM, operator-sdk, the second Kubernetes version) builds under SCHED_IDLE and
# the idle I/O class as well, inherited by every compiler it starts: it runs only on CPU the
# timed scenarios leave (a cold run once saw node-drain's write gap pass its budget while
# Kubernetes compiled at nice 19 beside it). A stage that needs one of them waits on its lock
# with the CPU otherwise free, so the build then has it. Where the scheduler calls are refused
# (a sandbox), nice 19 alone.
low=(nice -n 19)
idle=(nice -n 19)
if chrt --idle 0 true 2>/dev/null; then idle+=(chrt --idle 0); fi
if ionice -c 3 true 2>/dev/null; then idle+=(ionice -c 3); fi
run() {
  if ! "${low[@]}" "$@" >/dev/null; then
    log "prebuild: $* failed (the stage that needs it builds it again and reports)"
  fi
}
later() {
  if ! "${idle[@]}" "$@" >/dev/null; then
    log "prebuild: $* failed (the stage that needs it builds it again and reports)"
  fi
}
run "$here/build-etcd.sh" "${ETCD_UPGRADE_FROM:-v3.5.35}"
run "$here/build-containerd.sh" "$(sed -n 's/.*ContainerdVersion: "\(v[^"]*\)".*/\1/p' "$here/../e2e/localcluster/config.go")"
run "$here/build-tool.sh" github.com/coredns/coredns "$COREDNS_VERSION"
run "$here/build-tool.sh" github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION"
run "$here/build-tool.sh" github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION"
[ -z "${1:-}" ] || run "$here/build-k8s.sh" "$1"
later "$here/build-chaos-mesh.sh"
later "$here/build-chaos-rootfs.sh"
later "$here/build-tool.sh" helm.sh/helm/v3/cmd/helm "${HELM_VERSION:-v3.22.0}"
later "$here/build-olm.sh"
later "$here/build-olmv1.sh"
later "$here/build-operator-sdk.sh"
[ -z "${2:-}" ] || later "$here/build-k8s.sh" "$2"
log "prebuild: done in $((SECONDS - start))s"
