#!/usr/bin/env bash
# Installs OLM v1 (operator-controller's catalogd and operator-controller, built from source by
# hack/build-olmv1.sh) on the local cluster KUBECONFIG points at, from upstream's own kustomize
# config (overlays/cert-manager) with:
#   - the certificates cert-manager would issue made by hack/olmv1 (cert-manager's binaries are
#     not on the module proxy), from a CA kept in $QUORATE_CACHE/olmv1/pki;
#   - every image pointed at the local one;
#   - a registries.conf that sends localhost:5000/... to a read-only view of the local registry
#     on the node's bridge address (NODE_IP, default 10.87.0.1) port 5001, over plain HTTP:
#     catalogd and operator-controller pull catalog and bundle images from inside their pods.
# Idempotent (server-side apply). Waits until both Deployments are rolled out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
: "${KUSTOMIZE:?KUSTOMIZE must name the kustomize binary (make olmv1 sets it)}"
kubectl=${KUBECTL:-kubectl}
NODE_IP=${NODE_IP:-10.87.0.1}
dir=$("$here/build-olmv1.sh")
image=$("$here/images.sh" olmv1)
"$here/registry.sh" pods "$NODE_IP:5001"
m=$(mktemp -d); trap 'rm -rf "$m"' EXIT
"$KUSTOMIZE" build "$dir/config/overlays/cert-manager" >"$m/upstream.yaml"
(cd "$root" && go run ./hack/olmv1 --image "$image" --pki-dir "$QUORATE_CACHE/olmv1/pki" \
  --registry-mirror "localhost:5000=$NODE_IP:5001") <"$m/upstream.yaml" >"$m/olmv1.yaml"
log "installing OLM v1 $(basename "$dir") with $image"
"$kubectl" apply --server-side --force-conflicts -f "$m/olmv1.yaml" >/dev/null
"$kubectl" wait --for=condition=Established --timeout=2m crd/clustercatalogs.olm.operatorframework.io crd/clusterextensions.olm.operatorframework.io >/dev/null
"$kubectl" -n olmv1-system rollout status deployment/catalogd-controller-manager --timeout=5m >&2
"$kubectl" -n olmv1-system rollout status deployment/operator-controller-controller-manager --timeout=5m >&2
log "OLM v1 is ready"
