#!/usr/bin/env bash
# Deploys the operator with the given images: from config/default (cluster-wide, into
# quorate-system), or, given a NAMESPACE, from config/namespaced into that namespace, managing
# it alone (the CRD and the manager's ClusterRole must exist: a cluster-wide install has them).
# OWNERSHIP_TERM and CERTIFICATE_PROPAGATION, when set, are the operator's --ownership-term and
# --certificate-propagation (the conformance suite shortens them). NODE_SELECTOR=KEY=VALUE, when
# set, keeps the manager on those nodes (the node scenarios keep it off the nodes they act on).
# QUORATE_MUTANT, when set, names the seeded bug a build with -tags mutants activates (make mutants).
# Usage: hack/deploy.sh KUSTOMIZE KUBECTL IMAGE ETCD_IMAGE_REPOSITORY [NAMESPACE]
set -euo pipefail
kustomize=$1 kubectl=$2 img=$3 etcd_repo=$4 ns=${5:-}
root=$(cd "$(dirname "$0")/.." && pwd)
base=config/default target=quorate-system overlay=$root/bin/deploy
if [ -n "$ns" ]; then
  base=config/namespaced target=$ns overlay=$root/bin/deploy-$ns
fi
mkdir -p "$overlay"
extra=""
if [ -n "${OWNERSHIP_TERM:-}" ]; then
  extra="
    - op: add
      path: /spec/template/spec/containers/0/env/-
      value: {name: OWNERSHIP_TERM, value: \"$OWNERSHIP_TERM\"}"
fi
if [ -n "${CERTIFICATE_PROPAGATION:-}" ]; then
  extra="$extra
    - op: add
      path: /spec/template/spec/containers/0/env/-
      value: {name: CERTIFICATE_PROPAGATION, value: \"$CERTIFICATE_PROPAGATION\"}"
fi
if [ -n "${QUORATE_MUTANT:-}" ]; then
  # make mutants: the seeded bug the operator (an image built with -tags mutants) activates;
  # an image built without the tag ignores it.
  extra="$extra
    - op: add
      path: /spec/template/spec/containers/0/env/-
      value: {name: QUORATE_MUTANT, value: \"$QUORATE_MUTANT\"}"
fi
if [ -n "${NODE_SELECTOR:-}" ]; then
  extra="$extra
    - op: add
      path: /spec/template/spec/nodeSelector
      value: {\"${NODE_SELECTOR%%=*}\": \"${NODE_SELECTOR#*=}\"}"
fi
cat >"$overlay/kustomization.yaml" <<YAML
resources:
- ../../$base
namespace: $target
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
      value: {name: ETCD_IMAGE_REPOSITORY, value: "$etcd_repo"}$extra
YAML
"$kustomize" build "$overlay" | "$kubectl" apply --server-side --force-conflicts -f -
"$kubectl" -n "$target" rollout status deployment/quorate-controller-manager --timeout=180s
