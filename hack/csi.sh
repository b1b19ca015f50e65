#!/usr/bin/env bash
# Installs a CSI-only storage stack on the cluster that KUBECONFIG points at (issue 42's
# "foreign" profile), idempotently, and waits until every node's kubelet has registered the
# driver (its CSINode lists it):
#   - the snapshot CRDs and the snapshot controller (external-snapshotter v8.7.0),
#   - the CSIDriver hostpath.csi.quorate.dev: Quorate's hostpath driver (hack/csi/hostpath) in
#     controller mode behind csi-provisioner v5.3.0, csi-resizer v1.14.0 and csi-snapshotter
#     v8.7.0 (one Deployment), and in node mode on every node (one DaemonSet per node, below),
#   - the StorageClass quorate-csi (CSI_CLASS; a name the suite does not know; volume expansion,
#     WaitForFirstConsumer) and the VolumeSnapshotClass of the same name (the default one).
# Binaries: hack/build-csi.sh; images: hack/images.sh csi (pushed to the local registry).
# Everything runs in kube-system, which Pod Security Admission and the openshift-like profile
# leave alone: the node plugin is privileged and mounts host paths.
#
# Environment:
#   KUBECTL           kubectl to use (default: kubectl in PATH)
#   CSI_KUBELET_DIR   the kubelets' --root-dir, the same on every node (default: read from each
#                     node's kubelet process on this machine, else /var/lib/kubelet)
#   CSI_DATA_DIR      the host directory volumes and snapshots are kept in (default: csi-hostpath
#                     in the local cluster's state directory, which cluster-down removes)
#   CSI_DEFAULT_CLASS 1: make the StorageClass the default one (for a cluster without
#                     local-path, whose class is the default otherwise)
#   CSI_CLASS         the StorageClass's and VolumeSnapshotClass's name (default: quorate-csi;
#                     the foreign profile's is standard-rwo)
#   CSI_IMAGE_REGISTRY the registry host the nodes pull the images by, in place of the local
#                     registry's own name (the foreign profile's registry.foreign.internal)
#   CSI_NODES         "NODE=KUBELET_DIR ...": these nodes, not the cluster's (with CSI_PRINT)
#   CSI_PRINT         1: print the manifest (less the snapshot CRDs) and change nothing
#
# The kubelet's directories. The local cluster (e2e/localcluster, components.go) starts node 1's
# kubelet with --root-dir=/var/lib/quorate/<cluster>/kubelet and node i's (a network namespace on
# this machine) with --root-dir=/var/lib/quorate/<cluster>/nodes/<i>/kubelet. In a root dir R:
#   R/plugins_registry/            the kubelet watches it for registration sockets; the driver
#                                  serves R/plugins_registry/hostpath.csi.quorate.dev-reg.sock
#   R/plugins/hostpath.csi.quorate.dev/csi.sock   the CSI socket the kubelet is given
#   R/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount   where the driver bind-mounts a volume
#                                  (mounted into the container Bidirectional, at the same path)
# The root dir differs from node to node, and a DaemonSet's hostPath cannot: so one DaemonSet
# per node, pinned to it by kubernetes.io/hostname. All nodes share this machine's file system,
# so one data directory serves them all, and the controller creates volumes in it for any node.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
if [ "${CSI_PRINT:-}" != 1 ] || [ -z "${CSI_NODES:-}" ]; then
  : "${KUBECONFIG:?KUBECONFIG must name the cluster}"
fi
kubectl=${KUBECTL:-kubectl}
ns=kube-system
driver=hostpath.csi.quorate.dev
class=${CSI_CLASS:-quorate-csi}

dir=$("$here/build-csi.sh")
read -r hostpath_image provisioner_image resizer_image snapshotter_image controller_image < <("$here/images.sh" csi)
for v in hostpath_image provisioner_image resizer_image snapshotter_image controller_image; do
  printf -v "$v" '%s' "$(pulled_as "${!v}" "${CSI_IMAGE_REGISTRY:-}")"
done

