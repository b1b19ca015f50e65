#!/usr/bin/env bash
# Builds, for the local registry, what an OLM upgrade needs:
#   - the operator image of the previous and of the current release (BUNDLE_REPLACES and
#     BUNDLE_VERSION: this tree's binaries stamped with each version, so the two releases are
#     distinct images and an upgrade really replaces the running binary);
#   - a bundle image of each release, naming its own operator image and the local etcd images;
#   - two catalog images (opm serve): the first holds the previous release only, the second
#     both releases in the channel (the upgrade edge). Publishing a release is pointing the
#     CatalogSource at the second.
# Prints the two catalog images, one per line, previous first.
# Usage: hack/olm-catalog.sh ETCD_REPOSITORY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
etcd_repo=${1:?usage: olm-catalog.sh ETCD_REPOSITORY}
REGISTRY=${REGISTRY:-localhost:5000}
prev=${BUNDLE_REPLACES:-0.1.0} cur=${BUNDLE_VERSION:-0.2.0}
dir=$("$here/build-olm.sh")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

push() { # push CONTEXT DOCKERFILE IMAGE
  log "building $3"
  buildah --storage-driver vfs bud --quiet --layers=false -f "$2" -t "$3" "$1" >/dev/null
  buildah --storage-driver vfs push --quiet --tls-verify=false "$3" "docker://$3" >/dev/null
  buildah --storage-driver vfs rmi "$3" >/dev/null 2>&1 || true
}

args=()
for v in "$prev" "$cur"; do
  make -s -C "$root" build-linux VERSION="$v" >/dev/null
  operator_image=$("$here/images.sh" operator "$v")
  replaces=""; [ "$v" = "$cur" ] && replaces=$prev
  make -s -C "$root" bundle BUNDLE_VERSION="$v" BUNDLE_REPLACES="$replaces" BUNDLE_DIR="$work/bundle-$v" \
    BUNDLE_IMG_OPERATOR="$operator_image" BUNDLE_ETCD_REPOSITORY="$etcd_repo" >/dev/null
  c=$work/ctx-$v; mkdir -p "$c" && cp -r "$work/bundle-$v" "$c/bundle"
  tag="v$v-$(cd "$c" && find bundle -type f | sort | xargs cat | sha256sum | cut -c1-10)"
  img=$REGISTRY/quorate/quorate-bundle:$tag
  push "$c" "$root/bundle.Dockerfile" "$img"
  args+=(--bundle "$v=$work/bundle-$v=$img")
done

catalog() { # catalog NAME BUNDLE-ARGS...: builds a catalog image of those bundles, prints it
  local name=$1; shift
  local c=$work/ctx-catalog-$name
  mkdir -p "$c/rootfs/bin" "$c/rootfs/tmp" "$c/configs/quorate"
  (cd "$root" && go run ./hack/catalog --out "$c/configs/quorate/catalog.yaml" "$@")
  # operator-registry's own validation of the file-based catalog, as opm serve will read it.
  "$dir/bin/opm" validate "$c/configs" >&2 || die "opm validate rejects the catalog of $name"
  log "opm validate: catalog $name is valid"
  cp /bin/busybox "$c/rootfs/bin/"; for t in sh ls cat; do ln -s busybox "$c/rootfs/bin/$t"; done
  cp "$dir/bin/opm" "$dir/bin/grpc_health_probe" "$c/rootfs/bin/"
  local tag img
  tag="$name-$(cat "$c/configs/quorate/catalog.yaml" "$dir/bin/opm" "$here/images/catalog/Dockerfile" | sha256sum | cut -c1-10)"
  img=$REGISTRY/quorate/quorate-catalog:$tag
  push "$c" "$here/images/catalog/Dockerfile" "$img"
  echo "$img"
}
catalog "$prev" "${args[@]:0:2}"
catalog "$cur" "${args[@]}"
