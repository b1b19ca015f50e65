package planner

import (
	"fmt"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Defrag is spec.maintenance.defrag as the planner needs it.
type Defrag struct {
	// ThresholdPercent defragments a member whose free pages are at least this share of its
	// file (0: no threshold).
	ThresholdPercent int
	// MinFree: members with fewer free bytes are left alone.
	MinFree int64
	// Due: a scheduled round is due; every member with at least MinFree free bytes is
	// defragmented, and the round ends when none is left.
	Due bool
}

// DefaultDefragMinFree is spec.maintenance.defrag.minFreeBytes by default.
const DefaultDefragMinFree = 16 << 20

func (d Defrag) wants(m Member) bool {
	free := m.DBSize - m.DBSizeInUse
	if m.DBSize <= 0 || free < max(d.MinFree, 1) {
		return false
	}
	return d.Due || (d.ThresholdPercent > 0 && free*100 >= int64(d.ThresholdPercent)*m.DBSize)
}

// defragment returns the free pages of the members' files, one member at a time: followers
// first, then the leader, after leadership moved to a healthy voter. It runs only on a
// settled, healthy cluster (the rules before it found nothing to do).
func defragment(s State) (Action, bool) {
	if s.Defrag.ThresholdPercent == 0 && !s.Defrag.Due {
		return Action{}, false
	}
	var leader *Member
	for _, m := range s.voters() {
		if !m.Healthy(s.ClusterID) || !s.Defrag.wants(m) {
			continue
		}
		if m.ID == s.LeaderID && len(s.voters()) > 1 {
			leader = &m
			continue
		}
		return Action{Kind: Defragment, Member: m.Name, Reason: v1alpha1.ReasonDefragmenting,
			Message: fmt.Sprintf("defragmenting %s: %d of its %d bytes are free pages", m.Name, m.DBSize-m.DBSizeInUse, m.DBSize)}, true
	}
	if leader == nil {
		return Action{}, false
	}
	if a, ok := moveLeaderAway(s, *leader, "before defragmenting it"); ok {
		a.Reason = v1alpha1.ReasonDefragmenting
		return a, true
	}
	return Action{}, false
}
