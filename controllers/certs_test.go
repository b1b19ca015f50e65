package controllers

import (
	"context"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
)

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	c, err := pki.ParseCert(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Generated certificates are renewed in their Secrets with a third of their lifetime left,
// from the CA that signed them, which does not change.
func TestCertificatesAreRenewed(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const lifetime = 9 * time.Second
	startWith(t, ns, etcd.NewFake("3.6.16"), "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.CertLifetime = lifetime })
	if err := k8s.Create(ctx, newCluster(ns, "rot", 1)); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *corev1.Secret {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	server, peer := names.ServerSecret("rot"), names.PeerSecret("rot")
	eventually(t, timeout, "the certificates", func() error {
		for _, n := range []string{server, peer} {
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &corev1.Secret{}); err != nil {
				return err
			}
		}
		return nil
	})
	first := map[string]*corev1.Secret{server: get(server), peer: get(peer)}
	for n, s := range first {
		c := parseCert(t, s.Data[pki.KeyCert])
		if got := c.NotAfter.Sub(c.NotBefore); got != lifetime+time.Hour { // issued backdated by an hour
			t.Errorf("%s lives %s, want %s plus the hour it is backdated", n, got, lifetime)
		}
	}
	for n, old := range first {
		eventually(t, timeout, n+" renewed", func() error {
			s := get(n)
			if string(s.Data[pki.KeyCert]) == string(old.Data[pki.KeyCert]) {
				return fmt.Errorf("still the first certificate")
			}
			if string(s.Data[pki.KeyCACert]) != string(old.Data[pki.KeyCACert]) {
				return fmt.Errorf("renewed against another CA")
			}
			if string(s.Data[pki.KeyKey]) == string(old.Data[pki.KeyKey]) {
				return fmt.Errorf("renewed with the same key")
			}
			prev, now := parseCert(t, old.Data[pki.KeyCert]), parseCert(t, s.Data[pki.KeyCert])
			if !now.NotAfter.After(prev.NotAfter) {
				return fmt.Errorf("the new certificate ends %s, not after the old %s", now.NotAfter, prev.NotAfter)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(s.Data[pki.KeyCACert])
			if _, err := now.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				return fmt.Errorf("the new certificate does not chain to ca.crt: %v", err)
			}
			return nil
		})
	}
	assertEvent(t, ns, v1alpha1.EventCertificateRenewed, "renewed "+server+" from "+names.CASecret("rot")+", valid until ")
	assertEvent(t, ns, v1alpha1.EventCertificateRenewed, "renewed "+peer+" from "+names.PeerCASecret("rot")+", valid until ")
}
