package certificates

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/pki"
)

// Share is the certificates' share of a cluster's status: what EnsureTLS, SyncUsers and
// Advance found, which the EtcdCluster pass folds into the status it writes (Fold). The
// certificate work itself writes no status.
type Share struct {
	tls bool // status.tls exists (an empty one is made when missing)

	setExpiry   bool
	firstExpiry *v1alpha1.CertificateExpiry // status.tls.firstExpiry when setExpiry (nil: none)

	setValid bool
	valid    *metav1.Condition // the CertificatesValid condition when setValid (nil: none)

	renewedToken string                     // status.tls.renewedToken, unless ""
	rotation     *v1alpha1.CARotationStatus // status.tls.caRotation, unless nil

	setUsers    bool
	authEnabled bool
	users       []string
}

// Fold writes the share into st.
func (s Share) Fold(st *v1alpha1.EtcdClusterStatus) {
	if s.tls && st.TLS == nil {
		st.TLS = &v1alpha1.TLSStatus{}
	}
	if s.setExpiry && st.TLS != nil {
		st.TLS.FirstExpiry = s.firstExpiry
	}
	if s.setValid {
		if s.valid == nil {
			meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionCertificatesValid)
		} else {
			meta.SetStatusCondition(&st.Conditions, *s.valid)
		}
	}
	if s.renewedToken != "" {
		st.TLS.RenewedToken = s.renewedToken
	}
	if s.rotation != nil {
		st.TLS.CARotation = s.rotation
	}
	if s.setUsers {
		st.AuthEnabled, st.Users = s.authEnabled, s.users
	}
}

// expiries finds the first certificate to expire among those a pass's work looks at.
type expiries struct {
	first   *v1alpha1.CertificateExpiry
	changed bool
}

// record keeps the certificate under key of a TLS Secret when it is the first to expire.
func (e *expiries) record(s *corev1.Secret, key string) {
	if e == nil {
		return
	}
	t, err := pki.NotAfter(s.Data[key])
	if err != nil {
		return
	}
	if e.first == nil || t.Before(e.first.Time.Time) {
		e.first = &v1alpha1.CertificateExpiry{Secret: s.Name, Time: metav1.NewTime(t.UTC().Truncate(time.Second))}
		e.changed = true
	}
}

// share is the status.tls.firstExpiry this found, when it changed.
func (e *expiries) share() Share {
	if !e.changed {
		return Share{}
	}
	return Share{tls: true, setExpiry: true, firstExpiry: e.first}
}

type expiriesKey struct{}

func withExpiries(ctx context.Context, e *expiries) context.Context {
	return context.WithValue(ctx, expiriesKey{}, e)
}

// recordExpiry keeps, for the pass's share of the status, the certificate under key of a TLS
// Secret when it is the first to expire (recordMetrics exports it).
func recordExpiry(ctx context.Context, s *corev1.Secret, key string) {
	e, _ := ctx.Value(expiriesKey{}).(*expiries)
	e.record(s, key)
}

// firstExpiry is the first expiry c's status records.
func firstExpiry(c *v1alpha1.EtcdCluster) *v1alpha1.CertificateExpiry {
	if c.Status.TLS == nil {
		return nil
	}
	return c.Status.TLS.FirstExpiry
}

// RecordExpiry folds into c's status the certificate under key of a TLS Secret when it is the
// first to expire, as a pass that read the Secret would (for the tests of the figures).
func RecordExpiry(c *v1alpha1.EtcdCluster, s *corev1.Secret, key string) {
	e := &expiries{first: firstExpiry(c)}
	e.record(s, key)
	e.share().Fold(&c.Status)
}
