#!/usr/bin/env bash
# Builds container images with buildah from the Dockerfiles under hack/images (and the root
# Dockerfile for the operator) and pushes them to the local registry.
#   hack/images.sh base              pause, busybox, coredns, local-path-provisioner
#   hack/images.sh etcd v3.6.16      etcd of that release
#   hack/images.sh etcd-failpoints v3.6.16
#                                    etcd of that release with its gofail failpoints, tagged
#                                    v3.6.16-failpoints (the failpoint scenarios)
#   hack/images.sh operator VERSION  the operator image (binaries from bin/linux_amd64), tagged
#                                    VERSION-<content hash>; prints the image reference
#   hack/images.sh workload VERSION  the conformance workload image, likewise
#   hack/images.sh chaos             Chaos Mesh's controller and daemon images
#   hack/images.sh csi               the CSI stack of hack/csi.sh: Quorate's hostpath driver and
#                                    the kubernetes-csi sidecars and snapshot controller
#   hack/images.sh netpol            kube-network-policies (hack/build-netpol.sh) with nodenetns, the
#                                    NetworkPolicy agent of hack/netpol.sh; prints the image
#                                    reference (NETPOL_XT_QUEUE=1: its xtables NFQUEUE build)
#   hack/images.sh olm               OLM v0 and opm
#   hack/images.sh olmv1             OLM v1's catalogd and operator-controller
#   hack/images.sh conformance VER   quorate-conformance for the scorecard's custom test
#   hack/images.sh sonobuoy          Sonobuoy's aggregator and worker (hack/build-sonobuoy.sh), for
#                                    config/sonobuoy and hack/sonobuoy-run.sh; prints the image
#                                    reference
#   hack/images.sh scorecard         operator-sdk's scorecard-test and the bundle untar image
#   hack/images.sh versitygw VER     versitygw, the S3 gateway the backup scenarios store into
#   hack/images.sh fake-gcs VER      fake-gcs-server, the Google Cloud Storage emulator
#   hack/images.sh azurite VER       Azurite, the Azure Blob emulator (Node.js from Debian)
#   hack/images.sh digest IMAGE [REPO] REPO@sha256:… of IMAGE as the local registry holds it
# Upstream images are skipped when the registry already holds their tag.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
REGISTRY=${REGISTRY:-localhost:5000}
"$here/registry.sh" start

has() { # has REPO TAG
  curl -fsS -o /dev/null -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/$1/manifests/$2" 2>/dev/null
}

build() { # build CONTEXT DOCKERFILE IMAGE [BUILDAH BUD ARGS...]
  log "building $3"
  # --timestamp 0: the same inputs give the same image, digest included, on any machine; the
  # bundle names images by digest (make bundle).
  buildah --storage-driver vfs bud --quiet --layers=false --timestamp 0 "${@:4}" -f "$2" -t "$3" "$1" >/dev/null
  buildah --storage-driver vfs push --quiet --tls-verify=false "$3" "docker://$3" >/dev/null
  buildah --storage-driver vfs rmi "$3" >/dev/null 2>&1 || true
}

ctx() { mktemp -d "${TMPDIR:-/tmp}/quorate-image.XXXXXX"; }

