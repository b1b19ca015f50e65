#!/usr/bin/env bash
# Installs a real S3-compatible object store on the cluster KUBECONFIG points at: versitygw
# v1.8.0, built from the module proxy (hack/build-tool.sh) into an image in the local registry,
# serving a volume as S3 at http://versitygw.quorate-s3.svc:7070 with two buckets: backups, and
# tiny (16 KiB: a full disk). The root credentials are in Secret quorate-s3/s3-root
# (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY). The same buckets are served over TLS at
# https://versitygw-tls.quorate-s3.svc with a certificate signed by a private CA made here
# (hack/s3/certs); the CA's certificate is in ConfigMap quorate-s3/s3-ca, key ca.crt, for
# storage.caBundle. Idempotent; the keys and the CA are generated once per machine (cached in
# $QUORATE_CACHE; the server certificate is signed again a month before its end).
# Usage: hack/s3.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
REGISTRY=${REGISTRY:-localhost:5000}
kubectl=${KUBECTL:-kubectl}

image=$("$here/images.sh" versitygw "$VERSITYGW_VERSION")
"$here/images.sh" base >/dev/null
# S3_IMAGE_REGISTRY: the registry host the nodes pull the images by, in place of the local
# registry's own name (the foreign profile's registry.foreign.internal).
image=$(pulled_as "$image" "${S3_IMAGE_REGISTRY:-}")
busybox=$(pulled_as "$REGISTRY/quorate/busybox:local" "${S3_IMAGE_REGISTRY:-}")
keys=$QUORATE_CACHE/s3/keys
if [ ! -s "$keys" ]; then
  mkdir -p "$(dirname "$keys")"
  echo "quorate$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n') $(head -c 24 /dev/urandom | base64 | tr -d '/+=\n')" >"$keys"
  chmod 600 "$keys"
fi
read -r access secret <"$keys"
tls=$QUORATE_CACHE/s3/tls
tls_names=versitygw-tls,versitygw-tls.quorate-s3,versitygw-tls.quorate-s3.svc,versitygw-tls.quorate-s3.svc.cluster.local
with_lock "$QUORATE_CACHE/s3" go run -C "$here/.." ./hack/s3/certs --dir "$tls" --names "$tls_names" >/dev/null
tls_hash=$(cat "$tls/tls.crt" "$tls/ca.crt" | sha256sum | cut -c1-16)
"$kubectl" create namespace quorate-s3 --dry-run=client -o yaml | "$kubectl" apply --server-side -f - >/dev/null
"$kubectl" -n quorate-s3 create secret tls versitygw-tls --cert="$tls/tls.crt" --key="$tls/tls.key" --dry-run=client -o yaml |
  "$kubectl" apply --server-side --force-conflicts -f - >/dev/null
"$kubectl" -n quorate-s3 create configmap s3-ca --from-file=ca.crt="$tls/ca.crt" --dry-run=client -o yaml |
  "$kubectl" apply --server-side --force-conflicts -f - >/dev/null
sed -e "s|image: IMAGE|image: $image|" -e "s|image: BUSYBOX|image: $busybox|" \
    -e "s|quorate.dev/tls-hash: TLS_HASH|quorate.dev/tls-hash: \"$tls_hash\"|" \
    -e "s|AWS_ACCESS_KEY_ID: ACCESS|AWS_ACCESS_KEY_ID: \"$access\"|" -e "s|AWS_SECRET_ACCESS_KEY: SECRET|AWS_SECRET_ACCESS_KEY: \"$secret\"|" \
    "$here/s3/versitygw.yaml" | "$kubectl" apply --server-side --force-conflicts -f - >/dev/null
"$kubectl" -n quorate-s3 rollout status deployment/versitygw --timeout=5m >/dev/null
log "S3 (versitygw $VERSITYGW_VERSION) serves http://versitygw.quorate-s3.svc:7070 and https://versitygw-tls.quorate-s3.svc (CA in ConfigMap quorate-s3/s3-ca): buckets backups and tiny"
