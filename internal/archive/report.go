package archive

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// ReportPath is where the archiver's process serves its Report (JSON), on ReportPort.
const (
	ReportPath = "/status"
	ReportPort = 8080
)

// Report is where an archiver stands, as `quorate-backup archive` serves it and the operator
// reads it into EtcdBackupSchedule.status.archive. It is the contract between the two.
type Report struct {
	// ClusterID archived (hex, as EtcdCluster.status.clusterID).
	ClusterID string `json:"clusterID"`
	// LastRevision stored, received at LastTime (zero before the first segment).
	LastRevision int64     `json:"lastRevision"`
	LastTime     time.Time `json:"lastTime"`
	// Lag: how long the oldest revision the cluster was seen to have, and the archive has not
	// stored, has waited; 0 when the archive holds every revision seen.
	Lag time.Duration `json:"lag"`
	// Ranges this cluster ID's archive covers, oldest first (at most MaxRanges, the newest).
	Ranges [][2]int64 `json:"ranges"`
	// Error is the last error that ended a run, at ErrorTime ("" once a segment or a closed
	// mark was stored since); Failing is how long runs have been ending so.
	Error     string        `json:"error,omitempty"`
	ErrorTime time.Time     `json:"errorTime"`
	Failing   time.Duration `json:"failing"`
	// Segments stored by this process.
	Segments int64 `json:"segments"`
	// WatchingFrom is the revision after which the running watch started (0 before it
	// started).
	WatchingFrom int64 `json:"watchingFrom"`
	// Unreached is how long the archiver has not reached the cluster (its revision probe
	// fails; 0 while it answers), and Unreachable the probe's last error.
	Unreached   time.Duration `json:"unreached"`
	Unreachable string        `json:"unreachable,omitempty"`
	// Starting, when not empty, is why the archiver has not begun: its first reading of the
	// archive failed (the store refuses it, or its certificate is not trusted), with that
	// error. The rest of the report is empty then: it says nothing of the archive yet, and
	// the archiver serves it with 503 Service Unavailable.
	Starting string `json:"starting,omitempty"`
}

// MaxRanges is the most ranges a Report carries.
const MaxRanges = 32

// DecodeReport reads a Report.
func DecodeReport(data []byte) (Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return Report{}, fmt.Errorf("the archiver's report does not decode: %w", err)
	}
	return r, nil
}

// FormatRanges writes ranges as "first-last".
func FormatRanges(ranges [][2]int64) []string {
	out := make([]string, 0, len(ranges))
	for _, r := range ranges {
		out = append(out, fmt.Sprintf("%d-%d", r[0], r[1]))
	}
	return out
}

// Tracker keeps an archiver's Report: the segments stored (Archived), the cluster's revisions
// as probed (Seen), and the errors that ended runs (Failed). Safe for concurrent use.
type Tracker struct {
	mu     sync.Mutex
	report Report
	// seen are probed revisions the archive had not stored yet, oldest first, with when each
	// was first seen.
	seen []seenRevision
	// unreachedSince is when the cluster stopped answering (zero while it answers);
	// failingSince when runs began to end in errors (zero once the archive stores again).
	unreachedSince, failingSince time.Time
	now                          func() time.Time
}

// Contact records that the cluster answered.
func (t *Tracker) Contact() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unreachedSince, t.report.Unreachable = time.Time{}, ""
}

// Unreachable records that the cluster did not answer.
func (t *Tracker) Unreachable(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.unreachedSince.IsZero() {
		t.unreachedSince = t.now()
	}
	t.report.Unreachable = err.Error()
}

type seenRevision struct {
	rev int64
	at  time.Time
}

// NewTracker starts a Report for clusterID from the ranges the archive holds already.
func NewTracker(clusterID string, ranges [][2]int64, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	t := &Tracker{now: now, report: Report{ClusterID: clusterID}}
	t.Started(ranges)
	return t
}

func trimRanges(r [][2]int64) [][2]int64 {
	if len(r) > MaxRanges {
		r = r[len(r)-MaxRanges:]
	}
	return append([][2]int64(nil), r...)
}

// Starting records why the archiver has not begun (Report.Starting): its first reading of
// the archive failed with err.
func (t *Tracker) Starting(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.report.Starting = err.Error()
}

// Started records that the archiver has read the archive, which holds ranges, and begins.
func (t *Tracker) Started(ranges [][2]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.report.Starting, t.report.Ranges = "", trimRanges(ranges)
	if n := len(ranges); n > 0 {
		t.report.LastRevision = ranges[n-1][1]
	}
}

// Archived records a stored segment (an Archiver's Archived).
func (t *Tracker) Archived(p Progress) {
	first := p.Revision
	if sp, ok := ParseSegmentName(p.Segment); ok {
		first = sp.First
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &t.report
	if n := len(r.Ranges); n > 0 && first <= r.Ranges[n-1][1]+1 && first >= r.Ranges[n-1][0] {
		r.Ranges[n-1][1] = max(r.Ranges[n-1][1], p.Revision)
	} else {
		r.Ranges = trimRanges(append(r.Ranges, [2]int64{first, p.Revision}))
	}
	r.LastRevision, r.LastTime = max(r.LastRevision, p.Revision), p.Time
	r.Segments++
	t.clearError()
	for len(t.seen) > 0 && t.seen[0].rev <= r.LastRevision {
		t.seen = t.seen[1:]
	}
}

// TrimBefore drops from the ranges the revisions before first: the oldest segment the archive
// still holds starts there, retention having deleted those before it.
func (t *Tracker) TrimBefore(first int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [][2]int64
	for _, r := range t.report.Ranges {
		if r[1] < first {
			continue
		}
		out = append(out, [2]int64{max(r[0], first), r[1]})
	}
	t.report.Ranges = out
}

// Seen records that the cluster was at revision rev (a probe's answer).
func (t *Tracker) Seen(rev int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rev <= t.report.LastRevision || (len(t.seen) > 0 && rev <= t.seen[len(t.seen)-1].rev) {
		return
	}
	t.seen = append(t.seen, seenRevision{rev: rev, at: t.now()})
}

// Failed records the error that ended a run.
func (t *Tracker) Failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.report.Error, t.report.ErrorTime = err.Error(), t.now()
	if t.failingSince.IsZero() {
		t.failingSince = t.report.ErrorTime
	}
}

// ClosedMark records a closed mark written: the archive is current.
func (t *Tracker) ClosedMark(Closed) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearError()
}

func (t *Tracker) clearError() {
	t.report.Error, t.report.ErrorTime, t.failingSince = "", time.Time{}, time.Time{}
}

// Restarted tells that the archive starts a new range after from (the archive was empty, or
// etcd compacted revisions it had not stored): what was seen up to from will never be stored.
func (t *Tracker) Restarted(from int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.seen) > 0 && t.seen[0].rev <= from {
		t.seen = t.seen[1:]
	}
}

// Watching records that a watch starts after revision from.
func (t *Tracker) Watching(from int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.report.WatchingFrom = from
}

// Report is the Report now.
func (t *Tracker) Report() Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.report
	r.Ranges = append([][2]int64(nil), r.Ranges...)
	if len(t.seen) > 0 {
		r.Lag = t.now().Sub(t.seen[0].at)
	}
	if !t.unreachedSince.IsZero() {
		r.Unreached = t.now().Sub(t.unreachedSince)
	}
	if !t.failingSince.IsZero() {
		r.Failing = t.now().Sub(t.failingSince)
	}
	return r
}
