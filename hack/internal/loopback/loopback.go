// Package loopback starts the daemons the measuring tools under hack/ need (etcd, an S3
// server) on loopback, as child processes stopped with the tool.
package loopback

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// FreePort is a TCP port on loopback nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs a daemon until ctx ends, then stops it gracefully (SIGTERM); it returns what
// waits for its end.
func Start(ctx context.Context, name string, args []string, env []string) (func(), error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() { _ = cmd.Wait() }, nil
}

// WaitTCP waits, a minute at most, until something listens at addr.
func WaitTCP(addr string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			return c.Close()
		}
	}
	return fmt.Errorf("nothing listens at %s after a minute", addr)
}

// StartEtcd starts a single etcd member named name with its data in dir/etcd, on loopback,
// with extra flags, and returns its client URL once it listens, and what waits for its end.
func StartEtcd(ctx context.Context, etcdBin, dir, name string, extra ...string) (string, func(), error) {
	cp, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	pp, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	curl, purl := fmt.Sprintf("http://127.0.0.1:%d", cp), fmt.Sprintf("http://127.0.0.1:%d", pp)
	args := append([]string{"--name=" + name, "--data-dir=" + filepath.Join(dir, "etcd"), "--log-level=error",
		"--listen-client-urls=" + curl, "--advertise-client-urls=" + curl, "--listen-peer-urls=" + purl,
		"--initial-advertise-peer-urls=" + purl, "--initial-cluster=" + name + "=" + purl}, extra...)
	w, err := Start(ctx, etcdBin, args, nil)
	if err != nil {
		return "", nil, err
	}
	return curl, w, WaitTCP(fmt.Sprintf("127.0.0.1:%d", cp))
}
