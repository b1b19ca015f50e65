package framework

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// Update changes the EtcdCluster's spec with a merge patch, and records what changed.
func (r *Run) Update(ctx context.Context, what string, change func(*v1alpha1.EtcdCluster)) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ec.DeepCopy())
	change(ec)
	r.Event("action", "spec", what)
	return r.Suite.Client.Patch(ctx, ec, patch)
}

// WaitCondition waits until the EtcdCluster's condition t has the status and reason, and
// returns it.
func (r *Run) WaitCondition(ctx context.Context, t string, status metav1.ConditionStatus, reason string, timeout time.Duration) (metav1.Condition, error) {
	var got metav1.Condition
	err := r.WaitFor(ctx, fmt.Sprintf("%s=%s/%s", t, status, reason), timeout, func() error {
		c, ok, err := r.ConditionIs(ctx, t, status, reason)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s is %v", t, c)
		}
		got = *c
		return nil
	})
	return got, err
}

// ConditionIs reads the cluster's condition t (nil when it has none) and whether it has the
// status and reason.
func (r *Run) ConditionIs(ctx context.Context, t string, status metav1.ConditionStatus, reason string) (*metav1.Condition, bool, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return nil, false, err
	}
	c := meta.FindStatusCondition(ec.Status.Conditions, t)
	return c, c != nil && c.Status == status && c.Reason == reason, nil
}

// memberIDs are the etcd member IDs of the cluster's members, by name, as status lists them.
func (r *Run) memberIDs(ctx context.Context) (map[string]string, string, error) {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return nil, "", err
	}
	ids := map[string]string{}
	for _, m := range ec.Status.Members {
		ids[m.Name] = m.ID
	}
	return ids, ec.Status.ClusterID, nil
}

