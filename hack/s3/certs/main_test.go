package main

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/pki"
)

func read(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{pki.KeyCACert, pki.KeyCAKey, pki.KeyCert, pki.KeyKey} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

// The CA is made once and kept; the server certificate chains to it for every name, is kept
// while it covers the names and stays valid for the margin, and is signed again by the same
// CA when the names change or its end comes near.
func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	names := []string{"versitygw-tls", "versitygw-tls.quorate-s3.svc"}
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	renewed, err := ensure(dir, names, now)
	if err != nil || !renewed {
		t.Fatalf("first run: renewed %v, err %v; want a new certificate", renewed, err)
	}
	first := read(t, dir)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(first[pki.KeyCACert]) {
		t.Fatal("ca.crt holds no certificate")
	}
	leaf, err := pki.ParseCert(first[pki.KeyCert])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: n, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the server certificate does not verify for %s: %v", n, err)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, pki.KeyCAKey)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ca.key: %v, err %v; want mode 0600", info, err)
	}

	steps := []struct {
		name        string
		names       []string
		now         time.Time
		wantRenewed bool
	}{
		{"again", names, now, false},
		{"a month on", names, now.Add(30 * 24 * time.Hour), false},
		{"another name", append(names, "versitygw-tls.quorate-s3.svc.cluster.local"), now, true},
		{"near the end", append(names, "versitygw-tls.quorate-s3.svc.cluster.local"), now.Add(pki.LeafValidity - 20*24*time.Hour), true},
	}
	prev := first
	for _, s := range steps {
		renewed, err := ensure(dir, s.names, s.now)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := read(t, dir)
		if renewed != s.wantRenewed || bytes.Equal(got[pki.KeyCert], prev[pki.KeyCert]) == s.wantRenewed {
			t.Errorf("%s: renewed %v, certificate changed %v; want %v", s.name, renewed, !bytes.Equal(got[pki.KeyCert], prev[pki.KeyCert]), s.wantRenewed)
		}
		if !bytes.Equal(got[pki.KeyCACert], first[pki.KeyCACert]) || !bytes.Equal(got[pki.KeyCAKey], first[pki.KeyCAKey]) {
			t.Errorf("%s: the CA changed", s.name)
		}
		if err := pki.CheckLeaf(got[pki.KeyCert], got[pki.KeyKey], first[pki.KeyCACert], pki.Check{Usage: pki.ServerAndClient, Hosts: s.names, Now: s.now}); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
		prev = got
	}

	// A CA at its end is made again, and the certificate with it.
	end := now.Add(pki.CAValidity - 10*24*time.Hour)
	if renewed, err := ensure(dir, names, end); err != nil || !renewed {
		t.Fatalf("at the CA's end: renewed %v, err %v", renewed, err)
	}
	got := read(t, dir)
	if bytes.Equal(got[pki.KeyCACert], first[pki.KeyCACert]) {
		t.Error("a CA ending within the margin was kept")
	}
	if err := pki.CheckLeaf(got[pki.KeyCert], got[pki.KeyKey], got[pki.KeyCACert], pki.Check{Usage: pki.ServerAndClient, Hosts: names, Now: end}); err != nil {
		t.Errorf("at the CA's end: %v", err)
	}
}
