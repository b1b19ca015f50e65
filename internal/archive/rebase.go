package archive

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/pki"
)

// Rebase makes, from a snapshot and the archive after it, the snapshot of the cluster at a
// later revision: what a restore to a point restores. It needs etcd and etcdutl (the etcd
// image's) and a directory of its own.
type Rebase struct {
	Etcd, Etcdutl string
	// Dir holds the throwaway member; it is emptied first and removed after.
	Dir string
	// beforeReplay, in tests, runs once the member answers, and afterReplay once the replay
	// is done, before the result is saved (to outlast its leases' TTLs).
	beforeReplay, afterReplay func()
}

// Run restores snapshot (at revision from) into a throwaway single member that listens on
// loopback only, replays cluster id's archive up to revision to onto it, saves its snapshot as
// out and stops it. Nothing is written to out unless the saved snapshot is at revision to.
// The result is compacted below the target (compactBefore): the revision before it is the
// oldest that reads and watches can ask for.
//
// The member keeps every lease of the snapshot, and every lease the replay grants again,
// alive until the result is saved: a member that becomes leader starts their TTLs again, and
// a lease that ran out would revoke its keys at a revision of its own, which the archive does
// not have.
func (o Rebase) Run(ctx context.Context, snapshot string, s Store, prefix string, clusterID uint64, to int64, out string) (Replayed, error) {
	if o.Dir == "" {
		return Replayed{}, errors.New("rebase needs a directory of its own")
	}
	ks, err := backup.Inspect(snapshot)
	if err != nil {
		return Replayed{}, fmt.Errorf("the snapshot to rebase: %w", err)
	}
	// Refused before anything runs: a target the archive does not reach.
	if to < ks.Revision {
		return Replayed{From: ks.Revision, To: ks.Revision}, fmt.Errorf("the target revision %d is before the snapshot's %d: restore from an older snapshot", to, ks.Revision)
	}
	if _, err := cover(ctx, s, prefix, clusterID, ks.Revision, to); err != nil {
		return Replayed{From: ks.Revision, To: ks.Revision}, err
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return Replayed{}, err
	}
	defer func() { _ = os.RemoveAll(o.Dir) }()
	c, stop, err := o.start(ctx, snapshot)
	if err != nil {
		return Replayed{}, err
	}
	defer c.Close()
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	if err := keepLeasesAlive(kctx, c); err != nil {
		return Replayed{}, errors.Join(err, stop())
	}
	if o.beforeReplay != nil {
		o.beforeReplay()
	}
	// kctx: the leases the replay grants are kept alive, as the snapshot's are, until the
	// result is saved.
	got, err := Replay(kctx, c, s, prefix, clusterID, ks.Revision, to)
	if err == nil && got.To != to {
		err = fmt.Errorf("the replay stopped at revision %d, not %d", got.To, to)
	}
	if err == nil && o.afterReplay != nil {
		o.afterReplay()
	}
	if err == nil {
		err = compactBefore(ctx, c, to)
	}
	if err == nil {
		err = saveAt(ctx, c, to, out)
	}
	kcancel()
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("stopping the throwaway etcd: %w", serr)
	}
	return got, err
}

