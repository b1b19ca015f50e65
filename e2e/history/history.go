// Package history is the model of what happened during a conformance run: every operation a
// client issued with its outcome, the cluster's applied writes read back at the end, the
// split-brain poller's samples, and the events (faults, membership changes) of the run. The
// checkers import only this package, so any saved history can be checked again later.
package history

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// OpType is the kind of client operation.
type OpType string

const (
	Put OpType = "put" // write a unique value
	Get OpType = "get" // linearizable read
	CAS OpType = "cas" // compare-and-set in one transaction
)

// Status is the outcome of an operation as the client saw it.
type Status string

const (
	// OK: the cluster answered.
	OK Status = "ok"
	// Fail: the operation certainly had no effect (a read that failed, or a write refused
	// before it was proposed).
	Fail Status = "fail"
	// Unknown: the client cannot tell whether a write took effect (a timeout, a lost
	// connection). It may have happened at any time after its call.
	Unknown Status = "unknown"
)

// Op is one operation. Times are Unix nanoseconds.
type Op struct {
	ID     int64  `json:"id"`
	Client int    `json:"client"`
	Type   OpType `json:"type"`
	Key    string `json:"key"`
	// Value written by Put, or the new value of CAS.
	Value string `json:"value,omitempty"`
	// Expect is the value CAS compares against ("" with ExpectAbsent for a missing key).
	Expect       string `json:"expect,omitempty"`
	ExpectAbsent bool   `json:"expectAbsent,omitempty"`
	Call         int64  `json:"call"`
	Return       int64  `json:"return"`
	Status       Status `json:"status"`
	// Results of an OK operation: what Get read (or CAS saw when it failed to swap).
	Found     bool   `json:"found,omitempty"`
	Output    string `json:"output,omitempty"`
	Succeeded bool   `json:"succeeded,omitempty"` // CAS swapped
	Revision  int64  `json:"revision,omitempty"`  // header revision of the response
	Error     string `json:"error,omitempty"`
}

// IsWrite reports whether the operation may change state.
func (o Op) IsWrite() bool { return o.Type == Put || o.Type == CAS }

// Acknowledged reports whether the op is a write the cluster confirmed as applied.
func (o Op) Acknowledged() bool {
	return o.Status == OK && (o.Type == Put || (o.Type == CAS && o.Succeeded))
}

// ProposalDropped is raft's error for a proposal dropped while leadership changes (a
// transfer, or an election); etcd passes it on with code Unknown, and the write was never in the log.
const ProposalDropped = "raft proposal dropped"

// DroppedByRaft reports whether the op is a failed write raft dropped while leadership
// changed (a transfer, or an election after a leader was lost), counted apart from other failures.
func (o Op) DroppedByRaft() bool {
	return o.Status == Fail && o.IsWrite() && strings.HasSuffix(o.Error, ProposalDropped)
}

// Latency of a completed operation.
func (o Op) Latency() time.Duration { return time.Duration(o.Return - o.Call) }

// AppliedWrite is one write the cluster applied to a key, read back at the end of a run by
// replaying the key's history from revision 1.
type AppliedWrite struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	ModRevision int64  `json:"modRevision"`
	Delete      bool   `json:"delete,omitempty"`
}

