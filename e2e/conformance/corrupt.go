package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/internal/names"
)

// DataCorrupted: under load, a follower's data silently diverge. It is fenced (its etcd stops,
// its pod stays), one value in its bbolt file is rewritten on the node (a well-formed record
// with another value: etcd would open it and serve it), and it is unfenced. etcd's initial
// corruption check must find its data differ from both peers' and refuse to start it; the
// operator must name it (Degraded=True/MemberCorrupt) and replace it add-first from the healthy
// majority: its member ID leaves, the cluster ID stays, three healthy members settle, and no
// client ever reads the rewritten value (the checkers).
func DataCorrupted() framework.Scenario {
	var follower string
	var before *v1alpha1.EtcdCluster
	var end func()
	return framework.Scenario{Name: "data-corrupted", Labels: safety, Replicas: 3, Class: framework.Fault, NeedsNode: true,
		Steps: []framework.Step{
			{Name: "find a follower and read the cluster's status", Do: func(ctx context.Context, r *framework.Run) (err error) {
				if follower, err = r.Follower(ctx); err != nil {
					return err
				}
				before, err = r.GetCluster(ctx)
				return err
			}},
			{Name: "fence the follower: its etcd stops", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("fencing " + follower + " to stop its etcd")
				end = r.Fault("data-corrupted", "fenced "+follower+", rewrote a value in its database, unfenced it")
				r.Defer(end)
				return setFence(ctx, r, follower)
			}},
			// bbolt's lock is granted once etcd has closed the file (the kubelet refreshes the
			// pod's annotations file within about a minute).
			{Name: "rewrite one value in the follower's database", Do: func(ctx context.Context, r *framework.Run) error {
				var key framework.CorruptedKey
				err := r.WaitFor(ctx, follower+"'s database unlocked", 3*time.Minute, func() error {
					var err error
					key, err = r.CorruptData(ctx, follower, 2*time.Second)
					return err
				})
				if err != nil {
					return err
				}
				r.T.Logf("rewrote the value of %q at revision %d in %s's database", key.Key, key.Revision, follower)
				return nil
			}},
			{Name: "unfence the follower: etcd starts on the corrupted data", Do: func(ctx context.Context, r *framework.Run) error {
				r.Phase("unfencing " + follower + " on its corrupted data")
				return setFence(ctx, r, "")
			}},
			{Name: "wait for the corrupted member to be replaced", Do: func(ctx context.Context, r *framework.Run) error {
				err := waitReplaced(ctx, r, follower, before)
				end()
				return err
			}},
			waitSettled(3),
			{Name: "check: the operator said the member's data differ (Degraded=True/MemberCorrupt naming it)", Do: func(ctx context.Context, r *framework.Run) error {
				named, err := r.EventsFor(ctx, v1alpha1.ReasonMemberCorrupt)
				if err != nil {
					return err
				}
				if !named[follower] {
					return fmt.Errorf("no %s Event named %s (members named: %v)", v1alpha1.ReasonMemberCorrupt, follower, named)
				}
				ec, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				if ec.Status.ClusterID != before.Status.ClusterID {
					return fmt.Errorf("the cluster ID changed from %s to %s", before.Status.ClusterID, ec.Status.ClusterID)
				}
				return nil
			}},
		}}
}

// waitReplaced waits until the member's etcd ID (as before lists it) has left the membership,
// logging each Degraded condition it sees; a changed cluster ID ends the wait.
func waitReplaced(ctx context.Context, r *framework.Run, member string, before *v1alpha1.EtcdCluster) error {
	oldID := ""
	for _, m := range before.Status.Members {
		if m.Name == member {
			oldID = m.ID
		}
	}
	if oldID == "" {
		return fmt.Errorf("status lists no member %s", member)
	}
	seen := ""
	return r.WaitFor(ctx, "the corrupted member to be replaced", 10*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		for _, c := range ec.Status.Conditions {
			if c.Type == v1alpha1.ConditionDegraded && c.Message != seen {
				seen = c.Message
				r.T.Logf("Degraded=%s/%s: %s", c.Status, c.Reason, c.Message)
			}
		}
		if ec.Status.ClusterID != before.Status.ClusterID {
			return fmt.Errorf("%w: the cluster ID changed from %s to %s", framework.ErrStop, before.Status.ClusterID, ec.Status.ClusterID)
		}
		for _, m := range ec.Status.Members {
			if m.ID == oldID {
				return fmt.Errorf("%s (%s) is still a member", m.Name, m.ID)
			}
		}
		return nil
	})
}

// setFence sets the EtcdCluster's fence annotation to members, or removes it ("").
func setFence(ctx context.Context, r *framework.Run, members string) error {
	what := "annotation " + names.AnnotationFenceMembers + "=" + members
	if members == "" {
		what = "annotation " + names.AnnotationFenceMembers + " removed"
	}
	return r.Update(ctx, what, func(ec *v1alpha1.EtcdCluster) {
		if members == "" {
			delete(ec.Annotations, names.AnnotationFenceMembers)
			return
		}
		if ec.Annotations == nil {
			ec.Annotations = map[string]string{}
		}
		ec.Annotations[names.AnnotationFenceMembers] = members
	})
}
