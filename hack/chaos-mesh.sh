#!/usr/bin/env bash
# Installs Chaos Mesh, built from source (hack/build-chaos-mesh.sh), on the cluster that
# KUBECONFIG points at, with the Helm chart its own module ships (helm/chaos-mesh), configured for
# containerd and for the images built here. Idempotent: when the release already runs with the
# same images and values, nothing is changed (the chart would otherwise restart its pods on
# every upgrade).
# Usage: hack/chaos-mesh.sh CONTAINERD_SOCKET
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
socket=${1:?usage: chaos-mesh.sh CONTAINERD_SOCKET}
: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
HELM_VERSION=${HELM_VERSION:-v3.22.0}
REGISTRY=${REGISTRY:-localhost:5000}
ns=chaos-mesh release=chaos-mesh

helm=$("$here/build-tool.sh" helm.sh/helm/v3/cmd/helm "$HELM_VERSION")
dir=$("$here/build-chaos-mesh.sh")
"$here/images.sh" base >/dev/null
read -r manager_image daemon_image < <("$here/images.sh" chaos)

# The chart mounts the host's /lib/modules into chaos-daemon; a machine without kernel modules
# installed has no such directory, and the mount would fail.
mkdir -p /lib/modules

values=$(mktemp); trap 'rm -f "$values"' EXIT
cat >"$values" <<EOF
images:
  registry: "$REGISTRY"
enableProfiling: false
controllerManager:
  replicaCount: 1
  image:
    registry: "${manager_image%%/*}"
    repository: "$(r=${manager_image#*/}; echo "${r%:*}")"
    tag: "${manager_image##*:}"
  imagePullPolicy: IfNotPresent
  resources:
    requests: {cpu: 25m, memory: 64Mi}
  podChaos:
    podFailure:
      pauseImage: "$REGISTRY/quorate/pause:3.10"
chaosDaemon:
  image:
    registry: "${daemon_image%%/*}"
    repository: "$(r=${daemon_image#*/}; echo "${r%:*}")"
    tag: "${daemon_image##*:}"
  imagePullPolicy: IfNotPresent
  runtime: containerd
  socketPath: "$socket"
dashboard:
  create: false
dnsServer:
  create: false
EOF
hash=$(cat "$values" "$dir"/crds/*.yaml | sha256sum | cut -c1-16)
echo "quorateValuesHash: \"$hash\"" >>"$values"

kubectl=${KUBECTL:-kubectl}
# CRDs generated from the api module the controller is built with (see build-chaos-mesh.sh);
# Helm never updates the chart's own CRDs, so they are applied here and skipped by Helm.
"$kubectl" apply --server-side --force-conflicts -f "$dir/crds" >/dev/null
if "$helm" status "$release" -n "$ns" >/dev/null 2>&1 &&
  "$helm" get values "$release" -n "$ns" -o yaml 2>/dev/null | grep -q "quorateValuesHash: \"\?$hash"; then
  log "Chaos Mesh is installed with these images and values already"
else
  log "installing Chaos Mesh from $dir/src/helm/chaos-mesh ($manager_image, $daemon_image)"
  "$helm" upgrade --install "$release" "$dir/src/helm/chaos-mesh" -n "$ns" --create-namespace --skip-crds -f "$values" >/dev/null
fi
"$kubectl" -n "$ns" rollout status deployment/chaos-controller-manager --timeout=5m >&2
"$kubectl" -n "$ns" rollout status daemonset/chaos-daemon --timeout=5m >&2
log "Chaos Mesh is ready"
