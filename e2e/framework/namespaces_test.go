package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestScenarioBinding(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "quorate-conformance", Namespace: "qc-steady-0042"}
	ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "quorate-conformance-scenario"}
	for _, c := range []struct {
		user string
		want rbacv1.Subject
	}{
		{"system:serviceaccount:quorate-conformance:quorate-conformance",
			rbacv1.Subject{Kind: "ServiceAccount", Namespace: "quorate-conformance", Name: "quorate-conformance"}},
		{"kubernetes-admin", rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "kubernetes-admin"}},
	} {
		want := &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{c.want}}
		if diff := cmp.Diff(want, ScenarioBinding("qc-steady-0042", "quorate-conformance-scenario", c.user)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.user, diff)
		}
	}
}
