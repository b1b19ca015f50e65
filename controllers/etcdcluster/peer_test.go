package etcdcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
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
	clientURL, peerURL := fmt.Sprintf("https://127.0.0.1:%d", testsupport.FreePort(t)), fmt.Sprintf("https://127.0.0.1:%d", testsupport.FreePort(t))
	etcdCtx, stop := context.WithCancel(ctx)
	cmd := exec.CommandContext(etcdCtx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd"),
		"--name=peer-0", "--data-dir="+filepath.Join(dir, "data"), "--log-level=error",
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL, "--initial-cluster=peer-0="+peerURL,
		"--client-cert-auth=true", "--trusted-ca-file="+write(server, pki.KeyCACert), "--cert-file="+write(server, pki.KeyCert), "--key-file="+write(server, pki.KeyKey),
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file="+write(peer, pki.KeyCACert), "--peer-cert-file="+write(peer, pki.KeyCert), "--peer-key-file="+write(peer, pki.KeyKey),
		"--peer-skip-client-san-verification=true")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); _ = cmd.Wait() })

	// GET /version on the peer port, presenting the given certificate.
	get := func(secret string) error {
		pair, err := tls.X509KeyPair(secrets[secret].Data[pki.KeyCert], secrets[secret].Data[pki.KeyKey])
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(secrets[peer].Data[pki.KeyCACert])
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{pair}, RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
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
	eventually(t, timeout, "the peer port to accept the peer certificate", func() error { return get(peer) })
	for _, s := range []string{names.ClientSecret("peer"), names.OperatorSecret("peer")} {
		err := get(s)
		if err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("the peer port accepted %s: %v", s, err)
		}
	}
}
