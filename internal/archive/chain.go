package archive

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Store holds an archive's objects: the backups' object store (blobstore implements it over
// S3, Google Cloud Storage and Azure), or memory in tests.
type Store interface {
	// Put stores data under name, whole or not at all.
	Put(ctx context.Context, name string, data []byte) error
	// Get reads the object name.
	Get(ctx context.Context, name string) ([]byte, error)
	// List names every object under prefix.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Segments lists cluster id's segments under prefix, by first revision. Two segments that overlap (an
// archiver that resumed from a revision older than the newest segment, after a crash between
// a write and its record) are kept both: Cover takes what it needs from either.
func Segments(ctx context.Context, s Store, prefix string, clusterID uint64) ([]Span, error) {
	names, err := s.List(ctx, SegmentsDir(prefix, clusterID))
	if err != nil {
		return nil, fmt.Errorf("listing the archive's segments: %w", err)
	}
	var out []Span
	for _, n := range names {
		if sp, ok := ParseSegmentName(n); ok {
			out = append(out, sp)
		}
	}
	SortSpans(out)
	return out, nil
}

// SortSpans orders segments by first revision, the longer first (as Segments lists them, and
// as Ranges and Cover take them).
func SortSpans(spans []Span) {
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].First != spans[j].First {
			return spans[i].First < spans[j].First
		}
		return spans[i].Last > spans[j].Last
	})
}

// Ranges are the revision ranges the segments cover together, each as [first, last], in order.
func Ranges(spans []Span) [][2]int64 {
	var out [][2]int64
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.First <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], sp.Last)
			continue
		}
		out = append(out, [2]int64{sp.First, sp.Last})
	}
	return out
}

// CoverError: the archive does not hold every revision from a snapshot's to a target.
type CoverError struct {
	From, To int64
	Covered  [][2]int64
}

func (e *CoverError) Error() string {
	var have []string
	for _, r := range e.Covered {
		have = append(have, fmt.Sprintf("%d–%d", r[0], r[1]))
	}
	covered := "nothing"
	if len(have) > 0 {
		covered = "revisions " + strings.Join(have, ", ")
	}
	return fmt.Sprintf("the archive does not hold every revision from %d to %d: it covers %s; choose a target within one covered range that starts at most one revision after the snapshot's", e.From, e.To, covered)
}

// Cover picks the segments that hold revisions from+1 to to (a snapshot at revision from,
// restored to revision to), fewest first-come, or fails with a CoverError.
func Cover(spans []Span, from, to int64) ([]Span, error) {
	if to <= from {
		return nil, nil
	}
	var out []Span
	next := from + 1
	for next <= to {
		var best Span
		found := false
		for _, sp := range spans {
			if sp.First <= next && sp.Last >= next && (!found || sp.Last > best.Last) {
				best, found = sp, true
			}
		}
		if !found {
			return nil, &CoverError{From: from + 1, To: to, Covered: Ranges(spans)}
		}
		out = append(out, best)
		next = best.Last + 1
	}
	return out, nil
}
