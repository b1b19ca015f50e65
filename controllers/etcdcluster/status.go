package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/settle"
	"github.com/quorate-dev/quorate/controllers/statuscond"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/quorum"
	"github.com/quorate-dev/quorate/internal/version"
)

// summary counts what the member list of status says.
type summary struct {
	voters, healthyVoters, learners int
	leader                          string
	// unhealthy are members that have run (or are not in etcd's list) and are not healthy: a
	// member that was just added and has not started yet is joining, not unhealthy.
	unhealthy []string
}

// computeStatus derives the whole status from the observation, the planner's state and the
// step taken this pass.
func computeStatus(c *v1alpha1.EtcdCluster, o *observation, s planner.State, a planner.Action, execErr error) v1alpha1.EtcdClusterStatus {
	st := *c.Status.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.Selector = labels.SelectorFromSet(names.MemberSelector(c.Name)).String()
	var sum summary
	st.Members, sum, st.CurrentVersion = memberStatuses(c, o, s)
	if st.CurrentVersion == "" {
		st.CurrentVersion = c.Status.CurrentVersion
	}
	st.Leader = sum.leader
	st.Replicas, st.ReadyMembers = count32(sum.voters), count32(sum.healthyVoters)
	if s.EtcdReachable {
		st.Alarms = s.Alarms
	}
	st.Storage = storageStatus(s)
	if s.Defrag.Due && a.Kind == planner.None && execErr == nil {
		// Every member's free pages are returned: the scheduled round is over.
		st.LastDefragTime = &metav1.Time{Time: s.Now}
	}
	st.Maintenance = maintenanceStatus(c, s, a, execErr)
	gen := c.Generation
	for _, cond := range []metav1.Condition{
		availableCondition(s, sum, gen),
		progressingCondition(a, execErr, gen),
		removalWaitsOr(execErr, degradedCondition(s, a, sum, gen)),
		alarmCondition(st.Alarms, gen),
	} {
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	hibernationStatus(c, s, a, execErr, &st)
	if cond, ok := membersFencedCondition(c, s, gen); ok {
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	return st
}

// memberStatuses lists the members as etcd does. Without a member list it keeps the members
// whose volumes hold data, with what was last observed of them, marked unhealthy unless they
// answered now. It returns the lowest version any member runs ("" when none answered).
func memberStatuses(c *v1alpha1.EtcdCluster, o *observation, s planner.State) ([]v1alpha1.MemberStatus, summary, string) {
	var sum summary
	var members []v1alpha1.MemberStatus
	var minVersion *version.Version
	for _, m := range s.Members {
		if !m.InEtcd && (s.EtcdReachable || !m.PVCHasData) {
			continue
		}
		// Fenced once its etcd stopped answering: the launcher reads the pod's annotation only
		// when the kubelet refreshes the pod's downward-API files.
		healthy := m.Healthy(s.ClusterID)
		ms := v1alpha1.MemberStatus{Name: m.Name, Learner: m.Learner, Healthy: healthy, Fenced: m.UserFenced && m.HasPod && !healthy}
		if m.InEtcd {
			ms.ID = names.FormatID(m.ID)
			ms.PeerURL = names.PeerURL(c.Name, c.Namespace, m.Name, c.Spec.TLS.IsEnabled())
		} else if old := findMember(c.Status.Members, m.Name); old != nil {
			ms.ID, ms.PeerURL, ms.Learner = old.ID, old.PeerURL, old.Learner
		}
		if stt, ok := o.statuses[m.Name]; ok {
			ms.Version, ms.DBSize = stt.Version, stt.DBSize
			ms.IsLeader = s.LeaderID != 0 && stt.MemberID == s.LeaderID
			if v, err := version.Parse(stt.Version); err == nil && (minVersion == nil || v.Less(*minVersion)) {
				minVersion = &v
			}
		}
		if ms.IsLeader {
			sum.leader = m.Name
		}
		switch {
		case ms.Learner:
			sum.learners++
		case ms.Healthy:
			sum.voters++
			sum.healthyVoters++
		default:
			sum.voters++
		}
		if !ms.Healthy && (m.Started || !m.InEtcd) {
			sum.unhealthy = append(sum.unhealthy, m.Name)
		}
		members = append(members, ms)
	}
	current := ""
	if minVersion != nil {
		current = minVersion.String()
	}
	return members, withExternal(s, sum), current
}

// withExternal counts the external voters of a join that started: until they are removed
// they make up the quorum beside the operator's members (and lead, at first).
func withExternal(s planner.State, sum summary) summary {
	if s.Join == nil || !s.Join.Started {
		return sum
	}
	for _, e := range s.Join.External {
		if e.Learner {
			continue
		}
		sum.voters++
		if e.Healthy(s.ClusterID) {
			sum.healthyVoters++
		}
		if s.LeaderID != 0 && e.ID == s.LeaderID {
			sum.leader = e.Name + " (external)"
		}
	}
	return sum
}

// count32 converts a count of members, which spec.replicas bounds to a handful, for status.
func count32(n int) int32 { return int32(min(n, math.MaxInt32)) } //nolint:gosec // bounded just above

func findMember(ms []v1alpha1.MemberStatus, name string) *v1alpha1.MemberStatus {
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i]
		}
	}
	return nil
}

