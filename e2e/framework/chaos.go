package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	cm "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/chaos"
	"github.com/quorate-dev/quorate/e2e/history"
)

// Chaos returns the fault library aimed at this run's EtcdCluster.
func (r *Run) Chaos() chaos.Target {
	return chaos.Target{Client: r.Suite.Client, Namespace: r.Namespace, Cluster: r.Cluster}
}

// Inject builds a fault from the cluster's live status, injects it through Chaos Mesh, keeps it
// for hold (or while during runs), removes it and waits for Chaos Mesh's recovery. The fault
// is on the timeline from creation to confirmed removal, named by its Chaos Mesh object.
//
// When Chaos Mesh could not inject it because a target pod was gone or not running (the
// operation under way was replacing it: chaos.TargetGone), and the fault was removed cleanly,
// the fault is built again with its targets chosen anew from the live cluster, up to
// retargetAttempts times. during never ran then: it runs only once a fault is injected.
func (r *Run) Inject(ctx context.Context, build func(chaos.Target, context.Context) (chaos.Fault, error), hold time.Duration, during func(context.Context) error) error {
	if err := r.requireChaosMesh(ctx); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := r.injectOnce(ctx, build, hold, during)
		if err == nil || attempt == retargetAttempts || !chaos.TargetGone(err) || ctx.Err() != nil {
			return err
		}
		// On the timeline too: outside an operation nothing should be replacing pods.
		msg := fmt.Sprintf("a target of the fault was gone (%v): its targets chosen again (attempt %d of %d)", err, attempt+1, retargetAttempts)
		r.Event("note", "fault-retargeted", msg)
		r.T.Log(msg)
	}
}

// retargetAttempts is how many times Inject builds and injects a fault whose target pod is
// gone each time.
const retargetAttempts = 3

// injectOnce builds the fault and injects it once.
func (r *Run) injectOnce(ctx context.Context, build func(chaos.Target, context.Context) (chaos.Fault, error), hold time.Duration, during func(context.Context) error) error {
	f, err := build(r.Chaos(), ctx)
	if err != nil {
		return err
	}
	r.Phase(fmt.Sprintf("fault %s: %s", f.Ref(), f.What))
	r.mu.Lock()
	r.cutOff = max(r.cutOff, f.CutOff)
	r.mu.Unlock()
	in := &chaos.Injector{Client: r.Suite.Client, Recorder: r}
	res, err := in.Inject(ctx, f, hold, during)
	var targets []string
	for id, phase := range res.Records {
		targets = append(targets, id+"="+phase)
	}
	sort.Strings(targets)
	targets = append(targets, res.Spawned...)
	r.T.Logf("%s (%s): injected into %s", f.Ref(), f.What, strings.Join(targets, ", "))
	return err
}

// requireChaosMesh fails with what to do when Chaos Mesh's CRDs are not installed.
func (r *Run) requireChaosMesh(ctx context.Context) error {
	var l cm.PodChaosList
	if err := r.Suite.Client.List(ctx, &l, client.InNamespace(r.Namespace)); err != nil {
		if meta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for kind") {
			return fmt.Errorf("Chaos Mesh is not installed on this cluster: install it (make chaos-mesh, or --install-chaos-mesh) or leave out the chaos scenarios (--labels suite=core)")
		}
		return err
	}
	return nil
}

// faultsDuring names the faults whose window overlaps [from, to] (any time when both are 0).
func faultsDuring(events []history.Event, from, to int64) []string {
	var out []string
	for _, e := range events {
		if e.Kind != "fault" {
			continue
		}
		end := e.End
		if end == 0 {
			end = e.Time
		}
		if from == 0 && to == 0 || e.Time <= to && end >= from {
			out = append(out, fmt.Sprintf("%s (%s)", e.Name, e.Text))
		}
	}
	return out
}
