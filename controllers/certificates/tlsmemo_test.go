package certificates

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// A settled TLS pass is taken again only while the cluster, every Secret it read (or their
// absence) and the time are what they were; a pass that wrote is not remembered.
func TestTLSMemo(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const lifetime = 90 * 24 * time.Hour
	expiry := &v1alpha1.CertificateExpiry{Secret: names.PeerSecret("demo"), Time: metav1.NewTime(now.Add(40 * 24 * time.Hour))}
	secret := func(name, rv string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	cluster := func() *v1alpha1.EtcdCluster {
		return &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo", UID: "u-1", Generation: 3},
			Status: v1alpha1.EtcdClusterStatus{TLS: &v1alpha1.TLSStatus{FirstExpiry: expiry.DeepCopy()}}}
	}
	// The settled pass read demo-ca at "10" and found no demo-ca-next.
	settledPass := func() (*tlsMemo, string) {
		reads := &secretReads{}
		reads.read("demo-ca", secret("demo-ca", "10"), nil)
		reads.read("demo-ca-next", nil, apierrors.NewNotFound(corev1.Resource("secrets"), "demo-ca-next"))
		m := &tlsMemo{}
		c := cluster()
		m.record(c, tlsInputs(c, lifetime), reads, lifetime, now)
		return m, tlsInputs(c, lifetime)
	}
	for _, tc := range []struct {
		name    string
		cache   []*corev1.Secret
		change  func(c *v1alpha1.EtcdCluster)
		at      time.Time
		settled bool
	}{
		{"nothing changed", []*corev1.Secret{secret("demo-ca", "10")}, nil, now.Add(time.Minute), true},
		{"the CA Secret changed", []*corev1.Secret{secret("demo-ca", "11")}, nil, now.Add(time.Minute), false},
		{"the CA Secret was deleted", nil, nil, now.Add(time.Minute), false},
		{"a Secret that was missing exists", []*corev1.Secret{secret("demo-ca", "10"), secret("demo-ca-next", "12")}, nil, now.Add(time.Minute), false},
		{"the spec changed", []*corev1.Secret{secret("demo-ca", "10")}, func(c *v1alpha1.EtcdCluster) { c.Generation++ }, now.Add(time.Minute), false},
		{"a CA rotation began", []*corev1.Secret{secret("demo-ca", "10")}, func(c *v1alpha1.EtcdCluster) {
			c.Status.TLS.CARotation = &v1alpha1.CARotationStatus{Phase: v1alpha1.CARotationTrusting}
		}, now.Add(time.Minute), false},
		{"the cluster was made again", []*corev1.Secret{secret("demo-ca", "10")}, func(c *v1alpha1.EtcdCluster) { c.UID = "u-2" }, now.Add(time.Minute), false},
		{"the first expiry alone is no input", []*corev1.Secret{secret("demo-ca", "10")}, func(c *v1alpha1.EtcdCluster) { c.Status.TLS.FirstExpiry = nil }, now.Add(time.Minute), true},
		{"checked again after tlsRecheck", []*corev1.Secret{secret("demo-ca", "10")}, nil, now.Add(tlsRecheck), false},
		{"a renewal falls due", []*corev1.Secret{secret("demo-ca", "10")}, nil, expiry.Time.Add(-lifetime / 3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := settledPass()
			b := fake.NewClientBuilder()
			for _, s := range tc.cache {
				b = b.WithObjects(s)
			}
			c := cluster()
			if tc.change != nil {
				tc.change(c)
			}
			first, ok := m.lookup(ctx, b.Build(), c, tlsInputs(c, lifetime), tc.at)
			if ok != tc.settled {
				t.Fatalf("settled = %v, want %v", ok, tc.settled)
			}
			if ok && (first == nil || *first != *expiry) {
				t.Errorf("first expiry = %v, want %v", first, expiry)
			}
		})
	}
	t.Run("a pass that wrote", func(t *testing.T) {
		reads := &secretReads{}
		reads.read("demo-ca", secret("demo-ca", "10"), nil)
		ctx := withSecretReads(ctx, reads)
		w := memoClient{Client: fake.NewClientBuilder().Build(), memo: &secretMemo{}}
		if err := w.Create(ctx, secret("demo-server-tls", "")); err != nil {
			t.Fatal(err)
		}
		if !reads.wrote {
			t.Errorf("a Secret created through the reconciler's client was not seen as a write")
		}
	})
}
