// Package metricstls gives the operator's metrics endpoint a certificate that its scrapers
// can verify: issued for the metrics Service's DNS name by a CA of the operator's own, kept in
// a Secret of the operator's namespace whose ca.crt a ServiceMonitor names (tlsConfig.ca)
// instead of skipping verification; the CA's key is in a second Secret, which scrapers are
// not given. Every replica serves the certificate of the
// Secret; it is renewed in place with a third of its lifetime left, and the new one is served
// from the next handshake on.
package metricstls

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/internal/pki"
)

// Provider serves and renews the metrics certificate.
type Provider struct {
	// Client reads and writes the Secret directly (the manager's cache may not see the
	// operator's namespace, nor be started yet).
	Client client.Client
	// Namespace holds Secret, the served certificate with its CA's certificate (scrapers read
	// its ca.crt), and CASecret, the CA's key, which only the operator reads. Service is the
	// metrics Service, whose in-cluster DNS names the certificate covers.
	Namespace, Secret, CASecret, Service string
	// Lifetime of the serving certificate (a year when zero); the CA lasts pki.CAValidity.
	Lifetime time.Duration
	// Check is how often Start looks at the certificate's age (an hour when zero).
	Check time.Duration

	mu   sync.RWMutex
	cert *tls.Certificate
}

func (p *Provider) lifetime() time.Duration {
	if p.Lifetime > 0 {
		return p.Lifetime
	}
	return 365 * 24 * time.Hour
}

// DNSNames are the names the certificate covers: the Service's, in its short and long forms.
func (p *Provider) DNSNames() []string {
	base := p.Service + "." + p.Namespace + ".svc"
	return []string{p.Service, p.Service + "." + p.Namespace, base, base + ".cluster.local"}
}

// TLSOpts makes a TLS configuration serve the provider's certificate.
func (p *Provider) TLSOpts(c *tls.Config) { c.GetCertificate = p.GetCertificate }

// GetCertificate returns the certificate Ensure loaded last.
func (p *Provider) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.cert == nil {
		return nil, fmt.Errorf("no metrics certificate yet: Secret %s/%s has not been read", p.Namespace, p.Secret)
	}
	return p.cert, nil
}

// Ensure loads the Secret's certificate, first issuing it when the Secret does not exist, and
// renewing it from the same CA when a third of its lifetime is left or it does not cover the
// Service's names. The CA's key is kept in a Secret of its own (CASecret), which only the
// operator reads: scrapers are given read access to the served Secret for its ca.crt, and with
// the key they could issue certificates the ServiceMonitor trusts. A served Secret of the
// earlier layout (ca.key beside ca.crt) gets a new CA (the old one's key was readable by every
// scraper): the CA Secret is created first, then the served Secret gets a certificate it signed
// and its ca.crt, without the old key; a crash between the two steps is finished by the next
// Ensure. Two replicas racing write once: the loser reads the winner's.
func (p *Provider) Ensure(ctx context.Context, now time.Time) error {
	for attempt := 0; attempt < 3; attempt++ {
		served := &corev1.Secret{}
		err := p.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Secret}, served)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading the metrics certificate Secret %s/%s: %w", p.Namespace, p.Secret, err)
		}
		exists := err == nil
		ca, again, err := p.ensureCA(ctx, now)
		if err != nil || again {
			if err != nil {
				return err
			}
			continue
		}
		switch {
		case !exists:
			pair, err := p.issue(ca, now)
			if err != nil {
				return err
			}
			served = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: p.Secret, Namespace: p.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "quorate"}},
				Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{pki.KeyCert: pair.CertPEM, pki.KeyKey: pair.KeyPEM, pki.KeyCACert: ca.CertPEM}}
			if err := p.Client.Create(ctx, served); apierrors.IsAlreadyExists(err) {
				continue
			} else if err != nil {
				return fmt.Errorf("creating the metrics certificate Secret %s/%s: %w", p.Namespace, p.Secret, err)
			}
			logf.FromContext(ctx).Info("issued the metrics certificate", "secret", p.Secret, "names", p.DNSNames())
		case p.due(served, now) || !bytes.Equal(served.Data[pki.KeyCACert], ca.CertPEM) || served.Data[pki.KeyCAKey] != nil:
			updated := served.DeepCopy()
			if updated.Data == nil {
				updated.Data = map[string][]byte{}
			}
			if p.due(served, now) || !bytes.Equal(served.Data[pki.KeyCACert], ca.CertPEM) {
				pair, err := p.issue(ca, now)
				if err != nil {
					return err
				}
				updated.Data[pki.KeyCert], updated.Data[pki.KeyKey] = pair.CertPEM, pair.KeyPEM
				logf.FromContext(ctx).Info("renewing the metrics certificate", "secret", p.Secret)
			}
			updated.Data[pki.KeyCACert] = ca.CertPEM
			delete(updated.Data, pki.KeyCAKey)
			if err := p.Client.Patch(ctx, updated, client.MergeFromWithOptions(served, client.MergeFromWithOptimisticLock{})); apierrors.IsConflict(err) {
				continue
			} else if err != nil {
				return fmt.Errorf("updating the metrics certificate in Secret %s/%s: %w", p.Namespace, p.Secret, err)
			}
		}
		if err := p.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Secret}, served); err != nil {
			return err
		}
		cert, err := tls.X509KeyPair(served.Data[pki.KeyCert], served.Data[pki.KeyKey])
		if err != nil {
			return fmt.Errorf("the metrics certificate in Secret %s/%s does not load: %w", p.Namespace, p.Secret, err)
		}
		p.mu.Lock()
		p.cert = &cert
		p.mu.Unlock()
		return nil
	}
	return fmt.Errorf("the metrics certificate Secrets %s/%s and %s keep changing under the operator", p.Namespace, p.Secret, p.CASecret)
}

