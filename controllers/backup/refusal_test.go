package backup

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Only an admission webhook's or policy's denial of the Job is taken as a refusal that may be
// final; RBAC being set up and quotas come and go.
func TestAdmissionDenied(t *testing.T) {
	jobs := schema.GroupResource{Group: "batch", Resource: "jobs"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewForbidden(jobs, "b-backup", errors.New(`admission webhook "validate.kyverno.svc" denied the request: pods must not mount secrets`)), true},
		{apierrors.NewForbidden(jobs, "b-backup", errors.New(`ValidatingAdmissionPolicy 'no-jobs' with binding 'no-jobs' denied request: nope`)), true},
		{apierrors.NewForbidden(jobs, "b-backup", errors.New(`User "system:serviceaccount:q:op" cannot create resource "jobs" in API group "batch" in the namespace "n"`)), false},
		{apierrors.NewForbidden(jobs, "b-backup", errors.New(`exceeded quota: jobs, requested: count/jobs.batch=1, used: count/jobs.batch=5, limited: count/jobs.batch=5`)), false},
		{errors.New("denied the request"), false},
	} {
		if got := admissionDenied(tc.err); got != tc.want {
			t.Errorf("admissionDenied(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
