// Package splitbrain checks the poller's samples, taken from every member directly several
// times a second, for the signs of a split brain: more than one cluster ID, two leaders in the
// same raft term, or current members disagreeing about membership for longer than a bound.
package splitbrain

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

// Bounds of what is tolerated.
type Bounds struct {
	// MembershipDisagreement is how long current members may report different member lists
	// (a membership change takes a moment to reach every member).
	MembershipDisagreement time.Duration
	// Staleness is how old a member's last sample may be to count as its current view.
	Staleness time.Duration
}

// DefaultBounds suit pollers at 4 Hz or more.
var DefaultBounds = Bounds{MembershipDisagreement: 10 * time.Second, Staleness: 2 * time.Second}

func id(v uint64) string { return strconv.FormatUint(v, 16) }

func view(ms []uint64) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = id(m)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// Check judges the samples of h.
//
// A lost cluster restored to a point, declared as a recovery (history.Recoveries), answers
// under a new cluster ID with its own raft terms. Cluster IDs that follow one another, each
// answering only after the last sample of the one before, with a declared recovery for each
// change, are judged one by one; IDs whose samples overlap in time are a split brain. A
// forced recovery keeps its cluster ID, and its samples are judged as one.
func Check(h *history.History, b Bounds) history.Verdict {
	samples := append([]history.Sample(nil), h.Samples...)
	sort.Slice(samples, func(i, j int) bool { return samples[i].Time < samples[j].Time })
	groups := successive(samples, h.Recoveries())
	if len(groups) < 2 {
		return checkSamples(samples, h.Start, b)
	}
	var details []string
	for _, g := range groups {
		v := checkSamples(g.samples, h.Start, b)
		what := "cluster " + id(g.id)
		if v.Status != history.VerdictPass {
			v.Reason = what + ": " + v.Reason
			return v
		}
		details = append(details, what+": "+v.Reason)
	}
	return history.Verdict{Checker: Name, Status: history.VerdictPass, Code: CodeOneLeaderPerTerm,
		Reason:  fmt.Sprintf("%d cluster IDs one after another, each after a declared restore, none answering once the next did: each has one leader per term, membership agreed within %s", len(groups), b.MembershipDisagreement),
		Details: details}
}

// group is the samples of one cluster ID.
type group struct {
	id      uint64
	samples []history.Sample
}

// successive splits the samples (in time order) by cluster ID when every ID answers only after
// the last answer of the ID before, with a declared restore between the two (after the old
// ID's last sample, at or before the new one's first); otherwise (one ID, IDs answering at
// the same time, or a change no restore explains) it returns nil. A sample counts for its
// cluster ID even when part of the poll failed; samples that reached no member do not count.
func successive(samples []history.Sample, recoveries []history.Event) []group {
	var groups []group
	for _, s := range samples {
		if s.ClusterID == 0 {
			continue
		}
		if n := len(groups); n == 0 || groups[n-1].id != s.ClusterID {
			for _, g := range groups {
				if g.id == s.ClusterID {
					return nil // an earlier ID answers again
				}
			}
			if n > 0 && !restoredBetween(recoveries, groups[n-1].samples[len(groups[n-1].samples)-1].Time, s.Time) {
				return nil
			}
			groups = append(groups, group{id: s.ClusterID})
		}
		groups[len(groups)-1].samples = append(groups[len(groups)-1].samples, s)
	}
	return groups
}

// restoredBetween reports whether a restore was declared after from and at or before to.
func restoredBetween(recoveries []history.Event, from, to int64) bool {
	for _, e := range recoveries {
		if e.Restore() && e.Time > from && e.Time <= to {
			return true
		}
	}
	return false
}