// ReplaceVolumes deletes the PVCs of members at once, without waiting (kubectl delete pvc
// --wait=false), while their members still run, and waits until each of them has been
// replaced by a new member on a new volume: n healthy voters, none of the old member IDs, the
// same cluster ID.
func (r *Run) ReplaceVolumes(ctx context.Context, members []string, n int32) error {
	before, clusterID, err := r.memberIDs(ctx)
	if err != nil {
		return err
	}
	r.Phase("deleting the volumes of " + strings.Join(members, ", "))
	end := r.Fault("volumes-deleted", "deleted the PVCs of "+strings.Join(members, ", ")+" at once; their pods keep them until they stop")
	defer end()
	start := time.Now()
	for _, m := range members {
		if err := r.Suite.Client.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: m}}); err != nil {
			return err
		}
	}
	err = r.WaitFor(ctx, "every member on a deleted volume to be replaced", 10*time.Minute, func() error {
		ids, cid, err := r.memberIDs(ctx)
		if err != nil {
			return err
		}
		if cid != clusterID {
			return fmt.Errorf("the cluster ID changed from %s to %s", clusterID, cid)
		}
		for _, m := range members {
			for _, id := range ids {
				if id == before[m] {
					return fmt.Errorf("%s (%s) is still a member", m, id)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.WaitSettled(ctx, n, 5*time.Minute); err != nil {
		return err
	}
	// Every member of a deleted volume came back on a new one.
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.Suite.Client.List(ctx, &pvcs, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
		return err
	}
	ids, _, err := r.memberIDs(ctx)
	if err != nil {
		return err
	}
	for _, p := range pvcs.Items {
		if _, member := ids[p.Name]; member && slices.Contains(members, p.Name) && p.CreationTimestamp.Time.Before(start.Add(-time.Second)) {
			return fmt.Errorf("member %s runs on a volume created before its old one was deleted", p.Name)
		}
	}
	r.T.Logf("replaced %v on new volumes; cluster ID %s unchanged", members, clusterID)
	return nil
}

func (r *Run) requireNode() error {
	if r.Suite.Node == nil {
		return fmt.Errorf("%s acts on the node, which only --provider=local can reach", r.Scenario.Name)
	}
	return nil
}

// WipeData empties a member's volume on the node (a node reboot that wiped a local disk, an
// empty restore), then kills its etcd container, which the kubelet restarts on the empty
// volume.
func (r *Run) WipeData(ctx context.Context, member string) error {
	if err := r.requireNode(); err != nil {
		return err
	}
	dir, err := r.volumeDir(ctx, member)
	if err != nil {
		return err
	}
	r.Phase("wiping the volume of " + member)
	r.Event("fault", "data-wiped", fmt.Sprintf("emptied %s (the volume of %s) and killed its etcd container", dir, member))
	if err := r.Suite.Node.EmptyDir(dir); err != nil {
		return err
	}
	n, err := r.Suite.Node.KillContainers(ctx, r.Namespace, []string{member}, resources.EtcdContainer)
	if err == nil && n != 1 {
		err = fmt.Errorf("killed %d etcd containers of %s, want 1", n, member)
	}
	return err
}

// volumeDir is the directory on the node that holds the volume of the PVC named pvc.
func (r *Run) volumeDir(ctx context.Context, pvc string) (string, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: pvc}, claim); err != nil {
		return "", err
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Name: claim.Spec.VolumeName}, pv); err != nil {
		return "", err
	}
	return r.Suite.Node.VolumeDir(pv)
}

// SwapData puts the etcd data of the volume of PVC from (another member's, of this cluster or
// another, in this namespace) behind member's marker, as a disk moved between machines or a
// restore by hand would: member's own data is discarded and its marker kept. from's etcd is
// paused while its data is copied (a consistent copy); member's etcd is paused while the copy
// takes its data's place (it writes nothing to either), then its container is killed and the
// kubelet starts it again on the copy.
func (r *Run) SwapData(ctx context.Context, member, from string) error {
	if err := r.requireNode(); err != nil {
		return err
	}
	src, err := r.volumeDir(ctx, from)
	if err != nil {
		return err
	}
	dst, err := r.volumeDir(ctx, member)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(resources.DataVolumeMount, resources.DataDir)
	if err != nil {
		return err
	}
	data, swapped, own := filepath.Join(dst, rel), filepath.Join(dst, rel+".swapped"), filepath.Join(dst, rel+".own")
	paused, err := r.PauseEtcd(ctx, []string{from})
	if err != nil {
		return err
	}
	err = r.Suite.Node.CopyDir(filepath.Join(src, rel), swapped)
	if _, rerr := localcluster.ResumeContainers(paused); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("copying the data of %s: %w", from, err)
	}
	if _, err := r.PauseEtcd(ctx, []string{member}); err != nil {
		return err
	}
	r.Phase("swapping the data of " + member)
	r.Event("fault", "data-swapped", fmt.Sprintf("put the etcd data of %s's volume behind %s's marker (%s) and killed its etcd container", from, member, data))
	if err := os.Rename(data, own); err != nil {
		return err
	}
	if err := os.Rename(swapped, data); err != nil {
		return err
	}
	n, err := r.Suite.Node.KillContainers(ctx, r.Namespace, []string{member}, resources.EtcdContainer)
	if err == nil && n != 1 {
		err = fmt.Errorf("killed %d etcd containers of %s, want 1", n, member)
	}
	if err != nil {
		return err
	}
	return os.RemoveAll(own)
}

