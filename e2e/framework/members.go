package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MemberPod is what says whether a member's pod was replaced or restarted.
type MemberPod struct {
	UID      types.UID
	Restarts int32
}

func (r *Run) MemberPods(ctx context.Context) (map[string]MemberPod, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, m := range ec.Status.Members {
		names = append(names, m.Name)
	}
	return r.PodsOf(ctx, names)
}

// PodsOf reads the pods of the named members: their UIDs and container restarts.
func (r *Run) PodsOf(ctx context.Context, members []string) (map[string]MemberPod, error) {
	out := map[string]MemberPod{}
	for _, m := range members {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: m}, p); err != nil {
			return nil, fmt.Errorf("pod of member %s: %w", m, err)
		}
		mp := MemberPod{UID: p.UID}
		for _, cs := range p.Status.ContainerStatuses {
			mp.Restarts += cs.RestartCount
		}
		out[m] = mp
	}
	return out, nil
}

// settledUntouched waits until the cluster settles after an operator upgrade, then compares
// the member pods with before: each must be the same pod with no new restart, unless the
// operator announced its replacement.
func (r *Run) SettledUntouched(ctx context.Context, before map[string]MemberPod) error {
	if err := r.WaitSettled(ctx, r.Scenario.Replicas, 5*time.Minute); err != nil {
		return err
	}
	problems, err := r.PodProblems(ctx, before, func(m string, b, a MemberPod, announced bool) string {
		switch {
		case a.UID != b.UID && !announced:
			return m + "'s pod was replaced without a MemberRestarting event"
		case a.Restarts != b.Restarts && !announced:
			return fmt.Sprintf("%s's containers restarted (%d -> %d restarts)", m, b.Restarts, a.Restarts)
		case a.UID != b.UID:
			r.T.Logf("%s was replaced, as the operator announced (MemberRestarting)", m)
		}
		return ""
	})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("the operator upgrade disturbed etcd members: %s", strings.Join(problems, "; "))
	}
	r.T.Logf("all %d member pods kept their UIDs and restart counts through the operator upgrade", len(before))
	return nil
}

// podProblems judges each member's pod now against before, sorted: judge gets the member's
// pods before and now, and whether the operator announced its replacement (a MemberRestarting
// event), and returns what is wrong ("" for nothing). A member that is gone is a problem.
func (r *Run) PodProblems(ctx context.Context, before map[string]MemberPod, judge func(m string, b, a MemberPod, announced bool) string) ([]string, error) {
	after, err := r.MemberPods(ctx)
	if err != nil {
		return nil, err
	}
	announced, err := r.EventsFor(ctx, v1alpha1.EventMemberRestarting)
	if err != nil {
		return nil, err
	}
	var problems []string
	for m, b := range before {
		a, ok := after[m]
		if !ok {
			problems = append(problems, m+" is no longer a member")
		} else if p := judge(m, b, a, announced[m]); p != "" {
			problems = append(problems, p)
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// eventsFor returns the members named by the operator's Events with this reason in the run's
// namespace (the operator's messages name the member as a word: "replacing the pod of NAME ...").
func (r *Run) EventsFor(ctx context.Context, reason string) (map[string]bool, error) {
	var events corev1.EventList
	if err := r.Suite.Client.List(ctx, &events, client.InNamespace(r.Namespace)); err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, e := range events.Items {
		if e.Reason != reason {
			continue
		}
		for _, w := range strings.Fields(e.Message) {
			// "replacing the pod of NAME, which is down, ...": the word without its comma.
			named[strings.TrimRight(w, ",.;:")] = true
		}
	}
	return named, nil
}