// ensureCA loads the CA from the CA Secret, creating that Secret with a new CA when it does not
// exist. again says that another replica created it first: read both again.
func (p *Provider) ensureCA(ctx context.Context, now time.Time) (ca *pki.CA, again bool, err error) {
	s := &corev1.Secret{}
	err = p.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.CASecret}, s)
	switch {
	case err == nil:
		ca, err := pki.LoadCA(s.Data[pki.KeyCACert], s.Data[pki.KeyCAKey])
		if err != nil {
			return nil, false, fmt.Errorf("the metrics CA in Secret %s/%s does not load (%w): delete it, the operator issues a new CA and certificate", p.Namespace, p.CASecret, err)
		}
		return ca, false, nil
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("reading the metrics CA Secret %s/%s: %w", p.Namespace, p.CASecret, err)
	}
	// Always a new CA, also for a served Secret of the earlier layout: whoever could read that
	// Secret (every scraper) had its key, so the old CA is not trusted on. Scrapers re-read
	// ca.crt from the served Secret, which gets the new CA and a certificate it signed.
	if ca, err = pki.NewCA("quorate-metrics-ca", now); err != nil {
		return nil, false, err
	}
	s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: p.CASecret, Namespace: p.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "quorate"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}}
	if err := p.Client.Create(ctx, s); apierrors.IsAlreadyExists(err) {
		return nil, true, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("creating the metrics CA Secret %s/%s: %w", p.Namespace, p.CASecret, err)
	}
	logf.FromContext(ctx).Info("keeping the metrics CA in its own Secret", "secret", p.CASecret)
	return ca, false, nil
}

func (p *Provider) issue(ca *pki.CA, now time.Time) (pki.Pair, error) {
	return ca.Sign(pki.Request{CommonName: p.Service, DNSNames: p.DNSNames(), Usage: pki.ServerAndClient, Validity: p.lifetime()}, now)
}

// due: the certificate does not parse, has a third of its lifetime left, or misses a name.
func (p *Provider) due(s *corev1.Secret, now time.Time) bool {
	c, err := pki.ParseCert(s.Data[pki.KeyCert])
	if err != nil || now.After(c.NotAfter.Add(-p.lifetime()/3)) {
		return true
	}
	for _, n := range p.DNSNames() {
		if c.VerifyHostname(n) != nil {
			return true
		}
	}
	return false
}

// Start renews the certificate while the manager runs (every replica: each serves metrics).
func (p *Provider) Start(ctx context.Context) error {
	every := p.Check
	if every <= 0 {
		every = time.Hour
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := p.Ensure(ctx, time.Now()); err != nil {
				logf.FromContext(ctx).Error(err, "keeping the metrics certificate")
			}
		}
	}
}

// NeedLeaderElection: every replica serves metrics.
func (p *Provider) NeedLeaderElection() bool { return false }
