package archive

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Prune deletes the segments that end below (not at) each cluster's oldest kept snapshot, every segment
// of a cluster with no kept snapshot but the current one, and keeps each archive's newest; a
// restore from the oldest kept snapshot, to a revision or a time, still works after it.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	base := time.UnixMilli(1_700_000_000_000)
	s := DirStore(t.TempDir())
	put := func(id uint64, first, last int64) {
		var records []Record
		for rev := first; rev <= last; rev++ {
			records = append(records, Record{Revision: rev, Time: base.Add(time.Duration(rev) * time.Second).UnixMilli(), Ops: []Op{{Type: Put, Key: []byte(fmt.Sprint(rev)), Value: []byte("v")}}})
		}
		data, err := Encode(id, records)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, SegmentName("p", id, first, last), data); err != nil {
			t.Fatal(err)
		}
	}
	const a, b, c, d = 0xa, 0xb, 0xc, 0xd
	for _, r := range [][2]int64{{1, 10}, {11, 21}, {5, 20}, {22, 30}, {31, 40}} {
		put(a, r[0], r[1]) // its oldest kept snapshot is at 21
	}
	put(b, 1, 5) // an earlier cluster whose snapshots all expired
	put(b, 6, 9)
	put(c, 1, 50) // an earlier cluster: its only segment is older than its kept snapshot
	put(d, 1, 3)  // the cluster followed now, restored from a: no snapshot of it yet
	if err := s.Put(ctx, "p/000000000000000a/closed.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "p-other/000000000000000b/segments/"+fmt.Sprintf("%019d-%019d.jsonl.gz", 1, 2), []byte("x")); err != nil {
		t.Fatal(err)
	}

	got, err := Prune(ctx, s, "p", map[uint64]int64{a: 21, c: 100}, d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64][]Span{
		a: {{Name: SegmentName("p", a, 1, 10), First: 1, Last: 10}, {Name: SegmentName("p", a, 5, 20), First: 5, Last: 20}},
		b: {{Name: SegmentName("p", b, 1, 5), First: 1, Last: 5}, {Name: SegmentName("p", b, 6, 9), First: 6, Last: 9}},
	}
	gotByID := map[uint64][]Span{}
	for _, p := range got {
		gotByID[p.ClusterID] = p.Segments
	}
	if !reflect.DeepEqual(gotByID, want) {
		t.Fatalf("pruned %+v, want %+v", gotByID, want)
	}
	left, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	wantLeft := []string{"p/000000000000000a/closed.json", SegmentName("p", a, 11, 21), SegmentName("p", a, 22, 30), SegmentName("p", a, 31, 40), SegmentName("p", c, 1, 50),
		SegmentName("p", d, 1, 3), "p-other/000000000000000b/segments/" + fmt.Sprintf("%019d-%019d.jsonl.gz", 1, 2)}
	if !reflect.DeepEqual(left, wantLeft) {
		t.Fatalf("left %v, want %v", left, wantLeft)
	}

	// The oldest kept snapshot (21) still restores to a revision and to a time.
	if _, err := Prepare(ctx, s, "p", a, 21, Target{Revision: 40}, t.TempDir()); err != nil {
		t.Errorf("a restore from revision 21 to 40 after pruning: %v", err)
	}
	plan, err := Prepare(ctx, s, "p", a, 21, Target{Time: base.Add(25500 * time.Millisecond)}, t.TempDir())
	if err != nil || plan.To != 25 {
		t.Errorf("a restore from revision 21 to a time after pruning: %+v, %v; want revision 25", plan, err)
	}
	// Pruning again deletes nothing.
	if again, err := Prune(ctx, s, "p", map[uint64]int64{a: 21, c: 100}, d); err != nil || len(again) != 0 {
		t.Errorf("pruning again: %+v, %v", again, err)
	}
}

// failingDelete fails to delete one object.
type failingDelete struct {
	DirStore
	name string
}

func (f failingDelete) Delete(ctx context.Context, name string) error {
	if name == f.name {
		return fmt.Errorf("refused")
	}
	return f.DirStore.Delete(ctx, name)
}

