// Package checker groups the conformance checkers. Each subpackage judges one concern from a
// history.History and returns a history.Verdict; none of them talks to a cluster.
//
//   - linearizability: the operations fit a sequential key-value store (porcupine).
//   - lostwrites: every acknowledged write is in the cluster's applied history.
//   - availability: success counts per window, write gaps, latency, against a budget.
//   - splitbrain: the poller's samples show one cluster, one leader per term, and members
//     that agree on membership.
package checker
