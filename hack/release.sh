#!/usr/bin/env bash
# Builds a release of Quorate from a clean tree (make release VERSION=x.y.z; docs/release.md):
#   - the static binaries for linux/amd64 and linux/arm64, cross-compiled; the arm64 operator
#     is run under qemu user emulation (--version) before anything is pushed;
#   - per platform an image of each of quorate-operator (manager, launcher, backup),
#     quorate-workload, quorate-conformance and etcd (each of ETCD_VERSIONS, built from source),
#     and per image a manifest list of both (buildah), pushed to RELEASE_REGISTRY;
#   - per image and platform a CycloneDX SBOM from the Go modules of its binaries
#     (cyclonedx-gomod bin, merged by hack/sbom), in dist/sbom and attested to the image;
#   - signatures of every manifest list and of each platform's image with COSIGN_KEY (cosign,
#     no transparency log: this machine has no network), verified before the script ends;
#   - dist/install.yaml (config/default), dist/quorate-conformance.yaml (config/conformance),
#     dist/bundle (hack/bundle) and its image, dist/catalog (hack/catalog): every image by the
#     digest pushed here;
#   - the kubectl plugin's archives and krew manifest (hack/plugin-release.sh);
#   - dist/images.txt, dist/cosign.pub, and dist/checksums (sha256 of every file in dist/),
#     signed (dist/checksums.sig).
# Usage: hack/release.sh VERSION   (semver without a v: 0.3.0, 0.3.0-rc.0)
# Environment:
#   RELEASE_REGISTRY   where the images go (default localhost:5000/quorate-release: never the
#                      development repositories); images are RELEASE_REGISTRY/quorate-operator,
#                      .../quorate-workload, .../quorate-conformance, .../quorate-bundle (tag
#                      v<VERSION>) and .../etcd (tag v<etcd version>). RELEASE_REGISTRY=ghcr.io/quorate-dev
#                      gives the names the published bundle uses.
#   RELEASE_TLS_VERIFY false for a plain-HTTP registry (default: false for localhost, else true)
#   RELEASE_OVERWRITE  true pushes over an existing v<VERSION> tag (default: refuse)
#   RELEASE_REPLACES   the release this one upgrades from (default: bundle/'s version)
#   COSIGN_KEY         the signing key (default $QUORATE_CACHE/release/cosign.key, generated with
#                      an empty COSIGN_PASSWORD on first use: for local runs only)
#   ETCD_VERSIONS      etcd releases to ship (default: the Makefile's)
#   KUSTOMIZE          kustomize binary (default: built by hack/build-tool.sh)
#   RELEASE_DRY_RUN    true: check VERSION and the tree, then stop
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"

version=${1:-}
[ -n "$version" ] || die "usage: release.sh VERSION (e.g. 0.3.0)"
# Semantic versioning 2.0 without build metadata (a "+" is not allowed in an image tag).
semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$'
[[ $version =~ $semver ]] || die "VERSION '$version' is not a semantic version like 0.3.0 or 0.3.0-rc.0 (no leading v, no +build)"

# A release is built from a commit, nothing else: the binaries record it (vcs.revision) and
# the bundle's createdAt is its time. Ignored files (bin/, dist/) do not count.
dirty=$(git -C "$root" status --porcelain --untracked-files=normal)
if [ -n "$dirty" ]; then
  printf '%s\n' "$dirty" | head -20 >&2
  die "the tree is dirty: commit or stash the changes above first; a release is built from a commit"
fi
commit=$(git -C "$root" rev-parse HEAD)
if [ "${RELEASE_DRY_RUN:-false}" = true ]; then
  echo "would release $version of $commit"
  exit 0
fi
commit_time=$(git -C "$root" log -1 --format=%cI HEAD)
commit_utc=$(TZ=UTC git -C "$root" log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)