// availableCondition: True while a quorum of voters is healthy and a leader is elected.
func availableCondition(s planner.State, sum summary, gen int64) metav1.Condition {
	need := quorum.Of(sum.voters)
	hasQuorum := s.ClusterID != 0 && s.EtcdReachable && sum.voters > 0 && sum.healthyVoters >= need
	switch {
	case hasQuorum && sum.leader != "":
		return statuscond.New(v1alpha1.ConditionAvailable, true, v1alpha1.ReasonQuorumHealthy,
			fmt.Sprintf("%d of %d voting members healthy; leader %s", sum.healthyVoters, sum.voters, sum.leader), gen)
	case s.ClusterID == 0:
		return statuscond.New(v1alpha1.ConditionAvailable, false, v1alpha1.ReasonBootstrapping, "the cluster has not formed yet", gen)
	case hasQuorum:
		return statuscond.New(v1alpha1.ConditionAvailable, false, v1alpha1.ReasonNoLeader,
			"a quorum of members is healthy but no leader is elected yet: etcd is holding an election", gen)
	case !s.EtcdReachable:
		return statuscond.New(v1alpha1.ConditionAvailable, false, v1alpha1.ReasonQuorumLost,
			"no member answers with quorum: clients cannot write; the operator recreates missing member pods from their volumes", gen)
	}
	return statuscond.New(v1alpha1.ConditionAvailable, false, v1alpha1.ReasonQuorumLost,
		fmt.Sprintf("%d of %d voting members healthy, %d needed: clients cannot write; the operator recreates missing member pods from their volumes", sum.healthyVoters, sum.voters, need), gen)
}

// progressingCondition: True while the operator takes steps, False once settled, paused or
// halted; a step that failed is retried.
func progressingCondition(a planner.Action, execErr error, gen int64) metav1.Condition {
	var waits *removalWaits
	switch {
	case errors.As(execErr, &waits):
		return statuscond.New(v1alpha1.ConditionProgressing, true, v1alpha1.ReasonQuorumAtRisk, waits.msg, gen)
	case execErr != nil:
		return statuscond.New(v1alpha1.ConditionProgressing, true, v1alpha1.ReasonStepFailed, fmt.Sprintf("%s failed: %v; retrying", a.Kind, execErr), gen)
	case a.Kind == planner.None || a.Kind == planner.Halt || a.Reason == v1alpha1.ReasonPaused:
		return statuscond.New(v1alpha1.ConditionProgressing, false, a.Reason, a.Message, gen)
	}
	return statuscond.New(v1alpha1.ConditionProgressing, true, a.Reason, a.Message, gen)
}

