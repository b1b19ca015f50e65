#!/usr/bin/env bash
# Upgrading clusters with legacy CA Secret names (docs/design.md, TLS): an operator from before
# names.CASecretsOf (OLD, a commit; default a71b4f1) runs clusters foo (3 members) and bar (1) on
# a fresh local cluster, and refuses foo-peer, whose legacy CA name is foo's peer CA; then the
# head's operator replaces it, foo-peer forms, and foo and bar renew every certificate. Records
# the Secrets (names, resourceVersions, owners' label), pods and clusters before and after, the
# SecretCollision and CertificateRenewed Events, in OUT (default reports/legacy-ca-upgrade).
# Usage: hack/check-legacy-ca-upgrade.sh   (takes about 3 minutes warm; removes the cluster)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OLD=${OLD:-a71b4f1}
out=${OUT:-$root/reports/legacy-ca-upgrade}
mkdir -p "$out"
export QUORATE_STATE_TMPFS=1
trees=$(mktemp -d)
git -C "$root" worktree add -f "$trees/old" "$OLD" >/dev/null
git -C "$root" worktree add -f "$trees/new" HEAD >/dev/null
cd "$root"
go run ./cmd/quorate-localcluster down --name quorate >/dev/null 2>&1 || true
make -s cluster-up >/dev/null
export KUBECONFIG=$HOME/.kube/quorate-quorate.yaml
K=${KUBECTL:-$HOME/.cache/quorate/k8s/$(sed -n "s/^K8S_VERSION ?= //p" Makefile)/bin/kubectl}
(cd "$trees/old" && make -s image >/dev/null && make -s deploy IMG="$(cat bin/operator-image)" >/dev/null)
old_img=$(cat "$trees/old/bin/operator-image")
$K -n quorate-system rollout status deploy/quorate-controller-manager --timeout=180s
$K create ns legacy
cluster() {
  cat <<EOF | $K apply -n legacy -f -
apiVersion: etcd.quorate.dev/v1alpha1
kind: EtcdCluster
metadata: {name: $1}
spec: {replicas: $2, version: 3.6.16, storage: {size: 256Mi}}
EOF
}
cluster foo 3
cluster bar 1
for n in foo bar; do
  $K -n legacy wait etcdcluster/$n --for=condition=Available --timeout=300s
done
# Under the old operator, foo-peer's CA name is foo's peer CA: refused.
cluster foo-peer 1
$K -n legacy wait etcdcluster/foo-peer --for=jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}'=TLSNotReady --timeout=120s
$K -n legacy get etcdcluster foo-peer -o jsonpath='{.status.conditions[?(@.type=="Degraded")].message}' > "$out/foo-peer-before.txt"
snap() {
  $K -n legacy get secrets -o custom-columns=NAME:.metadata.name,RV:.metadata.resourceVersion,CLUSTER:.metadata.labels.etcd\\.quorate\\.dev/cluster --sort-by=.metadata.name > "$out/secrets-$1.txt"
  $K -n legacy get pods -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,RESTARTS:.status.containerStatuses[0].restartCount --sort-by=.metadata.name > "$out/pods-$1.txt"
  $K -n legacy get etcdcluster -o custom-columns=NAME:.metadata.name,ID:.status.clusterID,AVAILABLE:.status.conditions[?\(@.type==\"Available\"\)].status > "$out/clusters-$1.txt"
}
snap before
(cd "$trees/new" && make -s image >/dev/null && make -s deploy IMG="$(cat bin/operator-image)" >/dev/null)
new_img=$(cat "$trees/new/bin/operator-image")
$K -n quorate-system rollout status deploy/quorate-controller-manager --timeout=180s
# Every cluster passes at least twice under the new operator (resync 30 s), and a spec change
# makes each pass read every Secret again (renewCertificates: every leaf reissued).
sleep 70
$K -n legacy wait etcdcluster/foo-peer --for=condition=Available --timeout=300s
for n in foo bar; do
  $K -n legacy patch etcdcluster $n --type merge -p '{"spec":{"tls":{"renewCertificates":"after-upgrade"}}}'
done
for n in foo bar; do
  $K -n legacy wait etcdcluster/$n --for=jsonpath='{.status.tls.renewedToken}'=after-upgrade --timeout=300s
  $K -n legacy wait etcdcluster/$n --for=condition=Available --timeout=300s
done
snap after
$K -n legacy get events --field-selector reason=SecretCollision -o custom-columns=OBJ:.involvedObject.name,MSG:.message > "$out/collisions.txt"
$K -n legacy get events --field-selector reason=CertificateRenewed -o custom-columns=OBJ:.involvedObject.name,MSG:.message > "$out/renewed.txt"
echo "old operator $old_img; new operator $new_img" > "$out/images.txt"
go run ./cmd/quorate-localcluster down --name quorate >/dev/null
git -C "$root" worktree remove --force "$trees/old"
git -C "$root" worktree remove --force "$trees/new"
rm -rf "$trees"
echo "results in $out"
