#!/usr/bin/env bash
# Prints hack/bundle's image flags. The CSV claims disconnected installs, so with
# BUNDLE_DIGESTS=true (make bundle's default) every image is named by digest: the digest of the
# image this tree builds, read from the local registry, under its published name. The images
# are built first (hack/images.sh; reproducible, so the digest is the one a release pushes).
# BUNDLE_DIGESTS=false names them by tag (a quick bundle for development).
# Environment: VERSION, BUNDLE_IMG_OPERATOR, BUNDLE_IMG_CONFORMANCE, BUNDLE_IMG_WORKLOAD
# (published names with tags), BUNDLE_ETCD_REPOSITORY, ETCD_VERSIONS (v3.5.35 v3.6.16),
# LOCAL_ETCD_REPOSITORY (where hack/images.sh puts etcd, localhost:5000/quorate/etcd).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
: "${BUNDLE_IMG_OPERATOR:?}" "${BUNDLE_IMG_CONFORMANCE:?}" "${BUNDLE_IMG_WORKLOAD:?}" "${BUNDLE_ETCD_REPOSITORY:?}" "${ETCD_VERSIONS:?}"
repo() { local r=${1%@*}; echo "${r%:*}"; }
versions=$(echo "$ETCD_VERSIONS" | tr ' ' '\n' | sed 's/^v//' | paste -sd, -)
if [ "${BUNDLE_DIGESTS:-true}" != true ]; then
  echo "--image $BUNDLE_IMG_OPERATOR --conformance-image $BUNDLE_IMG_CONFORMANCE --workload-image $BUNDLE_IMG_WORKLOAD --etcd-repository $BUNDLE_ETCD_REPOSITORY --etcd-versions $versions"
  exit 0
fi
version=${VERSION:?}
make -s -C "$root" build-linux VERSION="$version" >/dev/null
operator=$("$here/images.sh" operator "$version")
workload=$("$here/images.sh" workload "$version")
conformance=$("$here/images.sh" conformance "$version")
etcd_images=()
for v in $ETCD_VERSIONS; do
  "$here/images.sh" etcd "$v" >/dev/null
  etcd_images+=("${v#v}=$("$here/images.sh" digest "${LOCAL_ETCD_REPOSITORY:-localhost:5000/quorate/etcd}:$v" "$BUNDLE_ETCD_REPOSITORY")")
done
echo "--image $("$here/images.sh" digest "$operator" "$(repo "$BUNDLE_IMG_OPERATOR")")" \
  "--conformance-image $("$here/images.sh" digest "$conformance" "$(repo "$BUNDLE_IMG_CONFORMANCE")")" \
  "--workload-image $("$here/images.sh" digest "$workload" "$(repo "$BUNDLE_IMG_WORKLOAD")")" \
  "--etcd-repository $BUNDLE_ETCD_REPOSITORY --etcd-images $(IFS=,; echo "${etcd_images[*]}")"
