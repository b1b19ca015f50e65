package availability

import (
	"sort"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

// Handover is a change of leader as the split-brain poller saw it: a sample of a higher raft
// term than any before, and the longest time without an acknowledged write around it. It
// separates what the handover itself cost clients from the rest of a run's gaps.
type Handover struct {
	// Term is the new term.
	Term uint64 `json:"term"`
	// From is the time of the last sample of the earlier term, To that of the first sample of
	// Term: the election happened in between (the poller samples each member every 250 ms).
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Gap is the longest interval between consecutive acknowledged writes that overlaps
	// [From, To] (0 when writes were never acknowledged on both sides of it).
	Gap time.Duration `json:"gap"`
}

// Handovers are the leader changes in h after its first sample, in order.
func Handovers(h *history.History) []Handover {
	samples := make([]history.Sample, 0, len(h.Samples))
	for _, s := range h.Samples {
		if s.Error == "" && s.RaftTerm > 0 {
			samples = append(samples, s)
		}
	}
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Time < samples[j].Time })
	acks := ackTimes(h)
	var out []Handover
	var term uint64
	var lastAtTerm int64
	for _, s := range samples {
		switch {
		case s.RaftTerm > term:
			if term > 0 {
				out = append(out, Handover{Term: s.RaftTerm, From: lastAtTerm, To: s.Time, Gap: longestGapOver(acks, lastAtTerm, s.Time)})
			}
			term, lastAtTerm = s.RaftTerm, s.Time
		case s.RaftTerm == term:
			lastAtTerm = s.Time
		}
	}
	return out
}

// longestGapOver is the longest interval between consecutive times of the sorted acks that
// overlaps [from, to].
func longestGapOver(acks []int64, from, to int64) time.Duration {
	var longest time.Duration
	// The first interval that can overlap ends at the first ack at or after from.
	i := sort.Search(len(acks), func(i int) bool { return acks[i] >= from })
	for ; i < len(acks) && i > 0; i++ {
		if acks[i-1] > to {
			break
		}
		longest = max(longest, time.Duration(acks[i]-acks[i-1]))
	}
	return longest
}
