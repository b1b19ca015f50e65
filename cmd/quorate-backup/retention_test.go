package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// A schedule's backup applies its retention, then deletes the archive's segments that no
// snapshot left of the cluster needs: a backup made by hand holds the segments after it as a
// schedule's do, and once it is gone they go too. Every snapshot left still restores to the
// archive's newest revision. Real etcd, a real archiver process, a file:// bucket.
func TestBackupRetentionPrunesTheArchive(t *testing.T) {
	ctx := context.Background()
	e := testsupport.StartEtcd(t, "retention", false)
	c := e.Client(t)
	bucket := "file://" + t.TempDir()
	store, err := blobstore.OpenArchive(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	st, err := c.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	id := st.Header.ClusterId
	const prefix = "ns/c/archive/s"
	a := &archiveRun{client: c, store: store, prefix: prefix, clusterID: id, maxLag: 50 * time.Millisecond, probeEvery: 50 * time.Millisecond, closeEvery: 50 * time.Millisecond, relistEvery: 50 * time.Millisecond}
	url := startArchiverRun(t, a)
	archived := func(rev int64) {
		waitReport(t, url, fmt.Sprintf("revision %d archived", rev), func(r archive.Report) bool { return r.LastRevision >= rev })
	}
	base := time.Now().UTC().Truncate(time.Second)
	save := func(key string, args ...string) backup.Result {
		fs := flag.NewFlagSet("save", flag.ContinueOnError)
		run := saveCmd(ctx, fs)
		if err := fs.Parse(append([]string{"--endpoints=m=" + e.ClientURL, "--cluster-id=" + names.FormatID(id), "--bucket=" + bucket, "--key=" + key, "--work-dir=" + t.TempDir()}, args...)); err != nil {
			t.Fatal(err)
		}
		res, err := run()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	scheduled := func(i int, retain ...string) backup.Result {
		key := "ns/c/s-" + base.Add(time.Duration(i)*time.Hour).Format(backup.ScheduleTimeFormat) + ".db"
		return save(key, append([]string{"--retain-prefix=ns/c/s-", "--schedule=s", "--retain-archive=" + prefix}, retain...)...)
	}
	segments := func() []archive.Span {
		spans, err := archive.Segments(ctx, store, prefix, id)
		if err != nil {
			t.Fatal(err)
		}
		return spans
	}
	restorable := func(from int64) error {
		spans := segments()
		newest := spans[len(spans)-1].Last
		for _, sp := range spans {
			newest = max(newest, sp.Last)
		}
		_, err := archive.Cover(spans, from, newest)
		return err
	}

	archived(put(t, c, 5, "a"))
	archived(put(t, c, 1, "a2")) // a segment of its own, holding the backup's revision
	byHand := save("ns/c/by-hand.db").Info.Revision
	archived(put(t, c, 5, "b"))
	first := scheduled(1, "--retain-count=1")
	archived(put(t, c, 5, "c"))
	second := scheduled(2, "--retain-count=1")
	if !slices.Equal(second.Expired, []string{first.Key}) {
		t.Fatalf("the second backup's retention deleted %v, want the first backup %s", second.Expired, first.Key)
	}
	for _, sp := range segments() {
		if sp.First <= byHand && sp.Last >= byHand {
			break
		}
		if sp.Last < byHand {
			t.Fatalf("segment %d-%d, before the backup made by hand at %d, is left", sp.First, sp.Last, byHand)
		}
	}
	if first.PrunedSegments == 0 || second.PrunedSegments != 0 {
		t.Fatalf("the first scheduled backup deleted %d segments, the second %d: want those before the backup made by hand, then none", first.PrunedSegments, second.PrunedSegments)
	}
	if err := restorable(byHand); err != nil {
		t.Fatalf("the backup made by hand (revision %d) no longer restores to the newest revision: %v", byHand, err)
	}

	// The backup made by hand goes from the bucket; while the operator names it (a backup
	// elsewhere, --retain-archive-keep), its segments stay.
	if err := store.Delete(ctx, "ns/c/by-hand.db"); err != nil {
		t.Fatal(err)
	}
	archived(put(t, c, 5, "d"))
	pinned := scheduled(3, "--retain-count=2", fmt.Sprintf("--retain-archive-keep=%s:%d", names.FormatID(id), byHand))
	if len(pinned.Expired) != 0 || pinned.PrunedSegments != 0 || pinned.RetentionError != "" {
		t.Fatalf("with the backup made by hand named, the retention deleted %v and %d segments (%q); want nothing", pinned.Expired, pinned.PrunedSegments, pinned.RetentionError)
	}
	if err := restorable(byHand); err != nil {
		t.Fatalf("the backup the operator named (revision %d) no longer restores to the newest revision: %v", byHand, err)
	}
	// Not named any more: the segments before the oldest snapshot left go with the next
	// backup's retention (hourly 2 keeps the backups of hours 3 and 4).
	newest := put(t, c, 5, "e")
	archived(newest)
	third := scheduled(4, "--retain-hourly=2")
	if !slices.Equal(third.Expired, []string{second.Key}) || third.PrunedSegments == 0 || third.RetentionError != "" {
		t.Fatalf("the fourth backup's retention deleted %v and %d segments (%q); want %s and the segments before %d", third.Expired, third.PrunedSegments, third.RetentionError, second.Key, pinned.Info.Revision)
	}
	second = pinned // the oldest snapshot left
	for _, sp := range segments() {
		if sp.Last < second.Info.Revision {
			t.Fatalf("segment %d-%d, before the oldest snapshot left (%d), is left", sp.First, sp.Last, second.Info.Revision)
		}
	}
	for _, res := range []backup.Result{second, third} {
		if err := restorable(res.Info.Revision); err != nil {
			t.Fatalf("%s (revision %d) no longer restores to the newest revision: %v", res.Key, res.Info.Revision, err)
		}
	}
	// The archiver's report stops listing what was deleted.
	oldest := segments()[0].First
	waitReport(t, url, fmt.Sprintf("the ranges to start at %d", oldest), func(r archive.Report) bool {
		return len(r.Ranges) == 1 && r.Ranges[0] == [2]int64{oldest, newest}
	})

	// And to a time: once the archiver's closed mark passed it.
	target := time.Now()
	var plan archive.Plan
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if plan, err = archive.Prepare(ctx, store, prefix, id, second.Info.Revision, archive.Target{Time: target}, filepath.Join(t.TempDir(), "plan")); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || plan.To != newest {
		t.Fatalf("a restore of the oldest snapshot to a time after pruning: %+v, %v; want revision %d", plan, err, newest)
	}
}
