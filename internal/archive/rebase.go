package archive

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/internal/backup"
)

// Rebase makes, from a snapshot and the archive after it, the snapshot of the cluster at a
// later revision: what a restore to a point restores. It needs etcd and etcdutl (the etcd
// image's) and a directory of its own.
type Rebase struct {
	Etcd, Etcdutl string
	// Dir holds the throwaway member; it is emptied first and removed after.
	Dir string
}

// Run restores snapshot (at revision from) into a throwaway single member that listens on
// loopback only, replays the archive's records up to revision to onto it, saves its snapshot
// as out and stops it. Nothing is written to out unless the replay reached to.
func (o Rebase) Run(ctx context.Context, snapshot string, s Store, prefix string, to int64, out string) (Replayed, error) {
	ks, err := backup.Inspect(snapshot)
	if err != nil {
		return Replayed{}, fmt.Errorf("the snapshot to rebase: %w", err)
	}
	// Refused before anything runs: a target the archive does not reach.
	spans, err := Segments(ctx, s, prefix)
	if err != nil {
		return Replayed{}, err
	}
	if to < ks.Revision {
		return Replayed{From: ks.Revision, To: ks.Revision}, fmt.Errorf("the target revision %d is before the snapshot's %d: restore from an older snapshot", to, ks.Revision)
	}
	if _, err := Cover(spans, ks.Revision, to); err != nil {
		return Replayed{From: ks.Revision, To: ks.Revision}, err
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return Replayed{}, err
	}
	defer os.RemoveAll(o.Dir)
	peer, err := loopbackURL()
	if err != nil {
		return Replayed{}, err
	}
	client, err := loopbackURL()
	if err != nil {
		return Replayed{}, err
	}
	data := filepath.Join(o.Dir, "data")
	restore := exec.CommandContext(ctx, o.Etcdutl, "snapshot", "restore", snapshot, "--data-dir="+data, //nolint:gosec // the etcd image's etcdutl
		"--name=rebase", "--initial-cluster=rebase="+peer, "--initial-advertise-peer-urls="+peer)
	if b, err := restore.CombinedOutput(); err != nil {
		return Replayed{}, fmt.Errorf("etcdutl snapshot restore: %w: %s", err, strings.TrimSpace(string(b)))
	}
	var logs strings.Builder
	// Without fsync: the member is thrown away, and only the snapshot saved from it counts.
	cmd := exec.Command(o.Etcd, "--name=rebase", "--data-dir="+data, "--log-level=error", "--unsafe-no-fsync", //nolint:gosec // the etcd image's etcd
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=rebase="+peer)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return Replayed{}, fmt.Errorf("starting etcd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			// etcd stops on SIGTERM by raising it again once it has closed its backend.
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
					return nil
				}
			}
			return err
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			return fmt.Errorf("etcd did not stop within 30 s of SIGTERM: %w", <-exited)
		}
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return Replayed{}, errors.Join(err, stop())
	}
	defer c.Close()
	if err := waitServing(ctx, c, exited, &logs); err != nil {
		return Replayed{}, errors.Join(err, stop())
	}
	got, err := Replay(ctx, c, s, prefix, ks.Revision, to)
	if err == nil && got.To != to {
		err = fmt.Errorf("the replay stopped at revision %d, not %d", got.To, to)
	}
	if err == nil {
		tmp := out + ".part"
		_ = os.Remove(tmp)
		if _, err = backup.Save(ctx, c, tmp); err == nil {
			err = os.Rename(tmp, out)
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
	}
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stopping the throwaway etcd: %w", serr)
	}
	return got, err
}

// waitServing waits, a minute at most, until the member answers.
func waitServing(ctx context.Context, c *clientv3.Client, exited <-chan error, logs *strings.Builder) error {
	deadline := time.Now().Add(time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Get(rctx, "\x00", clientv3.WithCountOnly())
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("the throwaway etcd exited (%v): %s", werr, strings.TrimSpace(logs.String()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the throwaway etcd does not answer after a minute: %w", err)
		}
	}
}

// loopbackURL is an http URL on a loopback port that was free a moment ago.
func loopbackURL() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "http://" + l.Addr().String(), nil
}

// DirStore is a Store in a local directory: the segments a restore fetched.
type DirStore string

// Put writes name under the directory, through a temporary file.
func (d DirStore) Put(_ context.Context, name string, data []byte) error {
	p := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(p+".part", data, 0o600); err != nil {
		return err
	}
	return os.Rename(p+".part", p)
}

// Get reads name.
func (d DirStore) Get(_ context.Context, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(name)))
}

// List names the files under prefix.
func (d DirStore) List(_ context.Context, prefix string) ([]string, error) {
	var out []string
	root := string(d)
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() || strings.HasSuffix(p, ".part") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if name := filepath.ToSlash(rel); strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
		return nil
	})
	return out, err
}
