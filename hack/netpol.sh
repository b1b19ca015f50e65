#!/usr/bin/env bash
# Installs NetworkPolicy enforcement on the cluster that KUBECONFIG points at, idempotently:
# kube-network-policies v0.8.0 (sigs.k8s.io/kube-network-policies, the standard agent, not the
# AdminNetworkPolicy one) as a DaemonSet in kube-system on every node, tainted ones included, and
# waits until its pod is ready on every node and has programmed its node's netfilter.
#   hack/netpol.sh           install, or update in place
#   hack/netpol.sh delete    remove it (each agent deletes its nftables table as it stops)
# Binary: hack/build-netpol.sh; image: hack/images.sh netpol (pushed to the local registry).
#
# How it works: the agent puts into an nftables table of its node's network namespace (inet
# kube-network-policies: chains postrouting and prerouting, sets podips-v4 and podips-v6) the
# addresses of its node's pods that some NetworkPolicy selects, and queues the first packet of
# every connection from or to them to nfqueue 98; it reads that queue and accepts or drops the
# packet as the policies say. Established connections are not looked at again: a policy applies
# to new connections only. Traffic from root's sockets on the node (the kubelet's probes) is
# never queued.
#
# As upstream's install.yaml: the ServiceAccount, ClusterRole and ClusterRoleBinding
# kube-network-policies (list and watch pods, namespaces and networkpolicies: nothing more), a
# hostNetwork DaemonSet tolerating every taint, with the capability NET_ADMIN (nf_tables and
# nfqueue netlink). Unlike upstream's:
#   - not privileged: NET_ADMIN and SYS_ADMIN only. SYS_ADMIN is for nodenetns (hack/netpol/
#     nodenetns), which starts the agent in the network namespace that holds the node's address:
#     the local cluster's node i > 1 is a named namespace (/run/netns, mounted read-only) while its
#     containerd, and so its hostNetwork containers, are in the host's. On a real cluster the
#     container is already in its node's namespace and nodenetns only executes the agent.
#   - no /var/run/nri mount: the local cluster's containerd (v1.7) has NRI off, and the agent's
#     NRI plugin (pod addresses before the API server has them) then logs "nri plugin exited"
#     once and is not used. (--disable-nri is parsed but ignored by v0.8.0's main.go.)
#   - a readiness probe on the metrics port (served from the node's namespace, so a pod is ready
#     only where nodenetns found it), priority system-node-critical, small requests.
#   - the image's stop signal is SIGINT: the agent catches SIGINT only, and then deletes its
#     table; SIGTERM, or a SIGKILL (a node or cluster torn down), leaves the table behind.
#
# This machine's kernel has no nftables queue expression (CONFIG_NFT_QUEUE unset, no modules):
# there the unpatched agent's rules are refused ("syncing nftables rules" error="conn.Receive:
# netlink receive: no such file or directory") and nothing is enforced. NETPOL_XT_QUEUE=1 builds
# the agent to queue with the xtables NFQUEUE target through nft_compat instead
# (hack/build-netpol.sh), which the kernel has.
#
# Environment:
#   KUBECTL           kubectl to use (default: kubectl in PATH)
#   NETPOL_XT_QUEUE   1: the xtables NFQUEUE build; 0: upstream's; default: 1 when this machine's
#                     /proc/config.gz says CONFIG_NFT_QUEUE is not set (the local cluster's nodes
#                     share this kernel; set it for a cluster whose nodes run another)
#   NETPOL_FAIL_OPEN  1: --fail-open (packets pass while the agent is not running or its queue is
#                     full; by default they are dropped)
#   NETPOL_V          the agent's log verbosity (default 1; 2 logs every verdict)
#   NETPOL_METRICS_PORT  the agent's metrics and readiness port on every node (default 9080)
#   NETPOL_IMAGE_REGISTRY the registry host the nodes pull the image by, in place of the local
#                     registry's own name (the foreign profile's registry.foreign.internal)
#   NETPOL_PRINT      1: print the manifest and change nothing (no KUBECONFIG needed)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
mode=${1:-install}
case $mode in install | delete) ;; *) die "usage: netpol.sh [delete]" ;; esac
if [ "${NETPOL_PRINT:-}" != 1 ]; then
  : "${KUBECONFIG:?KUBECONFIG must name the cluster}"
fi
kubectl=${KUBECTL:-kubectl}
ns=kube-system
name=kube-network-policies
queue=98
port=${NETPOL_METRICS_PORT:-9080}
verbosity=${NETPOL_V:-1}

if [ "$mode" = delete ]; then
  log "deleting $name (its agents delete their nftables tables as they stop)"
  "$kubectl" -n "$ns" delete daemonset "$name" --ignore-not-found --cascade=foreground --timeout=2m >/dev/null
  "$kubectl" delete clusterrolebinding "$name" --ignore-not-found >/dev/null
  "$kubectl" delete clusterrole "$name" --ignore-not-found >/dev/null
  "$kubectl" -n "$ns" delete serviceaccount "$name" --ignore-not-found >/dev/null
  exit 0
fi

