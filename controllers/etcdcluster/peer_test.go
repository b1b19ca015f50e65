package etcdcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// The certificates the operator generates keep peers apart from clients: a real etcd started
// with them, as a member pod starts it, refuses the applications' client certificate (and the
// operator's) on its peer port, and accepts its peer certificate there.
func TestPeerPortRefusesClientCertificates(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	ctx := context.Background()
	if err := k8s.Create(ctx, newCluster(ns, "peer", 1)); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]*corev1.Secret{}
	eventually(t, timeout, "the certificates", func() error {
		for _, n := range []string{names.ServerSecret("peer"), names.PeerSecret("peer"), names.ClientSecret("peer"), names.OperatorSecret("peer")} {
			s := &corev1.Secret{}
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, s); err != nil {
				return err
			}
			secrets[n] = s
		}
		return nil
	})
	dir := t.TempDir()
	write := func(secret, key string) string {
		path := filepath.Join(dir, secret+"-"+key)
		if err := os.WriteFile(path, secrets[secret].Data[key], 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	server, peer := names.ServerSecret("peer"), names.PeerSecret("peer")
	peerURL := startPeerTLSEtcd(t, dir, peer, write(peer, pki.KeyCACert), write(peer, pki.KeyCert), write(peer, pki.KeyKey),
		"--client-cert-auth=true", "--trusted-ca-file="+write(server, pki.KeyCACert), "--cert-file="+write(server, pki.KeyCert), "--key-file="+write(server, pki.KeyKey))
	get := func(secret string) error {
		return getPeerVersion(peerURL, secrets[secret].Data[pki.KeyCert], secrets[secret].Data[pki.KeyKey])
	}
	eventually(t, timeout, "the peer port to accept the peer certificate", func() error { return get(peer) })
	for _, s := range []string{names.ClientSecret("peer"), names.OperatorSecret("peer")} {
		err := get(s)
		if err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("the peer port accepted %s: %v", s, err)
		}
	}
}

// startPeerTLSEtcd starts a one-member etcd whose peer port serves TLS with the given files
// and asks peers for certificates of that CA, as a member pod's etcd does, with extra flags;
// it returns the peer URL. The client URL is plaintext unless extra says otherwise.
func startPeerTLSEtcd(t *testing.T, dir, name, caFile, certFile, keyFile string, extra ...string) string {
	t.Helper()
	scheme := "http"
	if slices.ContainsFunc(extra, func(f string) bool { return strings.HasPrefix(f, "--cert-file=") }) {
		scheme = "https"
	}
	clientURL, peerURL := fmt.Sprintf("%s://127.0.0.1:%d", scheme, testsupport.FreePort(t)), fmt.Sprintf("https://127.0.0.1:%d", testsupport.FreePort(t))
	launchPeerTLSEtcd(t, dir, name, clientURL, peerURL, name+"="+peerURL, caFile, certFile, keyFile, extra...)
	return peerURL
}

// launchPeerTLSEtcd starts a member of the initial cluster with TLS on its peer port, as
// startPeerTLSEtcd describes.
func launchPeerTLSEtcd(t *testing.T, dir, name, clientURL, peerURL, initialCluster, caFile, certFile, keyFile string, extra ...string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	args := append([]string{"--name=" + name, "--data-dir=" + filepath.Join(dir, name+"-data"), "--log-level=error",
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL, "--initial-cluster=" + initialCluster,
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file=" + caFile, "--peer-cert-file=" + certFile, "--peer-key-file=" + keyFile,
		"--peer-skip-client-san-verification=true"}, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd"), args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); _ = cmd.Wait() })
}

// getPeerVersion GETs /version on a peer URL presenting the given certificate.
func getPeerVersion(peerURL string, certPEM, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // the test is about the server's check of the client
	}}}
	resp, err := hc.Get(peerURL + "/version")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// A member pins its peers to the cluster's peer certificate by name (resources.PeerIdentityFlags):
