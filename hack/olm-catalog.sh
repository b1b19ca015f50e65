#!/usr/bin/env bash
# Builds the bundle images of the previous and the current release and the catalog image that
# serves both (opm serve), for the local registry, and prints the catalog image.
# The bundles name the local operator and etcd images; the previous bundle (BUNDLE_REPLACES) is
# generated from this tree with the previous version number.
# Usage: hack/olm-catalog.sh OPERATOR_IMAGE ETCD_REPOSITORY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
operator_image=${1:?usage: olm-catalog.sh OPERATOR_IMAGE ETCD_REPOSITORY}
etcd_repo=${2:?usage: olm-catalog.sh OPERATOR_IMAGE ETCD_REPOSITORY}
REGISTRY=${REGISTRY:-localhost:5000}
prev=${BUNDLE_REPLACES:-0.1.0} cur=${BUNDLE_VERSION:-0.2.0}
dir=$("$here/build-olm.sh")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
args=()
for v in "$prev" "$cur"; do
  replaces=""; [ "$v" = "$cur" ] && replaces=$prev
  make -s -C "$root" bundle BUNDLE_VERSION="$v" BUNDLE_REPLACES="$replaces" BUNDLE_DIR="$work/bundle-$v" \
    BUNDLE_IMG_OPERATOR="$operator_image" BUNDLE_ETCD_REPOSITORY="$etcd_repo" >/dev/null
  c=$work/ctx-$v; mkdir -p "$c" && cp -r "$work/bundle-$v" "$c/bundle"
  tag="v$v-$(cd "$c" && find bundle -type f | sort | xargs cat | sha256sum | cut -c1-10)"
  img=$REGISTRY/quorate/quorate-bundle:$tag
  log "building $img"
  buildah --storage-driver vfs bud --quiet --layers=false -f "$root/bundle.Dockerfile" -t "$img" "$c" >/dev/null
  buildah --storage-driver vfs push --quiet --tls-verify=false "$img" "docker://$img" >/dev/null
  buildah --storage-driver vfs rmi "$img" >/dev/null 2>&1 || true
  args+=(--bundle "$v=$work/bundle-$v=$img")
done
c=$work/ctx-catalog; mkdir -p "$c/rootfs/bin" "$c/rootfs/tmp" "$c/configs/quorate"
(cd "$root" && go run ./hack/catalog --out "$c/configs/quorate/catalog.yaml" "${args[@]}")
cp /bin/busybox "$c/rootfs/bin/"; for t in sh ls cat; do ln -s busybox "$c/rootfs/bin/$t"; done
cp "$dir/bin/opm" "$dir/bin/grpc_health_probe" "$c/rootfs/bin/"
tag="$cur-$(cat "$c/configs/quorate/catalog.yaml" "$dir/bin/opm" "$here/images/catalog/Dockerfile" | sha256sum | cut -c1-10)"
img=$REGISTRY/quorate/quorate-catalog:$tag
log "building $img"
buildah --storage-driver vfs bud --quiet --layers=false -f "$here/images/catalog/Dockerfile" -t "$img" "$c" >/dev/null
buildah --storage-driver vfs push --quiet --tls-verify=false "$img" "docker://$img" >/dev/null
buildah --storage-driver vfs rmi "$img" >/dev/null 2>&1 || true
echo "$img"
