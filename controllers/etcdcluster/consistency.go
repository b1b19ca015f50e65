package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/planner"
)

// DefaultConsistencyInterval is how often the operator compares a cluster's voters' data by
// default (--consistency-check-interval).
const DefaultConsistencyInterval = 5 * time.Minute

// consistencyRetry is how soon a check that gave no verdict (a member did not answer, or had
// compacted the revision away) is tried again.
const consistencyRetry = 30 * time.Second

// consistencyChecks remembers, per cluster and in memory, the last comparison of its voters'
// data. A restarted operator checks again: at once for a cluster in the middle of a
// replacement or with a CORRUPT alarm, within one interval for the others.
type consistencyChecks struct {
	mu        sync.Mutex
	byCluster map[types.NamespacedName]*consistencyRecord
}

type consistencyRecord struct {
	last      *planner.Consistency // last complete comparison
	tried     time.Time            // last attempt
	concluded bool                 // the last attempt gave a complete comparison
	alarmSeen time.Time            // when a CORRUPT alarm was first seen raised (zero: none)
}

func (cc *consistencyChecks) record(key types.NamespacedName) *consistencyRecord {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.byCluster == nil {
		cc.byCluster = map[types.NamespacedName]*consistencyRecord{}
	}
	r := cc.byCluster[key]
	if r == nil {
		r = &consistencyRecord{}
		cc.byCluster[key] = r
	}
	return r
}

func (cc *consistencyChecks) forget(key types.NamespacedName) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.byCluster, key)
}

