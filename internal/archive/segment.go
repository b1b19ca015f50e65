// Package archive keeps every change of an etcd cluster, so that a restore can go to any
// revision or time after a snapshot, not only to the snapshot itself (point-in-time recovery).
//
// An Archiver watches the whole keyspace from the revision after the last one archived and
// writes what it sees, one Record per revision, into segments: gzip'd objects named by the
// first and last revision they hold, in a Store (the backups' object store). Revisions are
// contiguous in etcd (every revision is one transaction with at least one change, and each
// change is an event), so the archiver refuses a record that does not follow the previous one,
// and compaction past the archive ends it with a GapError: the caller takes a full snapshot
// and archives on from there.
//
// Replay applies the archived records after a snapshot's revision, up to a target, to a
// cluster restored from that snapshot, one transaction per record, and checks after each one
// that the cluster's revision is the record's: the restored keyspace then equals the
// original's at the target, revisions and versions included. Cover says which segments a
// target needs and refuses one the archive does not reach, naming what it covers.
package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
)

// Format names the segment encoding, in each segment's header.
const Format = "quorate.dev/archive-segment/v1"

// OpType of an archived change.
type OpType string

const (
	// Put sets Key to Value.
	Put OpType = "put"
	// Delete removes Key.
	Delete OpType = "delete"
)

// Op is one change of a revision.
type Op struct {
	Type  OpType `json:"type"`
	Key   []byte `json:"key"`
	Value []byte `json:"value,omitempty"`
	// Version of the key after a put (1: the put created it): the replay checks that the key
	// is at Version-1 before it applies the put, so a cluster in another state is noticed at
	// the first key that differs.
	Version int64 `json:"version,omitempty"`
	// Lease the key was attached to (0: none), as etcd reported it.
	Lease int64 `json:"lease,omitempty"`
	// LeaseTTL is the TTL, in seconds, Lease was granted with, as the cluster reported it
	// when the archiver first saw the lease (0: not known, or no lease). A replay onto a
	// cluster that lacks the lease (granted after its snapshot) grants it with this TTL
	// under the same ID; without it, the key is written without a lease.
	LeaseTTL int64 `json:"leaseTTL,omitempty"`
}

// Record is every change of one revision, in etcd's order.
type Record struct {
	Revision int64 `json:"rev"`
	// Time the archiver received the revision (Unix milliseconds): a time target resolves to
	// the newest revision received at or before it.
	Time int64 `json:"time"`
	Ops  []Op  `json:"ops"`
}

// At is Record.Time as a time.
func (r Record) At() time.Time { return time.UnixMilli(r.Time) }

// Header opens every segment.
type Header struct {
	Format    string `json:"format"`
	ClusterID uint64 `json:"clusterID"`
	First     int64  `json:"first"`
	Last      int64  `json:"last"`
	Records   int    `json:"records"`
}

// segmentDir is where segments go under the archive's prefix.
const segmentDir = "segments"

// SegmentsDir is the directory of cluster id's segments in the archive at prefix, with its
// trailing slash: what listing the segments lists.
func SegmentsDir(prefix string, clusterID uint64) string {
	return Dir(prefix, clusterID) + "/" + segmentDir + "/"
}

// Dir is where the archive of cluster id goes under prefix: each cluster ID has its own, so
// that a cluster restored from another's snapshot (a new ID, the same revisions) or created
// again under the same name never mixes its revisions with the other's.
func Dir(prefix string, clusterID uint64) string {
	return path.Join(prefix, fmt.Sprintf("%016x", clusterID))
}

// SegmentName is the object name of cluster id's segment holding revisions first to last:
// zero-padded, so that names sort as revisions do.
func SegmentName(prefix string, clusterID uint64, first, last int64) string {
	return path.Join(Dir(prefix, clusterID), segmentDir, fmt.Sprintf("%019d-%019d.jsonl.gz", first, last))
}

// Span is a segment's revisions, from its name.
type Span struct {
	Name        string
	First, Last int64
}

// ParseSegmentName reads the revisions from a segment's object name; ok is false for an object
// that is not a segment.
func ParseSegmentName(name string) (Span, bool) {
	base := path.Base(name)
	if path.Base(path.Dir(name)) != segmentDir || !strings.HasSuffix(base, ".jsonl.gz") {
		return Span{}, false
	}
	a, b, ok := strings.Cut(strings.TrimSuffix(base, ".jsonl.gz"), "-")
	if !ok || len(a) != 19 || len(b) != 19 {
		return Span{}, false
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 1 || last < first {
		return Span{}, false
	}
	return Span{Name: name, First: first, Last: last}, true
}

// Encode writes records (contiguous revisions, at least one) as a segment of cluster id.
func Encode(clusterID uint64, records []Record) ([]byte, error) {
	if len(records) == 0 {
		return nil, errors.New("a segment holds at least one record")
	}
	for i := 1; i < len(records); i++ {
		if records[i].Revision != records[i-1].Revision+1 {
			return nil, fmt.Errorf("revision %d follows %d: a segment's revisions are contiguous", records[i].Revision, records[i-1].Revision)
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	h := Header{Format: Format, ClusterID: clusterID, First: records[0].Revision, Last: records[len(records)-1].Revision, Records: len(records)}
	if err := enc.Encode(h); err != nil {
		return nil, err
	}
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads a segment and checks it whole: its format, contiguous revisions from First to
// Last, and as many records as its header says (a truncated object fails).
func Decode(data []byte) (Header, []Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, fmt.Errorf("not a gzip'd segment: %w", err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	var h Header
	if !sc.Scan() {
		return Header{}, nil, fmt.Errorf("the segment has no header: %w", scanErr(sc))
	}
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
		return Header{}, nil, fmt.Errorf("the segment's header: %w", err)
	}
	if h.Format != Format {
		return Header{}, nil, fmt.Errorf("segment format %q, not %q", h.Format, Format)
	}
	var out []Record
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return h, nil, fmt.Errorf("record %d of the segment: %w", len(out)+1, err)
		}
		want := h.First + int64(len(out))
		if r.Revision != want {
			return h, nil, fmt.Errorf("record %d of the segment is revision %d, not %d", len(out)+1, r.Revision, want)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return h, nil, fmt.Errorf("reading the segment: %w", err)
	}
	if len(out) != h.Records || len(out) == 0 || out[len(out)-1].Revision != h.Last {
		return h, nil, fmt.Errorf("the segment holds %d records; its header says %d, revisions %d to %d: it is cut short", len(out), h.Records, h.First, h.Last)
	}
	return h, out, nil
}

func scanErr(sc *bufio.Scanner) error {
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