// checkSamples judges samples (in time order) as the samples of one cluster.
func checkSamples(samples []history.Sample, start int64, b Bounds) history.Verdict {
	v := history.Verdict{Checker: Name}
	good := 0
	clusterIDs := map[uint64]string{}
	leaders := map[uint64]map[uint64]string{} // term -> leader -> first endpoint reporting it
	terms := map[uint64]bool{}
	term := leaderTerms(samples)
	for i, s := range samples {
		if s.Error != "" || s.ClusterID == 0 {
			continue
		}
		good++
		if _, ok := clusterIDs[s.ClusterID]; !ok {
			clusterIDs[s.ClusterID] = s.Endpoint
		}
		// Leadership is judged from the members' claims about themselves: a follower's view of
		// who leads can carry a stale term for a while (see leaderTerms), a leader's own claim is
		// what two leaders in one term would both make.
		if s.Leader != 0 && s.Leader == s.MemberID {
			t := term[i]
			terms[t] = true
			if leaders[t] == nil {
				leaders[t] = map[uint64]string{}
			}
			if _, ok := leaders[t][s.Leader]; !ok {
				leaders[t][s.Leader] = s.Endpoint
			}
		}
	}
	if good == 0 {
		v.Status, v.Code = history.VerdictInconclusive, CodeNoSamples
		v.Reason = fmt.Sprintf("inconclusive: none of the %d samples reached a member", len(samples))
		return v
	}
	var problems []string
	var codes []history.Code
	if len(clusterIDs) > 1 {
		var ids []string
		for cid, ep := range clusterIDs {
			ids = append(ids, id(cid)+" (first seen at "+ep+")")
		}
		sort.Strings(ids)
		problems = append(problems, "members report different cluster IDs: "+strings.Join(ids, ", "))
		codes = append(codes, CodeClusterIDs)
	}
	termList := make([]uint64, 0, len(leaders))
	for t := range leaders {
		termList = append(termList, t)
	}
	sort.Slice(termList, func(i, j int) bool { return termList[i] < termList[j] })
	for _, t := range termList {
		if len(leaders[t]) > 1 {
			var ls []string
			for l, ep := range leaders[t] {
				ls = append(ls, id(l)+" (per "+ep+")")
			}
			sort.Strings(ls)
			problems = append(problems, fmt.Sprintf("two leaders in term %d: %s", t, strings.Join(ls, " and ")))
			codes = append(codes, CodeTwoLeaders)
		}
	}
	if worst, from := disagreement(samples, b); worst > b.MembershipDisagreement {
		problems = append(problems, fmt.Sprintf("current members disagreed about membership for %s from %.1fs (bound %s)",
			worst.Round(time.Millisecond), time.Duration(from-start).Seconds(), b.MembershipDisagreement))
		codes = append(codes, CodeMembershipDisagreement)
	}
	v.Details = append(v.Details, fmt.Sprintf("%d samples (%d answered), %d raft terms with a leader", len(samples), good, len(terms)))
	if len(problems) == 0 {
		v.Status, v.Code = history.VerdictPass, CodeOneLeaderPerTerm
		v.Reason = fmt.Sprintf("one cluster ID, one leader per term across %d terms, membership agreed within %s", len(terms), b.MembershipDisagreement)
		return v
	}
	v.Status, v.Code = history.VerdictFail, codes[0]
	v.Reason = problems[0]
	v.Details = append(v.Details, problems...)
	return v
}

// Codes of the split-brain verdict.
// Name is the checker's name in verdicts and reports.
const Name history.CheckerName = "split-brain"

const (
	CodeOneLeaderPerTerm       history.Code = "one-leader-per-term"
	CodeClusterIDs             history.Code = "cluster-ids"
	CodeTwoLeaders             history.Code = "two-leaders"
	CodeMembershipDisagreement history.Code = "membership-disagreement"
	// CodeNoSamples: no sample reached a member (inconclusive).
	CodeNoSamples history.Code = "no-samples"
)

// disagreement returns the longest continuous time during which some current member's view
// of membership differed from the majority's, and when it started. A member that is not in
// the majority's view (one just removed) is not a current member. Nor is a member that follows
// no leader (cut off by a partition, say): it cannot learn of a change until it rejoins, and
// it commits nothing meanwhile, so its stale view is no second cluster.
func disagreement(samples []history.Sample, b Bounds) (time.Duration, int64) {
	latest := map[string]history.Sample{}
	var worst time.Duration
	var worstFrom, since int64
	for _, s := range samples {
		if s.Error != "" || len(s.Members) == 0 {
			continue
		}
		latest[s.Endpoint] = s
		counts := map[string]int{}
		var current []history.Sample
		for ep, l := range latest {
			if s.Time-l.Time > int64(b.Staleness) {
				delete(latest, ep)
				continue
			}
			if l.Leader == 0 {
				continue
			}
			counts[view(l.Members)]++
			current = append(current, l)
		}
		majority, best := "", 0
		for vw, n := range counts {
			if n > best || (n == best && vw < majority) {
				majority, best = vw, n
			}
		}
		disagree := false
		for _, l := range current {
			if view(l.Members) != majority && strings.Contains(","+majority+",", ","+id(l.MemberID)+",") {
				disagree = true
			}
		}
		switch {
		case disagree && since == 0:
			since = s.Time
		case !disagree:
			since = 0
		}
		if since != 0 && time.Duration(s.Time-since) > worst {
			worst, worstFrom = time.Duration(s.Time-since), since
		}
	}
	return worst, worstFrom
}

// leaderTerms gives each sample the term of the leadership it reports. etcd's status reads the
// leader (raft's soft state, updated at once) and the term (that of the last applied entry)
// separately, so after an election, and for a member that rejoins after a partition, the
// member reports the new leader with an older term until it applies an entry of the new term.
// A member's samples naming one leader, up to the point where it names a different leader
// (samples with no leader in between do not end them), describe one leadership: its term is the
// highest term among them.
func leaderTerms(samples []history.Sample) []uint64 {
	out := make([]uint64, len(samples))
	type run struct {
		leader uint64
		idx    []int
		max    uint64
	}
	open := map[string]*run{}
	flush := func(r *run) {
		for _, i := range r.idx {
			out[i] = r.max
		}
	}
	for i, s := range samples {
		out[i] = s.RaftTerm
		if s.Error != "" || s.ClusterID == 0 || s.Leader == 0 {
			continue
		}
		key := s.Endpoint
		if s.MemberID != 0 {
			key = strconv.FormatUint(s.MemberID, 16)
		}
		r := open[key]
		if r != nil && r.leader != s.Leader {
			flush(r)
			r = nil
		}
		if r == nil {
			r = &run{leader: s.Leader}
			open[key] = r
		}
		r.idx = append(r.idx, i)
		r.max = max(r.max, s.RaftTerm)
	}
	for _, r := range open {
		flush(r)
	}
	return out
}
