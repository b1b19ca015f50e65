package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
)

// ScopeMigration moves the management of a cluster from a cluster-wide install to a namespaced
// one and back, under load, as a team does when it changes an operator's install scope, with
// scaling on each side of each move. Both installs see the cluster while they overlap; the
// cluster's claim decides which acts. The Events each install wrote prove that no two changed
// the cluster in overlapping windows.
func ScopeMigration(operatorNS string) framework.Scenario {
	return framework.Scenario{Name: "scope-migration", Labels: map[string]string{"suite": "migration"}, Replicas: 3, Class: framework.Planned,
		Steps: func(ctx context.Context, r *framework.Run) error {
			wide, narrow := framework.Identity(operatorNS), framework.Identity(r.Namespace)
			if err := r.WaitOwner(ctx, wide); err != nil {
				return err
			}
			// A namespaced install joins: both see the cluster; the cluster-wide one keeps it.
			if err := r.InstallNamespaced(ctx, r.Namespace); err != nil {
				return err
			}
			r.OnCleanup(func(ctx context.Context) error { return r.ScaleInstall(ctx, operatorNS, 1) })
			if err := r.Scale(ctx, 5); err != nil {
				return err
			}
			// The cluster-wide install goes: the namespaced one takes over once the claim expires.
			wideGone := time.Now()
			if err := r.ScaleInstall(ctx, operatorNS, 0); err != nil {
				return err
			}
			if err := r.WaitOwner(ctx, narrow); err != nil {
				return err
			}
			if err := r.Scale(ctx, 3); err != nil {
				return err
			}
			// And back: the cluster-wide install returns, the namespaced one goes.
			if err := r.ScaleInstall(ctx, operatorNS, 1); err != nil {
				return err
			}
			if err := r.Scale(ctx, 5); err != nil {
				return err
			}
			narrowGone := time.Now()
			if err := r.RemoveNamespacedInstall(ctx, r.Namespace); err != nil {
				return err
			}
			if err := r.WaitOwner(ctx, wide); err != nil {
				return err
			}
			if err := r.Scale(ctx, 3); err != nil {
				return err
			}
			counts, claims, err := r.CheckOwnership(ctx)
			if err != nil {
				return err
			}
			want := []framework.Claim{{Holder: wide}, {At: wideGone, Holder: narrow}, {At: narrowGone, Holder: wide}}
			if err := framework.ClaimsInOrder(claims, want); err != nil {
				return err
			}
			if counts[wide] == 0 || counts[narrow] == 0 {
				return fmt.Errorf("changes by install: %v; want both installs to have managed the cluster", counts)
			}
			r.T.Logf("changes by install: %v, each while it held the cluster's claim", counts)
			return nil
		}}
}

// joinScenario is a scenario that moves a 3-member external cluster of plain etcd processes
// on the node (*x, once started) into the run's EtcdCluster, with the go-ahead given at
// creation when remove is true.
func joinScenario(name string, remove bool, x **framework.External) framework.Scenario {
	return framework.Scenario{Name: name, Labels: map[string]string{"suite": "migration"}, Replicas: 3, Class: framework.Planned, NeedsNode: true,
		// Each external member removed fails the requests in flight on it (4-8 at 500 ops/s:
		// etcd stops a removed member at once), which the success ratio must absorb.
		MinDuration: 30 * time.Second,
		External: func(ctx context.Context, r *framework.Run) ([]string, error) {
			var err error
			*x, err = r.StartExternal(ctx, 3)
			if err != nil {
				return nil, err
			}
			return (*x).Endpoints, nil
		},
		ClientSecret: func(string) string { return framework.ExternalClientSecret },
		Spec: func(s *v1alpha1.EtcdClusterSpec) {
			s.TLS = v1alpha1.TLSSpec{ServerSecretName: framework.ExternalServerSecret, PeerSecretName: framework.ExternalPeerSecret, ClientSecretName: framework.ExternalClientSecret}
			s.Bootstrap = &v1alpha1.BootstrapSpec{Join: &v1alpha1.JoinSpec{Endpoints: (*x).Endpoints, RemoveExternalMembers: remove}}
		},
	}
}

