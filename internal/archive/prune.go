package archive

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"sync"
)

// Deleter is a Store that can delete: retention prunes the archive through it.
type Deleter interface {
	Store
	// Delete removes the object name; one that is gone already is no error.
	Delete(ctx context.Context, name string) error
}

// Walker is a Store that lists page by page, in byte order, so that a listing can stop
// early: Prune reads a cluster's segments only as far as the first one it keeps.
type Walker interface {
	// Walk calls fn with each object name under prefix, in byte order, until fn returns false
	// or an error (which Walk returns).
	Walk(ctx context.Context, prefix string, fn func(name string) (bool, error)) error
}

// DirLister is a Store that names the directories directly under a prefix ("p/<id>/").
type DirLister interface {
	ListDirs(ctx context.Context, prefix string) ([]string, error)
}

// Pruned is what Prune deleted of one cluster ID's archive.
type Pruned struct {
	ClusterID uint64
	Segments  []Span
}

// pruneWindow is how many deletes Prune runs at once: object stores delete one object per
// request, and a backlog goes window by window.
const pruneWindow = 16

// Prune deletes the segments under prefix that no kept snapshot needs. kept is, for each
// cluster ID that has kept snapshots, the revision of its oldest: a snapshot at revision R
// needs the segments from the one holding R (a time target reads R's time) onward, so the
// segments that end below the oldest kept snapshot's revision go. A cluster ID with no kept
// snapshot needs none of its segments (a restore starts from a snapshot of the same cluster),
// except current, the cluster the archiver follows now, whose segments are kept. The segment
// with a cluster ID's newest revision always stays: the archiver resumes after it.
//
// Segment names sort by first revision, so a cluster's listing is read only up to the first
// segment that reaches the floor (where the store is a Walker), and deletes go oldest first,
// pruneWindow at a time. A delete that fails stops the pruning after its window: a segment
// below the floor may then stay until the next pruning, but nothing at or above it is ever
// deleted.
//
// The caller must know every kept snapshot of the cluster: one it missed loses the segments
// it needs.
func Prune(ctx context.Context, s Deleter, prefix string, kept map[uint64]int64, current uint64) ([]Pruned, error) {
	ids, err := clusterIDs(ctx, s, prefix)
	if err != nil {
		return nil, fmt.Errorf("listing the archive: %w", err)
	}
	var out []Pruned
	for _, id := range ids {
		floor, hasKept := kept[id]
		if !hasKept && id == current {
			continue
		}
		p, err := pruneCluster(ctx, s, prefix, id, floor, hasKept)
		if len(p.Segments) > 0 {
			out = append(out, p)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// pruneCluster deletes cluster id's segments that end below floor, or every one of them
// without a kept snapshot (!hasKept). With one, the segment with the newest revision stays
// even below the floor (an archiver behind the snapshot).
func pruneCluster(ctx context.Context, s Deleter, prefix string, id uint64, floor int64, hasKept bool) (Pruned, error) {
	p := Pruned{ClusterID: id}
	var window []Span
	flush := func() error {
		done, err := deleteSpans(ctx, s, window)
		p.Segments = append(p.Segments, done...)
		window = window[:0]
		return err
	}
	drop := func(sp Span) error {
		if window = append(window, sp); len(window) < pruneWindow {
			return nil
		}
		return flush()
	}
	// newest is the segment with the newest revision listed so far: deleted once a later one
	// ends after it, or the floor is reached.
	var newest *Span
	reached := false
	err := walkSegments(ctx, s, SegmentsDir(prefix, id), func(sp Span) (bool, error) {
		if hasKept && sp.Last >= floor {
			reached = true
			return false, nil
		}
		switch {
		case newest == nil:
			newest = &sp
			return true, nil
		case sp.Name == newest.Name:
			return true, nil // listed twice
		case sp.Last > newest.Last:
			old := *newest
			newest = &sp
			return true, drop(old)
		default:
			return true, drop(sp)
		}
	})
	if err == nil && newest != nil && (reached || !hasKept) {
		window = append(window, *newest)
	}
	if ferr := flush(); err == nil {
		err = ferr
	}
	return p, err
}

// deleteSpans deletes spans, pruneWindow at a time at most, and returns those deleted, in
// their order. It starts none once ctx is done (a store may not check it: file://).
func deleteSpans(ctx context.Context, s Deleter, spans []Span) ([]Span, error) {
	errs := make([]error, len(spans))
	var wg sync.WaitGroup
	for i, sp := range spans {
		if errs[i] = ctx.Err(); errs[i] != nil {
			continue
		}
		wg.Go(func() { errs[i] = s.Delete(ctx, sp.Name) })
	}
	wg.Wait()
	timeUp := func(err error) bool {
		return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	}
	var done []Span
	var failed error
	for i, sp := range spans {
		if errs[i] == nil {
			done = append(done, sp)
			continue
		}
		// A refusal is told before running out of time, which the caller takes for no
		// failure.
		if failed == nil || timeUp(failed) && !timeUp(errs[i]) {
			failed = fmt.Errorf("deleting segment %s (the segments that stay wait for the next backup): %w", sp.Name, errs[i])
		}
	}
	return done, failed
}

// walkSegments calls fn with each segment under dir in byte order (by first revision), reading
// the listing only as far as fn goes where the store is a Walker.
func walkSegments(ctx context.Context, s Store, dir string, fn func(Span) (bool, error)) error {
	each := func(name string) (bool, error) {
		sp, ok := ParseSegmentName(name)
		if !ok || path.Dir(name)+"/" != dir {
			return true, nil
		}
		return fn(sp)
	}
	if w, ok := s.(Walker); ok {
		return w.Walk(ctx, dir, each)
	}
	names, err := s.List(ctx, dir)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, n := range names {
		more, err := each(n)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// clusterIDs are the cluster IDs with a directory under prefix, in order: from a listing of
// the directories where the store can, else from the whole listing.
func clusterIDs(ctx context.Context, s Store, prefix string) ([]uint64, error) {
	var ids []uint64
	if dl, ok := s.(DirLister); ok {
		dirs, err := dl.ListDirs(ctx, prefix+"/")
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			if id, ok := parseID(path.Base(d)); ok && path.Dir(path.Clean(d)) == path.Clean(prefix) {
				ids = append(ids, id)
			}
		}
	} else {
		names, err := s.List(ctx, prefix+"/")
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if _, ok := ParseSegmentName(n); !ok {
				continue
			}
			if id, ok := segmentClusterID(prefix, n); ok {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// segmentClusterID is the cluster ID whose directory under prefix holds segment name.
func segmentClusterID(prefix, name string) (uint64, bool) {
	dir := path.Dir(path.Dir(name)) // prefix/<id>
	if path.Dir(dir) != path.Clean(prefix) {
		return 0, false
	}
	return parseID(path.Base(dir))
}

// parseID reads a cluster ID directory's name: 16 hex digits.
func parseID(s string) (uint64, bool) {
	id, err := strconv.ParseUint(s, 16, 64)
	return id, err == nil && len(s) == 16
}

// FirstLister is a Store that names its first object under a prefix cheaply (one page of one).
type FirstLister interface {
	ListFirst(ctx context.Context, prefix string) (name string, ok bool, err error)
}

// FirstSegment is the segment of cluster id under prefix that starts first: segment names
// are zero-padded, so it is the first name in byte order, read with one small listing where
// the store can, else from the whole listing. ok is false when there is none.
func FirstSegment(ctx context.Context, s Store, prefix string, clusterID uint64) (Span, bool, error) {
	if fl, can := s.(FirstLister); can {
		name, ok, err := fl.ListFirst(ctx, SegmentsDir(prefix, clusterID))
		if err != nil || !ok {
			return Span{}, false, err
		}
		if sp, ok := ParseSegmentName(name); ok {
			return sp, true, nil
		}
	}
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil || len(spans) == 0 {
		return Span{}, false, err
	}
	return spans[0], true, nil
}
