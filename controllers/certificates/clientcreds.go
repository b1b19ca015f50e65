package certificates

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/internal/pki"
)

// The memo keeps, for each cluster, the client certificate every pass dials the members with
// (secretMemo.creds): the PEM of the certificate, its key and the CA, and the resourceVersion
// of the Secret they were read from. While the cache shows that Secret at that
// resourceVersion, a pass uses them without reading the Secret. They are all the operator
// needs of it, so the Secret itself is not kept: a whole Secret, metadata, maps and copies, is
// about twice the size of its three PEM blocks, kept for every cluster (make bench-scale). A
// write of the Secret through the reconciler's client drops them at once, as it drops the
// Secret (memoClient).

// clientCred is a client certificate, and the cluster and Secret resourceVersion it was read
// for.
type clientCred struct {
	cluster, resourceVersion string
	cert, key, ca            []byte
}

func (m *secretMemo) cred(key types.NamespacedName) (clientCred, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creds[key]
	return c, ok
}

// keepCred keeps c, read from the Secret key, and forgets the Secret itself.
func (m *secretMemo) keepCred(key types.NamespacedName, c clientCred) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.creds == nil {
		m.creds = map[types.NamespacedName]clientCred{}
	}
	m.creds[key] = c
	delete(m.secrets, key)
}

// clientCred is the client certificate of cluster in the named Secret: the one kept while the
// cache shows the Secret unchanged, otherwise the Secret read again (through the memo, which
// then keeps the certificate instead of the Secret).
func (m *Manager) clientCred(ctx context.Context, cluster types.NamespacedName, name string) (clientCred, error) {
	key := types.NamespacedName{Namespace: cluster.Namespace, Name: name}
	if kept, ok := m.secrets.cred(key); ok {
		if rv, err := managercache.SecretVersion(ctx, m.Client, key); err == nil && rv == kept.resourceVersion {
			m.secrets.keepCred(key, kept) // and forget the Secret, if a TLS pass read it again
			return kept, nil
		}
	}
	s, err := m.secret(ctx, cluster.Namespace, name)
	if err != nil {
		return clientCred{}, err
	}
	// s is the pass's own copy: its data's byte slices are kept, not the Secret.
	c := clientCred{cluster: cluster.Name, resourceVersion: s.ResourceVersion, cert: s.Data[pki.KeyCert], key: s.Data[pki.KeyKey], ca: s.Data[pki.KeyCACert]}
	m.secrets.keepCred(key, c)
	return c, nil
}
