#!/usr/bin/env bash
# Installs Chaos Mesh, built from source (hack/build-chaos-mesh.sh), on the cluster that
# KUBECONFIG points at, with the Helm chart its own module ships (helm/chaos-mesh), configured for
# containerd and for the images built here. Idempotent: when the release already runs with the
# same images and values, nothing is changed (the chart would otherwise restart its pods on
# every upgrade).
# Usage: hack/chaos-mesh.sh CONTAINERD_SOCKET
#
# chaos-daemon reaches the containers of its node through that node's containerd socket, which
# the chart mounts from one host path for every node. The local cluster's further nodes (network
# namespaces on this machine) each run a containerd of their own, at another path, and a daemon
# given node 1's socket cannot find their containers ("container not found", "unable to flush ip
# sets"). So each node's socket is read from its kubelet (below); the chart's DaemonSet runs on
# the nodes whose socket is CONTAINERD_SOCKET, and every other node gets a DaemonSet of its own,
# rendered from the same chart with its socket (chaos-daemon-<node>, labelled
# quorate.dev/chaos-daemon-node=<node>). The controller finds daemons by their pods' labels and
# node, so it reaches each one.
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

kubectl=${KUBECTL:-kubectl}

# runtime_socket NODE: the containerd socket of NODE's kubelet (its config file's
# containerRuntimeEndpoint, or its --container-runtime-endpoint), when that kubelet runs on this
# machine (--hostname-override=NODE); else the local cluster's layout for a node of it that is
# not running (powered off); else CONTAINERD_SOCKET.
runtime_socket() {
  local args cfg ep=""
  if args=$(kubelet_args "$1"); then
    ep=$(sed -n 's/^--container-runtime-endpoint=//p' <<<"$args")
    cfg=$(sed -n 's/^--config=//p' <<<"$args")
    if [ -z "$ep" ] && [ -n "$cfg" ] && [ -r "$cfg" ]; then
      ep=$(sed -n 's/^containerRuntimeEndpoint: *//p' "$cfg" | tr -d '"')
    fi
    [ -z "$ep" ] || { echo "${ep#unix://}"; return; }
  fi
  if [[ $1 =~ ^(.+)-node-([0-9]+)$ ]] && [ "${BASH_REMATCH[2]}" != 1 ]; then
    local s=/var/lib/quorate/${BASH_REMATCH[1]}/nodes/${BASH_REMATCH[2]}/containerd/containerd.sock
    [ ! -S "$s" ] || { echo "$s"; return; }
  fi
  echo "$socket"
}

declare -A sock
mapfile -t nodes < <("$kubectl" get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ ${#nodes[@]} -gt 0 ] || die "the cluster has no nodes"
for n in "${nodes[@]}"; do sock[$n]=$(runtime_socket "$n"); done
# The chart's DaemonSet serves the nodes on CONTAINERD_SOCKET (node 1's, when none is).
main=() own=()
for n in "${nodes[@]}"; do [ "${sock[$n]}" = "$socket" ] && main+=("$n"); done
if [ ${#main[@]} = 0 ]; then socket=${sock[${nodes[0]}]}; for n in "${nodes[@]}"; do [ "${sock[$n]}" = "$socket" ] && main+=("$n"); done; fi
for n in "${nodes[@]}"; do [ "${sock[$n]}" = "$socket" ] || own+=("$n"); done
log "containerd sockets: $(for n in "${nodes[@]}"; do printf '%s=%s ' "$n" "${sock[$n]}"; done)"

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
$(if [ ${#own[@]} -gt 0 ]; then
  echo "  affinity:"
  echo "    nodeAffinity:"
  echo "      requiredDuringSchedulingIgnoredDuringExecution:"
  echo "        nodeSelectorTerms:"
  echo "        - matchExpressions:"
  echo "          - {key: kubernetes.io/hostname, operator: In, values: [$(IFS=,; echo "${main[*]}")]}"
fi)
dashboard:
  create: false
dnsServer:
  create: false
EOF
hash=$(cat "$values" "$dir"/crds/*.yaml | sha256sum | cut -c1-16)
echo "quorateValuesHash: \"$hash\"" >>"$values"
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

# own_daemonset NODE: the chart's chaos-daemon DaemonSet for NODE alone, with NODE's socket. The
# chart's random rollme annotation becomes the values' hash: applying it again changes nothing,
# and its pods restart exactly when Helm upgraded the release, which signs new mTLS
# certificates that a daemon reads only when it starts.
own_daemonset() {
  local n=$1 l=quorate.dev/chaos-daemon-node
  "$helm" template "$release" "$dir/src/helm/chaos-mesh" -n "$ns" -f "$values" \
    --set chaosDaemon.socketPath="${sock[$n]}" --set chaosDaemon.affinity=null \
    --set-json "chaosDaemon.nodeSelector={\"kubernetes.io/hostname\":\"$n\"}" \
    --show-only templates/chaos-daemon-daemonset.yaml |
    sed -e "s/^  name: chaos-daemon\$/  name: chaos-daemon-$n/" \
      -e "/^  labels:\$/a\\    $l: \"$n\"" \
      -e "/^    matchLabels:\$/a\\      $l: \"$n\"" \
      -e "/^      labels:\$/a\\        $l: \"$n\"" \
      -e "s/rollme: .*/quorate.dev\/values-hash: \"$hash\"/" \
      -e 's/app.kubernetes.io\/managed-by: Helm/app.kubernetes.io\/managed-by: quorate-hack/'
}
for n in "${own[@]}"; do
  own_daemonset "$n" | "$kubectl" apply --server-side --force-conflicts -f - >/dev/null
done
# DaemonSets of nodes that are gone, or that use the chart's socket now.
keep=$(IFS=,; echo "${own[*]}")
"$kubectl" -n "$ns" delete daemonset -l "quorate.dev/chaos-daemon-node${keep:+,quorate.dev/chaos-daemon-node notin ($keep)}" --ignore-not-found >/dev/null

"$kubectl" -n "$ns" rollout status deployment/chaos-controller-manager --timeout=5m >&2
"$kubectl" -n "$ns" rollout status daemonset/chaos-daemon --timeout=5m >&2
for n in "${own[@]}"; do
  "$kubectl" -n "$ns" rollout status "daemonset/chaos-daemon-$n" --timeout=5m >&2
done
log "Chaos Mesh is ready"
