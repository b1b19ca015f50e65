#!/usr/bin/env bash
# Installs OLM v0, built from source (hack/build-olm.sh), on the cluster KUBECONFIG points at,
# from OLM's own quickstart manifests with every image pointed at the locally built one and the
# default operatorhub.io CatalogSource left out (nothing may be pulled from outside). Idempotent
# (server-side apply). Waits until olm-operator and catalog-operator run and the packageserver
# CSV has Succeeded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
kubectl=${KUBECTL:-kubectl}
dir=$("$here/build-olm.sh")
image=$("$here/images.sh" olm)
m=$(mktemp -d); trap 'rm -rf "$m"' EXIT
# Every upstream image reference becomes the local image, which holds all of OLM's binaries and opm.
sed -E "s#quay\.io/operator-framework/(olm@sha256:[0-9a-f]+|configmap-operator-registry:latest)#$image#g" \
  "$dir/manifests/olm.yaml" >"$m/olm.yaml"
# The catalog operator unpacks bundles with opm: point it at the local image too. Its flags are
# cobra flags, which take long names after two dashes only (the quickstart's single-dash
# '-namespace' makes v0.42.0's catalog exit with "unknown shorthand flag: 'n' in -namespace").
sed -i -E "s#^(\s+)- -util-image#\1- --opmImage=$image\n\1- --util-image#; s#^(\s+)- '-namespace'#\1- --namespace#; s#^(\s+)- -configmapServerImage=#\1- --configmapServerImage=#" "$m/olm.yaml"
# Drop the operatorhub.io CatalogSource (the last document).
awk 'BEGIN{RS="\n---\n"; ORS="\n---\n"} !/kind: CatalogSource/' "$m/olm.yaml" >"$m/olm-local.yaml"
grep -q "quay.io" "$m/olm-local.yaml" && die "an upstream image is left in OLM's manifests: $(grep -o 'quay.io[^ ]*' "$m/olm-local.yaml" | sort -u)"
log "installing OLM $(basename "$dir") with $image"
"$kubectl" apply --server-side --force-conflicts -f "$dir/manifests/crds" >/dev/null
"$kubectl" wait --for=condition=Established --timeout=2m -f "$dir/manifests/crds" >/dev/null
"$kubectl" apply --server-side --force-conflicts -f "$m/olm-local.yaml" >/dev/null
"$kubectl" -n olm rollout status deployment/olm-operator --timeout=5m >&2
"$kubectl" -n olm rollout status deployment/catalog-operator --timeout=5m >&2
for i in $(seq 1 120); do
  phase=$("$kubectl" -n olm get csv packageserver -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Succeeded ] && break
  sleep 2
done
[ "$phase" = Succeeded ] || die "the packageserver CSV is '$phase', not Succeeded: kubectl -n olm describe csv packageserver"
log "OLM is ready (packageserver CSV Succeeded)"
