// Package checker groups the conformance checkers. Each subpackage judges one concern from a
// history.History and returns a history.Verdict; none of them talks to a cluster.
//
//   - linearizability: the operations fit a sequential key-value store (porcupine).
//   - lostwrites: every acknowledged write is in the cluster's applied history.
//   - availability: success counts per window, write gaps, latency, against a budget.
//   - splitbrain: the poller's samples show one cluster, one leader per term, and members
//     that agree on membership.
//   - watch: the watchers received every applied write to the watched keys, in revision order,
//     without gaps or duplicates, across their restarts; compaction only where etcd said so.
//
// Every verdict is pass, fail or inconclusive, with a code its package defines.
package checker
