package etcdcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/expectations"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/quorum"
	"github.com/quorate-dev/quorate/internal/resources"
)

// execute performs one planned step. Every step is idempotent: names are deterministic,
// creates tolerate AlreadyExists, deletes carry UID preconditions and tolerate NotFound, and
// membership calls are re-decided from a fresh member list on the next pass.
//
// It returns when the next pass comes, and the step's share of the status (a join's or a
// recovery's record).
func (r *Reconciler) execute(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, s planner.State, a planner.Action) (requeue, statusShare, error) {
	// After a step, the next pass observes what it did.
	next := requeue{after: r.StepDelay, reason: "observing the effect of " + string(a.Kind)}
	// The one place a planned step is checked against the claim (mayAct).
	switch a.Kind {
	case planner.None, planner.Halt, planner.Wait:
	default:
		wait, err := r.mayAct(ctx, c, changesMembers(a.Kind))
		if err != nil {
			return requeue{}, statusShare{}, err
		}
		if wait > 0 {
			return requeue{after: wait, reason: "the cluster's claim is too new for " + string(a.Kind)}, statusShare{}, nil
		}
	}
	switch a.Kind {
	case planner.None, planner.Halt:
		return requeue{after: r.ResyncPeriod, reason: "resync: " + string(a.Kind)}, statusShare{}, nil
	case planner.Wait:
		if a.Reason == v1alpha1.ReasonPaused || a.Reason == v1alpha1.ReasonHibernated {
			return requeue{after: r.ResyncPeriod, reason: "resync: paused"}, statusShare{}, nil
		}
		return requeue{after: waitRetry(a.Retry), reason: "waiting: " + a.Reason}, statusShare{}, nil
	case planner.Bootstrap, planner.CreatePVC, planner.CreatePod, planner.DeletePod, planner.DeletePVC, planner.ExpandVolume:
		return next, statusShare{}, r.actOnObjects(ctx, c, o, a)
	case planner.AddLearner, planner.Promote, planner.Remove, planner.MoveLeader:
		q, err := r.actOnMembership(ctx, c, o, s, a, next)
		return q, statusShare{maintenance: maintenanceRecord(c, s, a, err)}, err
	case planner.Disarm, planner.Defragment:
		err := r.maintain(ctx, c, o, a)
		return next, statusShare{maintenance: maintenanceRecord(c, s, a, err)}, err
	case planner.AdoptVolumes:
		return next, statusShare{}, r.adoptVolumes(ctx, c, o, a)
	case planner.StartJoin:
		return next, r.startJoin(c, o, s, a), nil
	case planner.StartRecovery, planner.RecoveryPhase:
		return next, r.recordRecovery(c, a), nil
	case planner.Fence, planner.MarkRecovered:
		return next, statusShare{}, r.fence(ctx, c, o, a)
	case planner.Unpublish, planner.Publish:
		return next, statusShare{}, r.setServing(ctx, c, o, a)
	case planner.FenceMember, planner.UnfenceMember:
		return next, statusShare{}, r.userFence(ctx, c, o, a)
	case planner.AnswerMoveLeader:
		// Nothing to do in etcd: the answer is recorded in status.
		if a.Phase == v1alpha1.LeaderMoveRefused {
			r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventLeaderMoveRefused, "%s", a.Message)
		}
		return next, statusShare{maintenance: maintenanceRecord(c, s, a, nil)}, nil
	}
	return next, statusShare{}, fmt.Errorf("unknown action %q", a.Kind)
}

// changesMembers says whether a step changes etcd's membership or deletes or takes over a
// member's Pod or volume: those read the claim again right before (mayAct).
func changesMembers(k planner.Kind) bool {
	switch k {
	case planner.AddLearner, planner.Promote, planner.Remove, planner.MoveLeader,
		planner.DeletePod, planner.DeletePVC, planner.AdoptVolumes, planner.Unpublish:
		return true
	}
	return false
}

// waitRetry is when a pass that waits looks again: every 5 s, or sooner when the planner knows
// the moment its wait ends.
func waitRetry(known time.Duration) time.Duration {
	const recheck = 5 * time.Second
	if known > 0 && known < recheck {
		return known
	}
	return recheck
}

