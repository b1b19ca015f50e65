package planner

import (
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// The progress of the records that move on only once a pass has taken its step: a CA
// rotation's phase (the certificates act on it in the next passes) and a join's.

// NextRotationPhase is the phase a CA rotation moves to in a pass, or "" when it stays where
// status records it (cur): a rotation that spec.tls.rotateCA asks for (want) and that has not
// started begins from a settled pass; one under way moves on from a settled pass once the
// propagation delay has passed since its phase began; a completed one stays completed.
func NextRotationPhase(want string, cur *v1alpha1.CARotationStatus, settled bool, now time.Time, propagation time.Duration) string {
	switch {
	case cur != nil && cur.Token == want && cur.Phase == v1alpha1.CARotationCompleted:
	case !settled:
	case cur == nil || cur.Token != want:
		return v1alpha1.CARotationTrusting
	case now.Sub(cur.PhaseTime.Time) < propagation:
	case cur.Phase == v1alpha1.CARotationTrusting:
		return v1alpha1.CARotationReissuing
	case cur.Phase == v1alpha1.CARotationReissuing:
		return v1alpha1.CARotationDropping
	case cur.Phase == v1alpha1.CARotationDropping:
		return v1alpha1.CARotationCompleted
	}
	return ""
}

// RotationToken is the CA rotation to drive, and whether the operator starts it itself: a
// rotation the operator started goes on to its end while spec.tls.rotateCA stays as it was;
// a spec.tls.rotateCA not yet acted on comes next; then, when a CA is due (caDue: the token
// of a rotation replacing it, "" when none is), the operator rotates it ahead of its expiry:
// with two years to go (a fifth of ten), so that a cluster has that long to be settled once,
// as every phase of a rotation starts only from a settled pass.
func RotationToken(spec string, cur *v1alpha1.CARotationStatus, caDue string) (token string, automatic bool) {
	completed := cur != nil && cur.Phase == v1alpha1.CARotationCompleted
	actedOn := func(t string) bool { return cur != nil && (cur.Token == t || (cur.Automatic && cur.SpecToken == t)) }
	switch {
	case cur != nil && cur.Automatic && !completed && (spec == "" || spec == cur.SpecToken):
		return cur.Token, true
	case spec != "" && (!completed || !actedOn(spec)):
		return spec, false
	case caDue != "" && (cur == nil || cur.Token != caDue):
		return caDue, true
	}
	return "", false
}

// JoinPhase is the phase a join's record (status.join, recorded its phase, started whether it
// exists) moves to after a pass that took step a: Completed once no external member is left,
// waiting for the go-ahead or removing the external members as the step says, else the
// recorded one. moves is false when the record stays as it is: no join or none started, one
// completed, a member list not read, or the join starting in this very pass.
func JoinPhase(s State, a Action, recorded string, started bool) (phase string, moves bool) {
	if s.Join == nil || !started || recorded == v1alpha1.JoinCompleted || !s.EtcdReachable || a.Kind == StartJoin {
		return "", false
	}
	switch {
	case len(s.Join.External) == 0:
		return v1alpha1.JoinCompleted, true
	case a.Reason == v1alpha1.ReasonWaitingForGoAhead:
		return v1alpha1.JoinWaitingForGoAhead, true
	case s.Join.RemoveExternal && a.Reason == v1alpha1.ReasonJoining:
		return v1alpha1.JoinRemovingExternalMembers, true
	}
	return recorded, true
}