// RestartEtcd kills one member's etcd container on the node (the kubelet starts it again in
// the same pod, with the arguments its launcher chooses then), waits until the container has
// restarted and the pod is Ready again, then until the cluster has n healthy members.
func (r *Run) RestartEtcd(ctx context.Context, member string, n int32) error {
	if err := r.requireNode(); err != nil {
		return err
	}
	before, err := r.MemberPods(ctx)
	if err != nil {
		return err
	}
	r.Phase("restarting the etcd container of " + member)
	r.Event("fault", "etcd-restarted", "killed the etcd container of "+member+"; the kubelet restarts it")
	k, err := r.Suite.Node.KillContainers(ctx, r.Namespace, []string{member}, resources.EtcdContainer)
	if err == nil && k != 1 {
		err = fmt.Errorf("killed %d etcd containers of %s, want 1", k, member)
	}
	if err != nil {
		return err
	}
	// The status still says settled from before the kill: wait for the restart itself first.
	err = r.WaitFor(ctx, member+"'s etcd restarted and Ready", 3*time.Minute, func() error {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: member}, p); err != nil {
			return err
		}
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		switch {
		case p.UID != before[member].UID:
			return fmt.Errorf("%w: %s's pod was replaced", ErrStop, member)
		case restarts <= before[member].Restarts:
			return fmt.Errorf("%d restarts, as before the kill", restarts)
		case !PodReady(p):
			return fmt.Errorf("restarted, not Ready%s", waitingReason(p))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return r.WaitSettled(ctx, n, 3*time.Minute)
}

// PauseEtcd stops every process of the members' etcd containers on the node (SIGSTOP), as
// a hung VM does: nothing answers, and the pods still run. Whatever is left of them when the
// run ends is continued.
func (r *Run) PauseEtcd(ctx context.Context, members []string) ([]localcluster.Paused, error) {
	if err := r.requireNode(); err != nil {
		return nil, err
	}
	r.Phase("pausing the etcd of " + strings.Join(members, ", "))
	paused, err := r.Suite.Node.PauseContainers(ctx, r.Namespace, members, resources.EtcdContainer)
	r.Defer(func() { _, _ = localcluster.ResumeContainers(paused) })
	if err != nil {
		return paused, err
	}
	pods := map[string]bool{}
	for _, p := range paused {
		pods[p.Pod] = true
	}
	if len(pods) != len(members) {
		return paused, fmt.Errorf("paused the etcd containers of %d of %d members (%v)", len(pods), len(members), members)
	}
	return paused, nil
}

// PowerLoss kills the etcd containers of every member at once; the kubelet restarts them.
func (r *Run) PowerLoss(ctx context.Context) (int, error) {
	if err := r.requireNode(); err != nil {
		return 0, err
	}
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return 0, err
	}
	var pods []string
	for _, m := range ec.Status.Members {
		pods = append(pods, m.Name)
	}
	r.Phase("power loss: every member's etcd stopped at once")
	end := r.Fault("power-loss", "killed the etcd containers of "+strings.Join(pods, ", ")+" at once")
	defer end()
	return r.Suite.Node.KillContainers(ctx, r.Namespace, pods, resources.EtcdContainer)
}

// PodUIDs are the UIDs of the member pods.
func (r *Run) PodUIDs(ctx context.Context) (map[string]types.UID, error) {
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
		return nil, err
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out, nil
}

// DeleteCluster deletes the EtcdCluster and waits until it and its member pods are gone.
func (r *Run) DeleteCluster(ctx context.Context) error {
	r.Phase("deleting the EtcdCluster")
	r.Event("action", "delete", "deleted EtcdCluster "+r.Cluster)
	ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Cluster}}
	if err := r.DeleteAndWait(ctx, ec); err != nil {
		return err
	}
	return r.WaitFor(ctx, "the member pods to be deleted", 5*time.Minute, func() error {
		uids, err := r.PodUIDs(ctx)
		if err != nil {
			return err
		}
		if len(uids) > 0 {
			return fmt.Errorf("%d member pods left", len(uids))
		}
		return nil
	})
}

// CreateCluster creates the run's EtcdCluster again from spec.
func (r *Run) CreateCluster(ctx context.Context, spec v1alpha1.EtcdClusterSpec) error {
	r.Event("action", "create", "created EtcdCluster "+r.Cluster+" again")
	ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: r.Cluster, Namespace: r.Namespace}, Spec: spec}
	return r.Suite.Client.Create(ctx, ec)
}

// DeleteMembers deletes the PVCs and pods of members (their disks are gone for good), and
// waits until the pods are gone. With the operator paused, nothing replaces them.
func (r *Run) DeleteMembers(ctx context.Context, members []string) error {
	for _, m := range members {
		if err := r.Suite.Client.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: m}}); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := r.StopMember(ctx, m); err != nil {
			return err
		}
	}
	return r.WaitFor(ctx, "the volumes to be deleted", 2*time.Minute, func() error {
		for _, m := range members {
			err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: m}, &corev1.PersistentVolumeClaim{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("PVC %s still there (%v)", m, err)
			}
		}
		return nil
	})
}