// actOnObjects creates or deletes member Pods and PVCs, recording what the cache must see.
func (r *Reconciler) actOnObjects(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, a planner.Action) error {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	switch a.Kind {
	case planner.Bootstrap:
		initial := resources.InitialCluster(c, a.Members)
		if o.restore != nil && len(o.pods) == 0 {
			r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventRestoring, "the %d bootstrap members restore %s",
				len(a.Members), backup.Location{Bucket: o.restore.Bucket, Key: o.restore.Key})
		}
		for _, m := range a.Members {
			if _, ok := o.pvcs[m]; !ok {
				if err := r.createPVC(ctx, c, key, m, len(a.Members)); err != nil {
					return err
				}
			}
			if _, ok := o.pods[m]; !ok {
				// A member restoring a backup requires data at launch: its restore either
				// wrote it, or declined because the member has run, and then the empty
				// volume is refused (DataLost) whatever the peers answer at launch.
				pod := resources.MemberPod{Member: m, Bootstrap: true, InitialCluster: initial, Restore: o.restore, RequireData: o.restore != nil}
				if err := r.createPod(ctx, c, o, key, pod); err != nil {
					return err
				}
			}
		}
	case planner.CreatePVC:
		return r.createPVC(ctx, c, key, a.Member, 0)
	case planner.CreatePod:
		return r.createPod(ctx, c, o, key, resources.MemberPod{
			Member:          a.Member,
			InitialCluster:  initialClusterFor(c, o, a.Member),
			RequireData:     a.RequireData,
			ClusterID:       c.Status.ClusterID,
			ForceNewCluster: a.ForceNewCluster,
			ForceToken:      recoveryToken(c),
			RequirePeers:    externalPeerURLs(c, o),
			StopEtcd:        a.UserFenced,
		})
	case planner.DeletePod:
		p := o.pods[a.Member]
		if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pod %s: %w", a.Member, err)
		}
		r.Expectations.ExpectDelete(key, expectations.Key{Kind: kindPod, Name: a.Member}, p.UID)
		switch a.Reason {
		case v1alpha1.ReasonRollingUpdate:
			r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventMemberRestarting, "%s", a.Message)
		case v1alpha1.ReasonPodEnded, v1alpha1.ReasonEtcdUnreachable:
			r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventPodReplaced, "%s", a.Message)
		case v1alpha1.ReasonRecovery:
			r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventRecoveryProgress, "%s", a.Message)
		}
	case planner.ExpandVolume:
		p := o.pvcs[a.Member]
		updated := p.DeepCopy()
		updated.Spec.Resources.Requests[corev1.ResourceStorage] = c.Spec.Storage.Size
		if err := r.Patch(ctx, updated, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("expanding PVC %s: %w", a.Member, err)
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventVolumeExpanded, "expanded the volume of %s to %s", a.Member, c.Spec.Storage.Size.String())
	case planner.DeletePVC:
		p := o.pvcs[a.Member]
		if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting PVC %s: %w", a.Member, err)
		}
		r.Expectations.ExpectDelete(key, expectations.Key{Kind: kindPVC, Name: a.Member}, p.UID)
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventVolumeDeleted, "deleted the volume of removed member %s", a.Member)
	}
	return nil
}

// setServing takes a member's pod out of the client Service (Unpublish: names.LabelServing
// "false", and when) or puts it back (Publish).
func (r *Reconciler) setServing(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, a planner.Action) error {
	p, ok := o.pods[a.Member]
	if !ok {
		return nil
	}
	serving, at := "true", any(nil)
	if a.Kind == planner.Unpublish {
		serving, at = "false", time.Now().UTC().Format(time.RFC3339)
	}
	if err := r.patchServing(ctx, p, serving, at); err != nil {
		if a.Kind == planner.Unpublish && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) {
			// Not a reason to stop the rollout: the member is stopped without, and the
			// launcher's stop delay is what is left to clients.
			r.drainRefused.Store(p.UID, true)
			r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventServiceDrainRefused,
				"%s was refused (%v): it is stopped without; allow the operator to set the label %s on member pods", a.Message, err, names.LabelServing)
			return nil
		}
		return fmt.Errorf("%s: %w", a.Message, err)
	}
	logf.FromContext(ctx).Info(a.Message, "member", a.Member)
	return nil
}

// patchServing sets a member pod's names.LabelServing and names.AnnotationUnpublishedAt (nil
// removes it) on the pod as it was read: the patch carries its UID, which the API server
// refuses to change, so a pod recreated under the name since is not touched (the pass fails
// and the next one reads it again). No resourceVersion: the kubelet's status updates would
// make it fail for nothing, and the patch touches only its own keys.
func (r *Reconciler) patchServing(ctx context.Context, p *corev1.Pod, serving string, unpublishedAt any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         p.UID,
		"labels":      map[string]any{names.LabelServing: serving},
		"annotations": map[string]any{names.AnnotationUnpublishedAt: unpublishedAt},
	}})
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(r.Patch(ctx, p.DeepCopy(), client.RawPatch(types.MergePatchType, patch)))
}

