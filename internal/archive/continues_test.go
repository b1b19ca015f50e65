package archive

import (
	"context"
	"testing"

	"github.com/quorate-dev/quorate/internal/testsupport"
)

// The archiver resumes only onto the history it holds: a cluster behind the archive, or whose
// newest archived revision holds other changes (a forced recovery rewrote it under the same
// cluster ID), is refused with a HistoryError saying what differs.
func TestCheckContinues(t *testing.T) {
	ctx := context.Background()
	c := testsupport.StartEtcd(t, "continues", false).Client(t)
	resp, err := c.Put(ctx, "a", "1")
	if err != nil {
		t.Fatal(err)
	}
	rev, id := resp.Header.Revision, resp.Header.ClusterId
	archiveOf := func(r Record) Store {
		s := DirStore(t.TempDir())
		data, err := Encode(id, []Record{r})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, SegmentName("p", id, r.Revision, r.Revision), data); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := CheckContinues(ctx, c, archiveOf(Record{Revision: rev, Ops: []Op{{Type: Put, Key: []byte("a"), Value: []byte("1")}}}), "p", id, rev); err != nil {
		t.Fatalf("the same history: %v", err)
	}
	for _, tc := range []struct {
		record Record
		want   HistoryError
	}{
		{Record{Revision: rev, Ops: []Op{{Type: Put, Key: []byte("a"), Value: []byte("2")}}},
			HistoryError{Last: rev, Cluster: rev, Why: `key "a", written at revision 2 in the archive, is not written so there in the cluster`}},
		{Record{Revision: rev, Ops: []Op{{Type: Delete, Key: []byte("a")}}},
			HistoryError{Last: rev, Cluster: rev, Why: `key "a", deleted at revision 2 in the archive, exists there in the cluster`}},
		{Record{Revision: rev + 5, Ops: []Op{{Type: Put, Key: []byte("b"), Value: []byte("1")}}},
			HistoryError{Last: rev + 5, Cluster: rev, Why: "the cluster is behind the archive"}},
	} {
		err := CheckContinues(ctx, c, archiveOf(tc.record), "p", id, tc.record.Revision)
		if got, ok := err.(*HistoryError); !ok || *got != tc.want {
			t.Errorf("archive %+v: %v, want %v", tc.record, err, &tc.want)
		}
	}
}