// Recover asks for a forced recovery and waits until it has completed and the cluster has n
// healthy members again. The revision it restarted from goes on the timeline as a recovery
// event, which the lost-writes checker reads.
func (r *Run) Recover(ctx context.Context, token string, n int32) (*v1alpha1.RecoveryStatus, error) {
	if err := r.RequestRecovery(ctx, token); err != nil {
		return nil, err
	}
	return r.WaitRecovered(ctx, token, n)
}

// RequestRecovery asks for a forced recovery with token.
func (r *Run) RequestRecovery(ctx context.Context, token string) error {
	r.Phase("forced recovery " + token)
	return r.Update(ctx, "spec.recovery.forceNewCluster = "+token, func(ec *v1alpha1.EtcdCluster) {
		ec.Spec.Recovery = &v1alpha1.RecoverySpec{ForceNewCluster: token}
	})
}

// WaitRecoveryPhase waits until the recovery token has reached one of phases.
func (r *Run) WaitRecoveryPhase(ctx context.Context, token string, timeout time.Duration, phases ...string) (*v1alpha1.RecoveryStatus, error) {
	var rec *v1alpha1.RecoveryStatus
	err := r.WaitFor(ctx, fmt.Sprintf("the recovery to reach %v", phases), timeout, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		rec = ec.Status.Recovery
		if rec != nil && rec.Token == token && rec.Phase == v1alpha1.RecoveryNotNeeded && !slices.Contains(phases, rec.Phase) {
			return fmt.Errorf("%w: the operator found quorum and recorded the recovery as not needed", ErrStop)
		}
		if rec == nil || rec.Token != token || !slices.Contains(phases, rec.Phase) {
			return fmt.Errorf("recovery status %+v", rec)
		}
		return nil
	})
	return rec, err
}

// WaitRecovered waits until the recovery token has completed and the cluster has n healthy
// members again. The revision it restarted from goes on the timeline as a recovery event,
// which the lost-writes checker reads.
func (r *Run) WaitRecovered(ctx context.Context, token string, n int32) (*v1alpha1.RecoveryStatus, error) {
	rec, err := r.WaitRecoveryPhase(ctx, token, 10*time.Minute, v1alpha1.RecoveryCompleted)
	if err != nil {
		return rec, err
	}
	r.Declare(history.Event{Time: rec.StartTime.UnixNano(), Kind: history.EventRecovery, Name: history.RecoveryForced,
		Text: fmt.Sprintf("restarted from %s at revision %d", rec.Member, rec.Revision), Revision: rec.Revision})
	return rec, r.WaitSettled(ctx, n, 10*time.Minute)
}

// Fill has the workload write large values outside its keys until the cluster refuses a write
// (NOSPACE once the database reaches its quota), at most mib MiB.
func (r *Run) Fill(ctx context.Context, mib int) (workload.FillResult, error) {
	r.Phase(fmt.Sprintf("filling the database (at most %d MiB)", mib))
	res, err := r.Workload().Fill(ctx, mib)
	r.Event("action", "fill", fmt.Sprintf("wrote %d bytes in %d writes; stopped by: %s", res.Bytes, res.Writes, res.Error))
	return res, err
}

// Unfill has the workload delete what Fill wrote and compact up to the deletion: the members'
// database files are left with free pages. Only before the load starts (Scenario.BeforeLoad).
func (r *Run) Unfill(ctx context.Context) (workload.UnfillResult, error) {
	r.Phase("deleting the filler and compacting")
	res, err := r.Workload().Unfill(ctx)
	r.Event("action", "unfill", fmt.Sprintf("deleted %d keys, compacted up to revision %d: %s", res.Deleted, res.Revision, res.Error))
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	return res, err
}