# kubelet_dir NODE: the node's kubelet --root-dir, from the kubelet process on this machine
# whose --hostname-override names NODE, else from the local cluster's layout.
kubelet_dir() {
  if [ -n "${CSI_KUBELET_DIR:-}" ]; then echo "$CSI_KUBELET_DIR"; return; fi
  local args root=""
  if args=$(kubelet_args "$1"); then
    root=$(sed -n 's/^--root-dir=//p' <<<"$args")
    echo "${root:-/var/lib/kubelet}"
    return
  fi
  # Not running (a powered-off node): the local cluster's layout, when the name is of it.
  if [[ $1 =~ ^(.+)-node-([0-9]+)$ ]]; then
    local state=/var/lib/quorate/${BASH_REMATCH[1]} i=${BASH_REMATCH[2]}
    root=$state/nodes/$i/kubelet
    [ "$i" != 1 ] || root=$state/kubelet
    if [ -d "$root" ]; then
      log "no kubelet of node $1 runs: taking the local cluster's $root"
      echo "$root"
      return
    fi
  fi
  log "no kubelet of node $1 runs on this machine: assuming --root-dir=/var/lib/kubelet (set CSI_KUBELET_DIR otherwise)"
  echo /var/lib/kubelet
}

declare -A kdir
nodes=()
if [ -n "${CSI_NODES:-}" ]; then
  for nd in $CSI_NODES; do nodes+=("${nd%%=*}"); kdir[${nd%%=*}]=${nd#*=}; done
else
  mapfile -t nodes < <("$kubectl" get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
  for n in "${nodes[@]}"; do kdir[$n]=$(kubelet_dir "$n"); done
fi
[ ${#nodes[@]} -gt 0 ] || die "the cluster has no nodes"
if [ -z "${CSI_DATA_DIR:-}" ]; then
  # The local cluster's state directory: /var/lib/quorate/<cluster>/kubelet or
  # /var/lib/quorate/<cluster>/nodes/<i>/kubelet less its tail.
  state=${kdir[${nodes[0]}]%/kubelet}; state=${state%/nodes/*}
  case $state in
  /var/lib/quorate/*) CSI_DATA_DIR=$state/csi-hostpath ;;
  *) CSI_DATA_DIR=/var/lib/quorate-csi-hostpath ;;
  esac
fi
log "CSI stack: driver $driver, data in $CSI_DATA_DIR, nodes: $(for n in "${nodes[@]}"; do printf '%s=%s ' "$n" "${kdir[$n]}"; done)"

default_class=false
[ "${CSI_DEFAULT_CLASS:-}" != 1 ] || default_class=true

# The local cluster's system pool (node 1), which no node scenario stops or cuts off, when
# the cluster has one.
system_affinity='{nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, preference: {matchExpressions: [{key: node.quorate.dev/pool, operator: In, values: [system]}]}}]}}'

manifest=$(mktemp); trap 'rm -f "$manifest"' EXIT
# Controller-side objects: snapshot controller, CSIDriver, the driver's controller, classes.
cat >"$manifest" <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: quorate-csi-snapshot-controller, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: quorate-csi-snapshot-controller}
rules:
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch, update]
- apiGroups: [""]
  resources: [events]
  verbs: [list, watch, create, update, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotclasses]
  verbs: [get, list, watch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents, volumesnapshots]
  verbs: [create, get, list, watch, update, delete, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents/status, volumesnapshots/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: quorate-csi-snapshot-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: quorate-csi-snapshot-controller}
subjects:
- {kind: ServiceAccount, name: quorate-csi-snapshot-controller, namespace: $ns}
---
# One replica, recreated rather than rolled (never two at once), so no leader election.
apiVersion: apps/v1
kind: Deployment
metadata: {name: quorate-csi-snapshot-controller, namespace: $ns}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector:
    matchLabels: {app: quorate-csi-snapshot-controller}
  template:
    metadata:
      labels: {app: quorate-csi-snapshot-controller}
    spec:
      serviceAccountName: quorate-csi-snapshot-controller
      affinity: $system_affinity
      containers:
      - name: snapshot-controller
        image: $controller_image
        command: [snapshot-controller, --v=2, --leader-election=false, --retry-interval-max=30s]
        resources:
          requests: {cpu: 10m, memory: 32Mi}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $driver}
spec:
  # No ControllerPublish: a volume is a directory every node reaches.
  attachRequired: false
  podInfoOnMount: false
  # The kubelet gives the volume the pod's fsGroup, as for local-path's volumes.
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: quorate-csi-controller, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: quorate-csi-controller}
rules:
# csi-provisioner
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch, update]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses, csinodes, volumeattachments, volumeattributesclasses]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshots]
  verbs: [get, list]
# csi-resizer
- apiGroups: [""]
  resources: [persistentvolumeclaims/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
# csi-snapshotter
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotclasses]
  verbs: [get, list, watch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents]
  verbs: [get, list, watch, update, patch]
- apiGroups: [snapshot.storage.k8s.io]
  resources: [volumesnapshotcontents/status]
  verbs: [update, patch]
# all three
- apiGroups: [""]
  resources: [events]
  verbs: [list, watch, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: quorate-csi-controller}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: quorate-csi-controller}
subjects:
- {kind: ServiceAccount, name: quorate-csi-controller, namespace: $ns}
---
# The driver in controller mode and the sidecars that call it, on one socket in an emptyDir.
# The data directory is the host's (every node shares this machine's file system).
apiVersion: apps/v1
kind: Deployment
metadata: {name: quorate-csi-controller, namespace: $ns}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector:
    matchLabels: {app: quorate-csi-controller}
  template:
    metadata:
      labels: {app: quorate-csi-controller}
    spec:
      serviceAccountName: quorate-csi-controller
      affinity: $system_affinity
      containers:
      - name: hostpath
        image: $hostpath_image
        args: [--mode=controller, --driver-name=$driver, --endpoint=/csi/csi.sock, --data-dir=/csi-data-dir,
               --node-id=\$(KUBE_NODE_NAME), --health-addr=:9808]
        env:
        - name: KUBE_NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        ports: [{name: healthz, containerPort: 9808}]
        livenessProbe:
          httpGet: {path: /healthz, port: healthz}
          periodSeconds: 10
          failureThreshold: 5
        volumeMounts:
        - {name: socket-dir, mountPath: /csi}
        - {name: data, mountPath: /csi-data-dir}
        resources:
          requests: {cpu: 10m, memory: 16Mi}
      - name: csi-provisioner
        image: $provisioner_image
        # --timeout: a volume restored from a snapshot is unpacked within the call.
        command: [csi-provisioner, --v=2, --csi-address=/csi/csi.sock, --timeout=120s, --extra-create-metadata,
                  --retry-interval-max=30s]
        volumeMounts: [{name: socket-dir, mountPath: /csi}]
        resources:
          requests: {cpu: 10m, memory: 32Mi}
      - name: csi-resizer
        image: $resizer_image
        command: [csi-resizer, --v=2, --csi-address=/csi/csi.sock, --timeout=60s, --retry-interval-max=30s]
        volumeMounts: [{name: socket-dir, mountPath: /csi}]
        resources:
          requests: {cpu: 10m, memory: 32Mi}
      - name: csi-snapshotter
        image: $snapshotter_image
        command: [csi-snapshotter, --v=2, --csi-address=/csi/csi.sock, --timeout=300s, --retry-interval-max=30s]
        volumeMounts: [{name: socket-dir, mountPath: /csi}]
        resources:
          requests: {cpu: 10m, memory: 32Mi}
      volumes:
      - {name: socket-dir, emptyDir: {}}
      - {name: data, hostPath: {path: $CSI_DATA_DIR, type: DirectoryOrCreate}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $class
  annotations: {storageclass.kubernetes.io/is-default-class: "$default_class"}
provisioner: $driver
reclaimPolicy: Delete
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: $class
  annotations: {snapshot.storage.kubernetes.io/is-default-class: "true"}
driver: $driver
deletionPolicy: Delete
EOF

# node_manifest NODE INDEX: the driver in node mode on NODE, with its kubelet's directories at
# the same paths as on the host.
node_manifest() {
  local n=$1 i=$2 k=${kdir[$1]}
  cat <<EOF
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: quorate-csi-node-$i
  namespace: $ns
  labels: {app: quorate-csi-node}
  annotations: {csi.quorate.dev/node: $n, csi.quorate.dev/kubelet-dir: $k}
spec:
  selector:
    matchLabels: {app: quorate-csi-node, csi.quorate.dev/node-index: "$i"}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata:
      labels: {app: quorate-csi-node, csi.quorate.dev/node-index: "$i"}
    spec:
      nodeSelector: {kubernetes.io/hostname: $n}
      # On a cordoned, drained or tainted node too: its kubelet still unmounts volumes.
      tolerations: [{operator: Exists}]
      containers:
      - name: hostpath
        image: $hostpath_image
        args: [--mode=node, --driver-name=$driver, --kubelet-dir=$k, --data-dir=/csi-data-dir,
               --node-id=\$(KUBE_NODE_NAME), --health-addr=:9808]
        env:
        - name: KUBE_NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        # mount(8) needs CAP_SYS_ADMIN, and Bidirectional propagation a privileged container.
        securityContext: {privileged: true}
        ports: [{name: healthz, containerPort: 9808}]
        livenessProbe:
          httpGet: {path: /healthz, port: healthz}
          periodSeconds: 10
          failureThreshold: 5
        volumeMounts:
        - {name: pods, mountPath: $k/pods, mountPropagation: Bidirectional}
        - {name: socket-dir, mountPath: $k/plugins/$driver}
        - {name: registration-dir, mountPath: $k/plugins_registry}
        - {name: data, mountPath: /csi-data-dir}
        resources:
          requests: {cpu: 10m, memory: 16Mi}
      volumes:
      - {name: pods, hostPath: {path: $k/pods, type: DirectoryOrCreate}}
      - {name: socket-dir, hostPath: {path: $k/plugins/$driver, type: DirectoryOrCreate}}
      - {name: registration-dir, hostPath: {path: $k/plugins_registry, type: Directory}}
      - {name: data, hostPath: {path: $CSI_DATA_DIR, type: DirectoryOrCreate}}
EOF
}
i=0
for n in "${nodes[@]}"; do
  i=$((i + 1))
  node_manifest "$n" "$i" >>"$manifest"
done

if [ "${CSI_PRINT:-}" = 1 ]; then cat "$manifest"; exit 0; fi

log "applying the snapshot CRDs ($dir/crds)"
"$kubectl" apply --server-side --force-conflicts -f "$dir/crds" >/dev/null
"$kubectl" wait --for condition=established --timeout=60s crd/volumesnapshots.snapshot.storage.k8s.io \
  crd/volumesnapshotcontents.snapshot.storage.k8s.io crd/volumesnapshotclasses.snapshot.storage.k8s.io >/dev/null
log "applying the CSI stack ($hostpath_image and the kubernetes-csi images)"
"$kubectl" apply --server-side --force-conflicts -f "$manifest" >/dev/null
# DaemonSets of nodes that left the cluster since an earlier run.
while read -r ds; do
  [ -n "$ds" ] || continue
  [ "${ds#quorate-csi-node-}" -le "${#nodes[@]}" ] || "$kubectl" -n "$ns" delete daemonset "$ds" --ignore-not-found >/dev/null
done < <("$kubectl" -n "$ns" get daemonsets -l app=quorate-csi-node -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')

"$kubectl" -n "$ns" rollout status deployment/quorate-csi-snapshot-controller --timeout=5m >&2
"$kubectl" -n "$ns" rollout status deployment/quorate-csi-controller --timeout=5m >&2
for ((j = 1; j <= i; j++)); do
  "$kubectl" -n "$ns" rollout status "daemonset/quorate-csi-node-$j" --timeout=5m >&2
done

# Registered: the kubelet lists the driver in the node's CSINode (and labels the node with its
# topology key) once it took the registration.
deadline=$((SECONDS + 180))
for n in "${nodes[@]}"; do
  until "$kubectl" get csinode "$n" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | tr ' ' '\n' | grep -qx "$driver"; do
    [ $SECONDS -lt $deadline ] || die "node $n's kubelet has not registered $driver (kubectl get csinode $n -o yaml; kubectl -n $ns logs -l app=quorate-csi-node)"
    sleep 2
  done
done
log "CSI stack ready: StorageClass $class, VolumeSnapshotClass $class, driver $driver registered on ${#nodes[@]} node(s)"
