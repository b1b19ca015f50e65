package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/names"
)

// Users: a cluster with etcd authentication on (spec.users), its workload running as an
// application user limited to the workload's prefix, with its certificate from the user's
// servicebinding Secret: every checker passes with authentication on, and the user is refused
// a write outside its prefix.
func Users() framework.Scenario {
	return framework.Scenario{Name: "users", Labels: map[string]string{label.Suite: label.SuiteSafety, label.Security: "auth"}, Replicas: 3, Class: framework.Planned,
		Spec: func(s *v1alpha1.EtcdClusterSpec) {
			s.Users = []v1alpha1.UserSpec{{Name: "app", ReadWrite: []string{"/quorate-conformance/"}}, {Name: "reports", ReadOnly: []string{"/quorate-conformance/"}}}
		},
		ClientSecret: func(cluster string) string { return names.UserSecret(cluster, "app") },
		Steps: []framework.Step{
			{Name: "check status: authentication on for app and reports", Do: func(ctx context.Context, r *framework.Run) error {
				ec, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				if !ec.Status.AuthEnabled || !slices.Equal(ec.Status.Users, []string{"app", "reports"}) {
					return fmt.Errorf("status: authEnabled %v, users %v; want authentication on for app and reports", ec.Status.AuthEnabled, ec.Status.Users)
				}
				return nil
			}},
			{Name: "write outside the user's prefix: refused", Do: func(ctx context.Context, r *framework.Run) error {
				got, err := r.Probe(ctx, "/elsewhere/x")
				if err != nil {
					return err
				}
				if !strings.Contains(got, "permission denied") {
					return fmt.Errorf("user app wrote /elsewhere/x outside its prefix (etcd answered %q)", got)
				}
				return nil
			}},
		}}
}
