package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// A restore to a point, as the pod runs it: the fetch's archive.Prepare writes the plan and the
// segments up to the target; Restore rebases the snapshot by them with the real etcd and
// etcdutl and restores the result, which holds exactly the source's keyspace at the target
// and nothing after it; the plan, the segments and both snapshots are removed. A target past
// the archive is refused by Prepare, which writes no plan.
func TestRestoreToAPoint(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "pit-src", false).Client(t)
	for i := range 20 {
		if _, err := c.Put(ctx, fmt.Sprintf("k%02d", i), "v0"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.db")
	if _, err := backup.Save(ctx, c, snap); err != nil {
		t.Fatal(err)
	}
	from, err := backup.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	store := archive.DirStore(filepath.Join(dir, "bucket"))
	const prefix = "ns/src/archive/s"
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- (&archive.Archiver{Client: c, Store: store, Prefix: prefix, ClusterID: id.Header.ClusterId, MaxLag: 20 * time.Millisecond}).Run(actx, from.Revision)
	}()
	var mid, last int64
	for i := range 30 {
		resp, err := c.Put(ctx, fmt.Sprintf("k%02d", i%25), fmt.Sprintf("v%d", i+1))
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
		if i == 14 {
			mid = last
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got, _ := archive.Last(ctx, store, prefix, id.Header.ClusterId); got >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the archive never held revision %d", last)
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the archiver ended with %v", err)
	}
	want, err := backup.KeyspaceAt(ctx, c, mid)
	if err != nil {
		t.Fatal(err)
	}

	archiveDir := filepath.Join(dir, "archive")
	if _, err := archive.Prepare(ctx, store, prefix, id.Header.ClusterId, from.Revision, archive.Target{Revision: last + 100}, archiveDir); !errors.As(err, new(*archive.CoverError)) {
		t.Fatalf("a target past the archive: %v, want a CoverError", err)
	}
	if plan, err := archive.ReadPlan(archiveDir); plan != nil || err != nil {
		t.Fatalf("a refused target left a plan %+v (%v)", plan, err)
	}
	plan, err := archive.Prepare(ctx, store, prefix, id.Header.ClusterId, from.Revision, archive.Target{Revision: mid}, archiveDir)
	if err != nil {
		t.Fatal(err)
	}
	if wantPlan := (archive.Plan{ClusterID: id.Header.ClusterId, Prefix: prefix, From: from.Revision, To: mid, Asked: fmt.Sprintf("revision %d", mid)}); plan != wantPlan {
		t.Fatalf("plan %+v, want %+v", plan, wantPlan)
	}

	peer := fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))
	etcdutl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcdutl")
	o := RestoreOptions{DataDir: filepath.Join(dir, "data"), MarkerPath: filepath.Join(dir, "marker.json"), Snapshot: snap, ArchiveDir: archiveDir,
		Command: []string{etcdutl, "snapshot", "restore", snap, "--name=m0", "--initial-cluster=m0=" + peer, "--initial-cluster-token=tok", "--initial-advertise-peer-urls=" + peer}}
	var log bytes.Buffer
	if err := Restore(ctx, o, &log); err != nil {
		t.Fatalf("restore: %v\n%s", err, log.String())
	}
	for _, p := range []string{snap, snap + ".rebased", archiveDir, o.DataDir + ".rebasing"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was left after the restore: %v", p, err)
		}
	}
	rc := testsupport.StartEtcdWith(t, "m0", testsupport.EtcdOptions{DataDir: o.DataDir, PeerURL: peer}).Client(t)
	got, err := backup.KeyspaceAt(ctx, rc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("restored to revision %d: keyspace %+v, the source's at that revision %+v\n%s", mid, got, want, log.String())
	}

	// A target at the snapshot's own revision: the snapshot is restored as it is, its history
	// kept (a rebase would have compacted it).
	same := filepath.Join(dir, "same.db")
	if _, err := backup.Save(ctx, c, same); err != nil {
		t.Fatal(err)
	}
	sameDir := filepath.Join(dir, "archive-same")
	if _, err := archive.Prepare(ctx, store, prefix, id.Header.ClusterId, last, archive.Target{Revision: last}, sameDir); err != nil {
		t.Fatal(err)
	}
	peer = fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))
	asIs := RestoreOptions{DataDir: filepath.Join(dir, "same"), MarkerPath: filepath.Join(dir, "same.json"), Snapshot: same, ArchiveDir: sameDir,
		Command: []string{etcdutl, "snapshot", "restore", same, "--name=m2", "--initial-cluster=m2=" + peer, "--initial-cluster-token=tok2", "--initial-advertise-peer-urls=" + peer}}
	log.Reset()
	if err := Restore(ctx, asIs, &log); err != nil {
		t.Fatalf("restore to the snapshot's own revision: %v\n%s", err, log.String())
	}
	sc := testsupport.StartEtcdWith(t, "m2", testsupport.EtcdOptions{DataDir: asIs.DataDir, PeerURL: peer}).Client(t)
	wantSame, err := backup.KeyspaceAt(ctx, c, last)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := backup.KeyspaceAt(ctx, sc, 0); err != nil || got != wantSame {
		t.Fatalf("restored to the snapshot's own revision %d: %+v (%v), want %+v\n%s", last, got, err, wantSame, log.String())
	}
	if _, err := sc.Get(ctx, "k00", clientv3.WithRev(last-2)); err != nil {
		t.Fatalf("the snapshot restored as it is lost its history: %v\n%s", err, log.String())
	}

	// The source's snapshot now, restored with its revision bumped (bumpRevision): the cluster
	// is at the snapshot's revision plus the bump, holds the same keys and values, and refuses reads of older
	// revisions as compacted, so a watcher of the old cluster lists again.
	const bump = 1000000
	if _, err := backup.Save(ctx, c, snap); err != nil {
		t.Fatal(err)
	}
	fromNow, err := backup.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	peer = fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))
	bumped := RestoreOptions{DataDir: filepath.Join(dir, "bumped"), MarkerPath: filepath.Join(dir, "bumped.json"), Snapshot: snap,
		Command: []string{etcdutl, "snapshot", "restore", snap, "--name=m1", "--initial-cluster=m1=" + peer, "--initial-cluster-token=tok1", "--initial-advertise-peer-urls=" + peer,
			fmt.Sprintf("--bump-revision=%d", bump), "--mark-compacted"}}
	log.Reset()
	if err := Restore(ctx, bumped, &log); err != nil {
		t.Fatalf("restore with a bump: %v\n%s", err, log.String())
	}
	bc := testsupport.StartEtcdWith(t, "m1", testsupport.EtcdOptions{DataDir: bumped.DataDir, PeerURL: peer}).Client(t)
	resp, err := bc.Get(ctx, "k00")
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.Get(ctx, "k00")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision != fromNow.Revision+bump || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != string(src.Kvs[0].Value) {
		t.Fatalf("restored with a bump of %d from revision %d: revision %d, k00 %v; the source's k00 %v", bump, fromNow.Revision, resp.Header.Revision, resp.Kvs, src.Kvs)
	}
	if _, err := bc.Get(ctx, "k00", clientv3.WithRev(fromNow.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("a read at revision %d, before the bump: %v, want %v", fromNow.Revision, err, rpctypes.ErrCompacted)
	}
	// A backup of the bumped cluster holds what the cluster serves: the bump's mark is no key.
	again := filepath.Join(dir, "again.db")
	if _, err := backup.Save(ctx, bc, again); err != nil {
		t.Fatal(err)
	}
	inspected, err := backup.Inspect(again)
	if err != nil {
		t.Fatal(err)
	}
	served, err := backup.KeyspaceAt(ctx, bc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inspected != served {
		t.Fatalf("a backup of the bumped cluster: %+v; the cluster serves %+v", inspected, served)
	}
}