// consistency compares the voters' data when a check is due, and returns the last complete
// comparison for the planner. Only a cluster's passes touch its record, and a cluster's
// passes do not overlap.
func (r *Reconciler) consistency(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, s planner.State) *planner.Consistency {
	if r.ConsistencyInterval <= 0 || !s.EtcdReachable || s.ClusterID == 0 || c.Spec.Paused || c.Spec.Hibernate || o.client == nil {
		return nil
	}
	rec := r.checks.record(types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
	now := s.Now
	alarmed := slices.Contains(s.Alarms, planner.AlarmCorrupt)
	switch {
	case !alarmed:
		rec.alarmSeen = time.Time{}
	case rec.alarmSeen.IsZero():
		rec.alarmSeen = now
	}
	if rec.last != nil && replaced(*rec.last, s) {
		// A member found divergent is gone: compare again at once, to confirm the data agree
		// before the CORRUPT alarm is disarmed.
		rec.last, rec.tried = nil, time.Time{}
	}
	if rec.tried.IsZero() && rec.last == nil && !alarmed && !replacing(s) {
		// First sight of a settled cluster: spread the checks of many clusters over an
		// interval instead of hashing every database when the operator starts.
		rec.tried, rec.concluded = now.Add(-time.Duration(rand.Int64N(int64(r.ConsistencyInterval)))), true //nolint:gosec // jitter
	}
	if !checkDue(rec, now, r.ConsistencyInterval, alarmed) {
		return rec.last
	}
	eps, voters, ok := comparable(o, s)
	if !ok {
		return rec.last
	}
	rec.tried = now
	cons, err := compareVoters(ctx, o.client, eps, voters, s)
	if err != nil {
		rec.concluded = false
		metrics.CountConsistencyCheck(c.Namespace, c.Name, string(planner.Inconclusive))
		logf.FromContext(ctx).Info("consistency check gave no verdict; trying again", "error", err.Error(), "retry", consistencyRetry)
		return rec.last
	}
	cons.AfterAlarm = alarmed && !now.Before(rec.alarmSeen)
	v := planner.Judge(*cons)
	metrics.CountConsistencyCheck(c.Namespace, c.Name, string(v.Outcome))
	if v.Outcome == planner.Inconclusive {
		rec.concluded = false
		logf.FromContext(ctx).Info("consistency check gave no verdict; trying again", "reason", v.Message, "retry", consistencyRetry)
		return rec.last
	}
	rec.last, rec.concluded = cons, true
	if v.Outcome != planner.Consistent {
		logf.FromContext(ctx).Info("consistency check found the voters' data differ", "outcome", v.Outcome, "verdict", v.Message)
	}
	return rec.last
}

// checkDue: never checked, the interval passed since a concluded check, consistencyRetry
// since one without verdict, or a CORRUPT alarm that no comparison since speaks to.
func checkDue(rec *consistencyRecord, now time.Time, interval time.Duration, alarmed bool) bool {
	since := now.Sub(rec.tried)
	switch {
	case rec.tried.IsZero():
		return true
	case !rec.concluded || (alarmed && (rec.last == nil || rec.last.At.Before(rec.alarmSeen))):
		return since >= consistencyRetry
	}
	return since >= interval
}

// replacing: a membership change is under way (a learner, or more voters than replicas), as
// after a crash in the middle of replacing a divergent member.
func replacing(s planner.State) bool {
	voters := 0
	for _, m := range s.Members {
		if m.InEtcd && m.Learner {
			return true
		}
		if m.InEtcd {
			voters++
		}
	}
	return voters > s.Replicas
}

// replaced: a member the comparison found divergent is no longer an etcd member.
func replaced(c planner.Consistency, s planner.State) bool {
	for _, h := range planner.Judge(c).Divergent {
		if !slices.ContainsFunc(s.Members, func(m planner.Member) bool { return m.InEtcd && m.ID == h.ID }) {
			return true
		}
	}
	return false
}

// comparable are the voters' endpoints and revisions, when every voter is one of the
// operator's members, answered as itself, and runs the same etcd release; ok is false
// otherwise (a comparison of some of the voters could name a majority that is none, and
// releases need not hash alike: a rolling upgrade is no corruption).
func comparable(o *observation, s planner.State) ([]etcd.Endpoint, []planner.Member, bool) {
	var eps []etcd.Endpoint
	var voters []planner.Member
	for _, m := range s.Members {
		if !m.InEtcd || m.Learner {
			continue
		}
		ep, ok := o.endpoints[m.Name]
		if !ok || !m.Healthy(s.ClusterID) || m.Revision <= 0 {
			return nil, nil, false
		}
		if len(voters) > 0 && m.Version != voters[0].Version {
			return nil, nil, false
		}
		eps, voters = append(eps, ep), append(voters, m)
	}
	if len(s.UnknownMembers) > 0 || len(voters) == 0 || (s.Join != nil && len(s.Join.External) > 0) {
		return nil, nil, false
	}
	return eps, voters, true
}

// compareVoters asks every voter, at once, for its hash at the lowest revision they have all
// applied. A member's error is tried once more before the check gives up.
func compareVoters(ctx context.Context, cl etcd.Client, eps []etcd.Endpoint, voters []planner.Member, s planner.State) (*planner.Consistency, error) {
	rev := voters[0].Revision
	for _, v := range voters {
		rev = min(rev, v.Revision)
	}
	out := &planner.Consistency{Revision: rev, At: s.Now, Hashes: make([]planner.MemberHash, len(voters))}
	errs := make([]error, len(voters))
	var wg sync.WaitGroup
	for i := range voters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := cl.HashKV(ctx, eps[i], rev)
			if err != nil && !errors.Is(err, etcd.ErrCompacted) {
				h, err = cl.HashKV(ctx, eps[i], rev)
			}
			if err != nil {
				errs[i] = err
				return
			}
			out.Hashes[i] = planner.MemberHash{Member: voters[i].Name, ID: voters[i].ID, Hash: h.Hash, CompactRevision: h.CompactRevision}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("comparing the voters' data at revision %d: %w", rev, err)
	}
	return out, nil
}

// divergentMembers are the members the last comparison found outside the majority, while they
// are members.
func divergentMembers(s planner.State) []string {
	if s.Consistency == nil {
		return nil
	}
	var out []string
	for _, h := range planner.Judge(*s.Consistency).Divergent {
		if slices.ContainsFunc(s.Members, func(m planner.Member) bool { return m.InEtcd && m.ID == h.ID }) {
			out = append(out, h.Member)
		}
	}
	return out
}

// corruptMembers names the members the CORRUPT alarms were raised for.
func (o *observation) corruptMembers() []string {
	var out []string
	for _, a := range o.alarms {
		if a.Type != planner.AlarmCorrupt {
			continue
		}
		name := ""
		for _, em := range o.members {
			if em.ID == a.MemberID {
				name = em.Name
			}
		}
		if n := planner.AlarmMember(a.MemberID, name); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