// removalWaitsOr is Degraded=True/QuorumAtRisk with the quorum probe's answer while a removal
// waits for the voters that stay (execErr is a removalWaits): members that answer for their
// status but cannot reach a leader need attention, though every member looks healthy. Else
// it is degraded.
func removalWaitsOr(execErr error, degraded metav1.Condition) metav1.Condition {
	var waits *removalWaits
	if !errors.As(execErr, &waits) || degraded.Status == metav1.ConditionTrue && degraded.Reason != v1alpha1.ReasonMemberUnhealthy && degraded.Reason != v1alpha1.ReasonAllMembersHealthy {
		return degraded
	}
	return statuscond.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonQuorumAtRisk, waits.msg, degraded.ObservedGeneration)
}

// degradedCondition: True while something needs attention, most urgent first: a step whose
// reason needs attention (a halt, lost data, a risk to quorum, a stuck rollout, a refused
// version, an alarm being cleared), an unreachable cluster, an alarm, unhealthy members.
func degradedCondition(s planner.State, a planner.Action, sum summary, gen int64) metav1.Condition {
	switch {
	case a.Attention:
		return statuscond.New(v1alpha1.ConditionDegraded, true, a.Reason, a.Message, gen)
	case s.ClusterID != 0 && !s.EtcdReachable:
		return statuscond.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonEtcdUnreachable, a.Message, gen)
	case divergence(s) != "":
		// Through the whole replacement (promoting, moving leadership), not only its first step.
		reason, msg := planner.Divergence(s)
		return statuscond.New(v1alpha1.ConditionDegraded, true, reason, msg, gen)
	case len(s.Alarms) > 0:
		c := alarmCondition(s.Alarms, gen)
		return statuscond.New(v1alpha1.ConditionDegraded, true, c.Reason, c.Message, gen)
	case len(sum.unhealthy) > 0:
		return statuscond.New(v1alpha1.ConditionDegraded, true, v1alpha1.ReasonMemberUnhealthy,
			fmt.Sprintf("unhealthy members: %s; see their pod logs and events", strings.Join(sum.unhealthy, ", ")), gen)
	}
	return statuscond.New(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonAllMembersHealthy, "every member is healthy", gen)
}

// storageStatus counts the members whose volume matches spec.storage, while some do not.
func storageStatus(s planner.State) *v1alpha1.StorageStatus {
	var st v1alpha1.StorageStatus
	for _, m := range s.Members {
		switch {
		case !m.InEtcd || !m.HasPVC:
		case m.VolumeOutdated:
			st.ToMove++
		case m.VolumeExpand || m.VolumeResizePending:
			st.ToExpand++
		default:
			st.OnSpec++
		}
	}
	if st.ToMove == 0 && st.ToExpand == 0 {
		return nil
	}
	return &st
}

// alarmCondition: True while etcd has raised an alarm.
func alarmCondition(alarms []string, gen int64) metav1.Condition {
	switch {
	case slices.Contains(alarms, planner.AlarmCorrupt):
		return statuscond.New(v1alpha1.ConditionAlarm, true, v1alpha1.ReasonCorrupt,
			"etcd raised CORRUPT: a member's data differs from its peers'; etcd refuses writes; the operator compares the voters' data (only while every voter is its own and healthy, and --consistency-check-interval is not 0), replaces the member outside the majority and disarms the alarm once they agree. If Degraded does not name a divergent member within minutes, the comparison cannot run: find the member with etcdctl endpoint hashkv, delete its PVC to have it replaced, then etcdctl alarm disarm (docs/runbooks.md)", gen)
	case slices.Contains(alarms, planner.AlarmNoSpace):
		return statuscond.New(v1alpha1.ConditionAlarm, true, v1alpha1.ReasonNoSpace,
			"etcd raised NOSPACE: the database reached spec.etcd.quotaBackendBytes; clients can read and delete but not write until the quota is raised (the operator rolls it out and disarms the alarm) or space is freed", gen)
	case len(alarms) > 0:
		return statuscond.New(v1alpha1.ConditionAlarm, true, v1alpha1.ReasonUnknown, "etcd raised "+strings.Join(alarms, ", "), gen)
	}
	return statuscond.New(v1alpha1.ConditionAlarm, false, v1alpha1.ReasonNoAlarm, "etcd has raised no alarm", gen)
}