RELEASE_REGISTRY=${RELEASE_REGISTRY:-localhost:5000/quorate-release}
RELEASE_REGISTRY=${RELEASE_REGISTRY%/}
case $RELEASE_REGISTRY in
localhost:* | 127.0.0.1:*) tls=${RELEASE_TLS_VERIFY:-false} ;;
*) tls=${RELEASE_TLS_VERIFY:-true} ;;
esac
ETCD_VERSIONS=${ETCD_VERSIONS:-$(sed -n 's/^ETCD_VERSIONS ?= //p' "$root/Makefile")}
COSIGN_VERSION=${COSIGN_VERSION:-v2.6.1}
CYCLONEDX_GOMOD_VERSION=${CYCLONEDX_GOMOD_VERSION:-v1.10.0}
KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-$(sed -n 's/^KUSTOMIZE_VERSION ?= //p' "$root/Makefile")}
arches=(amd64 arm64)
tag=v$version
ldflags="-s -w -X github.com/quorate-dev/quorate/internal/buildinfo.Version=$version"
start=$SECONDS
stage() { log "[$((SECONDS - start))s] $*"; }

dist=$root/dist
out=$root/bin/release
work=$(mktemp -d "${TMPDIR:-/tmp}/quorate-release.XXXXXX")
# buildah's own storage for this run alone (vfs, as hack/images.sh): nothing left behind.
B=(buildah --storage-driver vfs --root "$work/storage" --runroot "$work/runroot")
cleanup() { "${B[@]}" rm --all >/dev/null 2>&1 || true; chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

stage "release $version of $commit to $RELEASE_REGISTRY"
"$here/install-deps.sh" release
case $RELEASE_REGISTRY in localhost:5000/*) "$here/registry.sh" start ;; esac
cdx=$("$here/build-tool.sh" github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod "$CYCLONEDX_GOMOD_VERSION")
kustomize=${KUSTOMIZE:-$("$here/build-tool.sh" sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION")}
(cd "$root" && go build -o "$work/sbom" ./hack/sbom)

insecure=()
[ "$tls" = true ] || insecure=(--allow-insecure-registry --allow-http-registry)
exists() { skopeo inspect --raw --tls-verify="$tls" "docker://$1" >/dev/null 2>&1; }
for name in quorate-operator quorate-workload quorate-conformance quorate-bundle; do
  if exists "$RELEASE_REGISTRY/$name:$tag" && [ "${RELEASE_OVERWRITE:-false}" != true ]; then
    die "$RELEASE_REGISTRY/$name:$tag exists: a release is pushed once (RELEASE_OVERWRITE=true replaces it)"
  fi
done

rm -rf "$dist" "$out"
mkdir -p "$dist/sbom" "$out"

# --- Binaries ------------------------------------------------------------------------------
stage "cross-compiling the static binaries for ${arches[*]}"
# -buildvcs=true: in a clone the binaries record the commit (vcs.revision) whatever GOFLAGS says;
# in a git worktree Go finds no repository and records none (the images' labels name it).
for arch in "${arches[@]}"; do
  o=$out/linux_$arch
  mkdir -p "$o"
  for cmd in quorate-operator=./cmd quorate-launcher=./cmd/quorate-launcher quorate-backup=./cmd/quorate-backup quorate-workload=./cmd/quorate-workload; do
    (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=true -ldflags "$ldflags" -o "$o/${cmd%%=*}" "${cmd#*=}")
  done
  (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go test -c -tags e2e -trimpath -ldflags "$ldflags" -o "$o/quorate-conformance" ./e2e/conformance)
  for v in $ETCD_VERSIONS; do
    e=$("$here/build-etcd.sh" "$v" "$arch")
    mkdir -p "$o/etcd-$v"; cp "$e/etcd" "$e/etcdctl" "$e/etcdutl" "$o/etcd-$v/"
  done
done
for arch in "${arches[@]}"; do
  for f in "$out/linux_$arch"/quorate-* "$out/linux_$arch"/etcd-*/*; do
    file -b "$f" | grep -q "statically linked" || die "$f is not a static binary: $(file -b "$f")"
    go version -m "$f" | grep -q "GOARCH=$arch" || die "$f is not built for $arch"
  done
done
want="quorate-operator $version linux/arm64 $(go env GOVERSION)"
got=$(qemu-aarch64-static "$out/linux_arm64/quorate-operator" --version) || die "the arm64 operator does not run under qemu-aarch64-static"
[ "$got" = "$want" ] || die "the arm64 operator says '$got', not '$want'"
stage "qemu-aarch64-static bin/release/linux_arm64/quorate-operator --version: $got"

# --- Images --------------------------------------------------------------------------------
# image NAME TAG DOCKERFILE: builds NAME for each arch from the context $work/ctx-NAME-ARCH
# (DOCKERFILE: a path, or a name in that context),
# pushes the manifest list of both as RELEASE_REGISTRY/NAME:TAG and records the digests in
# $work/digests (NAME list|ARCH DIGEST).
image() {
  local name=$1 t=$2 dockerfile=$3 list=quorate-release-$1-$2
  # Quorate's images carry the commit they were built from (a worktree's binaries record no
  # VCS information: Go finds no .git directory there); etcd's are etcd's alone.
  local labels=()
  [ "$name" = etcd ] || labels=(--label "org.opencontainers.image.revision=$commit" --label "org.opencontainers.image.version=$version"
    --label "org.opencontainers.image.created=$commit_utc" --label "org.opencontainers.image.source=https://github.com/quorate-dev/quorate")
  local ref=$RELEASE_REGISTRY/$name:$t
  "${B[@]}" manifest rm "$list" >/dev/null 2>&1 || true
  "${B[@]}" manifest create "$list" >/dev/null
  for arch in "${arches[@]}"; do
    local f=$dockerfile
    [[ $f == /* ]] || f=$work/ctx-$name-$arch/$f
    # --timestamp 0: the same inputs give the same image, digest included (hack/images.sh).
    "${B[@]}" bud --quiet --layers=false --timestamp 0 --platform "linux/$arch" --build-arg "VERSION=$version" "${labels[@]}" \
      -f "$f" -t "localhost/$list-$arch" "$work/ctx-$name-$arch" >/dev/null
    "${B[@]}" manifest add "$list" "containers-storage:localhost/$list-$arch" >/dev/null
  done
  rm -f "$work/digest"
  "${B[@]}" manifest push --quiet --all --format oci --tls-verify="$tls" --digestfile "$work/digest" "$list" "docker://$ref" >/dev/null
  # The list's digest is that of the manifest the registry now serves for the tag (buildah 1.28
  # leaves --digestfile empty when the registry already held the same list).
  local raw d pushed
  skopeo inspect --raw --tls-verify="$tls" "docker://$ref" >"$work/list.json"
  d=sha256:$(sha256sum <"$work/list.json" | cut -d' ' -f1)
  raw=$(cat "$work/list.json")
  pushed=$(cat "$work/digest" 2>/dev/null || true)
  [ -z "$pushed" ] || [ "$pushed" = "$d" ] || die "$ref: buildah pushed $pushed, the registry serves $d"
  echo "$name list $d" >>"$work/digests"
  for arch in "${arches[@]}"; do
    local a; a=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.os == "linux" and .platform.architecture == $a) | .digest' <<<"$raw")
    [ -n "$a" ] || die "$ref has no linux/$arch image"
    echo "$name $arch $a" >>"$work/digests"
  done
  stage "pushed $RELEASE_REGISTRY/$name:$t @ $d"
}
# The images are recorded by key: the repository's name, or etcd-<version> for etcd's.
digest() { awk -v n="$1" -v a="${2:-list}" '$1 == n && $2 == a {print $3}' "$work/digests" | tail -1; }
repo_name() { case $1 in etcd-*) echo etcd ;; *) echo "$1" ;; esac; }
repo_of() { echo "$RELEASE_REGISTRY/$(repo_name "$1")"; }
ref() { echo "$(repo_of "$1")@$(digest "$1" "${2:-list}")"; } # ref KEY [ARCH]: the image by digest

stage "building and pushing the images"
: >"$work/digests"
for arch in "${arches[@]}"; do
  b=$out/linux_$arch
  c=$work/ctx-quorate-operator-$arch; mkdir -p "$c/bin/linux_$arch"
  cp "$b/quorate-operator" "$b/quorate-launcher" "$b/quorate-backup" "$c/bin/linux_$arch/"; cp "$root/LICENSE" "$c/"
  # The development Dockerfiles copy bin/linux_amd64: the same file, for each platform's binaries.
  sed "s#bin/linux_amd64/#bin/linux_$arch/#g" "$root/Dockerfile" >"$c/Dockerfile"
  c=$work/ctx-quorate-workload-$arch; mkdir -p "$c/bin/linux_$arch"
  cp "$b/quorate-workload" "$c/bin/linux_$arch/"; cp "$root/LICENSE" "$c/"
  sed "s#bin/linux_amd64/#bin/linux_$arch/#g" "$here/images/workload/Dockerfile" >"$c/Dockerfile"
  c=$work/ctx-quorate-conformance-$arch; mkdir -p "$c/rootfs/usr/local/bin" "$c/rootfs/tmp" "$c/licenses"; chmod 1777 "$c/rootfs/tmp"
  cp "$b/quorate-conformance" "$c/rootfs/usr/local/bin/"; cp "$root/LICENSE" "$c/licenses/LICENSE"
  cp "$here/images/conformance/Dockerfile" "$c/Dockerfile"
done
for name in quorate-operator quorate-workload; do
  for arch in "${arches[@]}"; do
    grep -q linux_amd64 "$work/ctx-$name-arm64/Dockerfile" && die "the $name Dockerfile still copies linux_amd64 binaries for arm64"
  done
done
image quorate-operator "$tag" Dockerfile
image quorate-workload "$tag" Dockerfile
image quorate-conformance "$tag" Dockerfile
etcd_images=()
for v in $ETCD_VERSIONS; do
  for arch in "${arches[@]}"; do
    c=$work/ctx-etcd-$arch; rm -rf "$c"; mkdir -p "$c/tmp"
    cp "$out/linux_$arch/etcd-$v"/* "$c/"; cp "$here/images/etcd/Dockerfile" "$c/Dockerfile"
  done
  # etcd's own release tag, which the operator names for versions that no RELATED_IMAGE_ETCD_
  # variable pins: rebuilt reproducibly by every release, so it may be pushed again.
  image etcd "$v" Dockerfile
  sed -i "s/^etcd \(list\|amd64\|arm64\) /etcd-$v \1 /" "$work/digests"
  etcd_images+=("${v#v}=$RELEASE_REGISTRY/etcd@$(digest "etcd-$v")")
done

# --- SBOMs ---------------------------------------------------------------------------------
stage "SBOMs (cyclonedx-gomod $CYCLONEDX_GOMOD_VERSION bin per binary, hack/sbom per image and platform)"
sbom() { # sbom NAME DIGEST-KEY ARCH BINARY...: dist/sbom/NAME_VERSION_linux_ARCH.cdx.json (hack/sbom's flags in sbom_flags)
  local name=$1 key=$2 arch=$3; shift 3
  local parts=() bin
  for bin in "$@"; do
    local p; p=$work/cdx-$key-$arch-$(basename "$bin").json
    local mv=()
    # Our binaries' main module is this release; etcd's carry their own version.
    [[ $key == etcd-* ]] || mv=(-version "v$version")
    "$cdx" bin -json -noserial -notimestamp "${mv[@]}" -output "$p" "$bin"
    parts+=("$p")
  done
  local iv=$version
  [[ $key == etcd-* ]] && iv=${key#etcd-}
  local f=$dist/sbom/${name}_${iv}_linux_$arch.cdx.json
  "$work/sbom" --name "$(repo_of "$key")" --version "$iv" --platform "linux/$arch" \
    --digest "$(digest "$key" "$arch")" --timestamp "$commit_utc" "${sbom_flags[@]}" --out "$f" "${parts[@]}"
  echo "$f"
}
sboms=()
sbom_flags=()
for arch in "${arches[@]}"; do
  b=$out/linux_$arch
  # quorate-conformance is a test binary, whose build info lists no module it links: go list
  # finds them, with their sums from go.sum.
  (cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch go list -deps -test -tags e2e \
    -f '{{with .Module}}{{if not .Main}}{{with .Replace}}{{.Path}} {{.Version}}{{else}}{{.Path}} {{.Version}}{{end}}{{end}}{{end}}' ./e2e/conformance) |
    LC_ALL=C sort -u | awk 'NR == FNR { if ($2 !~ /\/go.mod$/) sum[$1 " " $2] = $3; next } NF { print $1, $2, sum[$1 " " $2] }' "$root/go.sum" - >"$work/conformance-modules-$arch"
  # One assignment each: a failure inside "$(...)" within an array assignment would not stop the script.
  f=$(sbom quorate-operator quorate-operator "$arch" "$b/quorate-operator" "$b/quorate-launcher" "$b/quorate-backup")
  sboms+=("quorate-operator $arch $f")
  f=$(sbom quorate-workload quorate-workload "$arch" "$b/quorate-workload")
  sboms+=("quorate-workload $arch $f")
  sbom_flags=(--modules "quorate-conformance=$work/conformance-modules-$arch")
  f=$(sbom quorate-conformance quorate-conformance "$arch" "$b/quorate-conformance")
  sbom_flags=()
  sboms+=("quorate-conformance $arch $f")
  for v in $ETCD_VERSIONS; do
    f=$(sbom etcd "etcd-$v" "$arch" "$b/etcd-$v/etcd" "$b/etcd-$v/etcdctl" "$b/etcd-$v/etcdutl")
    sboms+=("etcd-$v $arch $f")
  done
done

# --- Manifests -----------------------------------------------------------------------------
stage "dist/install.yaml and dist/quorate-conformance.yaml"
k=$out/kustomize; mkdir -p "$k/install" "$k/conformance"
{
  printf 'resources:\n- %s\n' "$(realpath --relative-to="$k/install" "$root/config/default")"
  printf 'images:\n- name: localhost:5000/quorate/operator\n  newName: %s\n  digest: %s\n' "$(repo_of quorate-operator)" "$(digest quorate-operator)"
  printf 'patches:\n- target: {kind: Deployment, name: quorate-controller-manager}\n  patch: |-\n'
  printf '    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: quorate-controller-manager}\n'
  printf '    spec:\n      template:\n        spec:\n          containers:\n          - name: manager\n            env:\n'
  printf '            - {name: OPERATOR_IMAGE, value: "%s"}\n' "$(ref quorate-operator)"
  printf '            - {name: ETCD_IMAGE_REPOSITORY, value: "%s"}\n' "$(repo_of etcd)"
  for v in $ETCD_VERSIONS; do
    printf '            - {name: RELATED_IMAGE_ETCD_%s, value: "%s"}\n' "$(tr . _ <<<"${v#v}")" "$(ref "etcd-$v")"
  done
} >"$k/install/kustomization.yaml"
"$kustomize" build "$k/install" >"$dist/install.yaml"
{
  printf 'resources:\n- %s\n' "$(realpath --relative-to="$k/conformance" "$root/config/conformance")"
  # config/conformance names its published image: that name is replaced.
  printf 'images:\n- name: %s\n  newName: %s\n  digest: %s\n' "$(sed -n 's/^  newName: \(.*quorate-conformance\)$/\1/p' "$root/config/conformance/kustomization.yaml")" \
    "$(repo_of quorate-conformance)" "$(digest quorate-conformance)"
  printf 'configMapGenerator:\n- name: quorate-conformance-settings\n  behavior: merge\n  literals:\n'
  printf '  - QUORATE_WORKLOAD_IMAGE=%s\n' "$(ref quorate-workload)"
} >"$k/conformance/kustomization.yaml"
"$kustomize" build "$k/conformance" >"$dist/quorate-conformance.yaml"
grep -q "image: $(ref quorate-operator)$" "$dist/install.yaml" || die "dist/install.yaml does not run $(ref quorate-operator)"
grep -q "image: $(ref quorate-conformance)$" "$dist/quorate-conformance.yaml" || die "dist/quorate-conformance.yaml does not run $(ref quorate-conformance)"
grep -q "QUORATE_WORKLOAD_IMAGE: $(ref quorate-workload)$" "$dist/quorate-conformance.yaml" || die "dist/quorate-conformance.yaml does not name $(ref quorate-workload)"

# --- Bundle and catalog --------------------------------------------------------------------
replaces=${RELEASE_REPLACES-$(sed -n 's/^  version: //p' "$root/bundle/manifests/quorate.clusterserviceversion.yaml" | head -1)}
stage "dist/bundle (replaces ${replaces:-nothing}) and its image"
(cd "$root" && "$kustomize" build config/manifests | go run ./hack/bundle --version "$version" --replaces "$replaces" \
  --image "$(ref quorate-operator)" --conformance-image "$(ref quorate-conformance)" --workload-image "$(ref quorate-workload)" \
  --etcd-repository "$(repo_of etcd)" --etcd-images "$(IFS=,; echo "${etcd_images[*]}")" --out "$dist/bundle")
for arch in "${arches[@]}"; do
  c=$work/ctx-quorate-bundle-$arch; mkdir -p "$c"; cp -r "$dist/bundle" "$c/bundle"
done
# The bundle holds manifests only; an image of each platform lets any node pull it.
image quorate-bundle "$tag" "$root/bundle.Dockerfile"
stage "dist/catalog: the release's bundle by digest"
(cd "$root" && go run ./hack/catalog --out "$dist/catalog/quorate/catalog.yaml" --bundle "$version=$dist/bundle=$(ref quorate-bundle)")
opm=$(find "$QUORATE_CACHE/olm" -path '*/bin/opm' -type f 2>/dev/null | sort | tail -1 || true)
if [ -n "$opm" ]; then
  "$opm" validate "$dist/catalog" || die "opm validate rejects dist/catalog"
  stage "opm validate dist/catalog: valid"
else
  log "no opm built on this machine (make olm-build): dist/catalog not checked with opm validate"
fi

# Every image a user or OLM pulls is named by digest: each image: field, and each mention of
# the release's registry but the etcd repository (ETCD_IMAGE_REPOSITORY, for etcd versions that
# the release does not ship); nothing names the development images.
for f in "$dist/install.yaml" "$dist/quorate-conformance.yaml" "$dist/bundle/manifests/quorate.clusterserviceversion.yaml" \
  "$dist/bundle/tests/scorecard/config.yaml" "$dist/catalog/quorate/catalog.yaml"; do
  bad=$( {
    # The scorecard's own tests (operator-sdk's image, by its tag) are the one exception.
    grep -E '^[[:space:]]*(- )?(image|containerImage): ' "$f" | grep -vE '@sha256:[0-9a-f]{64}' |
      grep -v 'image: quay.io/operator-framework/scorecard-test:' || true
    grep -oE "$RELEASE_REGISTRY/[^ \"',]+" "$f" | grep -vE '@sha256:[0-9a-f]{64}$' | grep -vx "$(repo_of etcd)" || true
    grep -E 'localhost:5000/quorate/' "$f" || true
  } )
  [ -z "$bad" ] || die "$(basename "$f") names images by tag: $bad"
done

# --- Signatures ----------------------------------------------------------------------------
cosign=$("$here/build-tool.sh" github.com/sigstore/cosign/v2/cmd/cosign "$COSIGN_VERSION")
key=${COSIGN_KEY:-$QUORATE_CACHE/release/cosign.key}
export COSIGN_PASSWORD=${COSIGN_PASSWORD:-}
if [ ! -f "$key" ]; then
  [ -z "${COSIGN_KEY:-}" ] || die "COSIGN_KEY $key does not exist"
  mkdir -p "$(dirname "$key")"
  (cd "$(dirname "$key")" && "$cosign" generate-key-pair >/dev/null)
  log "generated a signing key for local releases: $key (empty password)"
fi
pub=${key%.key}.pub
[ -f "$pub" ] || "$cosign" public-key --key "$key" --outfile "$pub"
cp "$pub" "$dist/cosign.pub"
stage "signing (cosign $COSIGN_VERSION, key $key, no transparency log)"
sign_opts=(--key "$key" --tlog-upload=false "${insecure[@]}" -y)
verify_opts=(--key "$pub" --insecure-ignore-tlog=true "${insecure[@]}")
images=(quorate-operator quorate-workload quorate-conformance quorate-bundle)
for v in $ETCD_VERSIONS; do images+=("etcd-$v"); done
for i in "${images[@]}"; do
  # --recursive: the manifest list and each platform's image.
  "$cosign" sign "${sign_opts[@]}" --recursive "$(ref "$i")" 2>>"$work/cosign.log" ||
    { cat "$work/cosign.log" >&2; die "cosign sign $i"; }
done
for s in "${sboms[@]}"; do
  read -r i arch f <<<"$s"
  "$cosign" attest "${sign_opts[@]}" --type cyclonedx --predicate "$f" "$(ref "$i" "$arch")" 2>>"$work/cosign.log" ||
    { cat "$work/cosign.log" >&2; die "cosign attest $f"; }
done

stage "verifying every signature and SBOM attestation"
: >"$dist/verify.txt"
# dist/verify.txt: each command, what cosign says it checked (stderr), and a line per
# signature or attestation it accepted.
verify() { # verify IMAGE-REF [verify-attestation ARGS]
  local r=$1; shift
  local what=(verify) summary='.[] | {image: .critical.image."docker-manifest-digest", type: .critical.type}'
  if [ $# -gt 0 ]; then
    what=(verify-attestation "$@")
    summary='.payload | @base64d | fromjson | {predicateType, subject: .subject[0].digest.sha256, components: (.predicate.components | length)}'
  fi
  echo "\$ cosign ${what[*]} --key cosign.pub --insecure-ignore-tlog=true $r" >>"$dist/verify.txt"
  "$cosign" "${what[@]}" "${verify_opts[@]}" "$r" >"$work/verify.out" 2>"$work/verify.err" ||
    { cat "$work/verify.err" >&2; die "cosign ${what[*]} $r"; }
  # Less cosign's two warnings: no transparency log (on purpose) and no TUF root (no network).
  grep -v -e '^WARNING: Skipping tlog verification' -e '^WARNING: Could not fetch trusted_root.json' "$work/verify.err" >>"$dist/verify.txt" || true
  # verify prints one JSON array; verify-attestation one JSON object per line.
  jq -c "$summary" "$work/verify.out" >>"$dist/verify.txt"
}
for i in "${images[@]}"; do
  for a in list "${arches[@]}"; do verify "$(ref "$i" "$a")"; done
  [ "$i" = quorate-bundle ] && continue
  for a in "${arches[@]}"; do verify "$(ref "$i" "$a")" --type cyclonedx; done
done
log "$(grep -c '^\$' "$dist/verify.txt") verifications passed (dist/verify.txt)"

# --- The kubectl plugin, the list of images, checksums ---------------------------------------
stage "the kubectl plugin's archives (hack/plugin-release.sh)"
"$here/plugin-release.sh" "$version" "$ldflags" >/dev/null
{
  printf '# Quorate %s (commit %s, %s), images in %s\n' "$version" "$commit" "$commit_time" "$RELEASE_REGISTRY"
  printf '%-36s %-8s %s\n' IMAGE PLATFORM DIGEST
  for i in "${images[@]}"; do
    t=$tag; [[ $i == etcd-* ]] && t=${i#etcd-}
    printf '%-36s %-8s %s\n' "$(repo_name "$i"):$t" list "$(digest "$i")"
    for a in "${arches[@]}"; do printf '%-36s %-8s %s\n' "" "$a" "$(digest "$i" "$a")"; done
  done
} >"$dist/images.txt"
(cd "$dist" && find . -type f ! -name checksums ! -name checksums.sig | sed 's#^\./##' | LC_ALL=C sort | xargs sha256sum) >"$dist/checksums"
"$cosign" sign-blob --key "$key" --tlog-upload=false --yes --output-signature "$dist/checksums.sig" "$dist/checksums" 2>>"$work/cosign.log" ||
  { cat "$work/cosign.log" >&2; die "cosign sign-blob dist/checksums"; }
"$cosign" verify-blob --key "$pub" --insecure-ignore-tlog=true --signature "$dist/checksums.sig" "$dist/checksums" >/dev/null 2>&1 ||
  die "cosign verify-blob dist/checksums"
cat "$dist/images.txt"
stage "release $version done: dist/ ($(find "$dist" -type f | wc -l) files), images in $RELEASE_REGISTRY"
