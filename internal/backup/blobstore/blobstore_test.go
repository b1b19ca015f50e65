package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// Store uploads and verifies; Fetch downloads and checks the bytes against the recorded
// SHA-256 and the one asked for; a damaged stored object is refused, and nothing is left
// behind at the restore's path.
func TestStoreAndFetch(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "store", false).Client(t)
	for i := range 50 {
		if _, err := c.Put(ctx, fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.db")
	saved, err := backup.Save(ctx, c, path)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := backup.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	bucketDir := t.TempDir()
	loc := backup.Location{Bucket: "file://" + bucketDir, Key: "ns/demo/b1.db"}
	info := backup.Info{Keyspace: ks, SHA256: saved.SHA256, Size: saved.Size, Version: "3.6.16", ClusterID: "abc"}
	if err := Store(ctx, loc, path, info); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "restore.db")
	got, err := Fetch(ctx, loc, out, saved.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, info) {
		t.Fatalf("fetched metadata %+v, stored %+v", got, info)
	}
	if b, _ := os.ReadFile(out); len(b) != int(saved.Size) {
		t.Fatalf("fetched %d bytes, stored %d", len(b), saved.Size)
	}

	// Asked for another SHA-256: refused, as another backup, not a damaged one (the object is
	// the one its backup recorded).
	other := filepath.Join(t.TempDir(), "other.db")
	_, err = Fetch(ctx, loc, other, strings.Repeat("0", 64))
	want := "refusing the snapshot file://" + bucketDir + "/ns/demo/b1.db: the snapshot is not the one backed up: its SHA-256 is " + saved.SHA256 + ", the restore asks for " + strings.Repeat("0", 64) +
		"; the object is intact (its SHA-256 is the one its backup recorded), so it is another backup than the restore asks for: correct fromBackup.sha256, or point fromBackup at the backup it names"
	if !errors.Is(err, ErrHashMismatch) || errors.Is(err, ErrDamaged) || err.Error() != want {
		t.Fatalf("Fetch with another hash = %v (damaged: %v)\nwant %s", err, errors.Is(err, ErrDamaged), want)
	}
	// The stored bytes damaged: refused, and nothing left at the path.
	stored := filepath.Join(bucketDir, "ns", "demo", "b1.db")
	b, err := os.ReadFile(stored)
	if err != nil {
		t.Fatal(err)
	}
	b[5000] ^= 0xff
	if err := os.WriteFile(stored, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, loc, other, ""); !errors.Is(err, backup.ErrIntegrity) || !errors.Is(err, ErrDamaged) {
		t.Fatalf("Fetch of a damaged object = %v, want backup.ErrIntegrity and ErrDamaged", err)
	}
	// Cut short (a truncated upload or copy): refused as damaged, with what to do.
	if err := os.WriteFile(stored, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Fetch(ctx, loc, other, "")
	want = fmt.Sprintf("refusing the snapshot file://%s/ns/demo/b1.db: the stored object is damaged "+
		"(it holds %d bytes, its backup recorded %d); it cannot be restored: restore another backup", bucketDir, len(b)/2, len(b))
	if err == nil || err.Error() != want {
		t.Fatalf("Fetch of a truncated object:\n got %v\nwant %s", err, want)
	}
	for _, p := range []string{other, other + ".part"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind after a refused fetch", p)
		}
	}
	// A bucket that does not exist: the error says so and leaves nothing.
	missing := backup.Location{Bucket: "file://" + filepath.Join(bucketDir, "nope"), Key: "x.db"}
	if err := Store(ctx, missing, path, info); Reason(err) != v1alpha1.ReasonStoreBucketNotFound {
		t.Fatalf("Store into a missing bucket: %v (reason %q)", err, Reason(err))
	}
}