// errorStatus is the status of a pass that stopped before it could plan: Degraded names why.
func errorStatus(original *v1alpha1.EtcdCluster, operator string, gen int64, reason string, err error) v1alpha1.EtcdClusterStatus {
	st := *original.Status.DeepCopy()
	st.Operator = operator
	meta.SetStatusCondition(&st.Conditions, statuscond.New(v1alpha1.ConditionDegraded, true, reason, err.Error(), gen))
	return st
}

// writeStatus records metrics, writes status once, only if it changed, and then emits Events
// for condition changes.
func (r *Reconciler) writeStatus(ctx context.Context, original *v1alpha1.EtcdCluster, st v1alpha1.EtcdClusterStatus) error {
	recordMetrics(original, original.Status, st)
	if equality.Semantic.DeepEqual(original.Status, st) {
		return nil
	}
	updated := original.DeepCopy()
	updated.Status = st
	gone, err := settle.PatchStatus(ctx, r.Client, updated, original)
	if apierrors.IsInvalid(err) {
		// No condition can say it: only an Event can.
		r.Recorder.Eventf(original, corev1.EventTypeWarning, v1alpha1.EventStatusRefused,
			"the API server refuses this EtcdCluster's status, so nothing the operator does is recorded: %v; correct the spec as the message says", err)
	}
	if err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	if gone {
		return nil // deleted since the pass read it: nothing to record or announce
	}
	// Until the cache shows this write, a pass would start from the status it replaced. A
	// write the API server found to change nothing (a status that differs from the cached one
	// only below what JSON keeps, such as a time's nanoseconds) keeps the resourceVersion: no
	// newer copy will ever come, and expecting one would hold every pass for the
	// expectations' whole TTL (what made a woken cluster wait two minutes to say Awake).
	if updated.ResourceVersion != original.ResourceVersion {
		r.Expectations.ExpectOwnerNewerThan(client.ObjectKeyFromObject(original), original.ResourceVersion)
	}
	// Transitions are announced once they are recorded: a refused write announces nothing.
	r.eventOnTransitions(original, original.Status, st)
	return nil
}

// eventOnTransitions emits one Event when Available or Degraded changes status or reason.
func (r *Reconciler) eventOnTransitions(c *v1alpha1.EtcdCluster, before, after v1alpha1.EtcdClusterStatus) {
	for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionDegraded, v1alpha1.ConditionHibernated, v1alpha1.ConditionMembersFenced} {
		old, now := meta.FindStatusCondition(before.Conditions, t), meta.FindStatusCondition(after.Conditions, t)
		if now == nil || (old != nil && old.Status == now.Status && old.Reason == now.Reason) {
			continue
		}
		if t == v1alpha1.ConditionAvailable && now.Status == metav1.ConditionFalse && old == nil {
			continue // nothing to announce while a new cluster bootstraps
		}
		eventType := corev1.EventTypeNormal
		if (t == v1alpha1.ConditionDegraded && now.Status == metav1.ConditionTrue) || (t == v1alpha1.ConditionAvailable && now.Status == metav1.ConditionFalse && !expectedOutage(now.Reason)) || now.Reason == v1alpha1.ReasonFenceRefused {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(c, eventType, now.Reason, "%s is %s: %s", t, now.Status, now.Message)
	}
}

