#!/usr/bin/env bash
# The two other maintained etcd operators, built from their unmodified source for the
# side-by-side benchmark (make bench-peers, docs/measurements.md). Their archives are in
# PEERS_DIR (default: ../shared/peers beside the repository; its README names each commit).
#   hack/peers.sh list                       the peers: NAME COMMIT ARCHIVE, one per line
#   hack/peers.sh image NAME                 builds NAME's manager (cached per commit in
#                                            $QUORATE_CACHE/peers) and pushes its image to the
#                                            local registry; prints the image reference
#   hack/peers.sh install NAME KUBECTL KUSTOMIZE ETCD_REPO
#                                            installs NAME the way its own project does (etcd-io:
#                                            its config/default; cozystack: its chart's CRDs,
#                                            RBAC and Deployment, rendered here with the chart's
#                                            defaults), with its image and ETCD_REPO as the etcd
#                                            image repository, and waits for its manager
# Names: etcd-io (github.com/etcd-io/etcd-operator), cozystack (github.com/cozystack/etcd-operator).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
PEERS_DIR=${PEERS_DIR:-$root/../shared/peers}
REGISTRY=${REGISTRY:-localhost:5000}

# archive NAME: the peer's archive, named <repository owner>-etcd-operator-<commit>.tar.gz.
archive() {
  local f
  f=$(ls "$PEERS_DIR/$1"-etcd-operator-*.tar.gz 2>/dev/null | head -1)
  [ -n "$f" ] || die "no archive of peer $1 in $PEERS_DIR (set PEERS_DIR to the directory holding $1-etcd-operator-<commit>.tar.gz)"
  echo "$f"
}
commit() { local a; a=$(basename "$(archive "$1")" .tar.gz); echo "${a##*-}"; }

# src NAME: the unpacked tree, cached per commit.
src() {
  local dir; dir=$QUORATE_CACHE/peers/$1-$(commit "$1")
  if [ ! -f "$dir/.unpacked" ]; then
    rm -rf "$dir/src"; mkdir -p "$dir/src"
    tar xzf "$(archive "$1")" -C "$dir/src"
    touch "$dir/.unpacked"
  fi
  echo "$dir/src/etcd-operator"
}

# build NAME: the static manager binary, cached per commit.
build() {
  local s out pkg
  s=$(src "$1"); out=$QUORATE_CACHE/peers/$1-$(commit "$1")/manager
  if [ ! -x "$out" ]; then
    case $1 in etcd-io) pkg=./cmd ;; cozystack) pkg=. ;; *) die "unknown peer $1" ;; esac
    log "building the $1 etcd operator ($(commit "$1")) from source"
    (cd "$s" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$out.tmp" "$pkg")
    mv "$out.tmp" "$out"
  fi
  echo "$out"
}

image() {
  local name=$1 ref bin c
  ref=$REGISTRY/peers/$name-etcd-operator:$(commit "$name")
  "$here/registry.sh" start >/dev/null
  if ! curl -fsS -o /dev/null -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/peers/$name-etcd-operator/manifests/$(commit "$name")" 2>/dev/null; then
    bin=$(build "$name")
    c=$(mktemp -d "${TMPDIR:-/tmp}/quorate-peer.XXXXXX"); cp "$bin" "$c/manager"
    log "building $ref"
    buildah --storage-driver vfs bud --quiet --layers=false --timestamp 0 -f "$here/images/peer/Dockerfile" -t "$ref" "$c" >/dev/null
    buildah --storage-driver vfs push --quiet --tls-verify=false "$ref" "docker://$ref" >/dev/null
    buildah --storage-driver vfs rmi "$ref" >/dev/null 2>&1 || true
    rm -rf "$c"
  fi
  echo "$ref"
}

install() {
  local name=$1 kubectl=$2 kustomize=$3 etcd_repo=$4 ref s overlay ns
  ref=$(image "$name"); s=$(src "$name")
  overlay=$QUORATE_CACHE/peers/$name-$(commit "$name")/install
  rm -rf "$overlay"; mkdir -p "$overlay"
  case $name in
  etcd-io)
    ns=etcd-operator-system
    # Its own kustomize install; the image and the etcd image repository are the only changes.
    cat >"$overlay/kustomization.yaml" <<YAML
resources:
- ../src/etcd-operator/config/default
images:
- name: etcd-operator  # its config/manager already renamed "controller" to etcd-operator:v0.1
  newName: ${ref%:*}
  newTag: ${ref##*:}
patches:
- target: {kind: Deployment, name: etcd-operator-controller-manager}
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --image-registry=$etcd_repo
YAML
    "$kustomize" build "$overlay" | "$kubectl" apply --server-side --force-conflicts -f - >/dev/null
    "$kubectl" -n "$ns" rollout status deployment/etcd-operator-controller-manager --timeout=5m >&2
    ;;
  cozystack)
    ns=cozystack-etcd-operator
    "$kubectl" apply --server-side --force-conflicts -f "$s/charts/etcd-operator/crd-bases" >/dev/null
    # The chart's templates with its default values (no kube-rbac-proxy, one replica), as
    # helm template renders them; the ClusterRole's rules are the chart's own file.
    {
      cat <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: etcd-operator, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cozystack-etcd-operator-manager-role}
rules:
YAML
      cat "$s/charts/etcd-operator/files/manager-role-rules.yaml"
      cat <<YAML
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cozystack-etcd-operator-manager-rolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cozystack-etcd-operator-manager-role}
subjects: [{kind: ServiceAccount, name: etcd-operator, namespace: $ns}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: etcd-operator-leader-election-role, namespace: $ns}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch, delete]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, list, watch, create, update, patch, delete]}
- {apiGroups: [""], resources: [events], verbs: [create, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: etcd-operator-leader-election-rolebinding, namespace: $ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: etcd-operator-leader-election-role}
subjects: [{kind: ServiceAccount, name: etcd-operator, namespace: $ns}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: etcd-operator, namespace: $ns, labels: {control-plane: controller-manager}}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: etcd-operator}}
  template:
    metadata: {labels: {app.kubernetes.io/name: etcd-operator, control-plane: controller-manager}}
    spec:
      serviceAccountName: etcd-operator
      terminationGracePeriodSeconds: 10
      securityContext: {runAsNonRoot: true}
      containers:
      - name: manager
        image: $ref
        command: [/manager]
        args: [--health-probe-bind-address=:8081, --metrics-bind-address=:8080, --leader-elect]
        env:
        - {name: OPERATOR_IMAGE, value: "$ref"}
        - {name: ETCD_IMAGE_REPOSITORY, value: "$etcd_repo"}
        livenessProbe: {httpGet: {path: /healthz, port: 8081}, initialDelaySeconds: 15, periodSeconds: 20}
        readinessProbe: {httpGet: {path: /readyz, port: 8081}, initialDelaySeconds: 5, periodSeconds: 10}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
    } >"$overlay/install.yaml"
    "$kubectl" apply --server-side --force-conflicts -f "$overlay/install.yaml" >/dev/null
    "$kubectl" -n "$ns" rollout status deployment/etcd-operator --timeout=5m >&2
    ;;
  *) die "unknown peer $name" ;;
  esac
  log "installed the $name etcd operator ($ref)"
}

case ${1:-} in
list) for n in etcd-io cozystack; do echo "$n $(commit $n) $(archive $n)"; done ;;
image) image "${2:?peer name}" ;;
install) shift; install "$@" ;;
*) die "usage: $0 list | image NAME | install NAME KUBECTL KUSTOMIZE ETCD_REPO" ;;
esac