// ExpandStorage grows the cluster's volumes to size and waits until every member's volume is
// that large, in place: the same PVCs (by UID), the same members (by ID), the same cluster ID,
// and n members settled.
func (r *Run) ExpandStorage(ctx context.Context, size resource.Quantity, n int32) error {
	before, clusterID, err := r.memberIDs(ctx)
	if err != nil {
		return err
	}
	pvcs := func() (map[string]corev1.PersistentVolumeClaim, error) {
		var list corev1.PersistentVolumeClaimList
		if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
			return nil, err
		}
		out := map[string]corev1.PersistentVolumeClaim{}
		for _, p := range list.Items {
			if p.DeletionTimestamp.IsZero() {
				out[p.Name] = p
			}
		}
		return out, nil
	}
	volumes, err := pvcs()
	if err != nil {
		return err
	}
	r.Phase("growing every member's volume to " + size.String())
	end := r.Fault("volume-expansion", "spec.storage.size = "+size.String())
	defer end()
	if err := r.Update(ctx, "spec.storage.size = "+size.String(), func(ec *v1alpha1.EtcdCluster) { ec.Spec.Storage.Size = size }); err != nil {
		return err
	}
	err = r.WaitFor(ctx, "every member's volume grown to "+size.String()+" in place", 10*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if ec.Status.ClusterID != clusterID {
			return fmt.Errorf("the cluster ID changed from %s to %s", clusterID, ec.Status.ClusterID)
		}
		if ec.Status.Storage != nil {
			return fmt.Errorf("storage: %d members on spec, %d to move, %d to expand", ec.Status.Storage.OnSpec, ec.Status.Storage.ToMove, ec.Status.Storage.ToExpand)
		}
		now, err := pvcs()
		if err != nil {
			return err
		}
		for name, p := range now {
			if old, ok := volumes[name]; !ok || old.UID != p.UID {
				return fmt.Errorf("PVC %s is not the volume it was: a member moved instead of growing in place", name)
			}
			if got := p.Status.Capacity[corev1.ResourceStorage]; got.Cmp(size) < 0 {
				return fmt.Errorf("PVC %s holds %s", name, got.String())
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.WaitSettled(ctx, n, 5*time.Minute); err != nil {
		return err
	}
	after, _, err := r.memberIDs(ctx)
	if err != nil {
		return err
	}
	if !maps.Equal(before, after) {
		return fmt.Errorf("members %v after the expansion, %v before: a member was replaced", after, before)
	}
	r.T.Logf("every member's volume grew to %s in place; members and cluster ID %s unchanged", size.String(), clusterID)
	return nil
}

// MigrateStorage moves the cluster to another StorageClass and waits until every member runs
// on a volume of it, the cluster ID unchanged, with n healthy voters.
func (r *Run) MigrateStorage(ctx context.Context, class string, n int32) error {
	before, clusterID, err := r.memberIDs(ctx)
	if err != nil {
		return err
	}
	r.Phase("moving every member to StorageClass " + class)
	end := r.Fault("storage-migration", "spec.storage.storageClassName = "+class)
	defer end()
	if err := r.Update(ctx, "spec.storage.storageClassName = "+class, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Storage.StorageClassName = &class }); err != nil {
		return err
	}
	err = r.WaitFor(ctx, "every member on StorageClass "+class, 15*time.Minute, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if ec.Status.ClusterID != clusterID {
			return fmt.Errorf("the cluster ID changed from %s to %s", clusterID, ec.Status.ClusterID)
		}
		if ec.Status.Storage != nil {
			return fmt.Errorf("storage: %d members on spec, %d to move", ec.Status.Storage.OnSpec, ec.Status.Storage.ToMove)
		}
		var pvcs corev1.PersistentVolumeClaimList
		if err := r.Suite.Client.List(ctx, &pvcs, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
			return err
		}
		for _, p := range pvcs.Items {
			if p.DeletionTimestamp.IsZero() && (p.Spec.StorageClassName == nil || *p.Spec.StorageClassName != class) {
				return fmt.Errorf("PVC %s is of class %v", p.Name, p.Spec.StorageClassName)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.WaitSettled(ctx, n, 5*time.Minute); err != nil {
		return err
	}
	after, _, err := r.memberIDs(ctx)
	if err != nil {
		return err
	}
	for name, id := range before {
		for _, now := range after {
			if now == id {
				return fmt.Errorf("member %s (%s) did not move", name, id)
			}
		}
	}
	r.T.Logf("every member moved to %s; cluster ID %s unchanged", class, clusterID)
	return nil
}
