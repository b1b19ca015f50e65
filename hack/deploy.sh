#!/usr/bin/env bash
# Deploys the operator from config/default with the given images.
# Usage: hack/deploy.sh KUSTOMIZE KUBECTL IMAGE ETCD_IMAGE_REPOSITORY
set -euo pipefail
kustomize=$1 kubectl=$2 img=$3 etcd_repo=$4
root=$(cd "$(dirname "$0")/.." && pwd)
overlay=$root/bin/deploy
mkdir -p "$overlay"
cat >"$overlay/kustomization.yaml" <<YAML
resources:
- ../../config/default
images:
- name: localhost:5000/quorate/operator
  newName: ${img%:*}
  newTag: ${img##*:}
patches:
- target: {kind: Deployment, name: quorate-controller-manager}
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/env/0
      value: {name: OPERATOR_IMAGE, value: "$img"}
    - op: replace
      path: /spec/template/spec/containers/0/env/1
      value: {name: ETCD_IMAGE_REPOSITORY, value: "$etcd_repo"}
YAML
"$kustomize" build "$overlay" | "$kubectl" apply --server-side --force-conflicts -f -
"$kubectl" -n quorate-system rollout status deployment/quorate-controller-manager --timeout=180s
