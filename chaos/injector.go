package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cm "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recorder puts faults on the run's timeline: Fault records the start and returns the
// function that records the end.
type Recorder interface {
	Fault(name, text string) func()
}

// Injector runs faults through Chaos Mesh.
type Injector struct {
	Client   client.Client
	Recorder Recorder
	// Timeout bounds each wait for Chaos Mesh (injection, recovery); 2 minutes when zero.
	Timeout time.Duration
	// Poll is the status polling interval; 250ms when zero.
	Poll time.Duration
}

// Injected is what Chaos Mesh reported about an injection.
type Injected struct {
	// Records are the per-target records of the experiment ("ns/pod/container": phase).
	Records map[string]string
	// Spawned names the objects a Schedule created while it ran.
	Spawned []string
}

func (in *Injector) timeout() time.Duration {
	if in.Timeout > 0 {
		return in.Timeout
	}
	return 2 * time.Minute
}

func (in *Injector) poll() time.Duration {
	if in.Poll > 0 {
		return in.Poll
	}
	return 250 * time.Millisecond
}

// Inject creates the fault's object, waits until Chaos Mesh reports it injected (AllInjected,
// or for a Schedule its first run injected), then runs during (if any) or holds the fault for
// hold, deletes the object and waits until Chaos Mesh has recovered every target and removed
// it. The timeline window spans creation to confirmed removal. An error names the object, so a
// failure can be traced to the fault that was active.
func (in *Injector) Inject(ctx context.Context, f Fault, hold time.Duration, during func(context.Context) error) (Injected, error) {
	end := in.Recorder.Fault(f.Ref(), f.What)
	defer end()
	if err := in.Client.Create(ctx, f.Object); err != nil {
		return Injected{}, fmt.Errorf("creating %s (%s): %w", f.Ref(), f.What, err)
	}
	res, injErr := in.waitInjected(ctx, f)
	var duringErr error
	if injErr == nil {
		if during != nil {
			duringErr = during(ctx)
		} else {
			select {
			case <-ctx.Done():
			case <-time.After(hold):
			}
		}
	}
	// Always remove the fault, also when it did not take: a half-applied fault must not outlive
	// the scenario.
	recErr := in.remove(context.WithoutCancel(ctx), f)
	if injErr != nil {
		var refused *injectionError
		if recErr != nil && errors.As(injErr, &refused) {
			// A fault that may still be half applied is not to be built again beside it.
			refused.gone = false
		}
		return res, errors.Join(injErr, recErr)
	}
	if duringErr != nil {
		return res, errors.Join(fmt.Errorf("while %s was active: %w", f.Ref(), duringErr), recErr)
	}
	return res, recErr
}

func (in *Injector) waitInjected(ctx context.Context, f Fault) (Injected, error) {
	var res Injected
	var last string
	err := wait.PollUntilContextTimeout(ctx, in.poll(), in.timeout(), true, func(ctx context.Context) (bool, error) {
		obj := f.Object
		if err := in.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		if s, ok := obj.(*cm.Schedule); ok {
			return in.scheduleInjected(ctx, s, &res, &last)
		}
		so, ok := obj.(cm.StatefulObject)
		if !ok {
			return false, fmt.Errorf("%s is not a Chaos Mesh experiment", f.Ref())
		}
		st := so.GetStatus()
		res.Records = records(st)
		if failed := failedRecords(st); len(failed) > 0 {
			return false, &injectionError{msg: "Chaos Mesh could not inject it: " + failed[0].String(), gone: in.allGone(ctx, failed, obj.GetCreationTimestamp())}
		}
		last = conditions(st)
		return condition(st, cm.ConditionAllInjected), nil
	})
	var refused *injectionError
	switch {
	case errors.As(err, &refused):
		return res, fmt.Errorf("%s (%s): %w", f.Ref(), f.What, err)
	case err != nil:
		return res, fmt.Errorf("%s (%s) was not injected within %s (last seen: %s): %w", f.Ref(), f.What, in.timeout(), last, err)
	}
	return res, nil
}

// injectionError: Chaos Mesh tried and failed, repeatedly; waiting longer will not help.
type injectionError struct {
	msg string
	// gone: each failure said that a target pod does not exist or does not run, or the pod,
	// read when the injection was given up, was gone or replaced (Injector.replaced).
	gone bool
}

func (e *injectionError) Error() string { return e.msg }

// TargetGone reports whether err is an injection that failed because a target pod no longer
// existed, did not run, was being deleted or had been created again (an operation under way
// was replacing it), and was removed: the fault built again, with its targets chosen anew,
// may take.
func TargetGone(err error) bool {
	var e *injectionError
	return errors.As(err, &e) && e.gone
}

// scheduleInjected is true once the schedule has spawned an experiment that is injected.
func (in *Injector) scheduleInjected(ctx context.Context, s *cm.Schedule, res *Injected, last *string) (bool, error) {
	spawned, err := in.spawned(ctx, s)
	if err != nil {
		*last = err.Error()
		return false, nil
	}
	res.Spawned = nil
	for _, p := range spawned {
		res.Spawned = append(res.Spawned, "PodChaos/"+p.Name)
		if condition(&p.Status.ChaosStatus, cm.ConditionAllInjected) {
			return true, nil
		}
	}
	*last = fmt.Sprintf("schedule spawned %d experiments, none injected yet", len(spawned))
	return false, nil
}

