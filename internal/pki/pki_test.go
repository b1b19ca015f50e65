package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestIssueAndVerify(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("demo-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue("demo-server", []string{"*.demo-peer.ns.svc", "demo-client.ns.svc", "localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, ServerAndClient, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(server.CertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, host := range []string{"demo-2.demo-peer.ns.svc", "demo-client.ns.svc", "127.0.0.1"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("server certificate does not verify for %s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "demo-2.other-peer.ns.svc", Roots: pool}); err == nil {
		t.Error("server certificate verifies for another cluster's member")
	}

	client, err := ca.Issue("quorate-operator", nil, nil, ClientOnly, now)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClientTLS(client.CertPEM, client.KeyPEM, ca.CertPEM, "demo-client.ns.svc")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ServerName != "demo-client.ns.svc" || len(cfg.Certificates) != 1 {
		t.Errorf("client config = %+v", cfg)
	}
	// gRPC overwrites ServerName with the dialled IP; verification must still use the name.
	cfg.ServerName = "127.0.0.9"

	// A handshake between the two proves the pair and the CA work together.
	srvPair, _ := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			if c.(*tls.Conn).Handshake() == nil {
				_, _ = c.Write([]byte{1}) // the client reads it: the server's handshake is over
			}
			_ = c.Close()
		}
	}()
	conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err != nil {
		t.Fatalf("mutual TLS handshake failed: %v", err)
	}
	_ = conn.Close()

	// A server certificate for another name is refused even though the CA is right.
	other, _ := ca.Issue("other", []string{"other.ns.svc"}, nil, ServerAndClient, now)
	if _, err := tls.X509KeyPair(other.CertPEM, other.KeyPEM); err != nil {
		t.Fatal(err)
	}
	ob, _ := pem.Decode(other.CertPEM)
	oc, _ := x509.ParseCertificate(ob.Bytes)
	if err := VerifyServer(tls.ConnectionState{PeerCertificates: []*x509.Certificate{oc}}, pool, "demo-client.ns.svc"); err == nil {
		t.Error("a certificate for another name was accepted")
	}

	back, err := LoadCA(ca.CertPEM, ca.KeyPEM)
	if err != nil || !back.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA round trip: %v", err)
	}
	if _, err := LoadCA(server.CertPEM, server.KeyPEM); err == nil {
		t.Error("LoadCA accepted a leaf certificate as CA")
	}
}

// FilesTLS reads the files again at every handshake: a server certificate of a new CA is
// refused until ca.crt trusts that CA, and accepted from the next handshake after it does;
// a renewed client certificate is presented as soon as it is in place.
func TestFilesTLS(t *testing.T) {
	now := time.Now()
	ca1, err := NewCA("ca-1", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := NewCA("ca-2", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	client1, _ := ca1.Issue("app", nil, nil, ClientOnly, now.Add(-time.Hour))
	write(KeyCert, client1.CertPEM)
	write(KeyKey, client1.KeyPEM)
	write(KeyCACert, ca1.CertPEM)
	var changes int
	cfg, err := FilesTLS(dir, "db.example", func(_, _ []byte) { changes++ })
	if err != nil {
		t.Fatal(err)
	}
	// A server that trusts both CAs' clients and serves a certificate we choose.
	var serving atomic.Pointer[tls.Certificate]
	use := func(ca *CA) {
		p, _ := ca.Issue("server", []string{"db.example"}, nil, ServerAndClient, now.Add(-time.Hour))
		pair, _ := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		serving.Store(&pair)
	}
	use(ca1)
	clients := x509.NewCertPool()
	clients.AddCert(ca1.Cert)
	clients.AddCert(ca2.Cert)
	var seenClient atomic.Pointer[string]
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return serving.Load(), nil },
		VerifyConnection: func(cs tls.ConnectionState) error {
			issuer := cs.PeerCertificates[0].Issuer.CommonName
			seenClient.Store(&issuer)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if c.(*tls.Conn).Handshake() == nil {
				_, _ = c.Write([]byte{1}) // the client reads it: the server's handshake is over
			}
			_ = c.Close()
		}
	}()
	dial := func() error {
		c, err := tls.Dial("tcp", l.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		_, err = c.Read(make([]byte, 1))
		return err
	}
	if err := dial(); err != nil {
		t.Fatalf("first handshake: %v", err)
	}
	use(ca2)
	if err := dial(); err == nil {
		t.Fatal("a server certificate of a CA ca.crt does not hold was accepted")
	}
	write(KeyCACert, append(append([]byte{}, ca1.CertPEM...), ca2.CertPEM...))
	if err := dial(); err != nil {
		t.Fatalf("after ca.crt trusts both CAs: %v", err)
	}
	client2, _ := ca2.Issue("app", nil, nil, ClientOnly, now.Add(-time.Hour))
	write(KeyCert, client2.CertPEM)
	write(KeyKey, client2.KeyPEM)
	if err := dial(); err != nil {
		t.Fatalf("after the client certificate was renewed: %v", err)
	}
	if got := seenClient.Load(); got == nil || *got != "ca-2" {
		t.Fatalf("the server saw a client certificate of %v, want ca-2's", got)
	}
	if changes < 2 {
		t.Fatalf("%d changes reported, want the CA bundle and the certificate", changes)
	}
}

// A certificate never outlives its CA: one signed by a CA with a month left ends with the CA.
func TestLeavesEndWithTheirCA(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("old-ca", now.Add(-CAValidity+30*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Sign(Request{CommonName: "leaf", Usage: ClientOnly, Validity: LeafValidity}, now)
	if err != nil {
		t.Fatal(err)
	}
	end, err := NotAfter(pair.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !end.Equal(ca.Cert.NotAfter) {
		t.Errorf("the leaf ends %s, its CA %s", end, ca.Cert.NotAfter)
	}
	young, err := NewCA("young-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err = young.Sign(Request{CommonName: "leaf", Usage: ClientOnly, Validity: LeafValidity}, now)
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := NotAfter(pair.CertPEM); end.Sub(now.Add(LeafValidity)).Abs() > time.Second {
		t.Errorf("a young CA's leaf ends %s, want %s", end, now.Add(LeafValidity))
	}
}
