#!/usr/bin/env bash
# Installs emulated cloud object stores on the cluster KUBECONFIG points at, for the backup
# scenarios backup-restore-gcs and backup-restore-azure (hack/stores/stores.yaml says what is
# where): fake-gcs-server $FAKE_GCS_VERSION, built from the module proxy, and Azurite
# $AZURITE_VERSION, from the npm registry as hack/images/azurite/package-lock.json pins it, run
# by the machine's Node.js (hack/install-deps.sh stores), each in an image in the local
# registry. Azurite's account key is generated once per
# machine (cached in $QUORATE_CACHE); its container "backups" is created through a port-forward
# (Azurite creates none itself). Idempotent.
# Usage: hack/stores.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
REGISTRY=${REGISTRY:-localhost:5000}
kubectl=${KUBECTL:-kubectl}

"$here/install-deps.sh" stores
gcs=$("$here/images.sh" fake-gcs "$FAKE_GCS_VERSION")
azurite=$("$here/images.sh" azurite "$AZURITE_VERSION")
"$here/images.sh" base >/dev/null
# The account key: the cluster's own if it has one (a cache emptied since), else this machine's.
keyfile=$QUORATE_CACHE/stores/azure-key
mkdir -p "$(dirname "$keyfile")"
if current=$("$kubectl" -n quorate-stores get secret azure-credentials -o jsonpath='{.data.AZURE_STORAGE_KEY}' 2>/dev/null) && [ -n "$current" ]; then
  base64 -d <<<"$current" >"$keyfile"
elif [ ! -s "$keyfile" ]; then
  head -c 32 /dev/urandom | base64 | tr -d '\n' >"$keyfile"
fi
chmod 600 "$keyfile"
key=$(cat "$keyfile")
key_hash=$(sha256sum "$keyfile" | cut -c1-16)
sed -e "s|image: GCS_IMAGE|image: $gcs|" -e "s|image: AZURITE_IMAGE|image: $azurite|" \
    -e "s|image: BUSYBOX|image: $REGISTRY/quorate/busybox:local|" -e "s|AZURE_KEY|$key|" \
    -e "s|quorate.dev/key-hash: KEY_HASH|quorate.dev/key-hash: \"$key_hash\"|" \
    "$here/stores/stores.yaml" | "$kubectl" apply --server-side --force-conflicts -f - >/dev/null
"$kubectl" -n quorate-stores rollout status deployment/fake-gcs --timeout=5m >/dev/null
"$kubectl" -n quorate-stores rollout status deployment/azurite --timeout=5m >/dev/null

# The container "backups", through a port-forward to Azurite on a port the forward chooses.
pf=""
out=$(mktemp); trap 'if [ -n "$pf" ]; then kill "$pf" 2>/dev/null || true; fi; rm -f "$out"' EXIT
"$kubectl" -n quorate-stores port-forward deployment/azurite :10000 >"$out" 2>&1 &
pf=$!
port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/^Forwarding from 127.0.0.1:\([0-9]*\) .*/\1/p' "$out" | head -1)
  [ -n "$port" ] && break
  kill -0 "$pf" 2>/dev/null || die "kubectl port-forward to Azurite failed: $(cat "$out")"
  sleep 0.1
done
[ -n "$port" ] || die "kubectl port-forward to Azurite printed no port: $(cat "$out")"
AZURE_STORAGE_ACCOUNT=quorate AZURE_STORAGE_KEY=$key go run -C "$here/.." ./hack/stores/azcontainer "http://127.0.0.1:$port/quorate" backups
log "GCS (fake-gcs-server $FAKE_GCS_VERSION) serves gs://backups (Secret quorate-stores/gcs-credentials); Azure Blob (Azurite $AZURITE_VERSION) serves azblob://backups for account quorate (Secret quorate-stores/azure-credentials)"