base() {
  local c
  if ! has quorate/pause 3.10; then
    c=$(ctx); CGO_ENABLED=0 go build -C "$root" -trimpath -ldflags "-s -w" -o "$c/pause" ./hack/images/pause
    build "$c" "$here/images/pause/Dockerfile" "$REGISTRY/quorate/pause:3.10"; rm -rf "$c"
  fi
  # local-tar marks the layout with tar (kubectl cp needs it): older images are rebuilt.
  if ! has quorate/busybox local || ! has quorate/busybox local-tar; then
    [ -x /bin/busybox ] || "$here/install-deps.sh"
    c=$(ctx); mkdir -p "$c/rootfs/bin" "$c/rootfs/tmp"; cp /bin/busybox "$c/rootfs/bin/busybox"
    for t in sh mkdir rm rmdir chmod chown ls cat sleep test true tar; do ln -s busybox "$c/rootfs/bin/$t"; done
    build "$c" "$here/images/busybox/Dockerfile" "$REGISTRY/quorate/busybox:local"; rm -rf "$c"
    skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false "docker://$REGISTRY/quorate/busybox:local" "docker://$REGISTRY/quorate/busybox:local-tar"
  fi
  if ! has quorate/coredns "$COREDNS_VERSION"; then
    local bin; bin=$("$here/build-tool.sh" github.com/coredns/coredns "$COREDNS_VERSION")
    c=$(ctx); cp "$bin" "$c/coredns"
    build "$c" "$here/images/coredns/Dockerfile" "$REGISTRY/quorate/coredns:$COREDNS_VERSION"; rm -rf "$c"
  fi
  if ! has quorate/local-path-provisioner "$LOCAL_PATH_VERSION"; then
    local bin; bin=$("$here/build-tool.sh" github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION")
    c=$(ctx); cp "$bin" "$c/local-path-provisioner"; mkdir -p "$c/tmp"
    build "$c" "$here/images/local-path/Dockerfile" "$REGISTRY/quorate/local-path-provisioner:$LOCAL_PATH_VERSION"; rm -rf "$c"
  fi
}

etcd() {
  local v=${1:?etcd version}
  # The image's layout version: a second tag, so that images built before etcdutl was added
  # are rebuilt (the operator names them by the release alone).
  local layout=$v-layout3
  if ! has quorate/etcd "$v" || ! has quorate/etcd "$layout"; then
    local bin; bin=$("$here/build-etcd.sh" "$v")
    local c; c=$(ctx); cp "$bin/etcd" "$bin/etcdctl" "$bin/etcdutl" "$c/"; mkdir -p "$c/tmp"
    build "$c" "$here/images/etcd/Dockerfile" "$REGISTRY/quorate/etcd:$v"; rm -rf "$c"
    tag quorate/etcd "$v" "$layout"
  fi
  # The release without its v (3.6.16) as well: the etcd-io operator names its images so when
  # run with bare versions (quorate-conformance --peers-bare-versions).
  has quorate/etcd "${v#v}" || tag quorate/etcd "$v" "${v#v}"
}

etcd-failpoints() {
  local v=${1:?etcd version}
  if ! has quorate/etcd "$v-failpoints"; then
    local bin; bin=$(FAILPOINTS=1 "$here/build-etcd.sh" "$v")
    local c; c=$(ctx); cp "$bin/etcd" "$bin/etcdctl" "$bin/etcdutl" "$c/"; mkdir -p "$c/tmp"
    build "$c" "$here/images/etcd-failpoints/Dockerfile" "$REGISTRY/quorate/etcd:$v-failpoints"; rm -rf "$c"
  fi
}

tag() { # tag REPO TAG NEWTAG: the same image under another tag
  skopeo copy --quiet --src-tls-verify=false --dest-tls-verify=false "docker://$REGISTRY/$1:$2" "docker://$REGISTRY/$1:$3"
}

# content_tag VERSION FILES...: VERSION plus a hash of the files, so that a rebuilt binary gets
# a new tag and nodes never run a stale image cached under the old one.
content_tag() {
  local v=$1; shift
  # "r1": images built reproducibly (build --timestamp 0); earlier ones are not reused.
  echo "$v-$( (echo r1; cat "$@") | sha256sum | cut -c1-10)"
}

operator() {
  local version=${1:?version}
  local bins=("$root/bin/linux_amd64/quorate-operator" "$root/bin/linux_amd64/quorate-launcher" "$root/bin/linux_amd64/quorate-backup")
  for b in "${bins[@]}"; do [ -x "$b" ] || die "$b is missing: run make build-linux first"; done
  local tag; tag=$(content_tag "$version" "${bins[@]}" "$root/Dockerfile")
  has quorate/operator "$tag" || build "$root" "$root/Dockerfile" "$REGISTRY/quorate/operator:$tag" --build-arg "VERSION=$version"
  echo "$REGISTRY/quorate/operator:$tag"
}

workload() {
  local version=${1:?version}
  local bin=$root/bin/linux_amd64/quorate-workload
  [ -x "$bin" ] || die "$bin is missing: run make build-linux first"
  local tag; tag=$(content_tag "$version" "$bin" "$root/hack/images/workload/Dockerfile")
  has quorate/workload "$tag" || build "$root" "$root/hack/images/workload/Dockerfile" "$REGISTRY/quorate/workload:$tag" --build-arg "VERSION=$version"
  echo "$REGISTRY/quorate/workload:$tag"
}

chaos() { # chaos VERSION: the Chaos Mesh images; prints "<controller image> <daemon image>"
  local dir; dir=$("$here/build-chaos-mesh.sh")
  local rootfs; rootfs=$("$here/build-chaos-rootfs.sh")
  local c tag
  c=$(ctx); CGO_ENABLED=0 go build -C "$root" -trimpath -ldflags "-s -w" -o "$c/nsexec" ./hack/chaos/nsexec
  tag=$(content_tag "$(basename "$dir")" "$dir/bin/chaos-controller-manager")
  if ! has quorate/chaos-controller-manager "$tag"; then
    local m; m=$(ctx); cp "$dir/bin/chaos-controller-manager" "$m/"; mkdir -p "$m/tmp"
    build "$m" "$here/images/chaos-controller-manager/Dockerfile" "$REGISTRY/quorate/chaos-controller-manager:$tag"; rm -rf "$m"
  fi
  local dtag; dtag=$(content_tag "$(basename "$dir")" "$dir/bin/chaos-daemon" "$dir/bin/cdh" "$c/nsexec" "$rootfs")
  if ! has quorate/chaos-daemon "$dtag"; then
    cp "$dir/bin/chaos-daemon" "$dir/bin/cdh" "$dir/bin/pause" "$c/"; cp "$rootfs" "$c/rootfs.tar"
    build "$c" "$here/images/chaos-daemon/Dockerfile" "$REGISTRY/quorate/chaos-daemon:$dtag"
  fi
  rm -rf "$c"
  echo "$REGISTRY/quorate/chaos-controller-manager:$tag $REGISTRY/quorate/chaos-daemon:$dtag"
}

csi() { # csi: the CSI stack's images; prints "<hostpath> <provisioner> <resizer> <snapshotter> <snapshot-controller>"
  local dir; dir=$("$here/build-csi.sh")
  local src=$root/hack/csi/hostpath c refs=() tag b
  # The driver's version is its source's hash: the same source gives the same binary and tag.
  local v; v=src-$(cat "$src"/*.go "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-10)
  c=$(ctx)
  CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -C "$src" -trimpath -ldflags "-s -w -X main.version=$v" -o "$c/quorate-csi-hostpath" .
  "$here/build-csi-rootfs.sh" "$c/rootfs"
  # The rootfs's programs are this machine's: their content is part of the tag.
  local files; mapfile -t files < <(find "$c/rootfs" -type f | sort)
  tag=$(content_tag "$v" "$c/quorate-csi-hostpath" "$here/images/csi-hostpath/Dockerfile" "${files[@]}")
  has quorate/csi-hostpath "$tag" || build "$c" "$here/images/csi-hostpath/Dockerfile" "$REGISTRY/quorate/csi-hostpath:$tag"
  rm -rf "$c"
  refs+=("$REGISTRY/quorate/csi-hostpath:$tag")
  for b in csi-provisioner csi-resizer csi-snapshotter snapshot-controller; do
    tag=$(content_tag "$(basename "$dir")" "$dir/bin/$b" "$here/images/csi-sidecar/Dockerfile")
    if ! has "quorate/$b" "$tag"; then
      c=$(ctx); cp "$dir/bin/$b" "$c/"; mkdir -p "$c/tmp"; chmod 1777 "$c/tmp"
      build "$c" "$here/images/csi-sidecar/Dockerfile" "$REGISTRY/quorate/$b:$tag" --build-arg "BIN=$b"; rm -rf "$c"
    fi
    refs+=("$REGISTRY/quorate/$b:$tag")
  done
  echo "${refs[*]}"
}

# netpol: kube-network-policies and Quorate's nodenetns (hack/netpol/nodenetns, which starts it
# in its node's network namespace), both static, on an empty image; tagged v0.8.0-<hash> (or
# v0.8.0-xtqueue-<hash> for the NETPOL_XT_QUEUE=1 build). Prints the image reference.
netpol() {
  local dir; dir=$("$here/build-netpol.sh")
  local src=$here/netpol/nodenetns c v
  v=$(sed -nE 's/.*@(v[^ ]+).*/\1/p' "$dir/version")
  grep -q 'xt=1' "$dir/version" && v=$v-xtqueue
  c=$(ctx)
  CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -C "$src" -trimpath -ldflags "-s -w" -o "$c/nodenetns" .
  cp "$dir/bin/netpol" "$c/netpol"
  local tag; tag=$(content_tag "$v" "$c/netpol" "$c/nodenetns" "$here/images/netpol/Dockerfile")
  has quorate/kube-network-policies "$tag" || build "$c" "$here/images/netpol/Dockerfile" "$REGISTRY/quorate/kube-network-policies:$tag"
  rm -rf "$c"
  echo "$REGISTRY/quorate/kube-network-policies:$tag"
}

olm() { # olm: OLM v0 (olm, catalog, package-server, copy-content, cpb) and opm; prints the image
  local dir; dir=$("$here/build-olm.sh")
  local tag; tag=$(content_tag "$(basename "$dir")" "$dir"/bin/* /bin/busybox)
  if ! has quorate/olm "$tag"; then
    local c; c=$(ctx); mkdir -p "$c/rootfs/bin" "$c/rootfs/tmp"
    cp /bin/busybox "$c/rootfs/bin/busybox"
    for t in sh cp mkdir rm ls cat sleep; do ln -s busybox "$c/rootfs/bin/$t"; done
    cp "$dir"/bin/* "$c/rootfs/bin/"
    build "$c" "$here/images/olm/Dockerfile" "$REGISTRY/quorate/olm:$tag"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/olm:$tag"
}

olmv1() { # olmv1: OLM v1's catalogd and operator-controller in one image; prints the image
  local dir; dir=$("$here/build-olmv1.sh")
  local tag; tag=$(content_tag "$(basename "$dir")" "$dir/bin/catalogd" "$dir/bin/operator-controller")
  if ! has quorate/olmv1 "$tag"; then
    local c; c=$(ctx); mkdir -p "$c/rootfs/tmp" "$c/rootfs/etc"; chmod 1777 "$c/rootfs/tmp"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$c/rootfs/etc/passwd"
    cp "$dir/bin/catalogd" "$dir/bin/operator-controller" "$c/rootfs/"
    build "$c" "$here/images/olmv1/Dockerfile" "$REGISTRY/quorate/olmv1:$tag"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/olmv1:$tag"
}

conformance() { # conformance VERSION: quorate-conformance (static) for the scorecard's custom test
  local version=${1:?version}
  local c; c=$(ctx); mkdir -p "$c/rootfs/usr/local/bin" "$c/rootfs/tmp" "$c/licenses"; chmod 1777 "$c/rootfs/tmp"
  cp "$root/LICENSE" "$c/licenses/LICENSE"
  CGO_ENABLED=0 go test -C "$root" -c -tags e2e -trimpath -ldflags "-s -w -X github.com/quorate-dev/quorate/internal/buildinfo.Version=$version" \
    -o "$c/rootfs/usr/local/bin/quorate-conformance" ./e2e/conformance
  local tag; tag=$(content_tag "$version" "$c/rootfs/usr/local/bin/quorate-conformance" "$here/images/conformance/Dockerfile")
  has quorate/conformance "$tag" || build "$c" "$here/images/conformance/Dockerfile" "$REGISTRY/quorate/conformance:$tag" --build-arg "VERSION=$version"
  rm -rf "$c"
  echo "$REGISTRY/quorate/conformance:$tag"
}

# sonobuoy: Sonobuoy's aggregator and worker (hack/build-sonobuoy.sh) at /sonobuoy, as upstream's
# image has it, with a world-writable /tmp and the user 65532 (hack/images/sonobuoy/Dockerfile);
# tagged v0.57.3-<content hash>. Prints the image reference (hack/sonobuoy-run.sh's
# SONOBUOY_IMAGE).
sonobuoy() {
  local dir; dir=$("$here/build-sonobuoy.sh")
  local v; v=$(sed -nE 's/.*@(v[^ ]+).*/\1/p' "$dir/version")
  local tag; tag=$(content_tag "$v" "$dir/bin/sonobuoy" "$here/images/sonobuoy/Dockerfile")
  if ! has quorate/sonobuoy "$tag"; then
    local c; c=$(ctx); mkdir -p "$c/rootfs/tmp" "$c/rootfs/etc"; chmod 1777 "$c/rootfs/tmp"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$c/rootfs/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$c/rootfs/etc/group"
    cp "$dir/bin/sonobuoy" "$c/rootfs/sonobuoy"
    build "$c" "$here/images/sonobuoy/Dockerfile" "$REGISTRY/quorate/sonobuoy:$tag"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/sonobuoy:$tag"
}

scorecard() { # scorecard: the scorecard-test and untar images; prints "<test image> <untar image>"
  local dir; dir=$("$here/build-operator-sdk.sh")
  local tag; tag=$(content_tag "$(basename "$dir")" "$dir/bin/scorecard-test")
  if ! has quorate/scorecard-test "$tag"; then
    local c; c=$(ctx); mkdir -p "$c/rootfs/usr/local/bin" "$c/rootfs/tmp"; chmod 1777 "$c/rootfs/tmp"
    cp "$dir/bin/scorecard-test" "$c/rootfs/usr/local/bin/"
    build "$c" "$here/images/scorecard-test/Dockerfile" "$REGISTRY/quorate/scorecard-test:$tag"; rm -rf "$c"
  fi
  [ -x /bin/busybox ] || "$here/install-deps.sh"
  local utag; utag=$(content_tag local /bin/busybox)
  if ! has quorate/scorecard-untar "$utag"; then
    local c; c=$(ctx); mkdir -p "$c/rootfs/bin" "$c/rootfs/tmp"; chmod 1777 "$c/rootfs/tmp"
    cp /bin/busybox "$c/rootfs/bin/busybox"
    for t in sh tar gzip gunzip ls cat; do ln -s busybox "$c/rootfs/bin/$t"; done
    build "$c" "$here/images/scorecard-untar/Dockerfile" "$REGISTRY/quorate/scorecard-untar:$utag"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/scorecard-test:$tag $REGISTRY/quorate/scorecard-untar:$utag"
}

versitygw() {
  local v=${1:?versitygw version}
  if ! has quorate/versitygw "$v"; then
    local bin; bin=$("$here/build-tool.sh" github.com/versity/versitygw/cmd/versitygw "$v")
    local c; c=$(ctx); cp "$bin" "$c/versitygw"; mkdir -p "$c/tmp"
    build "$c" "$here/images/versitygw/Dockerfile" "$REGISTRY/quorate/versitygw:$v"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/versitygw:$v"
}

fake-gcs() {
  local v=${1:?fake-gcs-server version}
  if ! has quorate/fake-gcs-server "$v"; then
    local bin; bin=$("$here/build-tool.sh" github.com/fsouza/fake-gcs-server "$v")
    local c; c=$(ctx); cp "$bin" "$c/fake-gcs-server"; mkdir -p "$c/tmp"
    build "$c" "$here/images/fake-gcs/Dockerfile" "$REGISTRY/quorate/fake-gcs-server:$v"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/fake-gcs-server:$v"
}

# azurite: the machine's Node.js (hack/install-deps.sh stores) with the shared libraries it
# links, as ldd lists them, and Azurite's production modules as hack/images/azurite's
# package-lock.json pins them (npm ci, cached per lock), on an empty image. The tag covers the
# lock, the Dockerfile, node and its libraries.
azurite() {
  local v=${1:?Azurite version}
  local src=$here/images/azurite
  local node; node=$(command -v node) || die "no node: hack/install-deps.sh stores installs Node.js"
  node=$(readlink -f "$node")
  [ "$(head -c 4 "$node" | tail -c 3)" = ELF ] || die "$node is not a Node.js binary (a version manager's shim?): install Node.js (hack/install-deps.sh stores)"
  local ldd_out; ldd_out=$(ldd "$node") || die "ldd $node failed"
  if grep -q 'not found' <<<"$ldd_out"; then die "node links libraries that are missing: $(grep 'not found' <<<"$ldd_out")"; fi
  local libs; libs=$(grep -o '/[^ ]*' <<<"$ldd_out" | sort -u)
  grep -q "\"version\": \"$v\"" "$src/package-lock.json" || die "hack/images/azurite/package-lock.json does not pin azurite $v (AZURITE_VERSION)"
  # shellcheck disable=SC2086 # libs are paths without spaces
  local tag; tag=$(content_tag "$v" "$src/package-lock.json" "$src/Dockerfile" "$node" $libs)
  if ! has quorate/azurite "$tag"; then
    local lock; lock=$(sha256sum "$src/package-lock.json" | cut -c1-16)
    local mods=$QUORATE_CACHE/azurite/$v-$lock
    fetch_azurite() {
      [ -d "$mods/node_modules/azurite" ] && return 0
      log "installing azurite@$v (package-lock.json) from the npm registry"
      rm -rf "$mods.tmp"; mkdir -p "$mods.tmp"; cp "$src/package.json" "$src/package-lock.json" "$mods.tmp/"
      (cd "$mods.tmp" && npm ci --silent --no-audit --no-fund --omit=dev --ignore-scripts >&2)
      rm -rf "$mods"; mv "$mods.tmp" "$mods"
    }
    mkdir -p "$(dirname "$mods")"; with_lock "$(dirname "$mods")" fetch_azurite
    local c; c=$(ctx); mkdir -p "$c/rootfs/usr/bin" "$c/rootfs/tmp" "$c/rootfs/opt"
    chmod 1777 "$c/rootfs/tmp"
    cp "$node" "$c/rootfs/usr/bin/node"
    local lib
    for lib in $libs; do
      mkdir -p "$c/rootfs$(dirname "$lib")"; cp -L "$lib" "$c/rootfs$lib"
    done
    cp -r "$mods/node_modules" "$c/rootfs/opt/node_modules"
    build "$c" "$src/Dockerfile" "$REGISTRY/quorate/azurite:$tag"; rm -rf "$c"
  fi
  echo "$REGISTRY/quorate/azurite:$tag"
}

digest() { # digest IMAGE [REPOSITORY]: the image by digest, under REPOSITORY (default its own)
  local image=${1:?image} repo=${2:-}
  [ -n "$repo" ] || { repo=${image%@*}; repo=${repo%:*}; }
  local d; d=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' "docker://$image") || die "$image is not in the registry: build it first"
  echo "$repo@$d"
}

cmd=${1:?usage: images.sh base|etcd VERSION|operator TAG|workload TAG}
shift
"$cmd" "$@"
