// Command restore-time measures what a restore to a point costs on a large keyspace: it
// starts a real etcd on loopback, fills it (1 GiB by default), takes a snapshot, archives a
// run of changes after it (internal/archive, into a directory), then times, one after the
// other, what a member's restore does: the rebase of the snapshot to the newest archived
// revision (archive.Rebase: etcdutl restore into a throwaway member, the replay, its
// snapshot) and etcdutl's restore of the result into a data directory, with a plain etcdutl
// restore of the original snapshot for comparison. A measurement, not a test: see
// docs/reports/pitr.md.
//
//	go run ./hack/restore-time --size-mib 1024 --changes 20000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/hack/internal/loopback"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
)

type options struct {
	etcd, etcdutl, dir          string
	sizeMiB, valueSize, changes int
}

func main() {
	home, _ := os.UserHomeDir()
	var o options
	flag.StringVar(&o.etcd, "etcd", filepath.Join(home, ".cache/quorate/etcd/v3.6.16/bin/etcd"), "etcd binary (hack/build-etcd.sh)")
	flag.StringVar(&o.etcdutl, "etcdutl", filepath.Join(home, ".cache/quorate/etcd/v3.6.16/bin/etcdutl"), "etcdutl binary, beside etcd")
	flag.StringVar(&o.dir, "dir", "/var/tmp", "where the data goes (a disk, not a tmpfs, for disk figures)")
	flag.IntVar(&o.sizeMiB, "size-mib", 1024, "MiB of values to fill the keyspace with before the snapshot")
	flag.IntVar(&o.valueSize, "value-size", 8192, "bytes per value of the fill")
	flag.IntVar(&o.changes, "changes", 20000, "revisions written after the snapshot, archived and replayed")
	flag.Parse()
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

// timed runs f and returns how long it took.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// fill writes sizeMiB of values in transactions of 16 puts, from 4 writers.
func fill(ctx context.Context, c *clientv3.Client, sizeMiB, valueSize int) error {
	value := string(make([]byte, valueSize))
	keys := sizeMiB << 20 / valueSize
	const batch = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				first := int(next.Add(batch)) - batch
				if first >= keys {
					return
				}
				var ops []clientv3.Op
				for k := first; k < min(first+batch, keys); k++ {
					ops = append(ops, clientv3.OpPut(fmt.Sprintf("fill/%08d", k), value))
				}
				if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// change writes n revisions (256-byte overwrites of 10000 keys, and a delete every 50th)
// from 8 writers and returns the newest revision.
func change(ctx context.Context, c *clientv3.Client, n int) (int64, error) {
	value := string(make([]byte, 256))
	var next, last atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				var resp clientv3.OpResponse
				var err error
				if i%50 == 0 {
					resp, err = c.Do(ctx, clientv3.OpDelete(fmt.Sprintf("fill/%08d", i)))
				} else {
					resp, err = c.Do(ctx, clientv3.OpPut(fmt.Sprintf("change/%05d", i%10000), value))
				}
				if err != nil {
					errs[w] = err
					return
				}
				rev := revisionOf(resp)
				for old := last.Load(); rev > old && !last.CompareAndSwap(old, rev); old = last.Load() {
				}
			}
		}()
	}
	wg.Wait()
	return last.Load(), errors.Join(errs...)
}

func revisionOf(r clientv3.OpResponse) int64 {
	if p := r.Put(); p != nil {
		return p.Header.Revision
	}
	return r.Del().Header.Revision
}

// restore runs etcdutl snapshot restore of snap into dir.
func restore(etcdutl, snap, dir string) error {
	out, err := exec.Command(etcdutl, "snapshot", "restore", snap, "--data-dir="+dir, "--name=m",
		"--initial-cluster=m=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380").CombinedOutput()
	if err != nil {
		return fmt.Errorf("etcdutl snapshot restore: %w: %s", err, out)
	}
	return nil
}

func run(o options) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp(o.dir, "restore-time-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	curl, wait, err := loopback.StartEtcd(ctx, o.etcd, dir, "source", "--quota-backend-bytes=8589934592")
	if wait != nil {
		defer func() { cancel(); wait() }()
	}
	if err != nil {
		return err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{curl}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), MaxCallSendMsgSize: 4 << 20})
	if err != nil {
		return err
	}
	defer c.Close()

	return measure(ctx, o, c, curl, dir)
}

// measure fills the source, saves and archives it, and times a member's restore to a point.
func measure(ctx context.Context, o options, c *clientv3.Client, curl, dir string) error {
	tFill, err := timed(func() error { return fill(ctx, c, o.sizeMiB, o.valueSize) })
	if err != nil {
		return fmt.Errorf("filling: %w", err)
	}
	snap := filepath.Join(dir, "snap.db")
	var saved backup.Saved
	tSave, err := timed(func() (err error) { saved, err = backup.Save(ctx, c, snap); return err })
	if err != nil {
		return err
	}
	from, err := backup.Inspect(snap)
	if err != nil {
		return err
	}

	store := archive.DirStore(filepath.Join(dir, "archive"))
	status, err := c.Status(ctx, curl)
	if err != nil {
		return err
	}
	id := status.Header.ClusterId
	a := &archive.Archiver{Client: c, Store: store, Prefix: "a", ClusterID: id, MaxLag: 200 * time.Millisecond}
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	archived := make(chan error, 1)
	go func() { archived <- a.Run(actx, from.Revision) }()
	to, err := change(ctx, c, o.changes)
	if err != nil {
		return fmt.Errorf("writing the changes: %w", err)
	}
	if err := waitArchived(ctx, store, id, to); err != nil {
		return err
	}
	acancel()
	if err := <-archived; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the archiver: %w", err)
	}

	rebased := filepath.Join(dir, "rebased.db")
	var replayed archive.Replayed
	tRebase, err := timed(func() (err error) {
		replayed, err = archive.Rebase{Etcd: o.etcd, Etcdutl: o.etcdutl, Dir: filepath.Join(dir, "work")}.Run(ctx, snap, store, "a", id, to, rebased)
		return err
	})
	if err != nil {
		return fmt.Errorf("rebasing: %w", err)
	}
	tPlain, err := timed(func() error { return restore(o.etcdutl, snap, filepath.Join(dir, "plain")) })
	if err != nil {
		return err
	}
	tRestore, err := timed(func() error { return restore(o.etcdutl, rebased, filepath.Join(dir, "restored")) })
	if err != nil {
		return err
	}
	rs, err := os.Stat(rebased)
	if err != nil {
		return err
	}
	fmt.Println("| keyspace | snapshot | changes replayed | fill | snapshot saved | plain restore | rebase (restore, replay, snapshot) | restore of the rebased | a member's restore to a point |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	fmt.Printf("| %d keys, %d MiB of values | %d MiB at revision %d | %d (to revision %d) | %s | %s | %s | %s (rebased snapshot %d MiB) | %s | %s |\n",
		from.Keys, o.sizeMiB, saved.Size>>20, from.Revision, replayed.Records, to, r(tFill), r(tSave), r(tPlain), r(tRebase), rs.Size()>>20, r(tRestore), r(tRebase+tRestore))
	return nil
}

func r(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// waitArchived waits, a minute at most, until the archive holds revision to.
func waitArchived(ctx context.Context, s archive.Store, id uint64, to int64) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		last, err := archive.Last(ctx, s, "a", id)
		if err != nil {
			return err
		}
		if last >= to {
			return nil
		}
	}
	return fmt.Errorf("the archive did not reach revision %d within a minute", to)
}