// MigrateIn moves a running etcd cluster of plain processes outside Kubernetes into an
// EtcdCluster, live, under a load that knows both sets of endpoints: the operator adds its
// three members one at a time as learners, stops for the go-ahead, then removes the external
// members, the leader last. The cluster keeps its ID and its data, and ends with the
// EtcdCluster's members only.
func MigrateIn() framework.Scenario {
	var x *framework.External
	sc := joinScenario("migrate-in", false, &x)
	sc.Steps = func(ctx context.Context, r *framework.Run) error {
		start := time.Now()
		r.Phase("joining the external cluster")
		r.Event("action", "create", "created EtcdCluster "+r.Cluster+" with spec.bootstrap.join")
		if err := r.CreateEtcdCluster(ctx); err != nil {
			return err
		}
		if err := r.WaitJoin(ctx, v1alpha1.JoinWaitingForGoAhead, 10*time.Minute); err != nil {
			return err
		}
		joined := time.Now()
		r.Phase("removing the external members")
		if err := r.GoAhead(ctx); err != nil {
			return err
		}
		if err := r.WaitJoin(ctx, v1alpha1.JoinCompleted, 10*time.Minute); err != nil {
			return err
		}
		if err := r.WaitSettled(ctx, 3, 5*time.Minute); err != nil {
			return err
		}
		done := time.Now()
		if err := x.CheckMovedIn(ctx, r, 3); err != nil {
			return err
		}
		r.T.Logf("migrate-in: 3 members added in %s, 3 external members removed in %s, %s in all; cluster ID %x kept",
			joined.Sub(start).Round(time.Second), done.Sub(joined).Round(time.Second), done.Sub(start).Round(time.Second), x.ClusterID)
		return nil
	}
	return sc
}

// MigrateInFirewalled moves an external cluster in through a firewall that first rejects peer
// connections both ways, then only from the external members to the pods, then none. The
// first new member's launcher refuses to start etcd (PeersUnreachable, naming the peers);
// once the pods reach the external members it starts, and the join stops again because the
// external members report no connection to it; once they connect the move completes. Nothing
// but that one learner is added meanwhile, and every checker passes.
func MigrateInFirewalled() framework.Scenario {
	var x *framework.External
	sc := joinScenario("migrate-in-firewalled", true, &x)
	sc.Steps = func(ctx context.Context, r *framework.Run) error {
		first := names.Member(r.Cluster, 0)
		r.Phase("a firewall rejects peer connections both ways")
		if err := x.Firewall(ctx, r, true, true); err != nil {
			return err
		}
		r.Event("action", "create", "created EtcdCluster "+r.Cluster+" with spec.bootstrap.join")
		if err := r.CreateEtcdCluster(ctx); err != nil {
			return err
		}
		refusal, err := r.WaitLauncherRefusal(ctx, first, launcher.RefusalPeersUnreachable, 5*time.Minute)
		if err != nil {
			return err
		}
		r.T.Logf("the launcher of %s refused: %s", first, refusal.Message)
		err = r.WaitFor(ctx, "Degraded=PeersUnreachable with the launcher's refusal", 2*time.Minute, func() error {
			return r.WantDegraded(ctx, v1alpha1.ReasonPeersUnreachable, planner.CannotJoin(first, refusal.Message))
		})
		if err != nil {
			return err
		}
		if err := r.WantOnlyMembers(ctx, first); err != nil {
			return err
		}

		r.Phase("the external members still cannot reach the pods")
		if err := x.Firewall(ctx, r, false, true); err != nil {
			return err
		}
		err = r.WaitFor(ctx, "Degraded=PeersUnreachable: an external member has no connection to "+first, 5*time.Minute, func() error {
			var errs []error
			for i := range x.Names {
				err := r.WantDegraded(ctx, v1alpha1.ReasonPeersUnreachable, x.External(i).NotConnected(first))
				if err == nil {
					return nil
				}
				errs = append(errs, err)
			}
			return errs[0]
		})
		if err != nil {
			return err
		}
		if err := r.WantOnlyMembers(ctx, first); err != nil {
			return err
		}

		r.Phase("no firewall")
		start := time.Now()
		if err := x.Firewall(ctx, r, false, false); err != nil {
			return err
		}
		if err := r.WaitJoin(ctx, v1alpha1.JoinCompleted, 10*time.Minute); err != nil {
			return err
		}
		if err := r.WaitSettled(ctx, 3, 5*time.Minute); err != nil {
			return err
		}
		if err := x.CheckMovedIn(ctx, r, 3); err != nil {
			return err
		}
		r.T.Logf("migrate-in-firewalled: moved in %s after the firewall opened; cluster ID %x kept", time.Since(start).Round(time.Second), x.ClusterID)
		return nil
	}
	return sc
}
