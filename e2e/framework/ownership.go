package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/label"
)

// Identity of an install that runs in namespace ns (what it writes in the claims it holds).
func Identity(ns string) string { return ns + "/quorate-operator" }

// ScaleInstall sets the replicas of the operator Deployment of the install in ns (0 stops the
// operator) and waits until the Deployment runs that many.
func (r *Run) ScaleInstall(ctx context.Context, ns string, replicas int32) error {
	if err := r.SetInstallReplicas(ctx, ns, replicas); err != nil {
		return err
	}
	c := r.Suite.Client
	key := types.NamespacedName{Namespace: ns, Name: label.OperatorDeployment}
	d := &appsv1.Deployment{}
	return r.WaitFor(ctx, fmt.Sprintf("the install in %s to run %d replicas", ns, replicas), 3*time.Minute, func() error {
		if err := c.Get(ctx, key, d); err != nil {
			return err
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.Replicas != replicas || d.Status.AvailableReplicas != replicas {
			return fmt.Errorf("%d replicas, %d available", d.Status.Replicas, d.Status.AvailableReplicas)
		}
		return nil
	})
}

// SetInstallReplicas sets the replicas of the operator Deployment of the install in ns without
// waiting for them (a frozen pod would hold the wait until its grace period ends).
func (r *Run) SetInstallReplicas(ctx context.Context, ns string, replicas int32) error {
	c := r.Suite.Client
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: label.OperatorDeployment}, d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	r.Event("action", "operator", fmt.Sprintf("operator install in %s scaled to %d", ns, replicas))
	return c.Patch(ctx, d, patch)
}

// WaitOwner waits until the cluster's status names identity as the install that manages it.
func (r *Run) WaitOwner(ctx context.Context, identity string) error {
	return r.WaitFor(ctx, identity+" to hold the cluster's claim", 5*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if ec.Status.Operator != identity {
			return fmt.Errorf("status.operator is %q", ec.Status.Operator)
		}
		return nil
	})
}

// Claim is an install taking a cluster's claim, as its ownership Event says.
type Claim struct {
	At     time.Time
	Holder string
}

// ClaimsInOrder checks that the claims went to want's holders, in want's order, each no
// earlier than its At (Event times have a resolution of a second): a claim moves only when its
// holder has gone, never while it runs.
func ClaimsInOrder(claims, want []Claim) error {
	var holders []string
	for _, w := range want {
		holders = append(holders, w.Holder)
	}
	if len(claims) != len(want) {
		return fmt.Errorf("claims %v, want them taken by %s, in this order", claims, strings.Join(holders, ", then "))
	}
	for i, c := range claims {
		if c.Holder != want[i].Holder || c.At.Before(want[i].At.Truncate(time.Second)) {
			return fmt.Errorf("claim %d: %s at %s, want %s after %s", i, c.Holder, c.At.Format(time.RFC3339), want[i].Holder, want[i].At.Format(time.RFC3339))
		}
	}
	return nil
}

// CheckOwnership reads the operators' Events about the cluster and checks that every change
// an install made (membership, pods, volumes) falls in a time it held the cluster's claim, as
// its own ownership Events bound it: no two installs acted in overlapping windows, and no
// change was made by both. It returns
// how many changes each install made, and the claims in time order.
func (r *Run) CheckOwnership(ctx context.Context) (map[string]int, []Claim, error) {
	var list corev1.EventList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return nil, nil, err
	}
	type change struct {
		at      time.Time
		source  string
		reason  string
		message string
	}
	var claims, acts []change
	changes := []string{v1alpha1.EventMemberAdded, v1alpha1.EventMemberPromoted, v1alpha1.EventMemberRemoved, v1alpha1.EventLeaderMoved,
		v1alpha1.EventMemberRestarting, v1alpha1.EventVolumeDeleted, v1alpha1.EventPodReplaced}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "EtcdCluster" || e.InvolvedObject.Name != r.Cluster {
			continue
		}
		at := e.FirstTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		c := change{at: at, source: e.Source.Component, reason: e.Reason, message: e.Message}
		switch {
		case e.Reason == v1alpha1.EventOwnershipAcquired || e.Reason == v1alpha1.EventOwnershipTakenOver:
			claims = append(claims, c)
		case slices.Contains(changes, e.Reason):
			if e.Count > 1 {
				c.at = e.LastTimestamp.Time // the same change reported again: judge its last report too
			}
			acts = append(acts, c)
		}
	}
	if len(claims) == 0 {
		return nil, nil, fmt.Errorf("no ownership Event about %s", r.Cluster)
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].at.Before(claims[j].at) })
	owner := func(at time.Time) (string, time.Time) {
		holder, since := "", time.Time{}
		for _, c := range claims {
			if !c.at.After(at) {
				holder, since = c.source, c.at
			}
		}
		return holder, since
	}
	counts := map[string]int{}
	var problems []string
	for _, a := range acts {
		counts[a.source]++
		holder, since := owner(a.at)
		// Event times have a resolution of a second: a change in the second a claim moved
		// to the install that made it is in its window.
		if holder != a.source && !slices.ContainsFunc(claims, func(c change) bool { return c.source == a.source && c.at.Sub(a.at).Abs() <= time.Second }) {
			problems = append(problems, fmt.Sprintf("%s at %s by %s (%s) while %s held the claim (since %s)", a.reason, a.at.Format(time.RFC3339), a.source, a.message, holder, since.Format(time.RFC3339)))
		}
	}
	// One change made by two installs (both deleting one member's volume) is two actors
	// at once even when each thought it held the claim.
	for i, a := range acts {
		for _, b := range acts[i+1:] {
			if a.source != b.source && a.reason == b.reason && a.message == b.message && a.at.Sub(b.at).Abs() <= 5*time.Second {
				problems = append(problems, fmt.Sprintf("%s made by both %s (%s) and %s (%s): %s", a.reason, a.source, a.at.Format(time.RFC3339), b.source, b.at.Format(time.RFC3339), a.message))
			}
		}
	}
	var out []Claim
	r.mu.Lock()
	for _, c := range claims {
		r.events = append(r.events, history.Event{Time: c.at.UnixNano(), Kind: "ownership", Name: c.reason, Text: c.message})
		out = append(out, Claim{At: c.at, Holder: c.source})
	}
	r.mu.Unlock()
	if len(problems) > 0 {
		return counts, out, fmt.Errorf("changes made by an install that did not hold the claim: %s", strings.Join(problems, "; "))
	}
	return counts, out, nil
}
