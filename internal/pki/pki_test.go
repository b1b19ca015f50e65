package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
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
			_ = c.(*tls.Conn).Handshake()
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
