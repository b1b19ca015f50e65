package conformance

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
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
	var wide, narrow string
	var wideGone, narrowGone time.Time
	owner := func(name string, id *string) framework.Step {
		return framework.Step{Name: "wait for the " + name + " install to own the cluster", Do: func(ctx context.Context, r *framework.Run) error {
			return r.WaitOwner(ctx, *id)
		}}
	}
	return framework.Scenario{Name: "scope-migration", Labels: map[string]string{label.Suite: label.SuiteMigration}, Replicas: 3, Class: framework.Planned,
		Steps: []framework.Step{
			{Name: "wait for the cluster-wide install to own the cluster", Do: func(ctx context.Context, r *framework.Run) error {
				wide, narrow = framework.Identity(operatorNS), framework.Identity(r.Namespace)
				return r.WaitOwner(ctx, wide)
			}},
			// A namespaced install joins: both see the cluster; the cluster-wide one keeps it.
			{Name: "install the operator namespaced beside it", Do: func(ctx context.Context, r *framework.Run) error {
				if err := r.InstallNamespaced(ctx, r.Namespace); err != nil {
					return err
				}
				r.OnCleanup(func(ctx context.Context) error { return r.ScaleInstall(ctx, operatorNS, 1) })
				return nil
			}},
			scaleStep(5),
			// The cluster-wide install goes: the namespaced one takes over once the claim expires.
			{Name: "stop the cluster-wide install", Do: func(ctx context.Context, r *framework.Run) error {
				wideGone = time.Now()
				return r.ScaleInstall(ctx, operatorNS, 0)
			}},
			owner("namespaced", &narrow),
			scaleStep(3),
			// And back: the cluster-wide install returns, the namespaced one goes.
			{Name: "start the cluster-wide install again", Do: func(ctx context.Context, r *framework.Run) error {
				return r.ScaleInstall(ctx, operatorNS, 1)
			}},
			scaleStep(5),
			{Name: "remove the namespaced install", Do: func(ctx context.Context, r *framework.Run) error {
				narrowGone = time.Now()
				return r.RemoveNamespacedInstall(ctx, r.Namespace)
			}},
			owner("cluster-wide", &wide),
			scaleStep(3),
			{Name: "check: every change made by the claim's holder", Do: func(ctx context.Context, r *framework.Run) error {
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
			}},
		}}
}

// ClaimPruned: two installs see one cluster (cluster-wide and namespaced), and its claim Lease
// is deleted every 9 s while the cluster scales from 3 to 5 members and back, as a GitOps
// prune or a namespace clean-up would delete an object it does not know. A vanished claim is
// a lost claim: the scale may stall, but no two installs may act in overlapping windows, and
// none may make a change the other made too (both deleting one member's volume).
func ClaimPruned(operatorNS string) framework.Scenario {
	const every = 9 * time.Second
	return framework.Scenario{Name: "claim-pruned", Labels: map[string]string{label.Suite: label.SuiteMigration}, Replicas: 3, Class: framework.Planned,
		Steps: []framework.Step{
			{Name: "wait for the cluster-wide install to own the cluster", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitOwner(ctx, framework.Identity(operatorNS))
			}},
			{Name: "install the operator namespaced beside it", Do: func(ctx context.Context, r *framework.Run) error {
				return r.InstallNamespaced(ctx, r.Namespace)
			}},
			{Name: "scale 3 -> 5 -> 3 while the claim is deleted every 9 s", Do: func(ctx context.Context, r *framework.Run) error {
				pruneCtx, stop := context.WithCancel(ctx)
				pruned := runAlongside(func() error { return pruneClaim(pruneCtx, r, every) })
				err := scaleThrough(ctx, r)
				stop()
				if perr := <-pruned; perr != nil && err == nil {
					err = perr
				}
				return err
			}},
			{Name: "remove the namespaced install", Do: func(ctx context.Context, r *framework.Run) error {
				return r.RemoveNamespacedInstall(ctx, r.Namespace)
			}},
			{Name: "check: every change made once, by the claim's holder", Do: func(ctx context.Context, r *framework.Run) error {
				counts, claims, err := r.CheckOwnership(ctx)
				if err != nil {
					return err
				}
				r.T.Logf("changes by install: %v; %d claims taken: %v", counts, len(claims), claims)
				return nil
			}},
		}}
}

