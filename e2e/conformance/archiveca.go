package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/resources"
)

// ArchiveFollowsItsCABundle (suite=backup), under load: a schedule archives to the store over
// TLS, trusting its CA through a ConfigMap (storage.caBundle), as a user is given it. The
// ConfigMap is changed to name another authority only: the archiver's container starts again
// by itself (nothing else changed, so the operator does not replace its pod) and, trusting
// that authority alone, can no longer reach the store (Archiving turns False). The store's CA
// put back, the container starts again and the archive catches up with revisions written
// since, in one range: nothing the cluster wrote meanwhile is missing.
func ArchiveFollowsItsCABundle() framework.Scenario {
	const schedule = "tlsarch"
	var before, stalled int64
	return framework.Scenario{Name: "archive-ca-rotation", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: []framework.Step{
			useS3OverTLS,
			{Name: "archive the cluster over TLS", Do: func(ctx context.Context, r *framework.Run) (err error) {
				r.Phase("archiving over TLS")
				s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: schedule, Namespace: r.Namespace},
					Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster, Schedule: "@daily", Storage: framework.TLSStorage("backups"),
						Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
				if err := r.Suite.Client.Create(ctx, s); err != nil {
					return err
				}
				before, err = waitArchived(ctx, r, schedule, 1)
				return err
			}},
			{Name: "the CA bundle names another authority: the archiver starts again and cannot reach the store", Do: func(ctx context.Context, r *framework.Run) error {
				pod, restarts, err := archiverPod(ctx, r, schedule)
				if err != nil {
					return err
				}
				other, err := pki.NewCA("another authority", time.Now())
				if err != nil {
					return err
				}
				r.Phase("CA bundle changed to another authority")
				if err := setS3CA(ctx, r, other.CertPEM); err != nil {
					return err
				}
				if err := waitArchiverRestarted(ctx, r, schedule, pod, restarts); err != nil {
					return err
				}
				return r.WaitFor(ctx, "Archiving to turn False: the archiver trusts another authority only", 3*time.Minute, func() error {
					s := &v1alpha1.EtcdBackupSchedule{}
					if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedule}, s); err != nil {
						return err
					}
					c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionArchiving)
					if c == nil || c.Status != metav1.ConditionFalse {
						return fmt.Errorf("condition Archiving is %+v", c)
					}
					if s.Status.Archive != nil {
						stalled = s.Status.Archive.LastRevision
					}
					r.T.Logf("with another authority's bundle: Archiving=False %s: %s; status.archive.lastRevision %d", c.Reason, c.Message, stalled)
					return nil
				})
			}},
			{Name: "the store's CA put back: the archiver starts again and catches up", Do: func(ctx context.Context, r *framework.Run) error {
				pod, restarts, err := archiverPod(ctx, r, schedule)
				if err != nil {
					return err
				}
				store := &corev1.ConfigMap{}
				if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: framework.S3Namespace, Name: framework.S3CA}, store); err != nil {
					return fmt.Errorf("reading the S3 store's CA: %w", err)
				}
				r.Phase("CA bundle put back")
				if err := setS3CA(ctx, r, []byte(store.Data[framework.S3CAKey])); err != nil {
					return err
				}
				if err := waitArchiverRestarted(ctx, r, schedule, pod, restarts); err != nil {
					return err
				}
				// Revisions written well after the archive stalled must reach it.
				after, err := waitArchived(ctx, r, schedule, max(stalled, before)+500)
				r.T.Logf("archived revisions %d to %d across two CA bundle changes (stalled at %d)", before, after, stalled)
				return err
			}},
			{Name: "the bucket's segments hold every revision, with no gap", Do: func(ctx context.Context, r *framework.Run) error {
				return archiveWhole(ctx, r, schedule)
			}},
		}}
}

// archiverPod is the schedule's archiver pod and its container's restart count.
func archiverPod(ctx context.Context, r *framework.Run, schedule string) (string, int32, error) {
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(resources.ArchiverLabels(r.Cluster, schedule))); err != nil {
		return "", 0, err
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		return "", 0, fmt.Errorf("%d archiver pods of schedule %s, want 1", len(live), schedule)
	}
	for _, s := range live[0].Status.ContainerStatuses {
		if s.Name == resources.ArchiverContainer {
			return live[0].Name, s.RestartCount, nil
		}
	}
	return "", 0, fmt.Errorf("archiver pod %s has no status of container %s yet", live[0].Name, resources.ArchiverContainer)
}

// waitArchiverRestarted waits until the archiver's container in pod has started again since
// it had restarted restarts times, in the same pod: the archiver itself followed the change.
func waitArchiverRestarted(ctx context.Context, r *framework.Run, schedule, pod string, restarts int32) error {
	return r.WaitFor(ctx, fmt.Sprintf("archiver %s's container to start again by itself (restarts: %d)", pod, restarts), 4*time.Minute, func() error {
		now, n, err := archiverPod(ctx, r, schedule)
		switch {
		case err != nil:
			return err
		case now != pod:
			return fmt.Errorf("%w: the archiver's pod was replaced (%s, then %s): the change did not leave the operator's pod template alone", framework.ErrStop, pod, now)
		case n <= restarts:
			return fmt.Errorf("restarts: %d", n)
		}
		return nil
	})
}

// setS3CA replaces the data of the run's CA bundle ConfigMap (UseS3CA's).
func setS3CA(ctx context.Context, r *framework.Run, pemData []byte) error {
	c := &corev1.ConfigMap{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: framework.S3CA}, c); err != nil {
		return err
	}
	c.Data = map[string]string{framework.S3CAKey: string(pemData)}
	return r.Suite.Client.Update(ctx, c)
}
