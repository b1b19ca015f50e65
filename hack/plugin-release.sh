#!/usr/bin/env bash
# Builds the kubectl plugin's release archives for krew and the manifest that names them:
# dist/kubectl-quorate_v<VERSION>_<os>_<arch>.tar.gz (the binary and LICENSE) and
# dist/quorate.yaml, plugins/quorate.yaml with the version and each archive's sha256 filled in.
# Usage: hack/plugin-release.sh VERSION LDFLAGS
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
version=${1:?usage: plugin-release.sh VERSION LDFLAGS}
ldflags=${2:-}
dist=$root/dist
mkdir -p "$dist"
manifest=$(sed "s/VERSION/$version/g" "$root/plugins/quorate.yaml")
for platform in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  os=${platform%/*} arch=${platform#*/}
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$work/kubectl-quorate" ./cmd/kubectl-quorate)
  cp "$root/LICENSE" "$work/LICENSE"
  archive=$dist/kubectl-quorate_v${version}_${os}_${arch}.tar.gz
  # A reproducible archive: fixed owner, order and times.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='1970-01-01 00:00:00Z' -C "$work" -cf - kubectl-quorate LICENSE | gzip -n >"$archive"
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  manifest=${manifest//SHA256_${os}_${arch}/$sum}
  rm -rf "$work"
  trap - EXIT
  echo "$archive $sum"
done
if grep -q SHA256_ <<<"$manifest"; then
  echo "a sha256 placeholder is left in the manifest" >&2
  exit 1
fi
printf '%s\n' "$manifest" | grep -v '^# ' >"$dist/quorate.yaml"
echo "wrote $dist/quorate.yaml"
