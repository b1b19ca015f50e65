package conformance

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/resources"
)

// RestoredMemberWiped (issue 39, item 7): a cluster restored from a backup keeps its bootstrap
// pods, whose init containers fetch and restore the backup. When a member's volume is emptied
// and its pod's sandbox is lost, the kubelet runs those init containers again. The restore must
// not run again onto the empty volume: the member ran, so the restore leaves the volume alone,
// its launcher refuses the empty volume, and the operator replaces the member from the
// others. A restore there would bring the backup's old data back under the member's name: a
// raft panic loop, or a silent rollback.
func RestoredMemberWiped() framework.Scenario {
	var b *v1alpha1.EtcdBackup
	const restored = "restored"
	var member, oldID string
	var podUID types.UID
	var stopped time.Time
	return framework.Scenario{Name: "restored-member-wiped", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		NeedsNode: true, Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: append(backupAndRestore(&b, true), []framework.Step{
			{Name: "empty a restored follower's volume and lose its pod's sandbox (its init containers run again)", Do: func(ctx context.Context, r *framework.Run) error {
				ec := &v1alpha1.EtcdCluster{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: restored}, ec); err != nil {
					return err
				}
				for _, m := range ec.Status.Members {
					if m.Name != ec.Status.Leader {
						member, oldID = m.Name, m.ID
						break
					}
				}
				if member == "" {
					return fmt.Errorf("EtcdCluster %s has no follower in its status: %+v", restored, ec.Status.Members)
				}
				// Still a bootstrap pod of the restore, with its restore init container: the
				// case this scenario is about.
				pod := &corev1.Pod{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, pod); err != nil {
					return err
				}
				if !slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == resources.RestoreContainer }) {
					return fmt.Errorf("pod %s has no %s init container: it is not the restore's bootstrap pod", member, resources.RestoreContainer)
				}
				podUID = pod.UID
				if err := r.WipeData(ctx, member); err != nil {
					return err
				}
				r.Phase("stopping the sandbox of " + member)
				r.Event("fault", "sandbox-lost", "stopped the pod sandbox of "+member+": the kubelet runs its init containers, the backup's fetch and restore among them, again")
				// Events have whole seconds.
				stopped = time.Now().Truncate(time.Second)
				n, err := r.Suite.Node.StopSandbox(ctx, r.Namespace, member)
				if err == nil && n != 1 {
					err = fmt.Errorf("stopped %d sandboxes of %s, want 1", n, member)
				}
				return err
			}},
			{Name: "wait for the restore to run again and leave the volume alone, and for the member to be replaced", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitFor(ctx, member+"'s restore to run again and "+member+" to be replaced", 5*time.Minute, func() error {
					ran, err := restoreRanAgain(ctx, r, member, podUID, stopped)
					if err != nil {
						return err
					}
					ec := &v1alpha1.EtcdCluster{}
					if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: restored}, ec); err != nil {
						return err
					}
					for _, m := range ec.Status.Members {
						if m.ID == oldID {
							return fmt.Errorf("%s (%s) is still a member", m.Name, m.ID)
						}
					}
					if !ran {
						return fmt.Errorf("%w: %s was replaced, but no Event shows its restore container started again after its sandbox was stopped", framework.ErrStop, member)
					}
					return nil
				})
			}},
			{Name: "wait for EtcdCluster restored to settle with 3 members", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitClusterSettled(ctx, restored, 3, 5*time.Minute)
			}},
		}...)}
}

// restoreRanAgain says whether the restore init container of pod uid started at or after since
// (the kubelet's Started Event, which outlives the pod), and stops the wait at once when that
// container, in the pod as it is now, exited with an error: a restore that went ahead onto the
// emptied volume, or failed trying.
func restoreRanAgain(ctx context.Context, r *framework.Run, name string, uid types.UID, since time.Time) (bool, error) {
	pod := &corev1.Pod{}
	if err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, pod); err == nil && pod.UID == uid {
		for _, cs := range pod.Status.InitContainerStatuses {
			for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if cs.Name == resources.RestoreContainer && t != nil && t.ExitCode != 0 && !t.FinishedAt.Time.Before(since) {
					return false, fmt.Errorf("%w: the %s container of %s exited with code %d after its sandbox was lost: %s", framework.ErrStop, cs.Name, name, t.ExitCode, t.Message)
				}
			}
		}
	}
	var events corev1.EventList
	if err := r.Suite.Client.List(ctx, &events, client.InNamespace(r.Namespace)); err != nil {
		return false, err
	}
	field := "spec.initContainers{" + resources.RestoreContainer + "}"
	for _, e := range events.Items {
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if e.InvolvedObject.UID == uid && e.InvolvedObject.FieldPath == field && e.Reason == "Started" && !at.Before(since) {
			return true, nil
		}
	}
	return false, nil
}
