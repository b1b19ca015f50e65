#!/usr/bin/env bash
# Runs quorate-conformance as a Sonobuoy plugin (config/sonobuoy/quorate-plugin.yaml) with the
# real Sonobuoy CLI (v0.57.3, hack/build-sonobuoy.sh) against the cluster of KUBECONFIG, with
# Quorate already installed there: `sonobuoy run`, then `sonobuoy status` until the run is
# complete, `sonobuoy retrieve`, `sonobuoy results` (printed), the plugin's report copied out,
# and `sonobuoy delete --wait` (also on failure or interruption). Exits non-zero unless the
# plugin passed.
#
# Environment:
#   KUBECONFIG          the cluster (required)
#   PLUGIN              the plugin definition (default config/sonobuoy/quorate-plugin.yaml)
#   CONFORMANCE_IMAGE   the suite's image as the nodes pull it (default: the plugin's); it must
#                       have --done-file (hack/images.sh conformance VERSION builds one)
#   WORKLOAD_IMAGE      QUORATE_WORKLOAD_IMAGE (default: the plugin's)
#   SONOBUOY_IMAGE      Sonobuoy's aggregator and worker as the nodes pull it (default: built
#                       with hack/images.sh sonobuoy, named localhost:5000/..., the local registry)
#   LABELS DURATION OPERATOR_NAMESPACE
#                       the scenarios, the steady load, Quorate's namespace (default: the
#                       plugin's: suite=core, 20s, quorate-system)
#   QUORATE_STORAGE_CLASS QUORATE_MEMBER_NODE_SELECTOR QUORATE_MEMBER_TOLERATIONS
#   QUORATE_MEMBER_RESOURCES QUORATE_EXPANSION_STORAGE_CLASS QUORATE_MISSING_PREREQUISITES
#   QUORATE_CLIENT_PROFILES QUORATE_NAMESPACE_PREFIX
#                       passed to the plugin when set (config/conformance/settings.env)
#   NAMESPACE           Sonobuoy's namespace (default sonobuoy; one run per namespace)
#   PSA_LEVEL           the Pod Security level Sonobuoy labels its namespace with (default
#                       baseline; see below)
#   TIMEOUT             seconds the aggregator waits for the plugin (default 5400, the Job's
#                       activeDeadlineSeconds; the suite's own -test.timeout is 80m)
#   OUT                 where the results go (default reports/sonobuoy): the results tarball,
#                       the generated manifest (sonobuoy.yaml), `sonobuoy results` (results.txt)
#                       and the plugin's report (quorate-report/)
#   KUBECTL             kubectl (default: kubectl on PATH, else this repository's build)
#   KEEP                1: leave the run in the cluster (no sonobuoy delete)
#
# Pod Security Admission: on a cluster enforcing "restricted" by default, Sonobuoy's own pods
# are refused there: its aggregator and the worker sidecar it adds to every plugin pod set no
# container securityContext (allowPrivilegeEscalation, capabilities, runAsNonRoot, seccomp), and
# nothing in `sonobuoy gen` or a plugin definition can add one to them. `sonobuoy run` labels the
# namespace it creates pod-security.kubernetes.io/enforce=privileged unless told otherwise; this
# script gives --namespace-psa-enforce-level=baseline instead, the least that admits them: only
# Sonobuoy's namespace is labelled, nothing else changes, and baseline still refuses privileged
# pods, host namespaces and host paths there (neither Sonobuoy's pods nor the plugin ask for any;
# the plugin's own container meets restricted). The scenario namespaces the suite creates (qc-*)
# keep the cluster's level. Tried on the foreign profile's cluster (restricted everywhere):
# PSA_LEVEL=restricted fails at once (pods "sonobuoy" is forbidden: violates PodSecurity
# "restricted:latest"), baseline runs. (On OpenShift, SCCs decide as well: OpenShift users
# commonly grant sonobuoy-serviceaccount the privileged SCC. Not tried here.)
# --security-context-mode=none: Sonobuoy names no user, group or fsGroup for its aggregator
# (its default, nonroot, asks for user 1000, group 3000, fsGroup 2000, which a platform that
# assigns users from a per-namespace range, as OpenShift does, refuses); the image's user
# (65532) applies, or the platform's choice.
#
# Rights: `sonobuoy run` binds its service account, which the plugin runs as, to a ClusterRole
# allowing everything (config/sonobuoy/quorate-plugin.yaml says so): run it where that is
# acceptable, or use config/conformance's Job.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"