// with one CA for everything, as clusters from before the peer CA have it, the applications'
// client certificate and a peer certificate of another cluster (foo-peer's, whose name starts
// as this one's) are still refused on the peer port; without the pin etcd takes both.
func TestPeerPortPinsTheClustersPeerCertificate(t *testing.T) {
	t.Parallel()
	pk := newPeerCA(t)
	c := newCluster("ns", "demo", 3)
	peer, client, otherPeer := pk.issue(names.PeerCN("demo"), pki.ServerAndClient), pk.issue(names.ClientCN, pki.ClientOnly), pk.issue(names.PeerCN("demo-peer"), pki.ServerAndClient)
	dir := pk.dir
	caFile, certFile, keyFile := pk.files(peer)
	pinned := startPeerTLSEtcd(t, dir, "pinned", caFile, certFile, keyFile, resources.PeerIdentityFlags(c)...)
	open := startPeerTLSEtcd(t, dir, "open", caFile, certFile, keyFile)
	eventually(t, timeout, "both members' peer ports to accept the peer certificate", func() error {
		return errors.Join(getPeerVersion(pinned, peer.CertPEM, peer.KeyPEM), getPeerVersion(open, peer.CertPEM, peer.KeyPEM))
	})
	for name, p := range map[string]pki.Pair{"the applications' client certificate": client, "cluster demo-peer's peer certificate": otherPeer} {
		if err := getPeerVersion(pinned, p.CertPEM, p.KeyPEM); err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("the pinned peer port accepted %s: %v", name, err)
		}
		// The same CA without the pin: what the pin adds.
		if err := getPeerVersion(open, p.CertPEM, p.KeyPEM); err != nil {
			t.Errorf("without the pin, the peer port refused %s: %v (the test shows nothing)", name, err)
		}
	}
	if got := resources.PeerIdentityFlags(c); !slices.Equal(got, []string{"--peer-cert-allowed-cn=demo-peer"}) {
		t.Errorf("PeerIdentityFlags = %q", got)
	}
}

// Members that pin their peers by name still talk to each other both ways: each checks the
// server certificate of the peer it dials as well as the client certificate of the peer that
// dials it, and both are the cluster's peer certificate. Two pinned members form a cluster
// that has a leader.
func TestPinnedMembersFormACluster(t *testing.T) {
	t.Parallel()
	pk := newPeerCA(t)
	dir := pk.dir
	caFile, certFile, keyFile := pk.files(pk.issue(names.PeerCN("demo"), pki.ServerAndClient))
	pin := resources.PeerIdentityFlags(newCluster("ns", "demo", 2))
	var clients, peers, initial []string
	for i := range 2 {
		clients = append(clients, fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t)))
		peers = append(peers, fmt.Sprintf("https://127.0.0.1:%d", testsupport.FreePort(t)))
		initial = append(initial, fmt.Sprintf("demo-%d=%s", i, peers[i]))
	}
	for i := range 2 {
		launchPeerTLSEtcd(t, dir, fmt.Sprintf("demo-%d", i), clients[i], peers[i], strings.Join(initial, ","), caFile, certFile, keyFile, pin...)
	}
	// /health says true only when the member sees a leader: the two reached each other.
	eventually(t, timeout, "both pinned members to see a leader", func() error {
		for _, c := range clients {
			resp, err := http.Get(c + "/health")
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"health":"true"`) {
				return fmt.Errorf("%s/health: %s", c, body)
			}
		}
		return nil
	})
}

// peerCA is a CA of a test, which issues loopback certificates and writes them into dir.
type peerCA struct {
	t   *testing.T
	ca  *pki.CA
	dir string
}

func newPeerCA(t *testing.T) peerCA {
	t.Helper()
	ca, err := pki.NewCA("demo-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return peerCA{t: t, ca: ca, dir: t.TempDir()}
}

// issue signs a certificate for 127.0.0.1 with the common name and usage.
func (p peerCA) issue(cn string, usage pki.Usage) pki.Pair {
	p.t.Helper()
	pair, err := p.ca.Sign(pki.Request{CommonName: cn, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: usage}, time.Now())
	if err != nil {
		p.t.Fatal(err)
	}
	return pair
}

// files writes the CA's certificate and the pair into dir, and returns their paths.
func (p peerCA) files(pair pki.Pair) (caFile, certFile, keyFile string) {
	p.t.Helper()
	write := func(name string, data []byte) string {
		path := filepath.Join(p.dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			p.t.Fatal(err)
		}
		return path
	}
	return write("ca.crt", p.ca.CertPEM), write("tls.crt", pair.CertPEM), write("tls.key", pair.KeyPEM)
}
