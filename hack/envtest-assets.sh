#!/usr/bin/env bash
# Prints a KUBEBUILDER_ASSETS directory holding kube-apiserver, etcd (with etcdctl and etcdutl)
# and kubectl built from source (cached per version), for controller-runtime's envtest.
# Usage: hack/envtest-assets.sh [k8s-version] [etcd-version]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
k8s=${1:-v1.35.4}
etcdv=${2:-v3.6.16}
kbin=$("$here/build-k8s.sh" "$k8s" kube-apiserver kubectl)
ebin=$("$here/build-etcd.sh" "$etcdv")
dir=$QUORATE_CACHE/envtest/$k8s-$etcdv
mkdir -p "$dir"
ln -sf "$kbin/kube-apiserver" "$dir/kube-apiserver"
ln -sf "$kbin/kubectl" "$dir/kubectl"
ln -sf "$ebin/etcd" "$dir/etcd"
ln -sf "$ebin/etcdutl" "$dir/etcdutl"
# For the kubectl plugin's test of `kubectl quorate etcdctl` (internal/plugin/apitest).
ln -sf "$ebin/etcdctl" "$dir/etcdctl"
echo "$dir"