func divergence(s planner.State) string {
	reason, _ := planner.Divergence(s)
	return reason
}

// maintenanceRecord is what the step a did (its error stepErr) for the maintenance asked for
// on demand, as status.maintenance will say it; nil when a answers no request. It is folded
// into the status at once (statusShare), so an error later in the pass does not lose it. The
// status is written at the end of the pass (a pass stopped for its claim leaves its records to
// the next one that holds the claim: carry.go): a crash between a member's defragmentation and
// that write defragments the member once more, and one between a leadership transfer and that
// write transfers once more (or answers AlreadyLeader, when
// moveLeader.to leads now); both are harmless. A transfer etcd does not complete is answered
// Failed, with etcd's error, and not retried: a new token asks again.
func maintenanceRecord(c *v1alpha1.EtcdCluster, s planner.State, a planner.Action, stepErr error) *v1alpha1.MaintenanceStatus {
	if a.Token == "" {
		return nil
	}
	m := c.Status.Maintenance.DeepCopy()
	if m == nil {
		m = &v1alpha1.MaintenanceStatus{}
	}
	now := &metav1.Time{Time: s.Now}
	switch {
	case a.Kind == planner.Defragment && stepErr == nil:
		if d := defragRound(m, a.Token, now); !slices.Contains(d.Defragmented, a.Member) {
			d.Defragmented = append(d.Defragmented, a.Member)
		}
	case a.Kind == planner.MoveLeader && stepErr == nil:
		m.MoveLeader = &v1alpha1.MoveLeaderStatus{Token: a.Token, Result: v1alpha1.LeaderMoveMoved, From: a.Member, To: a.TargetName, Message: a.Message, Time: now}
	case a.Kind == planner.MoveLeader:
		m.MoveLeader = &v1alpha1.MoveLeaderStatus{Token: a.Token, Result: v1alpha1.LeaderMoveFailed, From: a.Member, To: a.TargetName, Time: now,
			Message: fmt.Sprintf("etcd did not move leadership from %s to %s: %v; set a new token to ask again", a.Member, a.TargetName, stepErr)}
	case a.Kind == planner.AnswerMoveLeader:
		m.MoveLeader = &v1alpha1.MoveLeaderStatus{Token: a.Token, Result: a.Phase, From: a.Member, To: a.TargetName, Message: a.Message, Time: now}
	default:
		return nil
	}
	return m
}

// defragRound is m's round of token, started now when m has none of it.
func defragRound(m *v1alpha1.MaintenanceStatus, token string, now *metav1.Time) *v1alpha1.DefragRoundStatus {
	if m.Defrag == nil || m.Defrag.Token != token {
		m.Defrag = &v1alpha1.DefragRoundStatus{Token: token, StartTime: now}
	}
	return m.Defrag
}

// maintenanceStatus is status.maintenance at the end of the pass: the steps' records (already
// folded into c's status), and the round of spec.maintenance.defragNow completed once every
// voter is recorded as defragmented, or on a settled pass (no healthy voter left undone),
// whatever other rules plan then.
func maintenanceStatus(c *v1alpha1.EtcdCluster, s planner.State, a planner.Action, execErr error) *v1alpha1.MaintenanceStatus {
	m := c.Status.Maintenance.DeepCopy()
	if s.DefragNow == nil {
		return m
	}
	everyVoter := m != nil && m.Defrag != nil && m.Defrag.Token == s.DefragNow.Token && planner.EveryVoterIn(s, m.Defrag.Defragmented)
	settled := planner.DefragRoundComplete(s, a) && execErr == nil
	if !everyVoter && !settled {
		return m
	}
	if m == nil {
		m = &v1alpha1.MaintenanceStatus{}
	}
	defragRound(m, s.DefragNow.Token, &metav1.Time{Time: s.Now}).CompletionTime = &metav1.Time{Time: s.Now}
	return m
}
