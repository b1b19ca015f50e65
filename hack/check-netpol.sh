#!/usr/bin/env bash
# Shows, on a cluster that enforces NetworkPolicy (the foreign profile: make cluster-up
# PROFILE=foreign; Quorate installed, as make conformance-foreign does), that an EtcdCluster's
# NetworkPolicy refuses a client it does not name and admits the clients it names, its members
# and its own backup Jobs:
#   1. an EtcdCluster with spec.networkPolicy.clients naming pods labelled
#      netpol-check=allowed, its members on the etcd pool (tolerations, node selector);
#   2. from a pod so labelled and from one that is not, a TCP connection to the client Service's
#      port 2379: the first connects, the second times out (the policy drops its SYN); with
#      spec.networkPolicy.enabled=false the second connects, and with it true again it is refused
#      again; both from node 1 and from the members' nodes;
#   3. an EtcdBackup of the cluster into the S3 store (hack/s3.sh, installed here with its images
#      named by the cluster's registry): its Job, not named in the policy but labelled as the
#      cluster's backup, reaches the members and the backup completes.
# Exits non-zero when any of it does not happen; removes its namespace at the end.
#
# Environment: KUBECONFIG (default ~/.kube/quorate-quorate.yaml), REGISTRY_NAME (the name the
# nodes pull the local registry by; default the foreign profile's registry.foreign.internal).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
export KUBECONFIG=${KUBECONFIG:-$HOME/.kube/quorate-quorate.yaml}
K8S=$(sed -n 's/^K8S_VERSION ?= //p' "$root/Makefile")
export KUBECTL=${KUBECTL:-$QUORATE_CACHE/k8s/$K8S/bin/kubectl}
k() { "$KUBECTL" "$@"; }
registry=${REGISTRY_NAME:-registry.foreign.internal}
ns=qc-netpol-check cluster=guarded pool_key=node.quorate.dev/pool
busybox=$registry/quorate/busybox:local

require_foreign_cluster "$KUBECTL"
log "installing the S3 store (hack/s3.sh)"
S3_IMAGE_REGISTRY=$registry "$here/s3.sh" >/dev/null

k delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
k create namespace "$ns" >/dev/null
trap 'k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
k -n quorate-s3 get secret s3-root -o go-template='{{range $k, $v := .data}}{{$k}}={{$v | base64decode}}{{"\n"}}{{end}}' |
  k -n "$ns" create secret generic s3-credentials --from-env-file=/dev/stdin >/dev/null

log "an EtcdCluster whose NetworkPolicy names the clients labelled netpol-check=allowed"
k apply -f - >/dev/null <<YAML
apiVersion: etcd.quorate.dev/v1alpha1
kind: EtcdCluster
metadata: {name: $cluster, namespace: $ns}
spec:
  replicas: 3
  version: "3.6.16"
  storage: {size: 1Gi}
  podTemplate:
    tolerations: [{key: $pool_key, operator: Equal, value: etcd, effect: NoSchedule}]
    nodeSelector: {$pool_key: etcd}
  networkPolicy:
    clients: [{podSelector: {matchLabels: {netpol-check: allowed}}}]
YAML
k -n "$ns" wait etcdcluster/$cluster --for=condition=Available --timeout=5m >/dev/null
log "cluster $cluster is Available; its NetworkPolicy:"
k -n "$ns" get networkpolicy -o yaml | sed -n '/^  spec:/,/^  status:/p' | head -60 >&2

# probe NAME LABEL [pool]: a pod that opens a TCP connection to the client Service's port and
# says whether it connected, in its termination message (3 tries, 5 s each; busybox nc runs
# -e's program only once connected); with "pool", on the etcd pool's nodes, beside the members (else on node 1).
probe() {
  local placement=""
  [ "${3:-}" != pool ] || placement="tolerations: [{key: $pool_key, operator: Exists}]
  nodeSelector: {$pool_key: etcd}"
  k -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {netpol-check: "$2"}}
