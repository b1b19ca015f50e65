// Package certificates holds the certificates of the EtcdClusters: it issues and renews the
// generated CAs and leaf certificates (tls.go), checks user-provided ones, rotates the CAs by
// phase (carotation.go; planner.NextRotationPhase decides), gives each application user its
// certificate and etcd's users and roles (users.go), and keeps the Secrets it read, and the
// client certificate every pass dials with, in a memo (secretmemo.go, tlsmemo.go,
// clientcreds.go). The EtcdCluster reconciler uses it through one Manager, which it builds
// once (New) and whose client it uses for every write.
package certificates

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Objects is what the certificates need of the EtcdCluster reconciler's handling of the
// objects it owns: deleting one of them with an Event, and removing what an earlier cluster of
// the same name left.
type Objects interface {
	// DeleteOwned deletes obj exactly as it was read, and records an Event of reason saying why.
	DeleteOwned(ctx context.Context, c *v1alpha1.EtcdCluster, obj client.Object, reason, why string) error
	// RemoveLeftover deletes obj when an earlier EtcdCluster of c's name controls it, and
	// reports whether it did.
	RemoveLeftover(ctx context.Context, c *v1alpha1.EtcdCluster, obj client.Object) (bool, error)
}

// Manager does a pass's certificate work for every cluster of the reconciler.
type Manager struct {
	// Client is the reconciler's client (Wrap): every Secret written through it is forgotten
	// by the memo.
	client.Client
	// APIReader reads Secrets without caching every Secret of the cluster.
	APIReader client.Reader
	Recorder  record.EventRecorder
	Objects   Objects
	// CertLifetime is the lifetime of the certificates the operator generates (default
	// pki.LeafValidity); they are renewed with a third of it left.
	CertLifetime time.Duration
	// CertPropagation is how long each phase of a CA rotation lasts at least (2 minutes by
	// default).
	CertPropagation time.Duration

	secrets secretMemo
	tlsDone tlsMemo
	cas     caExpiries
	// authAsked holds the clusters (by UID) whose etcd this process asked whether
	// authentication is on while their status said it is off (SyncUsers).
	authAsked sync.Map
}

// New returns the Manager of a reconciler whose client is cl; the reconciler writes through
// the returned client, which makes the memo forget every Secret written.
func New(cl client.Client, apiReader client.Reader, rec record.EventRecorder, objects Objects, lifetime, propagation time.Duration) (*Manager, client.Client) {
	m := &Manager{APIReader: apiReader, Recorder: rec, Objects: objects, CertLifetime: lifetime, CertPropagation: propagation}
	if mc, ok := cl.(memoClient); ok {
		cl = mc.Client
	}
	m.Client = memoClient{Client: cl, memo: &m.secrets}
	return m, m.Client
}

// Warm lists a cluster's Secrets in one request the first time a pass of this process meets
// the cluster (secretMemo.warm).
func (m *Manager) Warm(ctx context.Context, cluster types.NamespacedName) error {
	return m.secrets.warm(ctx, m.APIReader, cluster)
}

// Forget drops what is remembered of a deleted cluster.
func (m *Manager) Forget(cluster types.NamespacedName) {
	m.secrets.forget(cluster)
	m.tlsDone.forget(cluster)
	m.cas.forget(cluster)
}

// Advance records, at the end of a pass that took its step, that spec.tls.renewCertificates
// was acted on, and moves a CA rotation along (only from a settled pass: it changes what
// members trust). It returns the shares of the status, to be folded in this order.
func (m *Manager) Advance(c *v1alpha1.EtcdCluster, settled bool, now time.Time) []Share {
	return []Share{renewedAll(c), m.advanceRotation(c, settled, now)}
}
