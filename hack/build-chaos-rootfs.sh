#!/usr/bin/env bash
# Assembles the root filesystem of the chaos-daemon image from Debian packages with debootstrap:
# the tools chaos-daemon executes (iptables, ipset, tc/ip, nsenter, stress-ng, sh) and the
# glibc its cgo build links against. Cached as $QUORATE_CACHE/chaos-mesh/rootfs.tar.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
out=$QUORATE_CACHE/chaos-mesh/rootfs.tar
[ -s "$out" ] && { echo "$out"; exit 0; }
build() {
  [ -s "$out" ] && return 0
  command -v debootstrap >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
  local root; root=$(mktemp -d "${TMPDIR:-/tmp}/chaos-rootfs.XXXXXX")
  local start=$SECONDS
  log "debootstrap of the chaos-daemon rootfs (bookworm minbase + iptables ipset iproute2 util-linux stress-ng)"
  debootstrap --variant=minbase --include=iptables,ipset,iproute2,util-linux,stress-ng,procps,ca-certificates \
    bookworm "$root" http://deb.debian.org/debian >"$QUORATE_CACHE/chaos-mesh/debootstrap.log" 2>&1 \
    || die "debootstrap failed; see $QUORATE_CACHE/chaos-mesh/debootstrap.log"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc "$root"/usr/share/man
  tar -C "$root" -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$root"
  log "chaos-daemon rootfs ready in $((SECONDS - start))s ($(du -h "$out" | cut -f1))"
}
mkdir -p "$QUORATE_CACHE/chaos-mesh"
with_lock "$QUORATE_CACHE/chaos-mesh" build
echo "$out"
