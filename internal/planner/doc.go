// Package planner decides the next step for an etcd cluster from a snapshot of what the
// operator observed. It is pure: no clients, no clocks. The controller executes at most one
// membership step per pass and observes again, so a crash between any two steps is harmless.
//
// The rules, in the order they are applied:
//  1. A member that reports a cluster ID other than the recorded one halts every change.
//  2. Without a recorded cluster ID, and without any volume that has held cluster data, the
//     bootstrap members are created, once.
//  3. While etcd cannot be reached, only pods of members whose volumes hold data are recreated.
//  4. A started member whose volume or data is lost is removed (if quorum survives it); it comes
//     back as a new member through scale-up, never by bootstrapping again.
//  5. Members in etcd get their PVC and Pod; objects of members no longer in etcd are deleted,
//     Pod before PVC.
//  6. Membership changes wait until every member is healthy, and happen one at a time:
//     promote a caught-up learner, add a learner, or remove a member (moving leadership away
//     from it first).
//  7. Members whose Pod was built from an older spec are replaced one at a time, followers
//     first, the leader last after leadership has moved.
//
// Beside Plan, progress.go decides how the records that move on only after a pass took its
// step progress: a CA rotation's phase (NextRotationPhase) and a join's (JoinPhase).
package planner