spec:
  restartPolicy: Never
  $placement
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: probe
    image: $busybox
    command: [sh, -c, 'r="not connected"; for i in 1 2 3; do if nc -w 5 $cluster-client 2379 -e /bin/true 2>/tmp/err; then r=connected; break; fi; r="not connected: \$(cat /tmp/err)"; done; echo "\$r" > /dev/termination-log']
    volumeMounts: [{name: tmp, mountPath: /tmp}]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
  volumes: [{name: tmp, emptyDir: {}}]
YAML
  k -n "$ns" wait pod/"$1" --for=jsonpath='{.status.phase}'=Succeeded --timeout=2m >/dev/null
  k -n "$ns" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.terminated.message}' | tr -d '\n'
}
refused="not connected: nc: timed out"
allowed=$(probe allowed allowed)
other=$(probe other other)
log "a client the policy names: $allowed; one it does not name: $other"
[ "$allowed" = connected ] || die "the named client did not connect: $allowed"
[ "$other" = "$refused" ] || die "the client the policy does not name was not refused: $other (is NetworkPolicy enforced? hack/netpol.sh)"
allowed_pool=$(probe allowed-pool allowed pool)
other_pool=$(probe other-pool other pool)
log "the same on the members' nodes: named $allowed_pool; not named $other_pool"
[ "$allowed_pool" = connected ] || die "the named client on the members' nodes did not connect: $allowed_pool"
[ "$other_pool" = "$refused" ] || die "the client the policy does not name, on the members' nodes, was not refused: $other_pool"

# The same pod reaches the members once the cluster has no NetworkPolicy: the policy refused it.
k -n "$ns" patch etcdcluster $cluster --type=merge -p '{"spec":{"networkPolicy":{"enabled":false}}}' >/dev/null
for _ in $(seq 60); do [ -z "$(k -n "$ns" get networkpolicy -o name)" ] && break; sleep 2; done
[ -z "$(k -n "$ns" get networkpolicy -o name)" ] || die "the operator kept the NetworkPolicy after spec.networkPolicy.enabled=false"
unguarded=$(probe other-unguarded other)
log "the same client with the cluster's NetworkPolicy off: $unguarded"
[ "$unguarded" = connected ] || die "without the NetworkPolicy the client still did not connect: $unguarded (the cluster's network, not its policy, refused it)"
k -n "$ns" patch etcdcluster $cluster --type=merge -p '{"spec":{"networkPolicy":{"enabled":true}}}' >/dev/null
for _ in $(seq 60); do [ -n "$(k -n "$ns" get networkpolicy -o name)" ] && break; sleep 2; done
[ -n "$(k -n "$ns" get networkpolicy -o name)" ] || die "the operator did not make the NetworkPolicy again after spec.networkPolicy.enabled=true"
again=$(probe other-again other)
log "with the NetworkPolicy back: $again"
[ "$again" = "$refused" ] || die "with the NetworkPolicy back, the client it does not name was not refused: $again"

log "an EtcdBackup of the cluster into the S3 store, through its backup Job"
k apply -f - >/dev/null <<YAML
apiVersion: etcd.quorate.dev/v1alpha1
kind: EtcdBackup
metadata: {name: through-the-policy, namespace: $ns}
spec:
  clusterName: $cluster
  storage:
    bucketURL: s3://backups?endpoint=http://versitygw.quorate-s3.svc:7070&region=us-east-1&use_path_style=true
    prefix: netpol-check/
    credentialsSecret: s3-credentials
YAML
for _ in $(seq 60); do
  phase=$(k -n "$ns" get etcdbackup through-the-policy -o jsonpath='{.status.phase}')
  case $phase in Completed | Failed) break ;; esac
  sleep 5
done
k -n "$ns" get etcdbackup through-the-policy -o jsonpath='{.status}' >&2; echo >&2
[ "$phase" = Completed ] || die "the backup did not complete: ${phase:-no phase}"
log "network policy check passed: named client connected, unnamed client timed out (and connected without the policy), backup Job completed"
