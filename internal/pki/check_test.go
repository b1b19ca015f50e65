package pki

import (
	"testing"
	"time"
)

func TestCheckLeaf(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ca, err := NewCA("test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(ca *CA, usage Usage, at time.Time, dns ...string) Pair {
		p, err := ca.Sign(Request{CommonName: "leaf", DNSNames: dns, Usage: usage}, at)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	host := "db-0.db-peer.ns.svc"
	server := sign(ca, ServerAndClient, now, "*.db-peer.ns.svc", "db-client.ns.svc")
	expired := sign(ca, ServerAndClient, now.Add(-100*24*time.Hour), "*.db-peer.ns.svc")
	early := sign(ca, ServerAndClient, now.Add(2*time.Hour), "*.db-peer.ns.svc")
	client := sign(ca, ClientOnly, now)
	for _, tc := range []struct {
		name          string
		cert, key, ca []byte
		chk           Check
		want          string
	}{
		{"a good server certificate", server.CertPEM, server.KeyPEM, ca.CertPEM, Check{ServerAndClient, []string{host, "db-client.ns.svc"}, now}, ""},
		{"a good client certificate", client.CertPEM, client.KeyPEM, ca.CertPEM, Check{ClientOnly, nil, now}, ""},
		{"key of another certificate", server.CertPEM, client.KeyPEM, ca.CertPEM, Check{ServerAndClient, nil, now},
			"tls.crt and tls.key are not a certificate and its key: tls: private key does not match public key"},
		{"no CA", server.CertPEM, server.KeyPEM, []byte("nothing"), Check{ServerAndClient, nil, now}, "ca.crt holds no PEM certificate"},
		{"another CA", server.CertPEM, server.KeyPEM, other.CertPEM, Check{ServerAndClient, nil, now},
			`the certificate "leaf" does not chain to ca.crt for server authentication: x509: certificate signed by unknown authority`},
		{"expired", expired.CertPEM, expired.KeyPEM, ca.CertPEM, Check{ServerAndClient, nil, now},
			`the certificate "leaf" is valid from 2026-08-15T11:00:00Z to 2026-11-13T12:00:00Z, not now (2026-11-23T12:00:00Z)`},
		{"not yet valid", early.CertPEM, early.KeyPEM, ca.CertPEM, Check{ServerAndClient, nil, now},
			`the certificate "leaf" is valid from 2026-11-23T13:00:00Z to 2027-02-21T14:00:00Z, not now (2026-11-23T12:00:00Z)`},
		{"client certificate as server", client.CertPEM, client.KeyPEM, ca.CertPEM, Check{ServerAndClient, nil, now},
			`the certificate "leaf" does not chain to ca.crt for server authentication: x509: certificate specifies an incompatible key usage`},
		{"missing SAN", server.CertPEM, server.KeyPEM, ca.CertPEM, Check{ServerAndClient, []string{"db-client.other.svc"}, now},
			`the certificate "leaf" does not cover db-client.other.svc (its DNS names: [*.db-peer.ns.svc db-client.ns.svc])`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckLeaf(tc.cert, tc.key, tc.ca, tc.chk)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
