package certificates

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/internal/names"
)

// secretMemo keeps the Secrets the operator read, by name, with their resourceVersion. The
// manager caches only the metadata of Secrets (caching every Secret of every watched namespace
// would hold all of them, the applications' included); a Secret whose cached resourceVersion is
// the one read last is the same Secret, so a pass reads its data again only when it changed.
// Without it, every pass of every cluster read about nine Secrets from the API server: at a few
// thousand clusters that alone exceeded the client's rate limit (hack/scale measured it).
type secretMemo struct {
	mu      sync.Mutex
	secrets map[types.NamespacedName]*corev1.Secret
	warmed  map[types.NamespacedName]bool       // clusters whose Secrets were listed in one request
	creds   map[types.NamespacedName]clientCred // client certificates, by Secret (clientcreds.go)
}

// warm lists a cluster's Secrets (those carrying its label: certificates, CAs, users) in one
// request the first time a pass of this process meets the cluster, so that a cold start reads
// them with one request per cluster instead of one per Secret.
func (m *secretMemo) warm(ctx context.Context, live client.Reader, cluster types.NamespacedName) error {
	m.mu.Lock()
	done := m.warmed[cluster]
	m.mu.Unlock()
	if done {
		return nil
	}
	var list corev1.SecretList
	if err := live.List(ctx, &list, client.InNamespace(cluster.Namespace), client.MatchingLabels{names.LabelCluster: cluster.Name}); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.secrets == nil {
		m.secrets = map[types.NamespacedName]*corev1.Secret{}
	}
	if m.warmed == nil {
		m.warmed = map[types.NamespacedName]bool{}
	}
	for _, s := range list.Items {
		// s is a copy: a pointer into list.Items would keep every Secret of the list, data and
		// all, alive for as long as the memo keeps any one of them (the client certificate, for
		// the cluster's life), which at 5000 clusters was 80 MB after a restart (make
		// bench-scale).
		s.ManagedFields = nil // never read; an Update that leaves them nil keeps the server's
		m.secrets[client.ObjectKeyFromObject(&s)] = &s
	}
	m.warmed[cluster] = true
	return nil
}

// get returns the Secret: the remembered copy while the cache's metadata shows the same
// resourceVersion, otherwise a fresh read through live, remembered for the next pass.
func (m *secretMemo) get(ctx context.Context, cached, live client.Reader, key types.NamespacedName) (*corev1.Secret, error) {
	if rv, err := managercache.SecretVersion(ctx, cached, key); err == nil {
		m.mu.Lock()
		s := m.secrets[key]
		m.mu.Unlock()
		if s != nil && s.ResourceVersion == rv {
			return s.DeepCopy(), nil
		}
	}
	s := &corev1.Secret{}
	err := live.Get(ctx, key, s)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		if m.secrets == nil {
			m.secrets = map[types.NamespacedName]*corev1.Secret{}
		}
		kept := s.DeepCopy()
		kept.ManagedFields = nil
		m.secrets[key] = kept
	case apierrors.IsNotFound(err):
		delete(m.secrets, key)
	}
	return s, err
}

// forget drops what is remembered of a deleted cluster's Secrets (those carrying its label).
func (m *secretMemo) forget(cluster types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.warmed, cluster)
	for key, s := range m.secrets {
		if key.Namespace == cluster.Namespace && s.Labels[names.LabelCluster] == cluster.Name {
			delete(m.secrets, key)
		}
	}
	for key, c := range m.creds {
		if key.Namespace == cluster.Namespace && c.cluster == cluster.Name {
			delete(m.creds, key)
		}
	}
}

// shed forgets the data of the named Secrets of a namespace but those in keep: a pass reads
// them again from the API server when it needs them.
func (m *secretMemo) shed(namespace string, named map[string]string, keep ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range named {
		if !slices.Contains(keep, name) {
			delete(m.secrets, types.NamespacedName{Namespace: namespace, Name: name})
		}
	}
}

func (m *secretMemo) drop(obj client.Object) {
	if _, ok := obj.(*corev1.Secret); !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.secrets, client.ObjectKeyFromObject(obj))
	delete(m.creds, client.ObjectKeyFromObject(obj))
}

// memoClient is the reconciler's client: each Secret it writes or deletes is forgotten by the
// memo, so that the next read of it goes to the API server until the cache has caught up.
type memoClient struct {
	client.Client
	memo *secretMemo
}

func (c memoClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	defer c.memo.drop(obj)
	secretReadsOf(ctx).markWrite()
	return c.Client.Create(ctx, obj, opts...)
}

func (c memoClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	defer c.memo.drop(obj)
	secretReadsOf(ctx).markWrite()
	return c.Client.Update(ctx, obj, opts...)
}

func (c memoClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	defer c.memo.drop(obj)
	secretReadsOf(ctx).markWrite()
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c memoClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	defer c.memo.drop(obj)
	secretReadsOf(ctx).markWrite()
	return c.Client.Delete(ctx, obj, opts...)
}