# xt_queue: 1 when this machine's kernel lacks nftables' queue expression.
xt_queue() {
  local cfg
  cfg=$(zcat /proc/config.gz 2>/dev/null) || { echo 0; return; }
  if grep -q '^# CONFIG_NFT_QUEUE is not set' <<<"$cfg"; then
    if ! grep -q '^CONFIG_NFT_COMPAT=[ym]' <<<"$cfg" || ! grep -q '^CONFIG_NETFILTER_XT_TARGET_NFQUEUE=[ym]' <<<"$cfg"; then
      die "the kernel has neither nftables' queue expression (CONFIG_NFT_QUEUE) nor nft_compat with the xtables NFQUEUE target: kube-network-policies cannot queue packets here"
    fi
    echo 1
  else
    echo 0
  fi
}
xt=${NETPOL_XT_QUEUE:-$(xt_queue)}
image=$(NETPOL_XT_QUEUE=$xt "$here/images.sh" netpol)
image=$(pulled_as "$image" "${NETPOL_IMAGE_REGISTRY:-}")

fail_open=""
[ "${NETPOL_FAIL_OPEN:-}" != 1 ] || fail_open=", --fail-open"

manifest=$(mktemp); trap 'rm -f "$manifest"' EXIT
cat >"$manifest" <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: $name, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: $name}
rules:
- apiGroups: [""]
  resources: [pods, namespaces]
  verbs: [list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $name}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $name}
subjects:
- {kind: ServiceAccount, name: $name, namespace: $ns}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: $name
  namespace: $ns
  labels: {app: $name, k8s-app: $name, tier: node}
spec:
  selector:
    matchLabels: {app: $name}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata:
      labels: {app: $name, k8s-app: $name, tier: node}
    spec:
      hostNetwork: true
      serviceAccountName: $name
      priorityClassName: system-node-critical
      nodeSelector: {kubernetes.io/os: linux}
      # Every node, cordoned and tainted ones too (the local cluster's etcd pool is tainted).
      tolerations: [{operator: Exists}]
      containers:
      - name: $name
        image: $image
        # The image runs: nodenetns -- netpol ARGS.
        args: [--hostname-override=\$(MY_NODE_NAME), --v=$verbosity, --nfqueue-id=$queue, --metrics-bind-address=:$port$fail_open]
        env:
        - name: MY_NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        - name: NODE_IP
          valueFrom: {fieldRef: {fieldPath: status.hostIP}}
        ports: [{name: metrics, containerPort: $port}]
        readinessProbe:
          httpGet: {path: /metrics, port: $port}
          periodSeconds: 10
        securityContext:
          capabilities: {add: [NET_ADMIN, SYS_ADMIN]}
        volumeMounts:
        - {name: netns, mountPath: /run/netns, readOnly: true, mountPropagation: HostToContainer}
        resources:
          requests: {cpu: 10m, memory: 32Mi}
      volumes:
      - {name: netns, hostPath: {path: /run/netns, type: DirectoryOrCreate}}
EOF

if [ "${NETPOL_PRINT:-}" = 1 ]; then cat "$manifest"; exit 0; fi

log "applying $name ($image$([ "$xt" != 1 ] || echo ', xtables NFQUEUE'))"
"$kubectl" apply --server-side --force-conflicts -f "$manifest" >/dev/null
"$kubectl" -n "$ns" rollout status "daemonset/$name" --timeout=5m >&2

# sync_failed NODE LOGS: dies with the kernel's refusal (klog writes a multi-line error=<...>).
sync_failed() {
  local why
  why=$(grep -A1 '"syncing nftables rules" err' <<<"$2" | tail -1 | sed -E 's/^[[:space:]]+//; s/.*error="?([^"]*)"?$/\1/')
  local hint=""
  [ "$xt" = 1 ] || hint=" (a kernel without nftables' queue expression, CONFIG_NFT_QUEUE? try NETPOL_XT_QUEUE=1)"
  die "the agent on $1 cannot program nftables: $why$hint"
}
# Every node has a ready agent of this image that has programmed its node: it logs "Syncing
# nftables rules" when it does, and "syncing nftables rules" error=... when the kernel refuses.
mapfile -t nodes < <("$kubectl" get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ ${#nodes[@]} -gt 0 ] || die "the cluster has no nodes"
deadline=$((SECONDS + 180))
for n in "${nodes[@]}"; do
  while :; do
    pod=$("$kubectl" -n "$ns" get pods -l "app=$name" --field-selector "spec.nodeName=$n" \
      -o jsonpath="{range .items[?(@.spec.containers[0].image==\"$image\")]}{.metadata.name} {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}" | awk '$2 == "True" {print $1; exit}')
    if [ -n "$pod" ]; then
      logs=$("$kubectl" -n "$ns" logs "$pod" 2>/dev/null || true)
      if grep -q '"syncing nftables rules" err' <<<"$logs"; then sync_failed "$n" "$logs"; fi
      if grep -q 'could not open nfqueue socket' <<<"$logs"; then
        die "the agent on $n cannot read its nfqueue: $(grep 'could not open nfqueue socket' <<<"$logs" | tail -1)"
      fi
      if grep -q 'Syncing nftables rules' <<<"$logs"; then
        # The refusal follows the attempt: look again once it had time to.
        sleep 2
        logs=$("$kubectl" -n "$ns" logs "$pod" 2>/dev/null || true)
        if grep -q '"syncing nftables rules" err' <<<"$logs"; then sync_failed "$n" "$logs"; fi
        break
      fi
    fi
    [ $SECONDS -lt $deadline ] || die "no ready $name agent has programmed node $n (kubectl -n $ns get pods -l app=$name -o wide; kubectl -n $ns logs POD)"
    sleep 2
  done
done
log "$name ready on ${#nodes[@]} node(s): NetworkPolicies are enforced"