// pruneClaim deletes the cluster's claim Lease every period until ctx ends, and at least
// three times: fewer would not have tested the claim's loss while the cluster scaled.
func pruneClaim(ctx context.Context, r *framework.Run, period time.Duration) error {
	deleted := 0
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if deleted < 3 {
				return fmt.Errorf("the claim was deleted %d times while the cluster scaled, want at least 3", deleted)
			}
			return nil
		case <-tick.C:
		}
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: names.OwnerLease(r.Cluster)}}
		err := r.Suite.Client.Delete(ctx, lease)
		switch {
		case err == nil:
			deleted++
			r.Event("fault", "claim-deleted", fmt.Sprintf("Lease %s deleted (%d)", lease.Name, deleted))
		case apierrors.IsNotFound(err) || ctx.Err() != nil:
		default:
			return fmt.Errorf("deleting Lease %s: %w", lease.Name, err)
		}
	}
}

// scaleStep scales the cluster to n members and waits for them to settle.
func scaleStep(n int32) framework.Step {
	return framework.Step{Name: fmt.Sprintf("scale to %d members", n), Do: func(ctx context.Context, r *framework.Run) error {
		return r.Scale(ctx, n)
	}}
}

// joinScenario is a scenario that moves a 3-member external cluster of plain etcd processes
// on the node (*x, once started) into the run's EtcdCluster, with the go-ahead given at
// creation when remove is true.
func joinScenario(name string, remove bool, x **framework.External) framework.Scenario {
	return framework.Scenario{Name: name, Labels: map[string]string{label.Suite: label.SuiteMigration}, Replicas: 3, Class: framework.Planned, NeedsNode: true,
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
	var start, joined, done time.Time
	sc.Steps = append(joinUntilGoAhead(&start), []framework.Step{
		{Name: "give the go-ahead", Do: func(ctx context.Context, r *framework.Run) error {
			joined = time.Now()
			r.Phase("removing the external members")
			return r.GoAhead(ctx)
		}},
		{Name: "wait for the join to complete", Do: func(ctx context.Context, r *framework.Run) error {
			return r.WaitJoin(ctx, v1alpha1.JoinCompleted, 10*time.Minute)
		}},
		waitSettled(3),
		{Name: "check: moved in with the cluster's ID and data", Do: func(ctx context.Context, r *framework.Run) error {
			done = time.Now()
			if err := x.CheckMovedIn(ctx, r, 3); err != nil {
				return err
			}
			r.T.Logf("migrate-in: 3 members added in %s, 3 external members removed in %s, %s in all; cluster ID %x kept",
				joined.Sub(start).Round(time.Second), done.Sub(joined).Round(time.Second), done.Sub(start).Round(time.Second), x.ClusterID)
			return nil
		}},
	}...)
	return sc
}

// joinUntilGoAhead are the steps that create the EtcdCluster joining the external cluster (at
// *start) and wait until its members are in and it waits for the go-ahead.
func joinUntilGoAhead(start *time.Time) []framework.Step {
	return []framework.Step{
		{Name: "create the EtcdCluster joining the external cluster", Do: func(ctx context.Context, r *framework.Run) error {
			*start = time.Now()
			r.Phase("joining the external cluster")
			r.Event("action", "create", "created EtcdCluster "+r.Cluster+" with spec.bootstrap.join")
			return r.CreateEtcdCluster(ctx)
		}},
		{Name: "wait for the join to wait for the go-ahead", Do: func(ctx context.Context, r *framework.Run) error {
			return r.WaitJoin(ctx, v1alpha1.JoinWaitingForGoAhead, 10*time.Minute)
		}},
	}
}

// JoinAborted (issue 39, item 5): the EtcdCluster joining an external cluster is deleted
// between the promotion of its members and the go-ahead, while the external cluster has its 3
// voters and the EtcdCluster's 3. The join finalizer holds the deletion while the operator's
// members leave one at a time (leadership moved out of them first); the garbage collector
// killing 3 of the 6 voters at once would take the external cluster's quorum away. The
// external cluster keeps its ID, its data and its 3 members, and every checker passes.
func JoinAborted() framework.Scenario {
	var x *framework.External
	sc := joinScenario("join-aborted", false, &x)
	var created time.Time
	sc.Steps = append(joinUntilGoAhead(&created), []framework.Step{
		{Name: "delete the EtcdCluster and wait until it is gone", Do: func(ctx context.Context, r *framework.Run) error {
			ec, err := r.GetCluster(ctx)
			if err != nil {
				return err
			}
			start := time.Now()
			r.Phase("deleting the EtcdCluster in the middle of its join")
			r.Event("action", "delete", "deleted EtcdCluster "+r.Cluster+" before the join's go-ahead")
			if err := r.Suite.Client.Delete(ctx, ec); err != nil {
				return err
			}
			// A run that fails before the EtcdCluster is gone must not leave the namespace
			// stuck behind the join finalizer once the external members are stopped (cleanups
			// run newest first: this one before theirs).
			r.OnCleanup(func(ctx context.Context) error {
				left := &v1alpha1.EtcdCluster{}
				if err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(ec), left); err != nil {
					return client.IgnoreNotFound(err)
				}
				patch := client.MergeFrom(left.DeepCopy())
				left.Finalizers = nil
				return client.IgnoreNotFound(r.Suite.Client.Patch(ctx, left, patch))
			})
			err = r.WaitFor(ctx, "EtcdCluster "+r.Cluster+" to be gone", 10*time.Minute, func() error {
				err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(ec), &v1alpha1.EtcdCluster{})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("still there (%v)", err)
			})
			if err != nil {
				return err
			}
			r.T.Logf("join-aborted: the EtcdCluster's members left and it was gone %s after its deletion", time.Since(start).Round(time.Second))
			aborted, err := r.EventsFor(ctx, v1alpha1.EventJoinAborted)
			if err == nil && len(aborted) == 0 {
				err = fmt.Errorf("no %s Event: the join was not aborted by the operator", v1alpha1.EventJoinAborted)
			}
			return err
		}},
		{Name: "check: the external cluster kept its ID and its 3 members alone", Do: func(ctx context.Context, r *framework.Run) error {
			return x.CheckStayed(ctx, r)
		}},
	}...)
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
	var first string
	var start time.Time
	sc.Steps = []framework.Step{
		{Name: "firewall peer connections both ways", Do: func(ctx context.Context, r *framework.Run) error {
			first = names.Member(r.Cluster, 0)
			r.Phase("a firewall rejects peer connections both ways")
			return x.Firewall(ctx, r, true, true)
		}},
		{Name: "create the EtcdCluster joining the external cluster", Do: func(ctx context.Context, r *framework.Run) error {
			r.Event("action", "create", "created EtcdCluster "+r.Cluster+" with spec.bootstrap.join")
			return r.CreateEtcdCluster(ctx)
		}},
		{Name: "wait for the first member's launcher to refuse: PeersUnreachable", Do: func(ctx context.Context, r *framework.Run) error {
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
			return r.WantOnlyMembers(ctx, first)
		}},
		{Name: "open the firewall from the pods to the external members", Do: func(ctx context.Context, r *framework.Run) error {
			r.Phase("the external members still cannot reach the pods")
			return x.Firewall(ctx, r, false, true)
		}},
		{Name: "wait for Degraded: an external member has no connection to the first member", Do: func(ctx context.Context, r *framework.Run) error {
			err := r.WaitFor(ctx, "Degraded=PeersUnreachable: an external member has no connection to "+first, 5*time.Minute, func() error {
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
			return r.WantOnlyMembers(ctx, first)
		}},
		{Name: "remove the firewall", Do: func(ctx context.Context, r *framework.Run) error {
			r.Phase("no firewall")
			start = time.Now()
			return x.Firewall(ctx, r, false, false)
		}},
		{Name: "wait for the join to complete", Do: func(ctx context.Context, r *framework.Run) error {
			return r.WaitJoin(ctx, v1alpha1.JoinCompleted, 10*time.Minute)
		}},
		waitSettled(3),
		{Name: "check: moved in with the cluster's ID and data", Do: func(ctx context.Context, r *framework.Run) error {
			if err := x.CheckMovedIn(ctx, r, 3); err != nil {
				return err
			}
			r.T.Logf("migrate-in-firewalled: moved in %s after the firewall opened; cluster ID %x kept", time.Since(start).Round(time.Second), x.ClusterID)
			return nil
		}},
	}
	return sc
}