// fence marks the volumes of a forced recovery before the survivor is forced: each other
// member's as fenced (planner.fenceOthers: from then on no pass gives it a pod, whatever status
// says), and the survivor's with the token, which is then not acted on again.
func (r *Reconciler) fence(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, a planner.Action) error {
	p, ok := o.pvcs[a.Member]
	if !ok {
		return nil
	}
	key := names.AnnotationFenced
	if a.Kind == planner.MarkRecovered {
		key = names.AnnotationRecoveredBy
	}
	if err := r.annotate(ctx, p, map[string]string{key: a.Token}); err != nil {
		return fmt.Errorf("marking the volume of %s for the recovery: %w", a.Member, err)
	}
	if a.Kind == planner.Fence {
		r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventRecoveryProgress, "%s", a.Message)
	}
	return nil
}

// actOnMembership makes one change to etcd's membership, through the voters observed this pass.
func (r *Reconciler) actOnMembership(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, s planner.State, a planner.Action, next requeue) (requeue, error) {
	log := logf.FromContext(ctx)
	count := func(change string) { metrics.CountMembershipChange(c.Namespace, c.Name, change) }
	switch a.Kind {
	case planner.AddLearner:
		name := s.FreeName(o.memberName)
		peerURL := names.PeerURL(c.Name, c.Namespace, name, c.Spec.TLS.IsEnabled())
		m, err := o.client.AddLearner(ctx, peerURL)
		if err != nil {
			return next, err
		}
		count("add_learner")
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventMemberAdded, "added %s as learner %s (%s)", name, names.FormatID(m.ID), a.Message)
		log.Info("added learner", "member", name, "id", names.FormatID(m.ID))

	case planner.Promote:
		if err := o.client.Promote(ctx, a.ID); err != nil {
			if errors.Is(err, etcd.ErrLearnerNotReady) {
				log.V(1).Info("learner is catching up", "member", a.Member)
				return requeue{after: 2 * time.Second, reason: "the learner is catching up"}, nil
			}
			return next, err
		}
		count("promote")
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventMemberPromoted, "promoted learner %s to voter", a.Member)
		log.Info("promoted learner", "member", a.Member)

	case planner.Remove:
		if err := o.keepsQuorum(ctx, a.ID, a.Member); err != nil {
			return requeue{after: removalProbeTimeout, reason: "probing whether the removal keeps quorum"}, err
		}
		if err := o.client.Remove(ctx, a.ID); err != nil {
			return next, err
		}
		count("remove")
		eventType := corev1.EventTypeNormal
		if a.Reason == v1alpha1.ReasonMemberDataLost {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(c, eventType, v1alpha1.EventMemberRemoved, "%s", a.Message)
		log.Info("removed member", "member", a.Member, "reason", a.Message)

	case planner.MoveLeader:
		ep, ok := o.endpointOf(a.Member, a.ID)
		if !ok {
			return next, fmt.Errorf("leader %s has no address to send the leadership transfer to", a.Member)
		}
		if err := o.client.MoveLeader(ctx, ep, a.Target); err != nil {
			return next, err
		}
		count("move_leader")
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventLeaderMoved, "%s", a.Message)
		log.Info("moved leadership", "from", a.Member, "to", a.TargetName)
	}
	return next, nil
}

func (r *Reconciler) createPVC(ctx context.Context, c *v1alpha1.EtcdCluster, key types.NamespacedName, member string, bootstrapSize int) error {
	pvc := resources.PVC(c, member, bootstrapSize)
	// Who chooses its pods' user is decided once, for the volume's life (podUser).
	choice, err := r.UIDs.Choice(ctx, c.Namespace)
	if err != nil {
		return err
	}
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[names.AnnotationPodUser] = string(choice)
	if err := r.create(ctx, c, pvc, &corev1.PersistentVolumeClaim{}); err != nil {
		return err
	}
	r.Expectations.ExpectCreate(key, expectations.Key{Kind: kindPVC, Name: member})
	return nil
}

