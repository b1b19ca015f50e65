// Package etcdcluster holds the EtcdCluster reconciler. A pass reads like its table of
// contents (Reconcile, reconcile.go): ensure certificates and services, observe everything
// once (observe.go), turn the observation into the planner's input (planinput.go), let the
// pure planner pick one step, execute it (execute.go), and write status once if it changed
// (status.go).
package etcdcluster
