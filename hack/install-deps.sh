#!/usr/bin/env bash
# Installs the Debian packages the local cluster and image builds need. Idempotent: packages
# already present are not fetched again.
#   hack/install-deps.sh           the local cluster's and the image builds'
#   hack/install-deps.sh release   those, and what hack/release.sh adds: qemu's user emulation
#                                  (the arm64 binaries are run under it), jq and file
#   hack/install-deps.sh stores    those, and Node.js and npm (Azurite, hack/stores.sh)
set -euo pipefail
pkgs=(containerd runc containernetworking-plugins iptables conntrack ipset socat ebtables ethtool
      buildah skopeo docker-registry uidmap fuse-overlayfs busybox-static curl ca-certificates util-linux iproute2 kmod procps psmisc
      nftables)
# nftables: the nft command, to list and delete the table the NetworkPolicy agent (hack/netpol.sh)
# leaves in the host's network namespace when node 1 stops without it (nft delete table inet
# kube-network-policies). The agent itself speaks netlink and runs no nft.
case ${1:-} in
"") ;;
release) pkgs+=(qemu-user-static jq file) ;;
stores) # Node.js from anywhere will do (a NodeSource build carries its own npm, and Debian's npm
        # package would conflict with it).
        if ! command -v node >/dev/null || ! command -v npm >/dev/null; then pkgs+=(nodejs npm); fi ;;
*) echo "usage: install-deps.sh [release|stores]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq >/dev/null
# policy-rc.d stops the packages' own services from starting: the cluster runs its own
# containerd and registry with their own configuration.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
