package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/quorum"
)

// MemberHash is one voter's hash of its key-value store in a consistency check.
type MemberHash struct {
	Member          string
	ID              uint64
	Hash            uint32
	CompactRevision int64
}

// Consistency is one comparison of every voter's data (etcd's HashKV) at a revision they had
// all applied. Only a complete comparison is one: every voter answered, at one compaction.
type Consistency struct {
	Revision int64
	// At is when it was made.
	At time.Time
	// AfterAlarm: a CORRUPT alarm was already raised when it was made, so it speaks to that
	// alarm.
	AfterAlarm bool
	// Hashes are the voters' answers, by member name.
	Hashes []MemberHash
}

// Outcome of a consistency check.
type Outcome string

const (
	// Consistent: every voter has the same data.
	Consistent Outcome = "consistent"
	// Divergent: a majority agrees, and the other voters' data differ from it.
	Divergent Outcome = "divergent"
	// NoMajority: the voters disagree and no hash is a majority's: nobody can tell the good
	// data from the bad.
	NoMajority Outcome = "no_majority"
	// Inconclusive: the answers do not compare (members compacted at different revisions).
	Inconclusive Outcome = "inconclusive"
)

// Verdict is what a consistency check found.
type Verdict struct {
	Outcome Outcome
	// Divergent are the voters outside the majority, by name (Outcome Divergent).
	Divergent []MemberHash
	// Message names the revision, the members and their hashes.
	Message string
}

// Judge compares the voters' hashes: those of the majority (a quorum of the voters compared)
// have the good data, and every other voter diverged. The majority is what etcd's raft
// acknowledged a write to: a write is acknowledged only once a quorum has it, so a minority's
// data cannot be what clients were told.
func Judge(c Consistency) Verdict {
	if len(c.Hashes) == 0 {
		return Verdict{Outcome: Inconclusive, Message: "no voter answered"}
	}
	hs := slices.Clone(c.Hashes)
	slices.SortFunc(hs, func(a, b MemberHash) int { return strings.Compare(a.Member, b.Member) })
	for _, h := range hs[1:] {
		if h.CompactRevision != hs[0].CompactRevision {
			return Verdict{Outcome: Inconclusive, Message: fmt.Sprintf("at revision %d, the voters were compacted at different revisions (%s): their hashes do not compare", c.Revision, describe(hs, compactOf))}
		}
	}
	count := map[uint32]int{}
	for _, h := range hs {
		count[h.Hash]++
	}
	var major uint32
	best := 0
	for _, h := range hs {
		if count[h.Hash] > best {
			major, best = h.Hash, count[h.Hash]
		}
	}
	if best == len(hs) {
		return Verdict{Outcome: Consistent, Message: fmt.Sprintf("the %d voters have the same data at revision %d (%s)", len(hs), c.Revision, hashText(major))}
	}
	if best < quorum.Of(len(hs)) {
		return Verdict{Outcome: NoMajority,
			Message: fmt.Sprintf("the voters' data differ and no majority agrees: at revision %d, %s; the operator replaces no member; restore a backup taken before the divergence into a new EtcdCluster", c.Revision, describe(hs, hashOf))}
	}
	var bad, good []MemberHash
	for _, h := range hs {
		if h.Hash == major {
			good = append(good, h)
		} else {
			bad = append(bad, h)
		}
	}
	return Verdict{Outcome: Divergent, Divergent: bad,
		Message: fmt.Sprintf("the data of %s differ from the majority's at revision %d: %s, where %s have %s",
			memberNames(bad), c.Revision, describe(bad, hashOf), memberNames(good), hashText(major))}
}

func hashText(h uint32) string { return fmt.Sprintf("hash %08x", h) }

func hashOf(h MemberHash) string { return h.Member + " has " + hashText(h.Hash) }

func compactOf(h MemberHash) string { return fmt.Sprintf("%s at %d", h.Member, h.CompactRevision) }

func describe(hs []MemberHash, what func(MemberHash) string) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = what(h)
	}
	return strings.Join(parts, ", ")
}

func memberNames(hs []MemberHash) string {
	ns := make([]string, len(hs))
	for i, h := range hs {
		ns[i] = h.Member
	}
	return strings.Join(ns, " and ")
}

// divergence says why a member is replaced for its data ("" when it is not): the last
// comparison found it, by its etcd ID, outside the majority.
func (s State) divergence(m Member) string {
	if s.Consistency == nil || !m.InEtcd {
		return ""
	}
	v := Judge(*s.Consistency)
	for _, h := range v.Divergent {
		if h.ID == m.ID && h.Member == m.Name {
			return v.Message
		}
	}
	return ""
}

// Divergence is the last consistency check's finding while it needs attention: a voter being
// replaced for its data, or voters whose data differ with no majority; "" otherwise.
func Divergence(s State) (reason, message string) {
	if s.Consistency == nil {
		return "", ""
	}
	switch v := Judge(*s.Consistency); v.Outcome {
	case Divergent:
		for _, m := range s.Members {
			if s.divergence(m) != "" {
				return v1alpha1.ReasonMemberCorrupt, v.Message + "; the operator replaces it add-first"
			}
		}
	case NoMajority:
		return v1alpha1.ReasonDataInconsistent, v.Message
	}
	return "", ""
}

// haltDisagreement stops membership changes, rollouts and maintenance while the voters' data
// differ and no majority agrees: replacing any member could keep the bad data and drop the
// good.
func haltDisagreement(s State) (Action, bool) {
	if s.Consistency == nil || Judge(*s.Consistency).Outcome != NoMajority {
		return Action{}, false
	}
	_, msg := Divergence(s)
	return Action{Kind: Halt, Reason: v1alpha1.ReasonDataInconsistent, Attention: true, Message: msg}, true
}

// corruptAlarm is the CORRUPT alarm's step once no member is being replaced for its data:
// disarm it once a comparison made since the alarm finds every current voter agreeing, or
// wait for one.
func corruptAlarm(s State) Action {
	raisedBy := "etcd raised the CORRUPT alarm"
	if len(s.CorruptMembers) > 0 {
		raisedBy += " for " + strings.Join(s.CorruptMembers, ", ")
	}
	if c := s.Consistency; c != nil && c.AfterAlarm && Judge(*c).Outcome == Consistent && s.comparedAll(*c) {
		return Action{Kind: Disarm, Reason: v1alpha1.ReasonCorrupt,
			Message: fmt.Sprintf("%s, and every voter has the same data now (revision %d): disarming it", raisedBy, c.Revision)}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonCorrupt, Attention: true,
		Message: raisedBy + ": writes are refused until it is disarmed; the operator compares the voters' data (HashKV) to find the member whose data differ, replaces it and then disarms the alarm"}
}

// comparedAll: the comparison covers exactly the current voters (by etcd ID).
func (s State) comparedAll(c Consistency) bool {
	voters := s.voters()
	if len(voters) != len(c.Hashes) {
		return false
	}
	for _, v := range voters {
		if !slices.ContainsFunc(c.Hashes, func(h MemberHash) bool { return h.ID == v.ID }) {
			return false
		}
	}
	return true
}

// AlarmMember names the member an alarm was raised for: its name when known, its ID
// otherwise, and "the whole cluster" for member 0.
func AlarmMember(id uint64, name string) string {
	switch {
	case id == 0:
		return "the whole cluster"
	case name != "":
		return name
	}
	return "member " + names.FormatID(id)
}
