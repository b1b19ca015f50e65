package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// The on-demand maintenance commands ask the operator through spec.maintenance.defragNow and
// spec.maintenance.moveLeader, and wait for status.maintenance to answer the token: the plugin
// never acts on etcd itself, so the operator keeps its order (followers first, the leader last)
// and its gates (nothing while the cluster is not settled).

// defragNowPatch is the merge patch that asks for a defragmentation round.
func defragNowPatch(token string) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"maintenance": map[string]any{"defragNow": token}}})
	return b
}

// moveLeaderPatch is the merge patch that asks for a leadership transfer (to "" removes a
// member named by an earlier request).
func moveLeaderPatch(token, to string) []byte {
	var target any
	if to != "" {
		target = to
	}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"maintenance": map[string]any{"moveLeader": map[string]any{"token": token, "to": target}}}})
	return b
}

// progressing is the Progressing condition as a progress line.
func progressing(c *v1alpha1.EtcdCluster) string {
	p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
	if p == nil {
		return "Progressing: not reported yet"
	}
	return fmt.Sprintf("Progressing=%s %s: %s", p.Status, p.Reason, p.Message)
}

// voters names the voting members status lists.
func voters(c *v1alpha1.EtcdCluster) []string {
	var out []string
	for _, m := range c.Status.Members {
		if !m.Learner {
			out = append(out, m.Name)
		}
	}
	return out
}

// defragState says whether the round of token completed, and how far it is: the members done
// of the voters, and the Progressing condition.
func defragState(c *v1alpha1.EtcdCluster, token string) (bool, string) {
	var d *v1alpha1.DefragRoundStatus
	if c.Status.Maintenance != nil && c.Status.Maintenance.Defrag != nil && c.Status.Maintenance.Defrag.Token == token {
		d = c.Status.Maintenance.Defrag
	}
	if d != nil && d.CompletionTime != nil {
		return true, fmt.Sprintf("the round is complete: %d members defragmented (%s)", len(d.Defragmented), listOrNone(d.Defragmented))
	}
	if d == nil {
		return false, "waiting for the operator to start the round; " + progressing(c)
	}
	return false, fmt.Sprintf("%d of %d members defragmented (%s); %s", len(d.Defragmented), len(voters(c)), listOrNone(d.Defragmented), progressing(c))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none yet"
	}
	return strings.Join(names, ", ")
}

// dbSizes are the members' database sizes status shows.
func dbSizes(c *v1alpha1.EtcdCluster) map[string]int64 {
	out := map[string]int64{}
	for _, m := range c.Status.Members {
		out[m.Name] = m.DBSize
	}
	return out
}

// Defrag asks for a defragmentation of every healthy voting member (spec.maintenance.defragNow)
// and waits until status.maintenance.defrag records the round complete; it prints each member
// with its database size before and after, as status shows them.
func (e *Env) Defrag(ctx context.Context, name, token string, timeout time.Duration) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	if token == "" {
		token = Token("defrag", e.Now())
	}
	if c.Spec.Maintenance.DefragNow == token {
		return fmt.Errorf("spec.maintenance.defragNow is %q already: choose another token", token)
	}
	before := dbSizes(c)
	if err := e.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, defragNowPatch(token))); err != nil {
		return fmt.Errorf("asking for a defragmentation of %s: %w", name, err)
	}
	fmt.Fprintf(e.Err, "asked for a defragmentation of every member of %s/%s (spec.maintenance.defragNow=%s): followers first, the leader last\n", e.Namespace, name, token)
	if c.Spec.Hibernate || c.Spec.Paused {
		fmt.Fprintf(e.Err, "  %s is %s: the round runs once it is %s\n", name, map[bool]string{true: "hibernated", false: "paused"}[c.Spec.Hibernate],
			map[bool]string{true: "woken (kubectl quorate wake)", false: "resumed (kubectl quorate resume)"}[c.Spec.Hibernate])
	}
	if err := e.waitFor(ctx, timeout, "defragmenting "+name, func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, "", err
		}
		done, progress := defragState(c, token)
		return done, progress, nil
	}); err != nil {
		return err
	}
	return renderDefrag(e, c, before)
}

// renderDefrag prints the members the round defragmented, with their database sizes.
func renderDefrag(e *Env, c *v1alpha1.EtcdCluster, before map[string]int64) error {
	d := c.Status.Maintenance.Defrag
	after := dbSizes(c)
	fmt.Fprintf(e.Out, "defragmented %d members of %s, in this order (database file size before -> after; writes go on meanwhile):\n", len(d.Defragmented), c.Name)
	for _, m := range d.Defragmented {
		fmt.Fprintf(e.Out, "  %s\tdatabase %s -> %s\n", m, humanBytes(before[m]), humanBytes(after[m]))
	}
	var missed []string
	for _, v := range voters(c) {
		if !slices.Contains(d.Defragmented, v) {
			missed = append(missed, v)
		}
	}
	if len(missed) > 0 {
		fmt.Fprintf(e.Out, "not defragmented (not healthy while the round ran): %s\n", strings.Join(missed, ", "))
	}
	return nil
}

// moveLeaderState says whether the operator answered the transfer of token, and how: done
// with what it did, or an error for a refusal.
func moveLeaderState(c *v1alpha1.EtcdCluster, token string) (bool, string, error) {
	var m *v1alpha1.MoveLeaderStatus
	if c.Status.Maintenance != nil && c.Status.Maintenance.MoveLeader != nil && c.Status.Maintenance.MoveLeader.Token == token {
		m = c.Status.Maintenance.MoveLeader
	}
	if m == nil {
		return false, fmt.Sprintf("waiting for the operator (leader: %s); %s", orDash(c.Status.Leader), progressing(c)), nil
	}
	switch m.Result {
	case v1alpha1.LeaderMoveMoved:
		return true, fmt.Sprintf("leadership moved from %s to %s", m.From, m.To), nil
	case v1alpha1.LeaderMoveAlreadyLeader:
		return true, fmt.Sprintf("%s is the leader already: nothing moved", m.To), nil
	case v1alpha1.LeaderMoveFailed:
		return false, "", fmt.Errorf("etcd did not complete the transfer: %s", m.Message)
	}
	return false, "", fmt.Errorf("the operator refused the transfer: %s", m.Message)
}

// MoveLeader asks for a leadership transfer (spec.maintenance.moveLeader), to member to or to
// any other healthy voter, and waits until status.maintenance.moveLeader answers it.
func (e *Env) MoveLeader(ctx context.Context, name, to, token string, timeout time.Duration) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	if token == "" {
		token = Token("move", e.Now())
	}
	if r := c.Spec.Maintenance.MoveLeader; r != nil && r.Token == token {
		return fmt.Errorf("spec.maintenance.moveLeader.token is %q already: choose another token", token)
	}
	if err := e.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, moveLeaderPatch(token, to))); err != nil {
		return fmt.Errorf("asking for a leadership transfer in %s: %w", name, err)
	}
	target := "another healthy voting member"
	if to != "" {
		target = to
	}
	fmt.Fprintf(e.Err, "asked for a leadership transfer of %s/%s to %s (spec.maintenance.moveLeader.token=%s)\n", e.Namespace, name, target, token)
	var result string
	if err := e.waitFor(ctx, timeout, "moving the leadership of "+name, func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, "", err
		}
		done, progress, err := moveLeaderState(c, token)
		result = progress
		return done, progress, err
	}); err != nil {
		return err
	}
	fmt.Fprintln(e.Out, result)
	return nil
}
