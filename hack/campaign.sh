#!/usr/bin/env bash
# make campaign: the randomized campaign (the suite's suite=campaign runs) on a local cluster of
# K8S_VERSION, then its tables (hack/campaign). Each run draws an operation (scale, roll, etcd
# upgrade, storage move, backup, restore), a fault (the chaos library's faults that keep a
# quorum, node-loss, and etcd failpoints) and the moment the fault starts, from the seed and
# its index alone.
#   RUNS=N              how many runs (default 8)
#   SEED=S              the campaign's seed, 1-999999999 (default: drawn, and logged)
#   FROM=I              index of the first run (default 0): resumes a campaign, or with RUNS=1
#                       replays run I
#   BATCH=B             runs per local cluster (default 8): each batch starts its own
#   CAMPAIGN_OPERATIONS, CAMPAIGN_FAULTS
#                       narrow the draw (comma-separated; replay with the same lists)
#   CAMPAIGN_DIR=DIR    where the reports go, DIR/<seed>-<first index>-<runs>/<k8s version>/
#                       (default reports/campaign); a replay of one run has a directory of its
#                       own, and the table keeps the newest report of each run
#   CAMPAIGN_TABLE=FILE the tables, over every report under CAMPAIGN_DIR (default
#                       docs/reports/campaign.md)
#   CHAOS_SKIP_LABELS   runs whose fault needs what the nodes lack are left out, as in make
#                       e2e-chaos (default needs=netem: delay and loss need the netem queueing
#                       discipline, which this machine's kernel lacks; docs/chaos.md). Empty on
#                       nodes that have it. A run left out writes no report: the tables have no
#                       row for it, and never count it as passed.
# A run that fails does not stop the campaign; the table lists it with the command that
# replays it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
. "$here/lib.sh"

runs=${RUNS:-8}
from=${FROM:-0}
batch=${BATCH:-8}
seed=${SEED:-$(( (RANDOM << 15 | RANDOM) % 999999999 + 1 ))}
out=${CAMPAIGN_DIR:-$root/reports/campaign}
table=${CAMPAIGN_TABLE:-$root/docs/reports/campaign.md}
skip=${CHAOS_SKIP_LABELS-needs=netem}
version=${K8S_VERSION:-$(sed -n 's/^K8S_VERSION ?= //p' Makefile)}
if ! [[ $runs =~ ^[0-9]+$ && $from =~ ^[0-9]+$ && $batch =~ ^[1-9][0-9]*$ && $seed =~ ^[0-9]+$ ]]; then
  die "RUNS=$runs FROM=$from BATCH=$batch SEED=$seed: give whole numbers (BATCH at least 1)"
fi
# Base 10 whatever the leading zeros (bash reads 08 as a bad octal number).
runs=$((10#$runs)) from=$((10#$from)) batch=$((10#$batch)) seed=$((10#$seed))
mkdir -p "$out"
# The failpoint faults run etcd built with its gofail failpoints, at the suite's etcd version
# and at the one an upgrade starts from (as make e2e-failpoints): built when the draw may
# pick one (CAMPAIGN_FAULTS empty, or naming one).
failpoints=()
if [[ -z ${CAMPAIGN_FAULTS:-} || ${CAMPAIGN_FAULTS} == *failpoint* ]]; then
  fp_etcd=${FAILPOINT_ETCD:-$(sed -n 's/^FAILPOINT_ETCD ?= //p' Makefile)}
  fp_from=${FAILPOINT_UPGRADE_FROM:-$(sed -n 's/^FAILPOINT_UPGRADE_FROM ?= //p' Makefile)}
  hack/images.sh etcd-failpoints "$fp_etcd"
  hack/images.sh etcd-failpoints "$fp_from"
  failpoints=(--etcd-version="${fp_etcd#v}" --failpoint-etcd-image="localhost:5000/quorate/etcd:$fp_etcd-failpoints"
    --etcd-upgrade-from="${fp_from#v}" --failpoint-upgrade-from-image="localhost:5000/quorate/etcd:$fp_from-failpoints")
fi
log "campaign seed $seed: runs $from to $((from + runs - 1)) on Kubernetes $version, $batch a cluster (replay one: make campaign K8S_VERSION=$version SEED=$seed FROM=I RUNS=1, with the same CAMPAIGN_OPERATIONS and CAMPAIGN_FAULTS)"

for ((i = from; i < from + runs; i += batch)); do
  n=$(( from + runs - i < batch ? from + runs - i : batch ))
  dir="$out/$seed-$i-$n"
  rm -rf "${dir:?}/$version"
  status=0
  # Every run of a batch on one cluster of 4 nodes (node-loss powers off one of the three
  # etcd nodes), with Chaos Mesh and the S3 store; about 6 minutes a run.
  make --no-print-directory e2e K8S_VERSION="$version" E2E_LABELS=suite=campaign REPORT_DIR="$dir" \
    CONFORMANCE_FLAGS="--campaign-seed=$seed --campaign-from=$i --campaign-runs=$n --campaign-operations=${CAMPAIGN_OPERATIONS:-} --campaign-faults=${CAMPAIGN_FAULTS:-} --nodes=4 --install-chaos-mesh --install-s3 ${skip:+--skip-labels=$skip} ${failpoints[*]} -test.timeout=$((n * 15 + 30))m ${CONFORMANCE_FLAGS:-}" \
    >"$dir.log" 2>&1 || status=$?
  log "runs $i to $((i + n - 1)): the suite exited $status (log: $dir.log)"
done

mkdir -p "$(dirname "$table")"
go run ./hack/campaign table --reports "$out" --out "$table"
log "wrote $table"