// Retain deletes only its own schedule's expired snapshots: not those of a schedule whose name
// extends its own ("nightly" and "nightly-weekly" share the prefix ".../nightly-"), not objects
// whose metadata names another schedule, not other objects under the prefix.
func TestRetain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bucket := "file://" + dir
	b, err := blob.OpenBucket(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const p = "etcd/ns/demo/"
	objects := []struct{ key, schedule string }{
		{p + "nightly-20261128-010000.db", "nightly"},
		{p + "nightly-20261128-020000.db", ""}, // written before the metadata named the schedule
		{p + "nightly-20261128-030000.db", "nightly"},
		{p + "nightly-weekly-20261128-010000.db", "nightly-weekly"},
		{p + "nightly-weekly-20261128-020000.db", ""},
		{p + "nightly-20261128-000000.db", "someone-else"},
		{p + "nightly-20261128-000500.db", backup.NoSchedule}, // a backup made by hand, named like the schedule's
		{p + "nightly-notes.db", ""},
		{p + "nightly-20261128-005000.txt", ""},
		{"etcd/other/demo/nightly-20261128-000000.db", "nightly"},
	}
	base := time.Now().Add(-time.Hour)
	for i, o := range objects {
		opts := &blob.WriterOptions{}
		if o.schedule != "" {
			opts.Metadata = map[string]string{backup.MetaSchedule: o.schedule}
		}
		if err := b.WriteAll(ctx, o.key, []byte("x"), opts); err != nil {
			t.Fatal(err)
		}
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(o.key)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	deleted, err := Retain(ctx, bucket, p+"nightly-", "nightly", backup.Retention{Count: 1}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{p + "nightly-20261128-010000.db", p + "nightly-20261128-020000.db"}; !reflect.DeepEqual(deleted, want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	for i, o := range objects {
		ok, err := b.Exists(ctx, o.key)
		if err != nil {
			t.Fatal(err)
		}
		if want := i > 1; ok != want {
			t.Errorf("%s exists: %v, want %v", o.key, ok, want)
		}
	}
}

// A transfer cut off (a dropped connection) is not a damaged object: it says so, and that the
// restore tries again, and is not ErrDamaged.
func TestCutOffTransferIsNotDamage(t *testing.T) {
	loc := backup.Location{Bucket: "s3://backups", Key: "ns/demo/b1.db"}
	err := describe("downloading", loc, fmt.Errorf("reading the body: %w", io.ErrUnexpectedEOF))
	want := "downloading s3://backups/ns/demo/b1.db: the transfer was cut off before the object's end (a dropped connection, or an object shorter than the length it is stored with): " +
		"the restore tries again; if it fails the same way each time, the object is damaged: restore another backup (reading the body: unexpected EOF)"
	if err.Error() != want || errors.Is(err, ErrDamaged) {
		t.Fatalf("got %v (damaged: %v)\nwant %s", err, errors.Is(err, ErrDamaged), want)
	}
}

// A restore whose volume is full fails as the volume's failure (DiskFull), never as the store
// out of space, and leaves nothing behind: the .part file here is /dev/full, where every write
// fails with ENOSPC.
func TestFetchIntoAFullVolumeIsNotTheStoreOutOfSpace(t *testing.T) {
	ctx := context.Background()
	bucketDir := t.TempDir()
	loc := backup.Location{Bucket: "file://" + bucketDir, Key: "b1.db"}
	b, err := blob.OpenBucket(ctx, loc.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	info := backup.Info{Size: 4096}
	if err := b.WriteAll(ctx, loc.Key, make([]byte, 4096), &blob.WriterOptions{Metadata: info.Metadata()}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	out := filepath.Join(t.TempDir(), "restore.db")
	if err := os.Symlink("/dev/full", out+".part"); err != nil {
		t.Fatal(err)
	}
	_, err = Fetch(ctx, loc, out, "")
	want := "writing the snapshot to the member's volume at " + out + ".part: write " + out + ".part: no space left on device: " +
		"the volume has no room for the snapshot (4096 bytes recorded): raise storage.size, or free the volume"
	if err == nil || err.Error() != want || Reason(err) != v1alpha1.ReasonDiskFull {
		t.Fatalf("Fetch into a full volume:\n got %v (reason %q)\nwant %s (reason %q)", err, Reason(err), want, v1alpha1.ReasonDiskFull)
	}
	if _, err := os.Lstat(out + ".part"); !os.IsNotExist(err) {
		t.Errorf("%s.part left behind", out)
	}
}

// OldestSnapshots reads each cluster's oldest snapshot from the metadata of the .db objects
// directly under the prefix that the schedule's archive serves (its own, by hand, unnamed);
// one whose metadata does not say fails it, so that an archive's retention deletes nothing it
// cannot tell is unneeded.
func TestOldestSnapshots(t *testing.T) {
	ctx := context.Background()
	bucket := "file://" + t.TempDir()
	b, err := blob.OpenBucket(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	write := func(key string, md map[string]string) {
		if err := b.WriteAll(ctx, key, []byte("x"), &blob.WriterOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	const p = "etcd/ns/demo/"
	write(p+"nightly-20261128-010000.db", backup.Info{Keyspace: backup.Keyspace{Revision: 300}, ClusterID: "a1", Schedule: "nightly"}.Metadata())
	write(p+"nightly-20261128-020000.db", backup.Info{Keyspace: backup.Keyspace{Revision: 400}, ClusterID: "a1", Schedule: "nightly"}.Metadata())
	write(p+"by-hand.db", backup.Info{Keyspace: backup.Keyspace{Revision: 250}, ClusterID: "a1", Schedule: backup.NoSchedule}.Metadata())
	write(p+"hourly-20261128-030000.db", backup.Info{Keyspace: backup.Keyspace{Revision: 90}, ClusterID: "b2", Schedule: "hourly"}.Metadata())
	write(p+"archive/nightly/00000000000000a1/segments/x.jsonl.gz", nil)
	write(p+"archive/nightly/copied.db", backup.Info{Keyspace: backup.Keyspace{Revision: 2}, ClusterID: "a1"}.Metadata()) // not directly under the prefix
	write("etcd/ns/demo-2/by-hand.db", backup.Info{Keyspace: backup.Keyspace{Revision: 1}, ClusterID: "a1"}.Metadata())
	write(p+"unnamed.db", backup.Info{Keyspace: backup.Keyspace{Revision: 95}, ClusterID: "b2"}.Metadata()) // written before metadata named schedules
	got, err := OldestSnapshots(ctx, bucket, p, "nightly")
	if want := map[uint64]int64{0xa1: 250, 0xb2: 95}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("OldestSnapshots of nightly = %v, %v; want %v (not hourly's)", got, err, want)
	}
	got, err = OldestSnapshots(ctx, bucket, p, "hourly")
	if want := map[uint64]int64{0xa1: 250, 0xb2: 90}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("OldestSnapshots of hourly = %v, %v; want %v (not nightly's)", got, err, want)
	}
	write(p+"copied-by-hand.db", nil)
	if got, err := OldestSnapshots(ctx, bucket, p, "nightly"); err == nil {
		t.Fatalf("OldestSnapshots with a snapshot that records no revision = %v, want an error", got)
	}
}
