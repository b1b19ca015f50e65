#!/usr/bin/env bash
# Runs the shipped suite on the foreign profile's cluster (make cluster-up PROFILE=foreign) as a
# customer does on a cluster of their own: Quorate installed from config/default with its
# images named by the cluster's registry, then the conformance Job exactly as
# docs/conformance.md shows it (the same block CI runs), shaped for the cluster through its
# settings: members on the tainted etcd pool, volume expansion on the CSI StorageClass.
# Afterwards the report must list exactly the scenarios asked for, each PASS or SKIPPED (a
# missing prerequisite, named), none failing; the report is copied to REPORT_DIR.
#
# Environment:
#   KUBECONFIG   the foreign cluster (default: ~/.kube/quorate-quorate.yaml)
#   PASSING      the scenarios to run that must pass (default below)
#   SKIPPED      the scenarios to run that must be skipped for a missing prerequisite
#   DURATION     steady load before and after each scenario's steps (default 10s)
#   REPORT_DIR   where the report goes (default reports/foreign)
#   KUSTOMIZE    kustomize (default: bin/kustomize-*)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
cd "$root"

export KUBECONFIG=${KUBECONFIG:-$HOME/.kube/quorate-quorate.yaml}
K8S=$(sed -n 's/^K8S_VERSION ?= //p' Makefile)
VERSION=$(sed -n 's/^VERSION ?= //p' Makefile)
kubectl_bin=$QUORATE_CACHE/k8s/$K8S/bin/kubectl
# The foreign profile's names (e2e/localcluster/profile.go).
registry=registry.foreign.internal
class=standard-rwo
pool_key=node.quorate.dev/pool pool=etcd
# What runs, and the verdict each must get here: the core scenarios and volume-expansion (on
# the CSI class) pass; the others lack a prerequisite on this cluster, as on many customers'
# (a second StorageClass, an object store, Chaos Mesh, node access), and are skipped.
PASSING=${PASSING:-steady scale pod-deletion pvc-loss etcd-upgrade volume-expansion}
SKIPPED=${SKIPPED:-storage-migration backup-restore steady-pod-kill-leader node-loss}
LABELS=$(printf 'scenario=%s,' $PASSING $SKIPPED | sed 's/,$//')
DURATION=${DURATION:-10s}
REPORT_DIR=${REPORT_DIR:-$root/reports/foreign}

require_foreign_cluster "$kubectl_bin"

rename() { pulled_as "$1" "$registry"; }

log "building the operator, workload, conformance and etcd images"
make images K8S_VERSION="$K8S" >/dev/null
operator=$(rename "$(cat bin/operator-image)")
workload=$(rename "$(cat bin/workload-image)")
conformance=$(hack/images.sh conformance "$VERSION")
conformance=$(rename "$conformance")

log "installing Quorate (config/default) as $operator, etcd from $registry/quorate/etcd"
make deploy K8S_VERSION="$K8S" IMG="$operator" ETCD_IMAGE_REPOSITORY="$registry/quorate/etcd" KUBECTL="$kubectl_bin"

tools=$root/bin/foreign-tools
mkdir -p "$tools" && rm -f "$tools"/*
ln -s "$kubectl_bin" "$tools/kubectl"
ln -s "${KUSTOMIZE:-$root/$(ls bin/kustomize-* | head -1)}" "$tools/kustomize"
# No report of an earlier run may pass for this one's: its volume goes first.
"$kubectl_bin" -n quorate-conformance delete job quorate-conformance --ignore-not-found >/dev/null
"$kubectl_bin" -n quorate-conformance delete pod report-reader --ignore-not-found >/dev/null
"$kubectl_bin" -n quorate-conformance delete pvc quorate-conformance-report --ignore-not-found >/dev/null
log "running the conformance Job (LABELS=$LABELS)"
rm -rf quorate-report
PATH="$tools:$PATH" CONFORMANCE_IMAGE="$conformance" WORKLOAD_IMAGE="$workload" READER_IMAGE="$registry/quorate/busybox:local" \
  OPENSHIFT=1 OPERATOR_NAMESPACE=quorate-system DURATION="$DURATION" LABELS="$LABELS" \
  SETTINGS="QUORATE_MEMBER_TOLERATIONS=$pool_key=$pool:NoSchedule QUORATE_MEMBER_NODE_SELECTOR=$pool_key=$pool QUORATE_EXPANSION_STORAGE_CLASS=$class QUORATE_MISSING_PREREQUISITES=skip" \
  bash -euo pipefail -c "$(hack/doc-block.sh docs/conformance.md conformance-job)"
rm -rf "$REPORT_DIR" && mkdir -p "$(dirname "$REPORT_DIR")" && mv quorate-report "$REPORT_DIR"

"$kubectl_bin" -n quorate-conformance get job quorate-conformance \
  -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}' | grep -qx True ||
  die "the conformance Job did not complete (kubectl -n quorate-conformance describe job quorate-conformance)"
# The report's table: exactly those scenarios, each with its verdict.
got=$(sed -n 's/^| \([a-z0-9-]*\) | \([A-Z]*\) |.*/\1 \2/p' "$REPORT_DIR/summary.md" | sort)
want=$( (printf '%s PASS\n' $PASSING; printf '%s SKIPPED\n' $SKIPPED) | sort)
[ "$got" = "$want" ] || die "the conformance Job on the foreign cluster: the report shows
$got
not
$want
(report: $REPORT_DIR)"
# Each skip names its missing prerequisite.
for sc in $SKIPPED; do
  sed -n "/^## $sc: SKIPPED/,/^## /p" "$REPORT_DIR/summary.md" | grep -q '^- [a-zA-Z0-9 ,-]*: ' ||
    die "the report's $sc is SKIPPED without naming a missing prerequisite"
done
log "the conformance Job on the foreign cluster: $(echo $PASSING | wc -w) scenarios PASS, $(echo $SKIPPED | wc -w) SKIPPED for a missing prerequisite (report: $REPORT_DIR/summary.md)"
sed -n '1,40p' "$REPORT_DIR/summary.md"
