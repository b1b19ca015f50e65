// Package upgradegate keeps the OperatorCondition's Upgradeable condition, with which OLM
// holds an upgrade of the operator while the clusters it manages are changing.
package upgradegate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Reasons of the Upgradeable condition the operator sets on its OperatorCondition (OLM reads
// it before it upgrades the operator).
const (
	// ReasonSettled: no cluster of this install is changing.
	ReasonSettled = "ClustersSettled"
	// SettledMessage is the message of Upgradeable=True.
	SettledMessage = "no etcd cluster of this install is changing"
	// ReasonChanging: a cluster is changing membership, rolling, migrating,
	// recovering, or runs with quorum at risk; the message names them.
	ReasonChanging = "ClustersChanging"
)

// Gate keeps the OperatorCondition's Upgradeable condition False while a cluster this
// install holds is in the middle of a change that an operator restart would interrupt, and
// True otherwise. Every step of the operator survives a restart, so this is for the upgrade
// itself: a new release starts from settled clusters, and OLM shows why it waits.
type Gate struct {
	// Reader lists EtcdClusters (the manager's cache).
	Reader client.Reader
	// Condition is the OperatorCondition's Upgradeable condition (operator-lib).
	Condition conditions.Condition
	// Identity is this install's claim identity: only clusters it holds count.
	Identity string
	// Interval between checks.
	Interval time.Duration

	last *metav1.Condition
}

// NeedLeaderElection: only the active replica writes the condition.
func (g *Gate) NeedLeaderElection() bool { return true }

// Start checks every Interval until ctx ends.
func (g *Gate) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("upgrade-gate")
	t := time.NewTicker(g.Interval)
	defer t.Stop()
	for {
		if err := g.Sync(ctx); err != nil {
			log.Error(err, "setting the OperatorCondition's Upgradeable condition; OLM keeps the last value it saw")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sync sets the condition from the clusters now, writing only when it changes.
func (g *Gate) Sync(ctx context.Context) error {
	var list v1alpha1.EtcdClusterList
	if err := g.Reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing EtcdClusters: %w", err)
	}
	want := Condition(list.Items, g.Identity)
	if g.last != nil && sameCondition(*g.last, want) {
		return nil
	}
	if cur, err := g.Condition.Get(ctx); err == nil && sameCondition(*cur, want) {
		g.last = &want
		return nil
	}
	if err := g.Condition.Set(ctx, want.Status, conditions.WithReason(want.Reason), conditions.WithMessage(want.Message)); err != nil {
		return err
	}
	logf.FromContext(ctx).Info("OperatorCondition Upgradeable set", "status", want.Status, "reason", want.Reason, "message", want.Message)
	g.last = &want
	return nil
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

// Condition is the Upgradeable condition for the clusters that identity holds: False while
// any is progressing (bootstrap, scaling, replacing or rolling members, migrating storage,
// adopting volumes, recovering) or has quorum at risk; a rollout that is stuck does not hold
// the upgrade (a new release may be what unsticks it).
func Condition(clusters []v1alpha1.EtcdCluster, identity string) metav1.Condition {
	var busy []string
	for _, c := range clusters {
		if c.Status.Operator != identity || c.Spec.Paused {
			continue
		}
		var why []string
		if p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); p != nil && p.Status == metav1.ConditionTrue && p.Reason != v1alpha1.ReasonRolloutStuck {
			why = append(why, p.Reason)
		}
		if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue && d.Reason == v1alpha1.ReasonQuorumAtRisk {
			why = append(why, d.Reason)
		}
		if len(why) > 0 {
			busy = append(busy, fmt.Sprintf("%s/%s (%s)", c.Namespace, c.Name, strings.Join(why, ", ")))
		}
	}
	if len(busy) == 0 {
		return metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionTrue, Reason: ReasonSettled,
			Message: SettledMessage}
	}
	sort.Strings(busy)
	return metav1.Condition{Type: "Upgradeable", Status: metav1.ConditionFalse, Reason: ReasonChanging,
		Message: "etcd clusters are changing: " + strings.Join(busy, "; ") + "; OLM upgrades the operator once they settle"}
}
