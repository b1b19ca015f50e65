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
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
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
// the test ends, and returns once it is healthy. With tls, the client URL is https (the
// caller's flags give the certificates).
func StartEtcd(t testing.TB, name string, tls bool, extra ...string) *Etcd {
	t.Helper()
	return StartEtcdWith(t, name, EtcdOptions{TLS: tls, Args: extra})
}

// EtcdOptions of StartEtcdWith.
type EtcdOptions struct {
	// DataDir to use (a new one when empty): a member restarts on its data.
	DataDir string
	// PeerURL to advertise (a free loopback port when empty): a restored member keeps the
	// peer URL it was restored with.
	PeerURL string
	TLS     bool
	Args    []string
}

// StartEtcdWith starts a single-member etcd as o says.
func StartEtcdWith(t testing.TB, name string, o EtcdOptions) *Etcd {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run these tests with `make test`, which builds etcd from source")
	}
	scheme := "http"
	if o.TLS {
		scheme = "https"
	}
	e := &Etcd{Name: name, DataDir: o.DataDir, PeerURL: o.PeerURL,
		ClientURL:  fmt.Sprintf("%s://127.0.0.1:%d", scheme, FreePort(t)),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))}
	if e.DataDir == "" {
		e.DataDir = filepath.Join(t.TempDir(), "data")
	}
	if e.PeerURL == "" {
		e.PeerURL = fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
	}
	extra := o.Args
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
		resp, err := http.Get(e.MetricsURL + "/health")
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

// Client is a plaintext client of the member, closed when the test ends.
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// descText reads a description's name and help out of its String(): client_golang exports
// neither.
var descText = regexp.MustCompile(`fqName: "([^"]+)", help: "([^"]*)"`)

// DescName is the family name and help text of a Prometheus description.
func DescName(d *prometheus.Desc) (name, help string) {
	m := descText.FindStringSubmatch(d.String())
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}