// start restores snapshot into the throwaway member's directory and starts it, listening on
// loopback only; it returns a client of it, once it answers, and what stops it.
func (o Rebase) start(ctx context.Context, snapshot string) (*clientv3.Client, func() error, error) {
	urls, err := loopbackURLs(2)
	if err != nil {
		return nil, nil, err
	}
	peer, client := urls[0], strings.Replace(urls[1], "http://", "https://", 1)
	data := filepath.Join(o.Dir, "data")
	// The snapshot may have etcd's authentication on (spec.users): the throwaway member
	// serves TLS with a CA of its own and takes the client's certificate as its user, root.
	tlsFlags, tlsCfg, err := throwawayTLS(filepath.Join(o.Dir, "tls"))
	if err != nil {
		return nil, nil, err
	}
	restore := exec.CommandContext(ctx, o.Etcdutl, "snapshot", "restore", snapshot, "--data-dir="+data, //nolint:gosec // the etcd image's etcdutl
		"--name=rebase", "--initial-cluster=rebase="+peer, "--initial-advertise-peer-urls="+peer)
	restore.Env = withoutEtcdEnv()
	if b, err := restore.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("etcdutl snapshot restore: %w: %s", err, strings.TrimSpace(string(b)))
	}
	var logs strings.Builder
	// Without fsync: the member is thrown away, and only the snapshot saved from it counts.
	// Without the limits on a transaction's operations and size: a record is one transaction,
	// as large as the one etcd committed (a lease's revocation deletes every key on it).
	// The quota is etcd's largest: the replay keeps every revision until the end, and the
	// result is compacted and defragmented before it is saved.
	args := append([]string{"--name=rebase", "--data-dir=" + data, "--log-level=error", "--unsafe-no-fsync",
		"--max-txn-ops=1000000", "--max-request-bytes=1073741824", "--quota-backend-bytes=8589934592",
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer, "--initial-cluster=rebase=" + peer}, tlsFlags...)
	cmd := exec.Command(o.Etcd, args...) //nolint:gosec // the etcd image's etcd
	cmd.Env = withoutEtcdEnv()
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting etcd: %w", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("etcd did not stop within 30 s of SIGTERM: %w", waitErr)
		}
		// etcd stops on SIGTERM by raising it again once it has closed its backend.
		var exit *exec.ExitError
		if errors.As(waitErr, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
				return nil
			}
		}
		return waitErr
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: tlsCfg,
		MaxCallSendMsgSize: 1 << 30, MaxCallRecvMsgSize: 1 << 30})
	if err != nil {
		return nil, nil, errors.Join(err, stop())
	}
	if err := waitServing(ctx, c, exited, &waitErr, &logs); err != nil {
		_ = c.Close()
		return nil, nil, errors.Join(err, stop())
	}
	return c, stop, nil
}

// throwawayTLS writes, under dir, a CA of its own, a server certificate for 127.0.0.1 and a
// client certificate for root, and returns etcd's flags and the client's configuration.
func throwawayTLS(dir string) ([]string, *tls.Config, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	ca, err := pki.NewCA("quorate-rebase", now)
	if err != nil {
		return nil, nil, err
	}
	server, err := ca.Issue("quorate-rebase", nil, []net.IP{net.IPv4(127, 0, 0, 1)}, pki.ServerAndClient, now)
	if err != nil {
		return nil, nil, err
	}
	root, err := ca.Issue("root", nil, nil, pki.ClientOnly, now)
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{"ca.crt": ca.CertPEM, "server.crt": server.CertPEM, "server.key": server.KeyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, err
		}
	}
	cfg, err := pki.ClientTLS(root.CertPEM, root.KeyPEM, ca.CertPEM, "127.0.0.1")
	if err != nil {
		return nil, nil, err
	}
	return []string{"--cert-file=" + filepath.Join(dir, "server.crt"), "--key-file=" + filepath.Join(dir, "server.key"),
		"--trusted-ca-file=" + filepath.Join(dir, "ca.crt"), "--client-cert-auth"}, cfg, nil
}

