// Package etcd is the operator's narrow view of an etcd cluster: membership (list, add as
// learner, promote, remove), leadership transfer and per-member status. Client is an interface;
// NewClient talks to real members with go.etcd.io/etcd/client/v3, and Fake is an in-memory
// cluster for unit and envtest integration tests.
package etcd
