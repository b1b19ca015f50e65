package archive

import (
	"context"
	"fmt"
	"path"
	"strconv"
)

// Deleter is a Store that can delete: retention prunes the archive through it.
type Deleter interface {
	Store
	// Delete removes the object name; one that is gone already is no error.
	Delete(ctx context.Context, name string) error
}

// Pruned is what Prune deleted of one cluster ID's archive.
type Pruned struct {
	ClusterID uint64
	Segments  []Span
}

// Prune deletes the segments under prefix that no kept snapshot needs. kept is, for each
// cluster ID that has kept snapshots, the revision of its oldest: a snapshot at revision R
// needs the segments from the one holding R (a time target reads R's time) onward, so the
// segments that end below the oldest kept snapshot's revision go. A cluster ID with no kept
// snapshot needs none of its segments (a restore starts from a snapshot of the same cluster),
// except current, the cluster the archiver follows now, whose segments are kept. The segment
// with a cluster ID's newest revision always stays: the archiver resumes after it.
//
// The caller must know every kept snapshot of the cluster: one it missed loses the segments
// it needs.
func Prune(ctx context.Context, s Deleter, prefix string, kept map[uint64]int64, current uint64) ([]Pruned, error) {
	names, err := s.List(ctx, prefix+"/")
	if err != nil {
		return nil, fmt.Errorf("listing the archive: %w", err)
	}
	byID := map[uint64][]Span{}
	for _, n := range names {
		sp, ok := ParseSegmentName(n)
		if !ok {
			continue
		}
		id, ok := segmentClusterID(prefix, n)
		if !ok {
			continue
		}
		byID[id] = append(byID[id], sp)
	}
	var out []Pruned
	for id, spans := range byID {
		floor, hasKept := kept[id]
		if !hasKept && id == current {
			continue
		}
		newest := int64(0)
		for _, sp := range spans {
			newest = max(newest, sp.Last)
		}
		SortSpans(spans)
		p := Pruned{ClusterID: id}
		for _, sp := range spans {
			if hasKept && (sp.Last >= floor || sp.Last == newest) {
				continue
			}
			err := ctx.Err() // a store may not check it (file://)
			if err == nil {
				err = s.Delete(ctx, sp.Name)
			}
			if err != nil {
				if len(p.Segments) > 0 {
					out = append(out, p)
				}
				return out, fmt.Errorf("deleting segment %s (the older ones of its cluster are deleted, the newer ones wait for the next backup): %w", sp.Name, err)
			}
			p.Segments = append(p.Segments, sp)
		}
		if len(p.Segments) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// segmentClusterID is the cluster ID whose directory under prefix holds segment name.
func segmentClusterID(prefix, name string) (uint64, bool) {
	dir := path.Dir(path.Dir(name)) // prefix/<id>
	if path.Dir(dir) != path.Clean(prefix) {
		return 0, false
	}
	id, err := strconv.ParseUint(path.Base(dir), 16, 64)
	return id, err == nil && len(path.Base(dir)) == 16
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
		name, ok, err := fl.ListFirst(ctx, Dir(prefix, clusterID)+"/"+segmentDir+"/")
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
