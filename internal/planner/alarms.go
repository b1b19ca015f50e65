package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Alarm types etcd raises.
const (
	AlarmNoSpace = "NOSPACE"
	AlarmCorrupt = "CORRUPT"
)

// clearAlarms clears a NOSPACE alarm once the database fits the quota again (after
// spec.etcd.quotaBackendBytes was raised and rolled out, or after freeing space): it
// defragments members whose files hold free pages, followers first, and disarms. A CORRUPT
// alarm is disarmed only once a consistency check made since it was raised finds every voter
// agreeing (a divergent member is replaced first, by changeMembership).
func clearAlarms(s State) (Action, bool) {
	if len(s.Alarms) == 0 {
		return Action{}, false
	}
	if slices.Contains(s.Alarms, AlarmCorrupt) {
		return corruptAlarm(s), true
	}
	var largest Member
	for _, m := range s.voters() {
		if m.DBSize > largest.DBSize {
			largest = m
		}
	}
	if largest.DBSize < s.QuotaBytes {
		return Action{Kind: Disarm, Reason: v1alpha1.ReasonNoSpace,
			Message: fmt.Sprintf("the largest database (%s, %d bytes) is below the quota (%d bytes): disarming %s", largest.Name, largest.DBSize, s.QuotaBytes, strings.Join(s.Alarms, ", "))}, true
	}
	// Followers first: defragmenting blocks a member for a moment.
	ms := s.voters()
	slices.SortStableFunc(ms, func(a, b Member) int {
		return boolInt(a.ID == s.LeaderID) - boolInt(b.ID == s.LeaderID)
	})
	for _, m := range ms {
		if m.DBSize >= s.QuotaBytes && m.DBSize-m.DBSizeInUse >= s.QuotaBytes/10 {
			return Action{Kind: Defragment, Member: m.Name, Reason: v1alpha1.ReasonNoSpace, Attention: true,
				Message: fmt.Sprintf("defragmenting %s: %d of its %d bytes are free pages", m.Name, m.DBSize-m.DBSizeInUse, m.DBSize)}, true
		}
	}
	return Action{Kind: Wait, Reason: v1alpha1.ReasonNoSpace, Attention: true,
		Message: fmt.Sprintf("etcd raised NOSPACE: the database (%d bytes in use) does not fit the quota (%d bytes); clients can read and delete but not write; raise spec.etcd.quotaBackendBytes (the operator rolls it out and disarms the alarm), or delete keys and compact", largest.DBSizeInUse, s.QuotaBytes)}, true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