[ -n "${KUBECONFIG:-}" ] || die "KUBECONFIG must name the cluster to run the plugin on"
[ -f "$KUBECONFIG" ] || die "KUBECONFIG=$KUBECONFIG: no such file"
export KUBECONFIG
PLUGIN=${PLUGIN:-$root/config/sonobuoy/quorate-plugin.yaml}
[ -f "$PLUGIN" ] || die "PLUGIN=$PLUGIN: no such file"
NAMESPACE=${NAMESPACE:-sonobuoy}
PSA_LEVEL=${PSA_LEVEL:-baseline}
TIMEOUT=${TIMEOUT:-5400}
OUT=${OUT:-$root/reports/sonobuoy}
if [ -z "${KUBECTL:-}" ]; then
  KUBECTL=$(command -v kubectl || true)
  [ -n "$KUBECTL" ] || KUBECTL=$QUORATE_CACHE/k8s/$(sed -n 's/^K8S_VERSION ?= //p' "$root/Makefile")/bin/kubectl
fi
[ -x "$KUBECTL" ] || die "no kubectl: set KUBECTL"

sonobuoy=$("$here/build-sonobuoy.sh")/bin/sonobuoy
SONOBUOY_IMAGE=${SONOBUOY_IMAGE:-$("$here/images.sh" sonobuoy)}
# The plugin's name: what --plugin-env and --plugin-image address.
name=$(sed -n 's/^  plugin-name: *//p' "$PLUGIN" | head -1)
[ -n "$name" ] || die "$PLUGIN names no plugin (sonobuoy-config: plugin-name)"

args=(-n "$NAMESPACE" --plugin "$PLUGIN" --sonobuoy-image "$SONOBUOY_IMAGE"
  --security-context-mode=none --namespace-psa-enforce-level="$PSA_LEVEL" --timeout "$TIMEOUT")
# "plugin:image": a colon (with "=" Sonobuoy reads another plugin's name and keeps the image).
[ -z "${CONFORMANCE_IMAGE:-}" ] || args+=(--plugin-image "$name:$CONFORMANCE_IMAGE")
env_() { args+=(--plugin-env "$name.$1=$2"); }
[ -z "${WORKLOAD_IMAGE:-}" ] || env_ QUORATE_WORKLOAD_IMAGE "$WORKLOAD_IMAGE"
[ -z "${LABELS:-}" ] || env_ LABELS "$LABELS"
[ -z "${DURATION:-}" ] || env_ DURATION "$DURATION"
[ -z "${OPERATOR_NAMESPACE:-}" ] || env_ OPERATOR_NAMESPACE "$OPERATOR_NAMESPACE"
for v in QUORATE_STORAGE_CLASS QUORATE_MEMBER_NODE_SELECTOR QUORATE_MEMBER_TOLERATIONS \
  QUORATE_MEMBER_RESOURCES QUORATE_EXPANSION_STORAGE_CLASS QUORATE_MISSING_PREREQUISITES \
  QUORATE_CLIENT_PROFILES QUORATE_NAMESPACE_PREFIX; do
  [ -z "${!v:-}" ] || env_ "$v" "${!v}"
done

if "$KUBECTL" get namespace "$NAMESPACE" >/dev/null 2>&1; then
  die "namespace $NAMESPACE exists: a Sonobuoy run is there already (sonobuoy delete -n $NAMESPACE --wait), or give NAMESPACE"
fi
rm -rf "$OUT" && mkdir -p "$OUT"

