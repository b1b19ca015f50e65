// Package testsupport holds helpers that tests of several packages share.
package testsupport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// handedOut are the ports FreePort returned in this test binary.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	// Not a port the kernel hands out (port 0, outgoing connections: 32768-60999 by default),
	// which another process (an envtest's API server, a client) may take between this check
	// and the test's own listen; nor a NodePort (30000-32767). Random, and free right now.
	// Never the same port twice in one test binary either: a member's three ports, and a
	// cluster's members, are chosen before any of them listens.
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	var err error
	for range 100 {
		port := 20000 + rand.IntN(10000) //nolint:gosec // a test port, not a secret
		if handedOut[port] {
			continue
		}
		var l net.Listener
		if l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = l.Close()
			handedOut[port] = true
			return port
		}
	}
	t.Fatalf("no free loopback port in 20000-29999: %v", err)
	return 0
}

// Etcd is a real etcd server on loopback: the release `make test` builds from source
// (KUBEBUILDER_ASSETS).
type Etcd struct {
	Name, ClientURL, PeerURL, MetricsURL, DataDir string
	// stop ends the process gracefully and waits for it.
	stop func()
}

// Stop ends the member gracefully (SIGTERM: etcd commits its backend before it exits) and
// waits until it has.
func (e *Etcd) Stop() { e.stop() }

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
	// InitialCluster of a member of a cluster (StartCluster); the member alone when empty.
	InitialCluster string
	TLS            bool
	Args           []string
}

// StartEtcdWith starts a single-member etcd as o says.
func StartEtcdWith(t testing.TB, name string, o EtcdOptions) *Etcd {
	t.Helper()
	e := launchEtcd(t, name, o)
	e.waitHealthy(t)
	return e
}

// StartCluster starts a cluster of n members on loopback (named name-0, name-1, ...) with
// the given extra flags, and returns once every member is healthy.
func StartCluster(t testing.TB, name string, n int, extra ...string) []*Etcd {
	t.Helper()
	peers := make([]string, n)
	initial := make([]string, n)
	for i := range peers {
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		initial[i] = fmt.Sprintf("%s-%d=%s", name, i, peers[i])
	}
	members := make([]*Etcd, n)
	for i := range members {
		members[i] = launchEtcd(t, fmt.Sprintf("%s-%d", name, i), EtcdOptions{PeerURL: peers[i], InitialCluster: strings.Join(initial, ","), Args: extra})
	}
	for _, e := range members {
		e.waitHealthy(t)
	}
	return members
}

// Restart starts a stopped member again on its data and peer URL, at a new client URL.
func (e *Etcd) Restart(t testing.TB, extra ...string) *Etcd {
	t.Helper()
	return StartEtcdWith(t, e.Name, EtcdOptions{DataDir: e.DataDir, PeerURL: e.PeerURL, InitialCluster: e.Name + "=" + e.PeerURL, Args: extra})
}

// launchEtcd starts the etcd process, without waiting for it to serve.
func launchEtcd(t testing.TB, name string, o EtcdOptions) *Etcd {
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
	if o.InitialCluster == "" {
		o.InitialCluster = name + "=" + e.PeerURL
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"--name=" + name, "--data-dir=" + e.DataDir, "--log-level=error",
		"--listen-client-urls=" + e.ClientURL, "--advertise-client-urls=" + e.ClientURL, "--listen-metrics-urls=" + e.MetricsURL,
		"--listen-peer-urls=" + e.PeerURL, "--initial-advertise-peer-urls=" + e.PeerURL, "--initial-cluster=" + o.InitialCluster}, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(assets, "etcd"), args...) //nolint:gosec // the etcd make test built
	cmd.Stderr = os.Stderr
	// Gracefully, so a stopped member's backend holds what it applied; killed if it hangs.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	e.stop = func() { once.Do(func() { cancel(); _ = cmd.Wait() }) }
	t.Cleanup(e.stop)
	return e
}

// waitHealthy waits, a minute at most, until the member serves.
func (e *Etcd) waitHealthy(t testing.TB) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var resp *http.Response
		resp, err = http.Get(e.MetricsURL + "/health")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd %s is not healthy after a minute: %v", e.Name, err)
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
