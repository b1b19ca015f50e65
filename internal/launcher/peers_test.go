package launcher

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/pki"
)

// peerServer is an etcd peer listener on loopback: it serves /version with a certificate of
// ca for 127.0.0.1 and requires a client certificate of clientCA.
func peerServer(t *testing.T, ca, clientCA *pki.CA) string {
	t.Helper()
	pair, err := ca.Issue("peer", nil, []net.IP{net.ParseIP("127.0.0.1")}, pki.ServerAndClient, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"etcdserver":"3.6.16","etcdcluster":"3.6.0"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// peerDir writes a member's peer certificate of ca to a directory, as the pod mounts it.
func peerDir(t *testing.T, ca *pki.CA) string {
	t.Helper()
	pair, err := ca.Issue("member", []string{"demo-1.demo-peer.ns.svc"}, nil, pki.ServerAndClient, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{pki.KeyCert: pair.CertPEM, pki.KeyKey: pair.KeyPEM, pki.KeyCACert: ca.CertPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newCA(t *testing.T, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// A joining member starts etcd only once every required peer answers as an etcd peer with
// this member's certificate; otherwise it refuses, naming each peer that did not.
func TestCheckPeersReachable(t *testing.T) {
	ca, other := newCA(t, "external"), newCA(t, "another")
	good := peerServer(t, ca, ca)
	tlsFor, err := PeerTLS(peerDir(t, ca))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := CheckPeersReachable(ctx, []string{good}, tlsFor, time.Second, 100*time.Millisecond); err != nil {
		t.Fatalf("a peer that accepts the member: %v", err)
	}

	// A peer that does not accept the member's certificate, one whose certificate the member
	// does not trust, and an address where nothing listens.
	rejecting := peerServer(t, ca, other)
	untrusted := peerServer(t, other, ca)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + l.Addr().String()
	l.Close()
	peers := []string{good, rejecting, untrusted, closed}
	err = CheckPeersReachable(ctx, peers, tlsFor, 300*time.Millisecond, 100*time.Millisecond)
	var r *Refusal
	if !errors.As(err, &r) || r.Kind != RefusalPeersUnreachable {
		t.Fatalf("err = %v, want a PeersUnreachable refusal", err)
	}
	failed := map[string]string{}
	for _, p := range peers[1:] {
		perr := probePeer(ctx, p, tlsFor)
		if perr == nil {
			t.Fatalf("probe of %s succeeded", p)
		}
		failed[p] = perr.Error()
	}
	if want := unreachableMessage(failed, 300*time.Millisecond); r.Message != want {
		t.Errorf("message\n %s\nwant\n %s", r.Message, want)
	}
}

// The message names every peer, in order, with its error, and what to do.
func TestUnreachableMessage(t *testing.T) {
	got := unreachableMessage(map[string]string{
		"https://10.87.0.1:22382": "remote error: tls: bad certificate",
		"https://10.87.0.1:22380": "dial tcp 10.87.0.1:22380: connect: connection refused",
	}, time.Minute)
	want := "this member cannot reach the etcd peer listener of https://10.87.0.1:22380 (dial tcp 10.87.0.1:22380: connect: connection refused), " +
		"https://10.87.0.1:22382 (remote error: tls: bad certificate) for 1m0s; etcd is not started. Make these addresses reachable from the pod network, " +
		"and make sure each peer accepts this member's peer certificate from the address it connects from"
	if got != want {
		t.Errorf("got\n %s\nwant\n %s", got, want)
	}
}

// The launcher checks the required peers only before the member's first start: a member
// with data restarts whatever its peers do, as etcd would.
func TestLaunchRequiresPeersOnlyBeforeTheFirstStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, withData := range []bool{false, true} {
		term := filepath.Join(t.TempDir(), "termination-log")
		o := Options{Volume: volume(t, withData, nil), TerminationLogPath: term, RequirePeers: []string{closed},
			RequirePeersFor: 200 * time.Millisecond, Command: []string{"true"}}
		code := Launch(context.Background(), o, io.Discard)
		msg, _ := os.ReadFile(term)
		got := ParseTermination(string(msg))
		switch {
		case !withData && (code != 2 || got == nil || got.Kind != RefusalPeersUnreachable):
			t.Errorf("empty volume: exit %d, termination %q, want 2 and a PeersUnreachable refusal", code, msg)
		case withData && (code != 0 || len(msg) != 0):
			t.Errorf("volume with data: exit %d, termination %q, want etcd started (0) and no message", code, msg)
		}
	}
}