// spawned lists the PodChaos objects a schedule created (it owns them).
func (in *Injector) spawned(ctx context.Context, s *cm.Schedule) ([]cm.PodChaos, error) {
	var list cm.PodChaosList
	if err := in.Client.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
		return nil, err
	}
	var out []cm.PodChaos
	for _, p := range list.Items {
		if metav1.IsControlledBy(&p, s) {
			out = append(out, p)
		}
	}
	return out, nil
}

// remove deletes the fault's object and waits until Chaos Mesh has recovered its targets and
// dropped its finalizer (the object is gone), and for a Schedule until its experiments are gone.
func (in *Injector) remove(ctx context.Context, f Fault) error {
	obj := f.Object
	if err := in.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", f.Ref(), err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, in.poll(), in.timeout(), true, func(ctx context.Context) (bool, error) {
		err := in.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if err == nil {
			if so, ok := obj.(cm.StatefulObject); ok {
				last = conditions(so.GetStatus())
			}
			return false, nil
		}
		if !apierrors.IsNotFound(err) {
			last = err.Error()
			return false, nil
		}
		if s, ok := obj.(*cm.Schedule); ok {
			left, err := in.spawned(ctx, s)
			if err != nil || len(left) > 0 {
				last = fmt.Sprintf("%d spawned experiments left", len(left))
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s was not recovered and removed within %s (last seen: %s): %w", f.Ref(), in.timeout(), last, err)
	}
	return nil
}

func condition(st *cm.ChaosStatus, t cm.ChaosConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func conditions(st *cm.ChaosStatus) string {
	s := ""
	for _, c := range st.Conditions {
		s += fmt.Sprintf("%s=%s ", c.Type, c.Status)
	}
	return s
}

func records(st *cm.ChaosStatus) map[string]string {
	out := map[string]string{}
	for _, r := range st.Experiment.Records {
		out[r.Id] = string(r.Phase)
	}
	return out
}

// targetDown reports whether msg says that the pod of record id (namespace/pod[/container])
// does not exist, as the API server says it (pods "<name>" not found; Chaos Mesh writes
// Pod "<name>" not found), or that it does not run (Chaos Mesh: pod not running): the pod is
// being replaced.
func targetDown(id, msg string) bool {
	parts := strings.Split(id, "/")
	if len(parts) < 2 {
		return false
	}
	msg = strings.ToLower(msg)
	return strings.Contains(msg, fmt.Sprintf("pod %q not found", parts[1])) || strings.Contains(msg, fmt.Sprintf("pods %q not found", parts[1])) ||
		msg == "pod not running"
}

// replaced reports whether the pod of record id (namespace/pod[/container]) does not exist, is
// being deleted, does not run, or was created after since (when the fault's object was): the
// operation under way replaced it while Chaos Mesh tried, whatever Chaos Mesh's message says
// ("unable to set ip tables chains for pod etcd-4", for a pod a roll had just deleted). An
// error reading the pod says nothing: false.
func (in *Injector) replaced(ctx context.Context, id string, since metav1.Time) bool {
	parts := strings.Split(id, "/")
	if len(parts) < 2 {
		return false
	}
	var p corev1.Pod
	err := in.Client.Get(ctx, client.ObjectKey{Namespace: parts[0], Name: parts[1]}, &p)
	if err != nil {
		return apierrors.IsNotFound(err)
	}
	return p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !since.IsZero() && since.Before(&p.CreationTimestamp)
}

// allGone: every target that keeps failing was gone or replaced (its failures say so, or its
// pod does: replaced, since the fault's creation). One failing for another reason is not to
// be hidden by a retarget.
func (in *Injector) allGone(ctx context.Context, failed []failedInjection, since metav1.Time) bool {
	for _, f := range failed {
		if !f.down && !in.replaced(ctx, f.id, since) {
			return false
		}
	}
	return true
}

// failedInjection is a target Chaos Mesh failed to inject into, repeatedly.
type failedInjection struct {
	// id is the record's namespace/pod[/container], msg the latest failure's message.
	id, msg string
	failed  int
	// down: each failure said that the pod does not exist or does not run (targetDown).
	down bool
}

func (f failedInjection) String() string {
	return fmt.Sprintf("%s: %s (failed %d times)", f.id, f.msg, f.failed)
}

// failedRecords are the targets whose injection keeps failing: Chaos Mesh retries, so a target
// counts once it failed 5 times without being injected.
func failedRecords(st *cm.ChaosStatus) []failedInjection {
	var out []failedInjection
	for _, r := range st.Experiment.Records {
		if r.InjectedCount > 0 || len(r.Events) == 0 {
			continue
		}
		f := failedInjection{id: r.Id, down: true}
		for _, e := range r.Events {
			if e.Type == cm.TypeFailed && e.Operation == cm.Apply {
				f.failed++
				f.msg = e.Message
				f.down = f.down && targetDown(r.Id, e.Message)
			}
		}
		if f.failed >= 5 {
			out = append(out, f)
		}
	}
	return out
}
