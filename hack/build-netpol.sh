#!/usr/bin/env bash
# Builds kube-network-policies (sigs.k8s.io/kube-network-policies v0.8.0), the NetworkPolicy
# agent of hack/netpol.sh, from the Go module proxy, statically (CGO_ENABLED=0, as upstream's
# Dockerfile does), into $QUORATE_CACHE/netpol/<hash of the version and recipe>/bin/netpol.
# Prints that directory; a second run returns at once.
#
# The module has one command, cmd/main.go (upstream's image runs it as /bin/netpol). The same
# binary is the standard agent and, with --admin-network-policy or
# --baseline-admin-network-policy, the AdminNetworkPolicy one (install-anp.yaml); hack/netpol.sh
# runs it as the standard one. It programs nftables through netlink (github.com/google/nftables)
# and reads packets from nfqueue (github.com/florianl/go-nfqueue): it runs no nft command, so the
# image needs no nftables package.
#
# The module's go.mod has no replace or exclude directives, so `go install pkg@version` would
# take it; a writable copy of the module is built instead (GOFLAGS=-mod=mod: the zip carries no
# vendor/ directory) so that the recipe can patch the source: see NETPOL_XT_QUEUE below.
# The module proxy serves v0.8.0 and v0.7.0 here; v0.9.0 and v0.4.0 are refused (403).
#
# Environment:
#   NETPOL_XT_QUEUE  1: patch the agent to queue packets with the xtables NFQUEUE target through
#                    nft_compat instead of nftables' own queue expression, for kernels built
#                    without CONFIG_NFT_QUEUE but with CONFIG_NFT_COMPAT and
#                    CONFIG_NETFILTER_XT_TARGET_NFQUEUE (this machine's; hack/netpol.sh decides).
#                    The build goes to a directory of its own.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

NETPOL_VERSION=v0.8.0
mod=sigs.k8s.io/kube-network-policies@$NETPOL_VERSION
xt=${NETPOL_XT_QUEUE:-0}
# "b1": the build recipe; bump it when the way the binary is built changes. The xtables build
# also keys on this script itself, which holds its patch.
recipe=b1
[ "$xt" != 1 ] || recipe="b1 $(sha256sum "$0" | cut -c1-16)"
hash=$(printf '%s\n' "$recipe" "$mod" "xt=$xt" | sha256sum | cut -c1-12)
dir=$QUORATE_CACHE/netpol/$hash
if [ -x "$dir/bin/netpol" ]; then echo "$dir"; exit 0; fi

# xt_patch SRC: queue with the xtables NFQUEUE target (revision 3: struct xt_NFQ_info_v3
# {u16 queuenum, queues_total, flags}, 6 bytes, 8 once XT_ALIGNed, as nft_compat wants them)
# in place of expr.Queue. Flags: NFQ_FLAG_BYPASS (1) when --fail-open. The kernel evaluates the
# target as iptables' -j NFQUEUE --queue-num N [--queue-bypass] would.
xt_patch() {
  local f=$1/pkg/networkpolicy/controller.go
  grep -q 'queue := &expr.Queue{Num: uint16(c.config.QueueID)}' "$f" || die "$f: the queue expression is not where the patch expects it"
  # Both rule sets (postrouting and the DNS workaround's prerouting) build their queue verdict
  # the same way: replace the two constructions and the flag that follows each.
  perl -0pi -e '
    s{queue := &expr\.Queue\{Num: uint16\(c\.config\.QueueID\)\}\n\s*if c\.config\.FailOpen \{\n\s*queue\.Flag = expr\.QueueFlagBypass\n\s*\}}{queue := xtQueue(uint16(c.config.QueueID), c.config.FailOpen)}g
  ' "$f"
  [ "$(grep -c 'queue := xtQueue(' "$f")" = 2 ] || die "$f: the patch did not replace both queue expressions"
  cat >"$1/pkg/networkpolicy/xtqueue.go" <<'EOF'
package networkpolicy

// Added by Quorate's hack/build-netpol.sh (NETPOL_XT_QUEUE=1): the xtables NFQUEUE target,
// evaluated by nft_compat, for kernels without nftables' queue expression (CONFIG_NFT_QUEUE).

import (
	"encoding/binary"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

func xtQueue(num uint16, bypass bool) expr.Any {
	info := make([]byte, 8) // struct xt_NFQ_info_v3, XT_ALIGNed
	binary.NativeEndian.PutUint16(info[0:], num)
	binary.NativeEndian.PutUint16(info[2:], 1) // queues_total
	if bypass {
		binary.NativeEndian.PutUint16(info[4:], 1) // NFQ_FLAG_BYPASS
	}
	u := xt.Unknown(info)
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &u}
}
EOF
}

build() {
  [ -x "$dir/bin/netpol" ] && return 0
  local start=$SECONDS
  mkdir -p "$dir/bin"
  echo "$mod xt=$xt" >"$dir/version"
  local src=$dir/src m
  if [ ! -f "$src/go.mod" ]; then
    m=$(cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$mod" | sed -nE 's/.*"Dir": "([^"]+)".*/\1/p')
    [ -d "$m" ] || die "could not download $mod from the module proxy"
    rm -rf "$src.tmp" && cp -r "$m" "$src.tmp" && chmod -R u+w "$src.tmp"
    [ "$xt" != 1 ] || xt_patch "$src.tmp"
    mv "$src.tmp" "$src"
  fi
  log "building kube-network-policies $NETPOL_VERSION$([ "$xt" != 1 ] || echo ' (xtables NFQUEUE)')"
  (cd "$src" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOFLAGS=-mod=mod \
    go build -trimpath -ldflags "-s -w" -o "$dir/bin/netpol.tmp" ./cmd)
  mv "$dir/bin/netpol.tmp" "$dir/bin/netpol"
  log "built kube-network-policies in $((SECONDS - start))s ($(du -h "$dir/bin/netpol" | cut -f1))"
}
with_lock "$dir" build
echo "$dir"
