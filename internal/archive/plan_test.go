package archive

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Prepare resolves a time to the newest revision received by then, copies exactly the
// segments from the snapshot to the target, and writes the plan last; a time before the
// snapshot's revision was received, and a target past the archive, are refused with no plan.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	base := time.UnixMilli(1_700_000_000_000)
	bucket := DirStore(t.TempDir())
	put := func(first, last int64) {
		var records []Record
		for rev := first; rev <= last; rev++ {
			records = append(records, Record{Revision: rev, Time: base.Add(time.Duration(rev-10) * 100 * time.Millisecond).UnixMilli(), Ops: []Op{{Type: Put, Key: []byte(fmt.Sprint(rev)), Value: []byte("v")}}})
		}
		data, err := Encode(7, records)
		if err != nil {
			t.Fatal(err)
		}
		if err := bucket.Put(ctx, SegmentName("p", 7, first, last), data); err != nil {
			t.Fatal(err)
		}
	}
	put(10, 14)
	put(15, 20)

	// A target at the snapshot's own revision needs no segment, and has a plan all the same.
	same := filepath.Join(t.TempDir(), "archive")
	if p, err := Prepare(ctx, bucket, "p", 7, 12, Target{Revision: 12}, same); err != nil || p.To != 12 {
		t.Fatalf("a restore to the snapshot's own revision: %+v, %v", p, err)
	}
	if got, err := ReadPlan(same); err != nil || got == nil || got.To != 12 {
		t.Fatalf("the plan of a restore to the snapshot's own revision: %+v, %v", got, err)
	}

	dir := filepath.Join(t.TempDir(), "archive")
	plan, err := Prepare(ctx, bucket, "p", 7, 12, Target{Time: base.Add(450 * time.Millisecond)}, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{ClusterID: 7, Prefix: "p", From: 12, To: 14, Asked: "time " + base.Add(450*time.Millisecond).UTC().Format(time.RFC3339Nano)}
	if plan != want {
		t.Fatalf("plan %+v, want %+v", plan, want)
	}
	if got, err := ReadPlan(dir); err != nil || *got != want {
		t.Fatalf("the written plan %+v (%v), want %+v", got, err, want)
	}
	local, err := Segments(ctx, PlanStore(dir), "p", 7)
	if err != nil || fmt.Sprint(local) != fmt.Sprint([]Span{{Name: SegmentName("p", 7, 10, 14), First: 10, Last: 14}}) {
		t.Fatalf("fetched segments %+v (%v), want the one holding 13-14", local, err)
	}

	for _, tc := range []struct {
		target Target
		want   string
	}{
		{Target{Time: base.Add(150 * time.Millisecond)}, fmt.Sprintf("%s is before the snapshot, taken at %s at revision 12: restore from an older snapshot",
			base.Add(150*time.Millisecond).UTC().Format(time.RFC3339Nano), base.Add(200*time.Millisecond).UTC().Format(time.RFC3339Nano))},
		{Target{Revision: 25}, (&CoverError{From: 13, To: 25, Covered: [][2]int64{{10, 20}}}).Error()},
		{Target{Revision: 11}, "the target revision 11 is before the snapshot's revision 12: restore from an older snapshot"},
	} {
		other := filepath.Join(t.TempDir(), "archive")
		_, err := Prepare(ctx, bucket, "p", 7, 12, tc.target, other)
		if err == nil || err.Error() != tc.want {
			t.Errorf("target %s: %v, want %q", tc.target, err, tc.want)
		}
		if p, _ := ReadPlan(other); p != nil {
			t.Errorf("target %s: a refused target left a plan %+v", tc.target, p)
		}
	}

	// A time after the newest record resolves only once the closed mark reaches it, so that
	// every member resolves the same revision; a time after a gap is refused.
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	late := Target{Time: at(1500)}
	_, err = Prepare(ctx, bucket, "p", 7, 12, late, filepath.Join(t.TempDir(), "a"))
	want1 := fmt.Sprintf("the archive holds nothing received after %s: reading the archive's closed mark (the archiver writes it every few seconds while it is current): open %s: no such file or directory",
		stamp(at(1500)), filepath.Join(string(bucket), "p", "0000000000000007", "closed.json"))
	if err == nil || err.Error() != want1 {
		t.Fatalf("a time past the archive without a closed mark: %v, want %q", err, want1)
	}
	if err := writeClosed(ctx, bucket, "p", 7, Closed{Revision: 20, Time: at(1200).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(ctx, bucket, "p", 7, 12, late, filepath.Join(t.TempDir(), "a"))
	want2 := fmt.Sprintf("the archive is known complete up to %s (revision 20), and its range from the snapshot ends at revision 20 received at %s: the revision at %s is not known yet; this tries again until the archive reaches it",
		stamp(at(1200)), stamp(at(1000)), stamp(at(1500)))
	if err == nil || err.Error() != want2 {
		t.Fatalf("a time past the closed mark: %v, want %q", err, want2)
	}
	if err := writeClosed(ctx, bucket, "p", 7, Closed{Revision: 20, Time: at(1600).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if plan, err := Prepare(ctx, bucket, "p", 7, 12, late, filepath.Join(t.TempDir(), "a")); err != nil || plan.To != 20 {
		t.Fatalf("a time the closed mark reaches: %+v, %v; want revision 20", plan, err)
	}
	put(30, 31)
	if err := writeClosed(ctx, bucket, "p", 7, Closed{Revision: 31, Time: at(9000).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(ctx, bucket, "p", 7, 12, late, filepath.Join(t.TempDir(), "a"))
	want3 := fmt.Sprintf("%s lies after the archive's range from the snapshot, which ends at revision 20 received at %s: if the archive resumed after a gap (status.archive.ranges), restore from a snapshot taken after the gap; otherwise this tries again",
		stamp(at(1500)), stamp(at(1000)))
	if err == nil || err.Error() != want3 {
		t.Fatalf("a time in a gap: %v, want %q", err, want3)
	}
}

// The closed mark is written only when the cluster is at exactly the newest revision received:
// a cluster ahead is not known to be stored yet; a cluster behind it rewrote its history
// under the same ID, which ends the run, with no mark.
func TestClosedMarkOnlyAtTheClustersRevision(t *testing.T) {
	ctx := context.Background()
	at := time.UnixMilli(1_700_000_000_000)
	for _, tc := range []struct {
		name    string
		cluster int64
		mark    bool
		fails   bool
	}{
		{"the cluster is ahead", 12, false, false},
		{"the cluster is at the archive's revision", 10, true, false},
		{"the cluster went back", 9, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := DirStore(t.TempDir())
			var marks []Closed
			a := &Archiver{Store: bucket, Prefix: "p", ClusterID: 7, Now: func() time.Time { return at },
				ClusterRevision: func(context.Context) (int64, error) { return tc.cluster, nil },
				ClosedMark:      func(c Closed) { marks = append(marks, c) }}
			err := (&segmentWriter{a: a, last: 10}).close(ctx)
			if (err != nil) != tc.fails {
				t.Fatalf("close: %v, want an error: %v", err, tc.fails)
			}
			got, rerr := ReadClosed(ctx, bucket, "p", 7)
			want := Closed{Revision: 10, Time: at.UnixMilli()}
			switch {
			case tc.mark && (rerr != nil || got != want || len(marks) != 1 || marks[0] != want):
				t.Fatalf("closed mark %+v (%v), told %+v; want %+v", got, rerr, marks, want)
			case !tc.mark && (rerr == nil || len(marks) != 0):
				t.Fatalf("a closed mark %+v was written (told %+v)", got, marks)
			}
		})
	}
}
