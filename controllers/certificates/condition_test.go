package certificates

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// The CertificatesValid condition, whole, for a certificate far from, near and past its end.
func TestCertificatesCondition(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r := &Manager{CertLifetime: 90 * 24 * time.Hour}
	for _, tc := range []struct {
		name    string
		expires time.Time
		user    bool
		want    metav1.Condition
	}{
		{"valid", now.Add(60 * 24 * time.Hour), false, metav1.Condition{Type: v1alpha1.ConditionCertificatesValid, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCertificatesValid,
			Message: "every certificate is valid for more than 504h0m0s; the first to expire is in Secret demo-peer-tls, at 2027-01-23T12:00:00Z", ObservedGeneration: 3}},
		{"generated, expiring", now.Add(10 * 24 * time.Hour), false, metav1.Condition{Type: v1alpha1.ConditionCertificatesValid, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCertificateExpiring,
			Message: "the certificate in Secret demo-peer-tls expires at 2026-12-04T12:00:00Z, in 240h0m0s: the operator renews its certificates with a third of their lifetime left and has not renewed this one: see the operator's log", ObservedGeneration: 3}},
		{"supplied, expired", now.Add(-time.Hour), true, metav1.Condition{Type: v1alpha1.ConditionCertificatesValid, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCertificateExpired,
			Message: "the certificate in Secret demo-peer-tls expired at 2026-11-24T11:00:00Z: replace it in its Secret", ObservedGeneration: 3}},
	} {
		c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 3}}
		if tc.user {
			c.Spec.TLS = v1alpha1.TLSSpec{ServerSecretName: "s", PeerSecretName: "p", ClientSecretName: "c"}
		}
		c.Status.TLS = &v1alpha1.TLSStatus{FirstExpiry: &v1alpha1.CertificateExpiry{Secret: names.PeerSecret("demo"), Time: metav1.NewTime(tc.expires)}}
		r.certificatesCondition(c, now)
		got := c.Status.Conditions[0]
		got.LastTransitionTime = metav1.Time{}
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// certificatesCondition folds into c's status the CertificatesValid condition of the first
// expiry it records, as a pass's fold does with EnsureTLS's share.
func (m *Manager) certificatesCondition(c *v1alpha1.EtcdCluster, now time.Time) {
	m.tlsShare(c, firstExpiry(c), now).Fold(&c.Status)
}
