package archive

import (
	"fmt"
	"testing"
	"time"
)

// The lag is the age of the oldest revision seen in the cluster and not stored; a restart
// forgets what the new range will never hold; ranges extend or start anew.
func TestTrackerLagAndRanges(t *testing.T) {
	now := time.Unix(1000, 0)
	tr := NewTracker("abc", [][2]int64{{5, 9}}, func() time.Time { return now })
	tr.Seen(9) // stored already: no lag
	if r := tr.Report(); r.Lag != 0 || r.LastRevision != 9 {
		t.Fatalf("report %+v, want no lag at revision 9", r)
	}
	tr.Seen(12)
	now = now.Add(time.Second)
	tr.Seen(15)
	now = now.Add(time.Second)
	if got := tr.Report().Lag; got != 2*time.Second {
		t.Fatalf("lag %s, want 2s (revision 12 seen 2s ago)", got)
	}
	tr.Archived(Progress{Revision: 12, Time: now, Segment: SegmentName("p", 1, 10, 12)})
	if got := tr.Report().Lag; got != time.Second {
		t.Fatalf("lag %s after storing 12, want 1s (revision 15)", got)
	}
	tr.Failed(fmt.Errorf("store down"))
	tr.Restarted(20) // a gap: 13-20 will never be stored
	tr.Archived(Progress{Revision: 22, Time: now, Segment: SegmentName("p", 1, 21, 22)})
	want := Report{ClusterID: "abc", LastRevision: 22, LastTime: now, Ranges: [][2]int64{{5, 12}, {21, 22}}, Segments: 2}
	if r := tr.Report(); fmt.Sprint(r) != fmt.Sprint(want) {
		t.Fatalf("report %+v, want %+v", r, want)
	}
}

// TrimBefore drops the revisions whose segments retention deleted, and nothing after them.
func TestTrackerTrimBefore(t *testing.T) {
	tr := NewTracker("a", [][2]int64{{1, 10}, {20, 30}, {40, 50}}, nil)
	tr.TrimBefore(25)
	if got := tr.Report().Ranges; fmt.Sprint(got) != fmt.Sprint([][2]int64{{25, 30}, {40, 50}}) {
		t.Fatalf("ranges %v, want [25-30 40-50]", got)
	}
	tr.TrimBefore(35)
	if got := tr.Report(); fmt.Sprint(got.Ranges) != fmt.Sprint([][2]int64{{40, 50}}) || got.LastRevision != 50 {
		t.Fatalf("ranges %v (last %d), want [40-50] and 50", got.Ranges, got.LastRevision)
	}
}
