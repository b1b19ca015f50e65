// Package loopback starts the daemons the measuring tools under hack/ need (etcd, an S3
// server) on loopback, as child processes stopped with the tool.
package loopback

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

// Bucket is a bucket URL for kind file (a directory under dir) or s3 (a versitygw S3 server,
// binary gw, started on loopback with its data under dir; what waits for its end is
// returned), with its credentials in the environment.
func Bucket(ctx context.Context, kind, dir, gw string) (string, func(), error) {
	switch kind {
	case "file":
		if err := os.MkdirAll(filepath.Join(dir, "bucket"), 0o700); err != nil {
			return "", nil, err
		}
		return "file://" + filepath.Join(dir, "bucket"), nil, nil
	case "s3":
		sp, err := FreePort()
		if err != nil {
			return "", nil, err
		}
		if err := os.MkdirAll(filepath.Join(dir, "s3", "backups"), 0o700); err != nil {
			return "", nil, err
		}
		key := make([]byte, 16)
		_, _ = rand.Read(key)
		access, secret := "loop"+hex.EncodeToString(key[:4]), hex.EncodeToString(key)
		w, err := Start(ctx, gw, []string{"--port", fmt.Sprintf("127.0.0.1:%d", sp), "posix", filepath.Join(dir, "s3")},
			[]string{"ROOT_ACCESS_KEY_ID=" + access, "ROOT_SECRET_ACCESS_KEY=" + secret})
		if err != nil {
			return "", nil, err
		}
		if err := WaitTCP(fmt.Sprintf("127.0.0.1:%d", sp)); err != nil {
			return "", w, err
		}
		if err := errors.Join(os.Setenv("AWS_ACCESS_KEY_ID", access), os.Setenv("AWS_SECRET_ACCESS_KEY", secret)); err != nil {
			return "", w, err
		}
		return fmt.Sprintf("s3://backups?region=us-east-1&endpoint=http://127.0.0.1:%d&use_path_style=true", sp), w, nil
	}
	return "", nil, fmt.Errorf("--store %q: s3 or file", kind)
}