// A delete that fails stops the pruning of that cluster after its window: the others of the
// window are gone, the segments that reach the floor stay, and the next pruning deletes what
// was left below it.
func TestPruneStopsAtAFailedDelete(t *testing.T) {
	ctx := context.Background()
	s := DirStore(t.TempDir())
	for _, r := range [][2]int64{{1, 10}, {11, 20}, {21, 30}, {31, 40}} {
		data, err := Encode(1, []Record{{Revision: r[0]}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, SegmentName("p", 1, r[0], r[1]), data); err != nil {
			t.Fatal(err)
		}
	}
	span := func(first, last int64) Span {
		return Span{Name: SegmentName("p", 1, first, last), First: first, Last: last}
	}
	got, err := Prune(ctx, failingDelete{s, SegmentName("p", 1, 11, 20)}, "p", map[uint64]int64{1: 35}, 1)
	if want := []Pruned{{ClusterID: 1, Segments: []Span{span(1, 10), span(21, 30)}}}; err == nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Prune = %+v, %v; want %+v and an error", got, err, want)
	}
	if spans, err := Segments(ctx, s, "p", 1); err != nil || !reflect.DeepEqual(spans, []Span{span(11, 20), span(31, 40)}) {
		t.Fatalf("left %+v (%v), want 11-20 and 31-40", spans, err)
	}
	// Out of time (a store that does not check the context itself): nothing more goes.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := Prune(done, s, "p", map[uint64]int64{1: 35}, 1); !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("Prune out of time = %+v, %v; want nothing deleted and context.Canceled", got, err)
	}
	if spans, _ := Segments(ctx, s, "p", 1); len(spans) != 2 {
		t.Fatalf("left %+v after pruning out of time, want 2 segments", spans)
	}
	// The next pruning deletes what the failure left below the floor.
	if got, err := Prune(ctx, s, "p", map[uint64]int64{1: 35}, 1); err != nil || !reflect.DeepEqual(got, []Pruned{{ClusterID: 1, Segments: []Span{span(11, 20)}}}) {
		t.Fatalf("pruning again = %+v, %v; want 11-20 deleted", got, err)
	}
}

// walkingStore is a DirStore that lists as an object store does (Walker, DirLister), and
// counts the names its walks read.
type walkingStore struct {
	DirStore
	mu   sync.Mutex
	read int
}

func (w *walkingStore) Walk(ctx context.Context, prefix string, fn func(string) (bool, error)) error {
	names, err := w.List(ctx, prefix)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		w.mu.Lock()
		w.read++
		w.mu.Unlock()
		if more, err := fn(n); err != nil || !more {
			return err
		}
	}
	return nil
}

func (w *walkingStore) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	names, err := w.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, n := range names {
		if rest := strings.TrimPrefix(n, prefix); strings.Contains(rest, "/") {
			dirs = append(dirs, prefix+rest[:strings.Index(rest, "/")+1])
		}
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

// On a store that walks its listing, Prune reads a cluster's segments only up to the first
// one that reaches the floor, deletes a backlog of several windows oldest first, and keeps
// the segment with the newest revision of an archive behind its oldest kept snapshot.
func TestPruneWalksOnlyToTheFloor(t *testing.T) {
	ctx := context.Background()
	w := &walkingStore{DirStore: DirStore(t.TempDir())}
	var want []Span
	const n = 3*pruneWindow + 5
	for i := range int64(n) {
		first, last := 10*i+1, 10*i+10
		if err := w.Put(ctx, SegmentName("p", 1, first, last), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if last < 10*(n-10) {
			want = append(want, Span{Name: SegmentName("p", 1, first, last), First: first, Last: last})
		}
	}
	// Cluster 2's archive ends below its kept snapshot: only its newest segment stays.
	for _, r := range [][2]int64{{1, 5}, {6, 9}} {
		if err := w.Put(ctx, SegmentName("p", 2, r[0], r[1]), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Prune(ctx, w, "p", map[uint64]int64{1: 10 * (n - 10), 2: 100}, 1)
	wantPruned := []Pruned{{ClusterID: 1, Segments: want}, {ClusterID: 2, Segments: []Span{{Name: SegmentName("p", 2, 1, 5), First: 1, Last: 5}}}}
	if err != nil || !reflect.DeepEqual(got, wantPruned) {
		t.Fatalf("Prune = %+v, %v;\nwant %+v", got, err, wantPruned)
	}
	// Cluster 1: the deleted segments and the one that reaches the floor; cluster 2: both.
	if wantRead := len(want) + 1 + 2; w.read != wantRead {
		t.Errorf("the walks read %d names, want %d", w.read, wantRead)
	}
	left, err := w.List(ctx, "p/")
	if err != nil || len(left) != n-len(want)+1 {
		t.Fatalf("left %d segments (%v), want %d", len(left), err, n-len(want)+1)
	}
}
