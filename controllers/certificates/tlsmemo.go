package certificates

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/internal/hash"
)

// tlsMemo remembers, per cluster, the last pass whose TLS work (ensureTLS) found nothing to
// do: what it depended on, and what it found. A later pass that depends on the same things
// does not do that work again: no Secret's data is read, no certificate parsed. So the data of
// the Secrets it read need not be kept (secretMemo.shed), which at thousands of clusters was
// the largest part of the operator's memory (make bench-scale, docs/measurements.md).
//
// What the work depends on:
//   - the cluster: its UID, its generation (any change of its spec), its TLS status but the
//     first expiry (a CA rotation's phase, the renewal token), and the certificate lifetime;
//   - every Secret the work read, by resourceVersion, or its absence, as the cache shows them;
//   - the time: the first certificate's renewal falls due a third of the lifetime before it
//     expires, and the work is done again then, or after tlsRecheck at the latest.
type tlsMemo struct {
	mu      sync.Mutex
	settled map[types.NamespacedName]tlsSettled
}

// tlsRecheck is how long a settled TLS pass is trusted at most.
const tlsRecheck = time.Hour

type tlsSettled struct {
	inputs      string
	secrets     map[string]string // name → resourceVersion read ("" when it did not exist)
	until       time.Time
	firstExpiry *v1alpha1.CertificateExpiry
}

// tlsInputs is what a cluster's TLS work depends on in the cluster itself.
func tlsInputs(c *v1alpha1.EtcdCluster, lifetime time.Duration) string {
	st := v1alpha1.TLSStatus{}
	if c.Status.TLS != nil {
		st = *c.Status.TLS
		st.FirstExpiry = nil
	}
	return hash.Of(struct {
		UID        types.UID
		Generation int64
		Status     v1alpha1.TLSStatus
		Lifetime   time.Duration
	}{c.UID, c.Generation, st, lifetime})
}

// lookup returns the first expiry the last settled pass found, when nothing it depended on has
// changed since.
func (m *tlsMemo) lookup(ctx context.Context, cached client.Reader, c *v1alpha1.EtcdCluster, inputs string, now time.Time) (*v1alpha1.CertificateExpiry, bool) {
	m.mu.Lock()
	s, ok := m.settled[client.ObjectKeyFromObject(c)]
	m.mu.Unlock()
	if !ok || s.inputs != inputs || !now.Before(s.until) {
		return nil, false
	}
	for name, rv := range s.secrets {
		got, err := managercache.SecretVersion(ctx, cached, types.NamespacedName{Namespace: c.Namespace, Name: name})
		switch {
		case apierrors.IsNotFound(err) && rv == "":
		case err != nil || got != rv:
			return nil, false
		}
	}
	return s.firstExpiry.DeepCopy(), true
}

// record remembers a pass whose TLS work read reads, wrote nothing, and found the first
// expiry c's status records.
func (m *tlsMemo) record(c *v1alpha1.EtcdCluster, inputs string, reads *secretReads, lifetime time.Duration, now time.Time) {
	m.recordFirst(c, inputs, reads, firstExpiry(c), lifetime, now)
}

// recordFirst remembers a pass whose TLS work read reads, wrote nothing, and found found.
func (m *tlsMemo) recordFirst(c *v1alpha1.EtcdCluster, inputs string, reads *secretReads, found *v1alpha1.CertificateExpiry, lifetime time.Duration, now time.Time) {
	until := now.Add(tlsRecheck)
	var first *v1alpha1.CertificateExpiry
	if found != nil {
		first = found.DeepCopy()
		if due := renewalTime(first.Time.Time, lifetime); due.Before(until) {
			until = due
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled == nil {
		m.settled = map[types.NamespacedName]tlsSettled{}
	}
	m.settled[client.ObjectKeyFromObject(c)] = tlsSettled{inputs: inputs, secrets: reads.rvs, until: until, firstExpiry: first}
}

func (m *tlsMemo) forget(cluster types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.settled, cluster)
}

// secretReads records, for one pass's TLS work, the Secrets it read and whether it wrote
// anything (memoClient marks it).
type secretReads struct {
	mu    sync.Mutex
	rvs   map[string]string
	wrote bool
}

type secretReadsKey struct{}

func withSecretReads(ctx context.Context, r *secretReads) context.Context {
	return context.WithValue(ctx, secretReadsKey{}, r)
}

func secretReadsOf(ctx context.Context) *secretReads {
	r, _ := ctx.Value(secretReadsKey{}).(*secretReads)
	return r
}

// read records a read of Secret name: its resourceVersion, or "" when it was not found.
func (r *secretReads) read(name string, s *corev1.Secret, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rvs == nil {
		r.rvs = map[string]string{}
	}
	switch {
	case err == nil:
		r.rvs[name] = s.ResourceVersion
	case apierrors.IsNotFound(err):
		r.rvs[name] = ""
	default:
		r.wrote = true // not settled: nothing is remembered of this pass
	}
}

func (r *secretReads) markWrite() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrote = true
}
