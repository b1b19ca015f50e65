package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/internal/pki"
)

// clientCreds keeps, for each cluster, the client certificate every pass dials the members
// with: the PEM of the certificate, its key and the CA, and the name and resourceVersion of
// the Secret they were read from. While the cache shows that Secret at that resourceVersion,
// a pass uses them without reading the Secret. They are all the operator needs of it, so the
// Secret itself is not kept (secretMemo): a whole Secret, metadata, maps and copies, is about
// twice the size of its three PEM blocks, kept for every cluster (make bench-scale).
type clientCreds struct {
	mu sync.Mutex
	m  map[types.NamespacedName]clientCred // by cluster
}

// clientCred is a client certificate and where it was read.
type clientCred struct {
	secret, resourceVersion string
	cert, key, ca           []byte
}

func (cc *clientCreds) get(cluster types.NamespacedName) (clientCred, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c, ok := cc.m[cluster]
	return c, ok
}

func (cc *clientCreds) set(cluster types.NamespacedName, c clientCred) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = map[types.NamespacedName]clientCred{}
	}
	cc.m[cluster] = c
}

// forget drops a deleted cluster's certificate.
func (cc *clientCreds) forget(cluster types.NamespacedName) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.m, cluster)
}

// clientCred is the client certificate of cluster in the named Secret: the one kept while the
// cache shows the Secret unchanged, otherwise the Secret read again (through the memo, which
// then forgets it) and kept.
func (r *Reconciler) clientCred(ctx context.Context, cluster types.NamespacedName, name string) (clientCred, error) {
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: name}
	if kept, ok := r.creds.get(cluster); ok && kept.secret == name {
		if rv, err := cachedSecretVersion(ctx, r.Client, key); err == nil && rv == kept.resourceVersion {
			r.secrets.forgetSecret(key)
			return kept, nil
		}
	}
	s, err := r.secret(ctx, cluster.Namespace, name)
	if err != nil {
		return clientCred{}, err
	}
	// s is the pass's own copy: its data's byte slices are kept, not the Secret.
	c := clientCred{secret: name, resourceVersion: s.ResourceVersion, cert: s.Data[pki.KeyCert], key: s.Data[pki.KeyKey], ca: s.Data[pki.KeyCACert]}
	r.creds.set(cluster, c)
	r.secrets.forgetSecret(key)
	return c, nil
}
