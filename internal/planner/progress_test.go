package planner

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// A CA rotation starts from a settled pass, moves on from a settled pass once the propagation
// delay has passed since its phase began, and stays completed.
func TestNextRotationPhase(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	propagation := 2 * time.Minute
	at := func(token, phase string, ago time.Duration) *v1alpha1.CARotationStatus {
		return &v1alpha1.CARotationStatus{Token: token, Phase: phase, PhaseTime: metav1.NewTime(now.Add(-ago))}
	}
	for _, tc := range []struct {
		name    string
		cur     *v1alpha1.CARotationStatus
		settled bool
		want    string
	}{
		{"none yet, settled: starts", nil, true, v1alpha1.CARotationTrusting},
		{"none yet, not settled: waits", nil, false, ""},
		{"a new token, settled: starts again", at("r0", v1alpha1.CARotationCompleted, time.Hour), true, v1alpha1.CARotationTrusting},
		{"a new token mid-rotation, settled: starts again", at("r0", v1alpha1.CARotationReissuing, time.Hour), true, v1alpha1.CARotationTrusting},
		{"a new token, not settled: waits", at("r0", v1alpha1.CARotationCompleted, time.Hour), false, ""},
		{"trusting, propagated, settled", at("r1", v1alpha1.CARotationTrusting, propagation), true, v1alpha1.CARotationReissuing},
		{"trusting, not propagated yet", at("r1", v1alpha1.CARotationTrusting, propagation-time.Second), true, ""},
		{"trusting, propagated, not settled", at("r1", v1alpha1.CARotationTrusting, time.Hour), false, ""},
		{"reissuing, propagated, settled", at("r1", v1alpha1.CARotationReissuing, time.Hour), true, v1alpha1.CARotationDropping},
		{"dropping, propagated, settled", at("r1", v1alpha1.CARotationDropping, time.Hour), true, v1alpha1.CARotationCompleted},
		{"dropping, not propagated yet", at("r1", v1alpha1.CARotationDropping, time.Second), true, ""},
		{"completed stays completed", at("r1", v1alpha1.CARotationCompleted, time.Hour), true, ""},
		{"completed, not settled", at("r1", v1alpha1.CARotationCompleted, time.Hour), false, ""},
	} {
		if got := NextRotationPhase("r1", tc.cur, tc.settled, now, propagation); got != tc.want {
			t.Errorf("%s: next phase %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A join's record moves on only after a pass that read the member list and did not start the
// join: completed once no external member is left, else as the step says.
func TestJoinPhase(t *testing.T) {
	ext := []External{{Name: "vm-0", ID: 0xe1}}
	joining := func(external []External, remove bool) State {
		return State{EtcdReachable: true, Join: &Join{Started: true, External: external, RemoveExternal: remove}}
	}
	step := Action{Kind: AddLearner, Reason: v1alpha1.ReasonJoining}
	for _, tc := range []struct {
		name      string
		s         State
		a         Action
		recorded  string
		started   bool
		want      string
		wantMoves bool
	}{
		{"no join", State{EtcdReachable: true}, step, v1alpha1.JoinAddingMembers, true, "", false},
		{"not started", joining(ext, false), step, "", false, "", false},
		{"completed stays", joining(nil, false), step, v1alpha1.JoinCompleted, true, "", false},
		{"member list not read", State{Join: &Join{Started: true}}, step, v1alpha1.JoinAddingMembers, true, "", false},
		{"starting this pass", joining(ext, false), Action{Kind: StartJoin}, v1alpha1.JoinAddingMembers, true, "", false},
		{"no external member left", joining(nil, true), step, v1alpha1.JoinRemovingExternalMembers, true, v1alpha1.JoinCompleted, true},
		{"waiting for the go-ahead", joining(ext, false), Action{Kind: Wait, Reason: v1alpha1.ReasonWaitingForGoAhead}, v1alpha1.JoinAddingMembers, true, v1alpha1.JoinWaitingForGoAhead, true},
		{"removing the external members", joining(ext, true), step, v1alpha1.JoinAddingMembers, true, v1alpha1.JoinRemovingExternalMembers, true},
		{"joining without removal keeps its phase", joining(ext, false), step, v1alpha1.JoinAddingMembers, true, v1alpha1.JoinAddingMembers, true},
	} {
		got, moves := JoinPhase(tc.s, tc.a, tc.recorded, tc.started)
		if got != tc.want || moves != tc.wantMoves {
			t.Errorf("%s: JoinPhase = %q, %v; want %q, %v", tc.name, got, moves, tc.want, tc.wantMoves)
		}
	}
}

// Which CA rotation to drive: a spec token until it completes, an automatic one ahead of a
// CA's expiry, an automatic one under way to its end, and never a token twice.
func TestRotationToken(t *testing.T) {
	rot := func(token, phase string, auto bool, spec string) *v1alpha1.CARotationStatus {
		return &v1alpha1.CARotationStatus{Token: token, Phase: phase, Automatic: auto, SpecToken: spec}
	}
	done, trusting := v1alpha1.CARotationCompleted, v1alpha1.CARotationTrusting
	for _, tc := range []struct {
		name      string
		spec, due string
		cur       *v1alpha1.CARotationStatus
		want      string
		automatic bool
	}{
		{name: "nothing asked, no CA due", want: ""},
		{name: "a new spec token", spec: "r1", want: "r1"},
		{name: "a spec token under way", spec: "r1", cur: rot("r1", trusting, false, ""), want: "r1"},
		{name: "a spec token completed", spec: "r1", cur: rot("r1", done, false, ""), want: ""},
		{name: "a CA due", due: "auto-aa", want: "auto-aa", automatic: true},
		{name: "a CA due after a completed spec token", spec: "r1", due: "auto-aa", cur: rot("r1", done, false, ""), want: "auto-aa", automatic: true},
		{name: "a new spec token goes before a due CA", spec: "r2", due: "auto-aa", cur: rot("r1", done, false, ""), want: "r2"},
		{name: "an automatic rotation goes on (the CA is no longer due once replaced)", spec: "r1", cur: rot("auto-aa", v1alpha1.CARotationDropping, true, "r1"), want: "auto-aa", automatic: true},
		{name: "after an automatic rotation the earlier spec token is not acted on again", spec: "r1", cur: rot("auto-aa", done, true, "r1"), want: ""},
		{name: "a completed automatic rotation whose CA still looks due does not loop", due: "auto-aa", cur: rot("auto-aa", done, true, ""), want: ""},
		{name: "a new spec token during an automatic rotation", spec: "r2", cur: rot("auto-aa", trusting, true, "r1"), want: "r2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, auto := RotationToken(tc.spec, tc.cur, tc.due)
			if got != tc.want || auto != tc.automatic {
				t.Errorf("RotationToken = %q, %v; want %q, %v", got, auto, tc.want, tc.automatic)
			}
		})
	}
}