func (r *Reconciler) createPod(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, key types.NamespacedName, p resources.MemberPod) error {
	im := r.Images
	var err error
	if im.UIDs, err = r.podUser(ctx, c, o.pvcs[p.Member]); err != nil {
		return err
	}
	pod, err := resources.Pod(c, p, im)
	if err != nil {
		return err
	}
	if err := r.create(ctx, c, pod, &corev1.Pod{}); err != nil {
		return err
	}
	r.Expectations.ExpectCreate(key, expectations.Key{Kind: kindPod, Name: p.Member})
	return nil
}

// podUser is who chooses the user of a member's pods: what its PVC recorded when it was
// created, so that every pod of a volume runs as the user that wrote its files (a namespace
// that gains OpenShift's range annotation later, or an operator upgrade, changes nothing for
// it); 65532 for a PVC of an earlier release, which always ran pods so; the namespace's choice
// for a PVC this pass creates (not observed yet), as createPVC records it.
func (r *Reconciler) podUser(ctx context.Context, c *v1alpha1.EtcdCluster, pvc *corev1.PersistentVolumeClaim) (resources.UIDChoice, error) {
	if pvc == nil {
		return r.UIDs.Choice(ctx, c.Namespace)
	}
	switch choice := resources.UIDChoice(pvc.Annotations[names.AnnotationPodUser]); choice {
	case resources.UIDFixed, resources.UIDPlatform:
		return choice, nil
	}
	return resources.UIDFixed, nil
}

// create creates obj. When an object of that name exists already (the cache had not seen it
// yet, or somebody else made it), it is trusted only if c owns it.
func (r *Reconciler) create(ctx context.Context, c *v1alpha1.EtcdCluster, obj, existing client.Object) error {
	err := r.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
		return nil
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
		return fmt.Errorf("creating %T %s: it exists, but reading it failed: %w", obj, obj.GetName(), err)
	}
	if replaced, err := r.replaceLeftover(ctx, c, existing, obj); replaced {
		return err
	}
	return controlled(c, existing)
}

// maintain disarms the cluster's alarms or defragments a member.
func (r *Reconciler) maintain(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, a planner.Action) error {
	switch a.Kind {
	case planner.Disarm:
		for _, al := range o.alarms {
			if a.Reason == v1alpha1.ReasonCorrupt && al.Type != planner.AlarmCorrupt {
				continue // a consistency check disarms CORRUPT; NOSPACE is cleared on its own terms
			}
			if err := o.client.Disarm(ctx, al); err != nil {
				return err
			}
		}
		metrics.CountMembershipChange(c.Namespace, c.Name, "disarm")
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventAlarmDisarmed, "%s", a.Message)
	case planner.Defragment:
		ep, ok := o.endpoints[a.Member]
		if !ok {
			return fmt.Errorf("member %s has no address to defragment", a.Member)
		}
		if err := o.client.Defragment(ctx, ep); err != nil {
			return err
		}
		metrics.CountMembershipChange(c.Namespace, c.Name, "defragment")
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventDefragmented, "%s", a.Message)
	}
	return nil
}

// adoptVolumes makes the volumes an earlier EtcdCluster of the same name retained this one's;
// on the next pass their cluster ID is recovered from them and their members restart.
func (r *Reconciler) adoptVolumes(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation, a planner.Action) error {
	for _, name := range sortedKeys(o.retained) {
		p := o.retained[name]
		updated := p.DeepCopy()
		updated.OwnerReferences = nil
		resources.SetRetention(c, updated)
		if err := r.Patch(ctx, updated, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("adopting PVC %s: %w", name, err)
		}
	}
	r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventVolumesAdopted, "%s", a.Message)
	return nil
}

// recordRecovery writes the progress of a forced recovery into status before anything is done
// about it, so that a crash between steps resumes the same recovery.
func (r *Reconciler) recordRecovery(c *v1alpha1.EtcdCluster, a planner.Action) statusShare {
	var share statusShare
	switch a.Kind {
	case planner.StartRecovery:
		now := metav1.Now()
		share.recovery = &v1alpha1.RecoveryStatus{Token: c.Spec.Recovery.ForceNewCluster, Phase: v1alpha1.RecoveryRestarting,
			Member: a.Member, Revision: a.Revision, StartTime: &now}
		r.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventRecoveryStarted, "%s", a.Message)
	case planner.RecoveryPhase:
		if a.Phase == v1alpha1.RecoveryNotNeeded {
			share.recovery = &v1alpha1.RecoveryStatus{Token: c.Spec.Recovery.ForceNewCluster, Phase: a.Phase}
		} else if c.Status.Recovery != nil {
			share.recovery = c.Status.Recovery.DeepCopy()
			share.recovery.Phase = a.Phase
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventRecoveryProgress, "%s", a.Message)
	}
	return share
}

