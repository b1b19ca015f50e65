#!/usr/bin/env bash
# Runs `operator-sdk scorecard` (built from source by hack/build-operator-sdk.sh) on bundle/
# against the cluster KUBECONFIG points at, with the bundle's own scorecard config
# (bundle/tests/scorecard/config.yaml) whose upstream images are pointed at the locally built
# scorecard-test image, and the local untar and storage images. SELECTOR picks the tests (default:
# the basic and OLM suites). With SELECTOR naming suite=quorate, the custom test runs too: its
# image (quorate-conformance) is built, told the local workload image, and its service account
# bound to cluster-admin (it creates namespaces and EtcdClusters); Quorate must be installed.
# Exits non-zero when a test fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
: "${KUBECONFIG:?KUBECONFIG must name the cluster}"
kubectl=${KUBECTL:-kubectl}
SELECTOR=${SELECTOR:-suite in (basic,olm)}
NAMESPACE=${SCORECARD_NAMESPACE:-quorate-scorecard}
dir=$("$here/build-operator-sdk.sh")
read -r test_image untar_image < <("$here/images.sh" scorecard)
"$here/images.sh" base >/dev/null
m=$(mktemp -d); trap 'rm -rf "$m"' EXIT
sed -E "s#quay\.io/operator-framework/scorecard-test:[^ ]+#$test_image#" "$root/bundle/tests/scorecard/config.yaml" >"$m/config.yaml"
grep -q "quay.io" "$m/config.yaml" && die "an upstream image is left in the scorecard config"
"$kubectl" create namespace "$NAMESPACE" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
if [[ $SELECTOR == *quorate* ]]; then
  version=${VERSION:-$(sed -n 's/^VERSION ?= //p' "$root/Makefile")}
  conformance_image=$("$here/images.sh" conformance "$version")
  workload_image=${WORKLOAD_IMAGE:-$(cat "$root/bin/workload-image" 2>/dev/null || true)}
  [ -n "$workload_image" ] || die "no workload image: run make images first, or set WORKLOAD_IMAGE"
  sed -i -E "s#image: [^ ]*quorate[-/]conformance[@:][^ ]+#image: $conformance_image#; s#^(\s+)- --scorecard#\1- --scorecard\n\1- --workload-image=$workload_image\n\1- --quiet#" "$m/config.yaml"
  grep -qF "image: $conformance_image" "$m/config.yaml" || die "the scorecard config names no quorate-conformance image to replace"
  "$kubectl" create clusterrolebinding "$NAMESPACE-default" --clusterrole=cluster-admin \
    --serviceaccount="$NAMESPACE:default" --dry-run=client -o yaml | "$kubectl" apply -f - >/dev/null
fi
log "operator-sdk scorecard ($SELECTOR) in namespace $NAMESPACE"
"$dir/bin/operator-sdk" scorecard "$root/bundle" --config "$m/config.yaml" --namespace "$NAMESPACE" \
  --selector "$SELECTOR" --untar-image "$untar_image" --storage-image "localhost:5000/quorate/busybox:local" \
  --wait-time 300s --output "${OUTPUT:-text}"
