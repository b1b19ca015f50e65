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
			if err := s.Delete(ctx, sp.Name); err != nil {
				return append(out, p), fmt.Errorf("deleting segment %s: %w", sp.Name, err)
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
