// Package testsupport holds helpers that tests of several packages share.
package testsupport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// Etcd is a real etcd server on loopback: the release `make test` builds from source
// (KUBEBUILDER_ASSETS).
type Etcd struct {
	Name, ClientURL, PeerURL, MetricsURL, DataDir string
}

// StartEtcd starts a single-member etcd named name with the given extra flags, stops it when
// the test ends, and returns once it listens (clients wait for it to serve: their scheme and
// certificates are the caller's). With tls, the client URL is https (the caller's flags give
// the certificates).
func StartEtcd(t testing.TB, name string, tls bool, extra ...string) *Etcd {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run these tests with `make test`, which builds etcd from source")
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	e := &Etcd{Name: name, DataDir: filepath.Join(t.TempDir(), "data"),
		ClientURL:  fmt.Sprintf("%s://127.0.0.1:%d", scheme, FreePort(t)),
		PeerURL:    fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"--name=" + name, "--data-dir=" + e.DataDir, "--log-level=error",
		"--listen-client-urls=" + e.ClientURL, "--advertise-client-urls=" + e.ClientURL, "--listen-metrics-urls=" + e.MetricsURL,
		"--listen-peer-urls=" + e.PeerURL, "--initial-advertise-peer-urls=" + e.PeerURL, "--initial-cluster=" + name + "=" + e.PeerURL}, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(assets, "etcd"), args...) //nolint:gosec // the etcd make test built
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(e.MetricsURL + "/health") //nolint:gosec,noctx // loopback, in a test
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd %s is not healthy after a minute: %v", name, err)
		}
	}
}