// saveAt saves the member's snapshot as out, through a file beside it that is checked (etcd's
// integrity hash, revision to) and synced before it is renamed into place.
func saveAt(ctx context.Context, c *clientv3.Client, to int64, out string) error {
	tmp := out + ".part"
	_ = os.Remove(tmp)
	err := func() error {
		if _, err := backup.Save(ctx, c, tmp); err != nil {
			return err
		}
		ks, err := backup.Inspect(tmp)
		if err != nil {
			return err
		}
		if ks.Revision != to {
			return fmt.Errorf("the saved snapshot is at revision %d, not %d: something wrote to the throwaway member", ks.Revision, to)
		}
		f, err := os.Open(tmp) //nolint:gosec // a path of the caller's
		if err != nil {
			return err
		}
		serr := f.Sync()
		if cerr := f.Close(); serr == nil {
			serr = cerr
		}
		if serr != nil {
			return serr
		}
		return os.Rename(tmp, out)
	}()
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// compactBefore compacts the member's history below revision to and defragments it. The
// replay may span a day of changes, which the original cluster compacted away as it went
// (every hour by default): kept, they could put the restored database over its quota. The
// revision before the target stays readable, and the target's own changes are above the
// compaction, so a target that only deletes keys keeps its tombstones (etcd before 3.5.16
// drops a compacted revision's deletions, and the snapshot would come out at an older
// revision).
func compactBefore(ctx context.Context, c *clientv3.Client, to int64) error {
	if to <= 1 {
		return nil
	}
	if _, err := c.Compact(ctx, to-1, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) && !errors.Is(err, rpctypes.ErrFutureRev) {
		return fmt.Errorf("compacting the throwaway member before revision %d: %w", to, err)
	}
	if _, err := c.Defragment(ctx, c.Endpoints()[0]); err != nil {
		return fmt.Errorf("defragmenting the throwaway member: %w", err)
	}
	return nil
}

// keepLeasesAlive keeps every lease the member has alive until ctx ends.
func keepLeasesAlive(ctx context.Context, c *clientv3.Client) error {
	leases, err := c.Leases(ctx)
	if err != nil {
		return fmt.Errorf("listing the snapshot's leases: %w", err)
	}
	for _, l := range leases.Leases {
		if err := keepAlive(ctx, c, int64(l.ID)); err != nil {
			return err
		}
	}
	return nil
}

// keepAlive keeps lease id alive until ctx ends. The client ends a keepalive for good when an
// answer comes later than the lease's TTL (a stalled member, a loaded machine): it is asked
// again then, every 100 ms at most, as long as ctx lasts. A lease that ran out all the same
// revokes its keys at a revision of its own, which the replay or the save then refuses.
func keepAlive(ctx context.Context, c *clientv3.Client, id int64) error {
	ch, err := c.KeepAlive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return fmt.Errorf("keeping lease %x alive: %w", id, err)
	}
	go func() {
		for {
			for range ch {
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			next, err := c.KeepAlive(ctx, clientv3.LeaseID(id))
			if err != nil {
				return
			}
			ch = next
		}
	}()
	return nil
}

// withoutEtcdEnv is this process's environment without ETCD_ variables, which etcd and
// etcdutl would take as flags besides the ones given.
func withoutEtcdEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") {
			out = append(out, kv)
		}
	}
	return out
}

// waitServing waits, a minute at most, until the member answers.
func waitServing(ctx context.Context, c *clientv3.Client, exited <-chan struct{}, waitErr *error, logs *strings.Builder) error {
	deadline := time.Now().Add(time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Get(rctx, "\x00", clientv3.WithCountOnly())
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the throwaway etcd exited (%v): %s", *waitErr, strings.TrimSpace(logs.String()))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the throwaway etcd does not answer after a minute: %w", err)
		}
	}
}

// loopbackURLs are n http URLs on distinct loopback ports that were free a moment ago (all
// held open until every one is chosen).
func loopbackURLs(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, "http://"+l.Addr().String())
	}
	return out, nil
}

// DirStore is a Store in a local directory: the segments a restore fetched.
type DirStore string

// Put writes name under the directory, through a temporary file.
func (d DirStore) Put(_ context.Context, name string, data []byte) error {
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("%q is not a name under the directory", name)
	}
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

// Delete removes name; one that is gone is no error.
func (d DirStore) Delete(_ context.Context, name string) error {
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("%q is not a name under the directory", name)
	}
	if err := os.Remove(filepath.Join(string(d), filepath.FromSlash(name))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