cleanup() {
  local rc=$?
  if [ "${KEEP:-0}" = 1 ]; then
    log "KEEP=1: the run stays in namespace $NAMESPACE (sonobuoy delete -n $NAMESPACE --wait)"
  else
    log "sonobuoy delete --wait"
    "$sonobuoy" delete -n "$NAMESPACE" --wait --wait-output=silent >&2 || log "sonobuoy delete failed: delete namespace $NAMESPACE and ClusterRole(Binding) sonobuoy-serviceaccount-$NAMESPACE by hand"
  fi
  # The suite deletes its scenario namespaces itself; one left means it was interrupted.
  local prefix=${QUORATE_NAMESPACE_PREFIX:-qc-} left
  left=$("$KUBECTL" get namespaces -o name 2>/dev/null | sed -n "s|^namespace/\($prefix.*\)|\1|p" | tr '\n' ' ')
  [ -z "$left" ] || log "namespaces the suite may have left (delete them if no other run uses them): $left"
  exit "$rc"
}
trap cleanup EXIT

start=$SECONDS
log "sonobuoy $("$sonobuoy" version --short 2>/dev/null) (aggregator and worker: $SONOBUOY_IMAGE), plugin $name from ${PLUGIN#"$root"/}"
# The manifest `sonobuoy run` applies, for the record (gen and run take the same flags).
"$sonobuoy" gen "${args[@]}" >"$OUT/sonobuoy.yaml" 2>/dev/null || true
"$sonobuoy" run "${args[@]}" >&2

# Poll `sonobuoy status` until the run completes (or fails), a line per change.
deadline=$((SECONDS + TIMEOUT + 600))
last=
while :; do
  json=$("$sonobuoy" status -n "$NAMESPACE" --json 2>/dev/null || true)
  # The run's own status is the last "status" of the object (the plugins' come first).
  status=$( (grep -o '"status":"[^"]*"' <<<"$json" || true) | tail -1 | cut -d'"' -f4)
  line=$("$sonobuoy" status -n "$NAMESPACE" 2>&1 | tr -s ' ' | paste -sd' ' || true)
  if [ "$line" != "$last" ]; then log "after $((SECONDS - start))s: $line"; last=$line; fi
  case $status in
  complete) break ;;
  failed) die "the Sonobuoy run failed (the aggregator: $KUBECTL -n $NAMESPACE logs sonobuoy)" ;;
  esac
  if ((SECONDS > deadline)); then die "the Sonobuoy run did not complete within $((TIMEOUT + 600))s"; fi
  # The aggregator pod itself: refused or failing, it never reports a status.
  phase=$("$KUBECTL" -n "$NAMESPACE" get pod sonobuoy -o jsonpath='{.status.phase}' 2>/dev/null || true)
  if [ "$phase" = Failed ]; then die "Sonobuoy's aggregator pod failed: $KUBECTL -n $NAMESPACE describe pod sonobuoy"; fi
  sleep 15
done
log "the run completed in $((SECONDS - start))s"

tarball=$("$sonobuoy" retrieve -n "$NAMESPACE" "$OUT")
[ -f "$tarball" ] || die "sonobuoy retrieve gave no tarball ($tarball)"
log "results: $tarball"
{
  "$sonobuoy" results "$tarball"
  echo
  # One line per test case: the suite's scenarios and checkers, each with its status.
  "$sonobuoy" results "$tarball" --plugin "$name" --mode detailed |
    sed -nE 's/^\{"name":"([^"]*)","status":"([^"]*)".*/\2  \1/p'
} | tee "$OUT/results.txt"

# The plugin's report: what its worker sent, the report directory (summary.md, junit.xml,
# index.html, report.json, histories).
mkdir -p "$OUT/extracted"
tar -xzf "$tarball" -C "$OUT/extracted"
report=$OUT/extracted/plugins/$name/results/global
[ -f "$report/junit.xml" ] || die "the results hold no plugins/$name/results/global/junit.xml (see $OUT/extracted)"
rm -rf "$OUT/quorate-report" && cp -r "$report" "$OUT/quorate-report"
log "the plugin's report: $OUT/quorate-report (summary.md, index.html, junit.xml)"

"$sonobuoy" results "$tarball" --plugin "$name" | grep -q '^Status: passed' ||
  die "plugin $name did not pass (see $OUT/results.txt and $OUT/quorate-report/summary.md)"
log "plugin $name passed"
