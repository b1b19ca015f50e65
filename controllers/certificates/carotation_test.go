package certificates

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
		if got := nextRotationPhase("r1", tc.cur, tc.settled, now, propagation); got != tc.want {
			t.Errorf("%s: next phase %q, want %q", tc.name, got, tc.want)
		}
	}
}
