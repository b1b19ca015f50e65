// Package etcdcluster holds the EtcdCluster reconciler. A pass reads like its table of
// contents (pass, reconcile.go): read the cluster, hold its claim (package ownership), prepare
// the certificates (package certificates, through the Certificates interface), Services and
// NetworkPolicy (owned.go), observe everything once (observe.go), settle the cluster's
// identity (identity.go, restore.go), plan one step from the planner's input (planinput.go),
// take it (execute.go), and write status once if it changed (status.go).
//
// Where each decision is made:
//   - which step a cluster takes (scale, replace, promote, roll, recover, join's membership
//     steps, defragment, wait, halt): the pure planner, internal/planner.Plan, from the input
//     planinput.go builds; nothing here second-guesses it.
//   - whether a spec is acceptable: validate.go; the API's schema and CEL rules first.
//   - which cluster the members belong to (the recorded cluster ID): identity.go.
//   - how a join's record moves on once the planner's step is taken: planner.JoinPhase, from
//     the planner's input and its step; join.go records it (advanceJoin).
//   - the CA rotation's next phase: planner.NextRotationPhase, a pure function of the recorded
//     phase, whether the pass settled, the time and the propagation delay; the certificates
//     (package certificates) act on the phase in the passes after.
//   - when the next pass comes, and why: execute.go returns a requeue (requeue.go), shortened
//     to renew the cluster's claim in time.
//   - what the status records: each part (the claim, identity, a join or a recovery step,
//     the certificates, the users) returns its share, and fold (fold.go) alone writes the
//     shares into the cluster's status, as each part returns (the parts after it read the
//     status as it will be written); TestStatusIsWrittenOnlyByTheFold keeps it so.
//   - the conditions and the figures of the status: status.go (computeStatus), from the
//     folded status, the observation, the planner's input and its step; metrics.go exports
//     them.
package etcdcluster