// initialClusterFor is --initial-cluster for a member joining or rejoining: every member in
// etcd's list (started or not, the joining one included), as `etcdctl member add` prints it.
// When etcd is unreachable the member restarts from its data, which etcd prefers over the flag.
func initialClusterFor(c *v1alpha1.EtcdCluster, o *observation, member string) string {
	var list []string
	seen := map[string]bool{}
	for _, m := range o.members {
		if len(m.PeerURLs) == 0 {
			continue
		}
		if n, ok := names.MemberFromPeerURL(c.Name, c.Namespace, m.PeerURLs[0]); ok && !seen[n] {
			list, seen[n] = append(list, n), true
		}
	}
	if !seen[member] {
		list = append(list, member)
	}
	sort.Strings(list)
	return strings.Join(append([]string{resources.InitialCluster(c, list)}, externalPeers(c, o)...), ",")
}

// removalProbeTimeout bounds the probe of each voter that stays when one is removed: a member
// that follows a leader answers in milliseconds, one cut off from it never does.
const removalProbeTimeout = 2 * time.Second

// keepsQuorum checks, right before the voter victim is removed, that a quorum of the voters
// that stay reach a leader with a quorum at this moment (etcd.Client.Reaches, in parallel).
// The pass's observation may be seconds old, and a partition since then turns a removal into
// a lost quorum: 5 voters with 2 cut off keep a quorum, 4 with the same 2 cut off do not.
// etcd's own check (--strict-reconfig-check) counts a peer as active until its connection
// times out, seconds after a partition. Removing a learner changes no quorum: no probe.
func (o *observation) keepsQuorum(ctx context.Context, victim uint64, victimName string) error {
	if mutant.On("remove-without-quorum-probe") {
		return nil
	}
	var stay []etcd.Member
	for _, m := range o.members {
		switch {
		case m.ID == victim && m.IsLearner:
			return nil
		case m.ID != victim && !m.IsLearner:
			stay = append(stay, m)
		}
	}
	errs := make([]error, len(stay))
	var wg sync.WaitGroup
	for i, m := range stay {
		ep, ok := o.endpointOf(m.Name, m.ID)
		if !ok {
			errs[i] = errors.New("no address")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = o.client.Reaches(ctx, ep, removalProbeTimeout)
		}()
	}
	wg.Wait()
	need := quorum.Of(len(stay))
	var cutOff []string
	for i, err := range errs {
		if err != nil {
			name := stay[i].Name
			if name == "" {
				name = names.FormatID(stay[i].ID)
			}
			cutOff = append(cutOff, fmt.Sprintf("%s (%v)", name, err))
		}
	}
	if len(stay)-len(cutOff) >= need {
		return nil
	}
	return &removalWaits{fmt.Sprintf("not removing member %s yet: %d of the %d voting members that would stay reach a leader with a quorum now, and removing it needs %d; without: %s. The operator probes again, in %s at first, then less often, up to every %s; a partition, a member down or a member too slow to follow its leader is the likely cause",
		victimName, len(stay)-len(cutOff), len(stay), need, strings.Join(cutOff, "; "), removalProbeTimeout, maxRemovalRetry)}
}

// removalWaits is keepsQuorum's refusal: a wait, not a failure. The pass says so in
// Progressing and Degraded (QuorumAtRisk; Degraded's change is a Warning Event), and probes
// again after removalRetry: the removal goes ahead once the voters that stay reach a
// leader again.
type removalWaits struct{ msg string }

func (e *removalWaits) Error() string { return e.msg }

// maxRemovalRetry bounds the pause between two probes of a removal that waits.
const maxRemovalRetry = 30 * time.Second

// removalRetry is the pause before the probe that follows the n-th refusal in a row (0 for
// the first): removalProbeTimeout, doubling up to maxRemovalRetry, so that a removal that
// waits for long does not keep a worker probing.
func removalRetry(n int) time.Duration {
	if n >= 5 {
		return maxRemovalRetry
	}
	return min(removalProbeTimeout<<n, maxRemovalRetry)
}

// recoveryToken is the spec.recovery.forceNewCluster token, or "".
func recoveryToken(c *v1alpha1.EtcdCluster) string {
	if c.Spec.Recovery == nil {
		return ""
	}
	return c.Spec.Recovery.ForceNewCluster
}
