package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
)

// fencePatch is the merge patch that sets the cluster's fence annotation to members (removes
// it when there are none), on the resourceVersion read: a concurrent change of the annotation
// makes it fail rather than be lost.
func fencePatch(resourceVersion string, members []string) []byte {
	var value any
	if len(members) > 0 {
		value = strings.Join(members, ",")
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion,
		"annotations":     map[string]any{names.AnnotationFenceMembers: value},
	}})
	return b
}

// fenceState says whether the operator acted on the (un)fence of member: the member's status
// says fenced (or not). A refusal that names the member is an error: the operator will not
// fence it as things are.
func fenceState(c *v1alpha1.EtcdCluster, member string, fence bool) (bool, string, error) {
	progress := "waiting for the operator to " + map[bool]string{true: "fence", false: "unfence"}[fence] + " " + member
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionMembersFenced)
	if cond != nil {
		progress = fmt.Sprintf("MembersFenced=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		if fence && cond.Reason == v1alpha1.ReasonFenceRefused && strings.Contains(cond.Message, "fencing "+member+" is refused") {
			return false, progress, fmt.Errorf("the operator refuses to fence %s: %s. The request stays in the annotation %s: withdraw it with `kubectl quorate unfence %s %s`",
				member, cond.Message, names.AnnotationFenceMembers, c.Name, member)
		}
	}
	// Fenced: the operator reports it once the member's etcd stopped; unfenced: once it answers
	// again, unless nothing starts it now (the cluster paused or hibernated) or it is gone from
	// the members (being replaced).
	idle := c.Spec.Paused || c.Spec.Hibernate
	found := false
	for _, m := range c.Status.Members {
		if m.Name != member {
			continue
		}
		found = true
		if m.Fenced == fence && (fence || m.Healthy || idle) {
			return true, progress, nil
		}
	}
	if !fence && !found {
		return true, progress, nil
	}
	return false, progress, nil
}

// SetFenced fences a member (adds it to the cluster's etcd.quorate.dev/fence-members) or
// unfences it (removes it), and waits until the operator's status says it is (un)fenced.
func (e *Env) SetFenced(ctx context.Context, name, member string, fence bool, timeout time.Duration) error {
	verb := map[bool]string{true: "fencing", false: "unfencing"}[fence]
	var c *v1alpha1.EtcdCluster
	for attempt := 0; ; attempt++ {
		var err error
		if c, err = e.cluster(ctx, name); err != nil {
			return err
		}
		if fence && !slices.ContainsFunc(c.Status.Members, func(m v1alpha1.MemberStatus) bool { return m.Name == member }) {
			var known []string
			for _, m := range c.Status.Members {
				known = append(known, m.Name)
			}
			return fmt.Errorf("%s is no member of %s (its members: %s)", member, name, strings.Join(known, ", "))
		}
		requested := planner.ParseFenceMembers(c.Annotations[names.AnnotationFenceMembers])
		if !fence && !slices.Contains(requested, member) && !slices.ContainsFunc(c.Status.Members, func(m v1alpha1.MemberStatus) bool { return m.Name == member && m.Fenced }) {
			return fmt.Errorf("%s is not fenced in %s (fenced or asked for: %s)", member, name, orNone(requested))
		}
		want := slices.DeleteFunc(slices.Clone(requested), func(n string) bool { return n == member })
		if fence {
			want = append(want, member)
		}
		if slices.Equal(want, requested) {
			break // asked for already: wait for it
		}
		err = e.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, fencePatch(c.ResourceVersion, want)))
		if err == nil {
			fmt.Fprintf(e.Err, "%s %s of %s/%s (%s=%s)\n", verb, member, e.Namespace, name, names.AnnotationFenceMembers, strings.Join(want, ","))
			break
		}
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return fmt.Errorf("%s %s of EtcdCluster %s: %w", verb, member, name, err)
		}
		// The cluster changed since it was read: read it again, keeping others' names.
	}
	if c.Spec.Paused {
		// A paused cluster is not acted on: nothing happens until it is resumed.
		fmt.Fprintf(e.Out, "%s is paused (spec.paused): the operator %s %s once it is resumed (`kubectl quorate resume %s`)\n",
			name, map[bool]string{true: "fences", false: "unfences"}[fence], member, name)
		return nil
	}
	err := e.waitFor(ctx, timeout, verb+" "+member, func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, "", err
		}
		return fenceState(c, member, fence)
	})
	if err != nil {
		return err
	}
	if fence {
		fmt.Fprintf(e.Out, "%s is fenced: its etcd is stopped, its pod stays; `kubectl quorate unfence %s %s` starts it again\n", member, name, member)
	} else {
		fmt.Fprintf(e.Out, "%s is unfenced: its etcd answers again\n", member)
	}
	return nil
}

// orNone joins names, or says none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
