// Package resources builds the Kubernetes objects of an EtcdCluster: member Pods and PVCs, the
// peer and client Services, the PodDisruptionBudget. Builders are pure functions of the
// EtcdCluster and their parameters. Each object carries the hash of the inputs it was built
// from, so drift is detected by comparing hashes, never by comparing objects the API server
// has defaulted.
package resources