// Final is the cluster's state read back after the load stopped.
type Final struct {
	// Applied lists, per key, every write in revision order.
	Applied map[string][]AppliedWrite `json:"applied"`
	// Values is a linearizable read of every key at the end ("" and absent when missing).
	Values map[string]string `json:"values"`
	// Complete is false if the replay could not cover all history (compaction).
	Complete bool `json:"complete"`
	// Compacted are the keys whose history stops at a compaction (a cluster restored to a
	// point is compacted below it): Applied starts, for them, with their value at the oldest
	// revision still readable. The checkers accept that only where a declared restore
	// explains it (Explained), and are inconclusive otherwise, as with an incomplete read.
	Compacted map[string]bool `json:"compacted,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// Sample is what one member said about itself to the split-brain poller.
type Sample struct {
	Time      int64    `json:"time"`
	Endpoint  string   `json:"endpoint"`
	MemberID  uint64   `json:"memberID,omitempty"`
	ClusterID uint64   `json:"clusterID,omitempty"`
	Leader    uint64   `json:"leader,omitempty"`
	RaftTerm  uint64   `json:"raftTerm,omitempty"`
	Members   []uint64 `json:"members,omitempty"` // the member's own (serializable) member list
	Learner   bool     `json:"learner,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Event is something that happened to the cluster during the run.
type Event struct {
	Time int64  `json:"time"`
	End  int64  `json:"end,omitempty"` // for faults: when the fault ended
	Kind string `json:"kind"`          // fault, membership, action, note, recovery
	Name string `json:"name"`
	Text string `json:"text"`
	// Revision, for a recovery: the revision the cluster was restarted from. Acknowledged
	// writes after it may be lost, and the operator said so.
	Revision int64 `json:"revision,omitempty"`
}

// EventRecovery is the kind of the event that records a forced recovery from quorum loss, or
// the restore of a lost cluster to a point (its Time: when the restored cluster was created).
const EventRecovery = "recovery"

// Names of recovery events: a forced recovery keeps the cluster ID and its terms; a restore
// starts a cluster of another ID from the revision, compacted below it.
const (
	RecoveryForced   = "forced-recovery"
	RecoveryRestored = "restored-in-place"
)

// Restore reports whether recovery event e is a lost cluster's restore (RecoveryRestored).
func (e Event) Restore() bool { return e.Kind == EventRecovery && e.Name == RecoveryRestored }

// WatchEvent is one event a watcher received, in the order it received them.
type WatchEvent struct {
	Watcher  int    `json:"watcher"`
	Time     int64  `json:"time"`
	Revision int64  `json:"revision"` // the event's ModRevision
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	Delete   bool   `json:"delete,omitempty"`
}

// Kinds of WatchMark.
const (
	// WatchStart: the watcher (re)started its watch from Revision (the first revision it
	// asks for).
	WatchStart = "start"
	// WatchCompacted: etcd answered that the revisions up to Revision were compacted: the
	// watcher cannot see them, and says so.
	WatchCompacted = "compacted"
	// WatchBroken: the watch ended with an error (Error); the watcher resumes with a
	// WatchStart from the revision after the last event it received.
	WatchBroken = "broken"
)

// WatchMark is a point in a watcher's life.
type WatchMark struct {
	Watcher  int    `json:"watcher"`
	Time     int64  `json:"time"`
	Kind     string `json:"kind"`
	Revision int64  `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

// History is one run.
type History struct {
	Scenario string `json:"scenario"`
	// Profile is the client profile of the workload that recorded it (e2e/workload.Profile),
	// when the run had several or another than the default (--client-profiles).
	Profile string   `json:"profile,omitempty"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	Ops     []Op     `json:"ops"`
	Final   *Final   `json:"final,omitempty"`
	Samples []Sample `json:"samples,omitempty"`
	Events  []Event  `json:"events,omitempty"`
	// WatchPrefix is the key range the watchers watch (the workload's keys).
	WatchPrefix string       `json:"watchPrefix,omitempty"`
	WatchEvents []WatchEvent `json:"watchEvents,omitempty"`
	WatchMarks  []WatchMark  `json:"watchMarks,omitempty"`
}

// Slug turns a scenario name into a lowercase name of letters, digits and '-', fit for a file
// or a Kubernetes namespace.
func Slug(s string) string {
	slug := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(s)), "-")
	if slug == "" {
		return "history"
	}
	return slug
}

// Label names the history in file names: the scenario, and its client profile when known
// ("scale", "scale service-only").
func (h *History) Label() string {
	if h.Profile == "" {
		return h.Scenario
	}
	return h.Scenario + " " + h.Profile
}

// Save writes the history as JSON.
func (h *History) Save(path string) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads a history written by Save.
func Load(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &h, nil
}

// Status is the outcome of a check.
type VerdictStatus string

const (
	// VerdictPass: the history shows the property holds.
	VerdictPass VerdictStatus = "pass"
	// VerdictFail: the history shows the property is broken.
	VerdictFail VerdictStatus = "fail"
	// VerdictInconclusive: the history cannot tell (the check timed out, too few samples, the
	// final state could not be read). It is never a pass, nor an expected failure.
	VerdictInconclusive VerdictStatus = "inconclusive"
)

// CheckerName names a checker; e2e/checker lists them (checker.Names).
type CheckerName string

// Code names the reason of a verdict for machines; each checker defines its codes.
type Code string

// Verdict is a checker's judgement of a history.
type Verdict struct {
	Checker CheckerName   `json:"checker"`
	Status  VerdictStatus `json:"status"`
	// Code names the reason for machines; each checker defines its codes. An expected
	// failure is matched by its code, never by the text of Reason.
	Code    Code     `json:"code"`
	Reason  string   `json:"reason"`
	Details []string `json:"details,omitempty"`
	// Artifacts are files the checker wrote (name -> path), such as a visualization.
	Artifacts map[string]string `json:"artifacts,omitempty"`
}

// Passed reports whether the verdict is a pass.
func (v Verdict) Passed() bool { return v.Status == VerdictPass }

func (v Verdict) String() string {
	return fmt.Sprintf("%s %s [%s]: %s", strings.ToUpper(string(v.Status)), v.Checker, v.Code, v.Reason)
}

// Expectation is the verdict a scenario expects of a checker: a status, and for a failure the
// code it must fail with.
type Expectation struct {
	Status VerdictStatus `json:"status"`
	Code   Code          `json:"code,omitempty"`
}

// ExpectPass is what every checker is expected to reach unless a scenario says otherwise.
var ExpectPass = Expectation{Status: VerdictPass}

// ExpectFail expects a failure with the given code.
func ExpectFail(code Code) Expectation { return Expectation{Status: VerdictFail, Code: code} }

// Met reports whether v is what e expects: the same status, and for a failure the same code.
func (e Expectation) Met(v Verdict) bool {
	if v.Status != e.Status {
		return false
	}
	return e.Status == VerdictPass || e.Code == "" || e.Code == v.Code
}

func (e Expectation) String() string {
	if e.Code == "" {
		return string(e.Status)
	}
	return string(e.Status) + " [" + string(e.Code) + "]"
}
