package archive

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// archiveRun runs an Archiver in the background until end, or until the test ends.
type archiveRun struct {
	done  chan error
	stop  context.CancelFunc
	err   error
	ended bool
}

func startArchiver(t *testing.T, a *Archiver, from int64) *archiveRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &archiveRun{done: make(chan error, 1), stop: cancel}
	go func() { r.done <- a.Run(ctx, from) }()
	t.Cleanup(func() { _ = r.end() })
	return r
}

// end stops the archiver and returns what Run returned.
func (r *archiveRun) end() error {
	if !r.ended {
		r.stop()
		r.err, r.ended = <-r.done, true
	}
	return r.err
}

// clusterID is the ID of the cluster c reaches.
func clusterID(t *testing.T, c *clientv3.Client) uint64 {
	t.Helper()
	resp, err := c.Get(context.Background(), "\x00", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.ClusterId
}

// waitArchived waits until cluster id's archive holds revision rev.
func waitArchived(t *testing.T, s Store, prefix string, id uint64, rev int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		last, err := Last(context.Background(), s, prefix, id)
		if err != nil {
			t.Fatal(err)
		}
		if last >= rev {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the archive holds revisions up to %d after 30 s, not %d", last, rev)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// restored restores the snapshot at snap with etcdutl into a new member and starts it.
func restored(t *testing.T, snap, name string) *clientv3.Client {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	peer := fmt.Sprintf("http://127.0.0.1:%d", testsupport.FreePort(t))
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcdutl"), "snapshot", "restore", snap,
		"--data-dir="+dir, "--name="+name, "--initial-cluster="+name+"="+peer, "--initial-advertise-peer-urls="+peer)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	return testsupport.StartEtcdWith(t, name, testsupport.EtcdOptions{DataDir: dir, PeerURL: peer}).Client(t)
}

// keyspace reads every key at rev (0: now).
func keyspace(t *testing.T, c *clientv3.Client, rev int64) (int64, []*mvccpb.KeyValue) {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := c.Get(context.Background(), "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision, resp.Kvs
}

// sameKeyspace compares two keyspaces whole: keys, values, create and modification
// revisions, versions and leases.
func sameKeyspace(t *testing.T, what string, got, want []*mvccpb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if string(g.Key) != string(w.Key) || string(g.Value) != string(w.Value) || g.CreateRevision != w.CreateRevision ||
			g.ModRevision != w.ModRevision || g.Version != w.Version || g.Lease != w.Lease {
			t.Errorf("%s: key %d is %+v, want %+v", what, i, g, w)
		}
	}
}

// A cluster written to after its snapshot is restored from the snapshot and the archive to a
// revision in the middle, to a time, and to the newest revision: each time the keyspace is the
// original's at that point, revisions, versions and leases included.
func TestArchiveAndReplayToARevisionAndATime(t *testing.T) {
	ctx := context.Background()
	src := testsupport.StartEtcd(t, "src", false)
	c := src.Client(t)
	put := func(k, v string, opts ...clientv3.OpOption) int64 {
		t.Helper()
		resp, err := c.Put(ctx, k, v, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	for i := range 5 {
		put(fmt.Sprintf("before/%d", i), "v")
	}
	old, err := c.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	put("leased/old", "v", clientv3.WithLease(old.ID))
	snap := filepath.Join(t.TempDir(), "snap.db")
	if _, err := backup.Save(ctx, c, snap); err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	ks, err := backup.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	s := newMemStore()
	var progress []Progress
	id := clusterID(t, c)
	a := &Archiver{Client: c, Store: s, Prefix: "ns/c/archive", ClusterID: id, MaxLag: 50 * time.Millisecond, MaxRecords: 7,
		Archived: func(p Progress) { progress = append(progress, p) }}
	run := startArchiver(t, a, ks.Revision)

	// Batch 1: puts, overwrites, a delete, a transaction of several keys, a range delete, a
	// key on the lease from before the snapshot and one on a lease granted after it.
	for i := range 10 {
		put(fmt.Sprintf("k/%02d", i), fmt.Sprintf("v%d", i))
	}
	put("k/03", "again")
	if _, err := c.Delete(ctx, "k/04"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Txn(ctx).Then(clientv3.OpPut("t/a", "1"), clientv3.OpPut("t/b", "2"), clientv3.OpDelete("k/05")).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "before/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	put("leased/old", "w", clientv3.WithLease(old.ID))
	fresh, err := c.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	r1 := put("leased/new", "v", clientv3.WithLease(fresh.ID))
	waitArchived(t, s, a.Prefix, id, r1)
	_, at1 := keyspace(t, c, r1)
	// T: after every revision of batch 1 was received, before any of batch 2.
	tm := time.Now()
	for time.Now().UnixMilli() <= tm.UnixMilli() {
		time.Sleep(time.Millisecond)
	}
	// Batch 2.
	var r2 int64
	for i := range 20 {
		r2 = put(fmt.Sprintf("k/%02d", i%12), fmt.Sprintf("late%d", i))
	}
	waitArchived(t, s, a.Prefix, id, r2)
	_, at2 := keyspace(t, c, r2)
	if err := run.end(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v, want the context's cancellation", err)
	}

	spans, err := Segments(ctx, s, a.Prefix, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := Ranges(spans); len(got) != 1 || got[0] != [2]int64{ks.Revision + 1, r2} {
		t.Errorf("the archive covers %v, want [%d %d]", got, ks.Revision+1, r2)
	}
	if len(spans) < 5 {
		t.Errorf("%d segments: MaxRecords 7 should have cut %d revisions into at least 5", len(spans), r2-ks.Revision)
	}
	if n := len(progress); n != len(spans) || progress[n-1].Revision != r2 || progress[n-1].Segment != spans[len(spans)-1].Name {
		t.Errorf("progress %+v does not end at revision %d in %s", progress[len(progress)-1], r2, spans[len(spans)-1].Name)
	}

	// To revision r1.
	b := restored(t, snap, "b")
	got, err := Replay(ctx, b, s, a.Prefix, id, ks.Revision, r1)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Replayed{From: ks.Revision, To: r1, Records: int(r1 - ks.Revision), Segments: got.Segments, Granted: 1}); got != want {
		t.Errorf("replayed %+v, want %+v", got, want)
	}
	rev, kvs := keyspace(t, b, 0)
	if rev != r1 {
		t.Errorf("restored to revision %d, want %d", rev, r1)
	}
	sameKeyspace(t, "at revision r1", kvs, at1)
	// The lease granted after the snapshot is granted again, with its TTL.
	if ttl, err := b.TimeToLive(ctx, fresh.ID); err != nil || ttl.GrantedTTL != 3600 || ttl.TTL <= 0 {
		t.Errorf("the restored cluster's lease %x: %+v (%v), want one granted for 3600 s", fresh.ID, ttl, err)
	}

	// To time T: the same revision; the archive's newest is r2.
	res, err := ResolveTime(ctx, s, a.Prefix, id, ks.Revision, taken, tm)
	if err != nil || res.Revision != r1 || res.Newest != r2 || res.Time.After(tm) || !res.NewestTime.After(tm) {
		t.Errorf("time %s resolves to %+v (%v), want revision %d and newest %d", tm.Format(time.RFC3339Nano), res, err, r1, r2)
	}
	// Before the snapshot: refused.
	before := taken.Add(-time.Hour)
	_, err = ResolveTime(ctx, s, a.Prefix, id, ks.Revision, taken, before)
	want := fmt.Sprintf("%s is before the snapshot, taken at %s at revision %d: restore from an older snapshot", before.UTC().Format(time.RFC3339Nano), taken.UTC().Format(time.RFC3339Nano), ks.Revision)
	if err == nil || err.Error() != want {
		t.Errorf("a time before the snapshot: %v\nwant %s", err, want)
	}
	// Another cluster's archive under the same prefix is another directory: empty.
	if res, err := ResolveTime(ctx, s, a.Prefix, id+1, ks.Revision, taken, tm); err != nil || res.Revision != ks.Revision || res.Newest != ks.Revision {
		t.Errorf("another cluster's archive resolves to %+v (%v)", res, err)
	}

	// To the newest revision, replaying on from where the first replay stopped.
	got, err = Replay(ctx, b, s, a.Prefix, id, r1, r2)
	if err != nil {
		t.Fatal(err)
	}
	if got.From != r1 || got.To != r2 || got.Records != int(r2-r1) {
		t.Errorf("replayed %+v, want from %d to %d", got, r1, r2)
	}
	_, kvs = keyspace(t, b, 0)
	sameKeyspace(t, "at revision r2", kvs, at2)

	// Past the archive: refused before anything is applied.
	c2 := restored(t, snap, "c")
	_, err = Replay(ctx, c2, s, a.Prefix, id, ks.Revision, r2+5)
	var ce *CoverError
	if !errors.As(err, &ce) || ce.From != ks.Revision+1 || ce.To != r2+5 {
		t.Errorf("err = %v, want a CoverError from %d to %d", err, ks.Revision+1, r2+5)
	}
	if rev, _ := keyspace(t, c2, 0); rev != ks.Revision {
		t.Errorf("the refused replay moved the cluster to revision %d", rev)
	}
}

// The archive replayed onto a cluster that is not at the snapshot's revision is refused
// before anything is applied; a record that does not land at its revision (an archive that
// does not continue this snapshot) stops the replay there.
func TestReplayRefusesAClusterThatIsNotTheSnapshot(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	rec := func(rev int64, ops ...Op) Record { return Record{Revision: rev, Ops: ops} }
	seg := func(id uint64, records ...Record) {
		t.Helper()
		data, err := Encode(id, records)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, SegmentName("p", id, records[0].Revision, records[len(records)-1].Revision), data); err != nil {
			t.Fatal(err)
		}
	}
	seg(1,
		rec(2, Op{Type: Put, Key: []byte("a"), Value: []byte("1"), Version: 1}),
		rec(3, Op{Type: Put, Key: []byte("b"), Value: []byte("2"), Version: 1}),
		// Deletes a key this cluster never had.
		rec(4, Op{Type: Delete, Key: []byte("never")}))
	// A fresh cluster is at revision 1, the "snapshot" this archive continues.
	c := testsupport.StartEtcd(t, "other", false).Client(t)
	if _, err := c.Put(ctx, "intruder", "x"); err != nil {
		t.Fatal(err)
	}
	_, err := Replay(ctx, c, s, "p", 1, 1, 3)
	if err == nil || err.Error() != "the cluster to replay onto is at revision 2, not 1: it was restored from another snapshot, or a client wrote to it; restore again, and keep clients away until the replay is done" {
		t.Errorf("err = %v", err)
	}
	if resp, _ := c.Get(ctx, "a"); len(resp.Kvs) != 0 {
		t.Error("the refused replay wrote a")
	}

	// The delete of a key the cluster does not have changes nothing and stops the replay.
	d := testsupport.StartEtcd(t, "other2", false).Client(t)
	got, err := Replay(ctx, d, s, "p", 1, 1, 4)
	var re *ReplayError
	if !errors.As(err, &re) || *re != (ReplayError{Record: 4, Key: "never"}) {
		t.Errorf("err = %v, want ReplayError{4 0 never}", err)
	}
	if got != (Replayed{From: 1, To: 3, Records: 2, Segments: 1}) {
		t.Errorf("replayed %+v", got)
	}
	if rev, _ := keyspace(t, d, 0); rev != 3 {
		t.Errorf("the refused record moved the cluster to revision %d", rev)
	}

	// A put that expects another version: a key that already exists in this cluster.
	seg(2, rec(2, Op{Type: Put, Key: []byte("a"), Value: []byte("1"), Version: 1}))
	e := testsupport.StartEtcd(t, "other3", false).Client(t)
	// At revision 1, but holding a (as a snapshot of another cluster would): make one.
	if _, err := e.Put(ctx, "a", "0"); err != nil {
		t.Fatal(err)
	}
	seg(2, rec(3, Op{Type: Put, Key: []byte("a"), Value: []byte("1"), Version: 1}))
	_, err = Replay(ctx, e, s, "p", 2, 2, 3)
	if !errors.As(err, &re) || *re != (ReplayError{Record: 3, Key: "a"}) {
		t.Errorf("err = %v, want ReplayError{3 0 a}", err)
	}

	// Cluster 1's archive is not cluster 3's.
	f := testsupport.StartEtcd(t, "other4", false).Client(t)
	_, err = Replay(ctx, f, s, "p", 3, 1, 3)
	var ce *CoverError
	if !errors.As(err, &ce) {
		t.Errorf("err = %v, want a CoverError", err)
	}
}

// A put on a lease the cluster lacks is replayed on that lease, granted again under its ID
// with the TTL the archive recorded; without a TTL (an older archiver's segment, or a lease
// that expired before the archiver asked) it is replayed without a lease. A granted lease no
// key is on at the target is revoked, and a later replay's put on it grants it again. Neither
// grant nor revocation makes a revision: every record lands at its own.
func TestReplayGrantsLeasesTheArchiveRecorded(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	put := func(key, value string, version, lease, ttl int64) Op {
		return Op{Type: Put, Key: []byte(key), Value: []byte(value), Version: version, Lease: lease, LeaseTTL: ttl}
	}
	del := func(key string) Op { return Op{Type: Delete, Key: []byte(key)} }
	records := []Record{
		{Revision: 2, Ops: []Op{put("a", "1", 1, 0x77, 0)}},
		{Revision: 3, Ops: []Op{put("b", "2", 1, 0x88, 600)}},
		{Revision: 4, Ops: []Op{put("c", "3", 1, 0x88, 600), put("a", "4", 2, 0x77, 0)}},
		// b moves off the lease; c goes: the lease holds no key after revision 6.
		{Revision: 5, Ops: []Op{put("b", "5", 2, 0, 0)}},
		{Revision: 6, Ops: []Op{del("c")}},
		{Revision: 7, Ops: []Op{put("d", "7", 1, 0x88, 600)}},
	}
	data, err := Encode(9, records)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, SegmentName("p", 9, 2, 7), data); err != nil {
		t.Fatal(err)
	}
	leaseOf := func(c *clientv3.Client) map[string]int64 {
		t.Helper()
		_, kvs := keyspace(t, c, 0)
		out := map[string]int64{}
		for _, kv := range kvs {
			out[string(kv.Key)] = kv.Lease
		}
		return out
	}
	granted := func(c *clientv3.Client, id int64) int64 {
		t.Helper()
		ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(id))
		if err != nil {
			t.Fatal(err)
		}
		return ttl.GrantedTTL
	}

	// To revision 4: b and c on lease 88, granted again; a without its lease 77.
	c := testsupport.StartEtcd(t, "leases", false).Client(t)
	got, err := Replay(ctx, c, s, "p", 9, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Replayed{From: 1, To: 4, Records: 3, Segments: 1, Granted: 1, Unleased: 2}); got != want {
		t.Errorf("replayed %+v, want %+v", got, want)
	}
	if got, want := leaseOf(c), map[string]int64{"a": 0, "b": 0x88, "c": 0x88}; !maps.Equal(got, want) {
		t.Errorf("at revision 4 the keys' leases are %v, want %v", got, want)
	}
	if ttl := granted(c, 0x88); ttl != 600 {
		t.Errorf("lease 88 granted for %d s, want 600", ttl)
	}
	if ttl := granted(c, 0x77); ttl != 0 {
		t.Errorf("lease 77 granted for %d s, want none", ttl)
	}

	// To revision 6 in one replay: no key is on 88 at the target, so it is revoked.
	d := testsupport.StartEtcd(t, "leases-revoked", false).Client(t)
	got, err = Replay(ctx, d, s, "p", 9, 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Replayed{From: 1, To: 6, Records: 5, Segments: 1, Granted: 1, Revoked: 1, Unleased: 2}); got != want {
		t.Errorf("replayed %+v, want %+v", got, want)
	}
	if ttl := granted(d, 0x88); ttl != 0 {
		t.Errorf("lease 88, empty after revision 6, is still granted (%d s)", ttl)
	}
	// On to 7: a put on it grants it again, and the record lands at its revision.
	got, err = Replay(ctx, d, s, "p", 9, 6, 7)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Replayed{From: 6, To: 7, Records: 1, Segments: 1, Granted: 1}); got != want {
		t.Errorf("replayed %+v, want %+v", got, want)
	}
	if got, want := leaseOf(d), map[string]int64{"a": 0, "b": 0, "d": 0x88}; !maps.Equal(got, want) {
		t.Errorf("at revision 7 the keys' leases are %v, want %v", got, want)
	}
	if ttl := granted(d, 0x88); ttl != 600 {
		t.Errorf("lease 88 granted again for %d s, want 600", ttl)
	}
}

// Compaction past the archive ends the run with a GapError naming both revisions; a run from
// a revision still there goes on.
func TestArchiverStopsAtACompactedGap(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "gap", false).Client(t)
	var last int64
	for i := range 10 {
		resp, err := c.Put(ctx, fmt.Sprintf("k%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	if _, err := c.Compact(ctx, last-2); err != nil {
		t.Fatal(err)
	}
	s := newMemStore()
	id := clusterID(t, c)
	a := &Archiver{Client: c, Store: s, Prefix: "p", ClusterID: id, MaxLag: 20 * time.Millisecond}
	err := a.Run(ctx, 3)
	var gap *GapError
	if !errors.As(err, &gap) || *gap != (GapError{After: 3, Compacted: last - 2}) {
		t.Fatalf("err = %v, want GapError{3 %d}", err, last-2)
	}
	if n, _ := s.List(ctx, ""); len(n) != 0 {
		t.Errorf("a run that could not start wrote %v", n)
	}
	run := startArchiver(t, a, last-2)
	waitArchived(t, s, "p", id, last)
	if err := run.end(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v, want the context's cancellation", err)
	}
	if got, _ := Last(ctx, s, "p", id); got != last {
		t.Errorf("last archived %d, want %d", got, last)
	}
}

// A cluster of another ID answering the archive's watch stops the archiver.
func TestArchiverRefusesAnotherClusterID(t *testing.T) {
	c := testsupport.StartEtcd(t, "foreign", false).Client(t)
	if _, err := c.Put(context.Background(), "k", "v"); err != nil {
		t.Fatal(err)
	}
	a := &Archiver{Client: c, Store: newMemStore(), Prefix: "p", ClusterID: 0x1234}
	err := a.Run(context.Background(), 0)
	var fe *ForeignClusterError
	if !errors.As(err, &fe) || fe.Want != 0x1234 || fe.Got == 0 || fe.Got == 0x1234 {
		t.Errorf("err = %v, want a ForeignClusterError", err)
	}
}

// A store that refuses a segment ends the run; the revisions are not lost: a run from Last
// archives them when the store takes writes again.
func TestArchiverResumesAfterAFailedWrite(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "resume", false).Client(t)
	s := newMemStore()
	s.fail = errors.New("the store is down")
	id := clusterID(t, c)
	a := &Archiver{Client: c, Store: s, Prefix: "p", ClusterID: id, MaxLag: 20 * time.Millisecond}
	var last int64
	for i := range 5 {
		resp, err := c.Put(ctx, fmt.Sprintf("k%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	err := a.Run(ctx, 1)
	if err == nil || !errors.Is(err, s.fail) {
		t.Fatalf("err = %v, want the store's", err)
	}
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	from, err := Last(ctx, s, "p", id)
	if err != nil || from != 0 {
		t.Fatalf("last = %d, %v", from, err)
	}
	run := startArchiver(t, a, 1)
	waitArchived(t, s, "p", id, last)
	if err := run.end(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v, want the context's cancellation", err)
	}
	spans, _ := Segments(ctx, s, "p", id)
	if got := Ranges(spans); len(got) != 1 || got[0] != [2]int64{2, last} {
		t.Errorf("covered %v, want [2 %d]", got, last)
	}
}

// Rebase turns a snapshot and the archive into the snapshot at a later revision, whose
// keyspace hash is the original cluster's at that revision; a target past the archive is
// refused before anything runs, and leaves no snapshot.
func TestRebase(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "rebase", false).Client(t)
	for i := range 20 {
		if _, err := c.Put(ctx, fmt.Sprintf("k/%02d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	// A lease of the snapshot with the shortest TTL etcd grants, kept alive here: the
	// throwaway member must keep it, and its key, alive through a replay that takes longer.
	leased := keptLease(t, c, "leased")
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.db")
	if _, err := backup.Save(ctx, c, snap); err != nil {
		t.Fatal(err)
	}
	from, err := backup.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	s := DirStore(filepath.Join(dir, "store"))
	id := clusterID(t, c)
	run := startArchiver(t, &Archiver{Client: c, Store: s, Prefix: "a", ClusterID: id, MaxLag: 20 * time.Millisecond}, from.Revision)
	// A lease granted after the snapshot, with the shortest TTL, kept alive here: the replay
	// grants it again and must keep it, and its key, alive until the result is saved.
	after := keptLease(t, c, "leased/after")
	var mid int64
	for i := range 40 {
		resp, err := c.Txn(ctx).Then(clientv3.OpPut(fmt.Sprintf("k/%02d", i%25), fmt.Sprintf("w%d", i)), clientv3.OpDelete(fmt.Sprintf("k/%02d", (i+7)%25))).Commit()
		if err != nil {
			t.Fatal(err)
		}
		mid = resp.Header.Revision
	}
	// Many revisions after mid, from several writers.
	var mu sync.Mutex
	var last int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				resp, err := c.Put(ctx, fmt.Sprintf("bulk/%d/%03d", w, i%50), fmt.Sprint(i))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				last = max(last, resp.Header.Revision)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	waitArchived(t, s, "a", id, last)
	if err := run.end(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v, want the context's cancellation", err)
	}

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	// The throwaway member waits out three times the leases' TTLs before it replays and
	// again before it saves the result: a lease it did not keep alive would be revoked at a
	// revision of its own, and the replay refused, or the result not saved.
	ttl, err := c.TimeToLive(ctx, leased)
	if err != nil {
		t.Fatal(err)
	}
	ttlAfter, err := c.TimeToLive(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	o := Rebase{Etcd: filepath.Join(assets, "etcd"), Etcdutl: filepath.Join(assets, "etcdutl"), Dir: filepath.Join(dir, "work"),
		beforeReplay: func() { time.Sleep(3 * time.Duration(ttl.GrantedTTL) * time.Second) },
		afterReplay:  func() { time.Sleep(3 * time.Duration(ttlAfter.GrantedTTL) * time.Second) }}
	for _, to := range []int64{mid, last} {
		out := filepath.Join(dir, fmt.Sprintf("at-%d.db", to))
		got, err := o.Run(ctx, snap, s, "a", id, to, out)
		if err != nil {
			t.Fatal(err)
		}
		if got.From != from.Revision || got.To != to || got.Records != int(to-from.Revision) || got.Granted != 1 || got.Revoked != 0 || got.Unleased != 0 {
			t.Errorf("rebase to %d: %+v, want 1 lease granted again, none revoked, and no put unleased", to, got)
		}
		have, err := backup.Inspect(out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := backup.KeyspaceAt(ctx, c, to)
		if err != nil {
			t.Fatal(err)
		}
		if have != want {
			t.Errorf("the snapshot at %d holds %+v, the cluster had %+v", to, have, want)
		}
	}
	if _, err := os.Stat(o.Dir); !os.IsNotExist(err) {
		t.Errorf("the throwaway member's directory is left: %v", err)
	}
	out := filepath.Join(dir, "past.db")
	_, err = o.Run(ctx, snap, s, "a", id, last+3, out)
	var ce *CoverError
	if !errors.As(err, &ce) || ce.To != last+3 {
		t.Errorf("err = %v, want a CoverError to %d", err, last+3)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused rebase wrote %s", out)
	}
}

// keptLease grants a lease of the shortest TTL etcd grants, puts key on it and keeps it alive
// until the test ends.
func keptLease(t *testing.T, c *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l, err := c.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, key, "v", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	ka, err := c.KeepAlive(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ka {
		}
	}()
	return l.ID
}

// A snapshot of a cluster with etcd's authentication on (spec.users) rebases too: the
// throwaway member takes its client's certificate as root.
func TestRebaseWithAuth(t *testing.T) {
	ctx := context.Background()
	e := testsupport.StartEtcd(t, "rebase-auth", false)
	c := e.Client(t)
	for _, step := range []func() error{
		func() error { _, err := c.UserAdd(ctx, "root", "secret"); return err },
		func() error { _, err := c.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := c.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, Username: "root", Password: "secret", DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	if _, err := rc.Put(ctx, "k", "0"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.db")
	if _, err := backup.Save(ctx, rc, snap); err != nil {
		t.Fatal(err)
	}
	from, err := backup.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	s := DirStore(filepath.Join(dir, "store"))
	id := clusterID(t, rc)
	run := startArchiver(t, &Archiver{Client: rc, Store: s, Prefix: "a", ClusterID: id, MaxLag: 20 * time.Millisecond}, from.Revision)
	// Two leases granted after the snapshot, one with a key at the target and one whose key
	// was deleted: the replay, as the throwaway member's root, grants both, looks up the keys
	// on each, and revokes the empty one.
	for _, key := range []string{"leased", "emptied"} {
		l, err := rc.Grant(ctx, 600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Put(ctx, key, "v", clientv3.WithLease(l.ID)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rc.Delete(ctx, "emptied"); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 10 {
		resp, err := rc.Put(ctx, fmt.Sprintf("k%d", i%3), fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	waitArchived(t, s, "a", id, last)
	if err := run.end(); !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v", err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	o := Rebase{Etcd: filepath.Join(assets, "etcd"), Etcdutl: filepath.Join(assets, "etcdutl"), Dir: filepath.Join(dir, "work")}
	out := filepath.Join(dir, "at.db")
	got, err := o.Run(ctx, snap, s, "a", id, last, out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Granted != 2 || got.Revoked != 1 || got.Unleased != 0 {
		t.Errorf("rebase: %+v, want 2 leases granted again, the emptied one revoked, and no put unleased", got)
	}
	have, err := backup.Inspect(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := backup.KeyspaceAt(ctx, rc, last)
	if err != nil {
		t.Fatal(err)
	}
	if have != want {
		t.Fatalf("the rebased snapshot holds %+v, the cluster had %+v", have, want)
	}
}
