package metricstls

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"maps"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/internal/pki"
)

func provider(c client.Client) *Provider {
	return &Provider{Client: c, Namespace: "quorate-system", Secret: "quorate-metrics-tls", CASecret: "quorate-metrics-ca", Service: "quorate-controller-manager-metrics-service"} //nolint:gosec // G101: a Secret's name
}

// serve answers TLS on loopback with p's certificate and returns the address.
func serve(t *testing.T, p *Provider) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	p.TLSOpts(cfg)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), TLSConfig: cfg, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// The endpoint's certificate verifies against the Secret's CA for the Service's DNS name (and
// not for another name); a second replica serves the same certificate; renewal keeps the CA.
func TestMetricsCertificateVerifies(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	p := provider(c)
	if _, err := p.GetCertificate(nil); err == nil {
		t.Fatal("a certificate before Ensure")
	}
	if err := p.Ensure(ctx, now); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "quorate-system", Name: "quorate-metrics-tls"}, s); err != nil {
		t.Fatal(err)
	}
	// Scrapers are given the served Secret for its ca.crt: the CA's key is not in it.
	if got := keys(s); !slices.Equal(got, []string{pki.KeyCACert, pki.KeyCert, pki.KeyKey}) {
		t.Fatalf("the served Secret holds %v", got)
	}
	addr := serve(t, p)
	name := "quorate-controller-manager-metrics-service.quorate-system.svc"
	// The handshake checks validity against the real clock: the test certificate starts at
	// the fixed date above and lasts a year, so it is valid now only when the clock agrees; the
	// test checks the chain and names directly instead.
	first, err := handshakeAt(t, addr, s.Data[pki.KeyCACert], name, now.Add(time.Hour))
	if err != nil {
		t.Fatalf("a scraper trusting ca.crt refused the endpoint: %v", err)
	}
	if _, err := handshakeAt(t, addr, s.Data[pki.KeyCACert], "quorate.example.com", now.Add(time.Hour)); err == nil {
		t.Fatal("the endpoint verified for a name it must not carry")
	}
	// A second replica reads the same Secret and serves the same certificate.
	p2 := provider(c)
	if err := p2.Ensure(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ := p2.GetCertificate(nil)
	if first.SerialNumber.Cmp(mustLeaf(t, got).SerialNumber) != 0 {
		t.Fatal("two replicas serve different certificates")
	}
	// With a third of its year left it is renewed, from the same CA.
	if err := p.Ensure(ctx, now.Add(250*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	renewed := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "quorate-system", Name: "quorate-metrics-tls"}, renewed); err != nil {
		t.Fatal(err)
	}
	if string(renewed.Data[pki.KeyCACert]) != string(s.Data[pki.KeyCACert]) || string(renewed.Data[pki.KeyCert]) == string(s.Data[pki.KeyCert]) {
		t.Fatal("renewal changed the CA, or did not change the certificate")
	}
	second, err := handshakeAt(t, addr, renewed.Data[pki.KeyCACert], name, now.Add(251*24*time.Hour))
	if err != nil || second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatalf("after renewal the endpoint serves %v (err %v)", second.SerialNumber, err)
	}
}

func keys(s *corev1.Secret) []string {
	return slices.Sorted(maps.Keys(s.Data))
}

// An install of the earlier layout, whose served Secret held the CA's key too (readable by every
// scraper): a new CA in the CA Secret, and the served Secret gets a certificate it signed and
// its ca.crt, without the old key; also when the operator stopped between the two steps.
func TestMetricsCAKeyLeavesTheServedSecret(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("quorate-metrics-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, crashed := range []bool{false, true} {
		c := fake.NewClientBuilder().WithScheme(scheme).Build()
		p := provider(c)
		pair, err := p.issue(ca, now)
		if err != nil {
			t.Fatal(err)
		}
		old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: p.Secret, Namespace: p.Namespace}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{pki.KeyCert: pair.CertPEM, pki.KeyKey: pair.KeyPEM, pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}}
		if err := c.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		fresh := (*pki.CA)(nil)
		if crashed { // the CA Secret was written, the served Secret not yet
			if fresh, err = pki.NewCA("quorate-metrics-ca", now); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: p.CASecret, Namespace: p.Namespace},
				Data: map[string][]byte{pki.KeyCACert: fresh.CertPEM, pki.KeyCAKey: fresh.KeyPEM}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Ensure(ctx, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		served, kept := &corev1.Secret{}, &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Secret}, served); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.CASecret}, kept); err != nil {
			t.Fatal(err)
		}
		if got := keys(served); !slices.Equal(got, []string{pki.KeyCACert, pki.KeyCert, pki.KeyKey}) {
			t.Errorf("crashed=%v: the served Secret holds %v", crashed, got)
		}
		if bytes.Equal(kept.Data[pki.KeyCACert], ca.CertPEM) || bytes.Equal(kept.Data[pki.KeyCAKey], ca.KeyPEM) {
			t.Errorf("crashed=%v: the CA whose key scrapers could read is kept", crashed)
		}
		if fresh != nil && !bytes.Equal(kept.Data[pki.KeyCACert], fresh.CertPEM) {
			t.Errorf("crashed=%v: the CA Secret written before the stop was replaced", crashed)
		}
		if !bytes.Equal(served.Data[pki.KeyCACert], kept.Data[pki.KeyCACert]) {
			t.Errorf("crashed=%v: the served ca.crt is not the CA Secret's", crashed)
		}
		leaf, err := pki.ParseCert(served.Data[pki.KeyCert])
		if err != nil {
			t.Fatal(err)
		}
		newCA, err := pki.ParseCert(kept.Data[pki.KeyCACert])
		if err != nil {
			t.Fatal(err)
		}
		if err := leaf.CheckSignatureFrom(newCA); err != nil {
			t.Errorf("crashed=%v: the served certificate is not the new CA's: %v", crashed, err)
		}
	}
}

func mustLeaf(t *testing.T, c *tls.Certificate) *x509.Certificate {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// handshakeAt dials like handshake but verifies the chain at the given time.
func handshakeAt(t *testing.T, addr string, caPEM []byte, name string, at time.Time) (*x509.Certificate, error) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	var leaf *x509.Certificate
	conn, err := tls.Dial("tcp", addr, &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true, //nolint:gosec // verified below, at a chosen time
		VerifyConnection: func(cs tls.ConnectionState) error {
			leaf = cs.PeerCertificates[0]
			_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: at})
			return err
		}})
	if err != nil {
		return nil, err
	}
	_ = conn.Close()
	return leaf, nil
}
