#!/usr/bin/env bash
# make mutants: runs each seeded operator bug (internal/mutant) against the conformance
# scenarios expected to kill it, each scenario once, on a local cluster the suite starts and
# removes per mutant, and writes docs/reports/mutants.md (hack/mutants table).
#   MUTANTS=a,b         run these alone (default: every mutant, go run ./hack/mutants list)
#   MUTANTS_DIR=DIR     where each mutant's report goes, DIR/<mutant>/<k8s version>/ (default
#                       reports/mutants)
#   MUTANTS_TABLE=FILE  the table (default docs/reports/mutants.md)
# The operator image is built once with -tags mutants (the launcher and the backup tool are in
# it too); each run installs it with QUORATE_MUTANT=<mutant> in the manager's environment
# (hack/deploy.sh), which the manager hands on to the member pods it creates. A scenario that
# fails kills the mutant; the run goes on to the next mutant either way.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
. "$here/lib.sh"

VERSION=${VERSION:-$(sed -n 's/^VERSION ?= //p' Makefile)}
out=${MUTANTS_DIR:-$root/reports/mutants}
table=${MUTANTS_TABLE:-$root/docs/reports/mutants.md}
mutants=${MUTANTS:-$(go run ./hack/mutants list | paste -sd, -)}
mkdir -p "$out"

# The shipped images (workload, etcd) and the suite, then the operator image with the mutants
# built in, under a tag of its own; the shipped binaries are built again after it, so that
# bin/linux_amd64 and bin/operator-image stay those of a normal build.
make --no-print-directory conformance images
# learner-budget runs at an etcd release whose learners pass readiness; the flag only lists it,
# and a mutant's labels pick the scenarios that run.
LEARNER_READY_ETCD=${LEARNER_READY_ETCD:-$(sed -n 's/^LEARNER_READY_ETCD ?= //p' Makefile)}
"$here/images.sh" etcd "$LEARNER_READY_ETCD" >/dev/null
CONFORMANCE_FLAGS="--etcd-learner-ready-version=${LEARNER_READY_ETCD#v} ${CONFORMANCE_FLAGS:-}"
# The failpoint scenarios run etcd built with its failpoints (hack/mutants flags names it;
# built below for a mutant that needs it).
FAILPOINT_ETCD=${FAILPOINT_ETCD:-$(sed -n 's/^FAILPOINT_ETCD ?= //p' Makefile)}
export FAILPOINT_ETCD
make --no-print-directory build-linux GOTAGS=mutants
img=$("$here/images.sh" operator "$VERSION-mutants")
make --no-print-directory build-linux
log "operator image with the mutants: $img"

IFS=, read -r -a list <<<"$mutants"
for m in "${list[@]}"; do
  labels=$(go run ./hack/mutants labels "$m")
  flags=$(go run ./hack/mutants flags "$m")
  case "$flags" in
    *--failpoint-etcd-image=*) "$here/images.sh" etcd-failpoints "$FAILPOINT_ETCD" >/dev/null ;;
  esac
  log "mutant $m: $labels ${flags:+($flags)}"
  rm -rf "${out:?}/$m"
  # A failing scenario is the point: make's status is recorded, not acted on.
  status=0
  QUORATE_MUTANT=$m make --no-print-directory e2e E2E_OPERATOR_IMAGE="$img" E2E_LABELS="$labels" \
    REPORT_DIR="$out/$m" CONFORMANCE_FLAGS="$flags ${CONFORMANCE_FLAGS:-}" >"$out/$m.log" 2>&1 || status=$?
  log "mutant $m: the suite exited $status (log: $out/$m.log)"
done

mkdir -p "$(dirname "$table")"
go run ./hack/mutants table --reports "$out" --out "$table" --mutants "$mutants"
log "wrote $table"
