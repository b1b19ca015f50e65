package conformance

import (
	"context"
	"crypto/x509"
	"errors"
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
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/resources"
)

// ArchiveFollowsItsCABundle (suite=backup), under load: a schedule archives to the store over
// TLS, trusting its CA through a ConfigMap (storage.caBundle), as a user is given it. The
// ConfigMap is changed to name another authority only: the archiver starts again in place
// (the same pod, its container not restarted, the operator replacing nothing) and, trusting
// that authority alone, cannot reach the store: Archiving turns False (ArchiveStarting) and
// says so, naming the untrusted certificate. The store's CA put back, it starts again in place
// and the archive catches up with revisions written since, in one range: nothing the cluster
// wrote meanwhile is missing.
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
			{Name: "the CA bundle names another authority: the archiver starts again in place and says the store's certificate is untrusted", Do: func(ctx context.Context, r *framework.Run) error {
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
				if err := r.WaitFor(ctx, "Archiving to say the archiver does not trust the store's certificate", 4*time.Minute, func() error {
					s, c, err := archivingCondition(ctx, r, schedule)
					if err != nil {
						return err
					}
					if err := untrustedArchive(s, c, pod); err != nil {
						return err
					}
					// What the status showed stays: an archiver that has not begun says nothing
					// of the archive.
					if s.Status.Archive == nil || s.Status.Archive.LastRevision < before {
						return fmt.Errorf("%w: status.archive is %+v, below revision %d it held before", framework.ErrStop, s.Status.Archive, before)
					}
					stalled = s.Status.Archive.LastRevision
					r.T.Logf("with another authority's bundle: Archiving=False %s: %s; status.archive.lastRevision %d", c.Reason, c.Message, stalled)
					return nil
				}); err != nil {
					return err
				}
				return sameArchiver(ctx, r, schedule, pod, restarts)
			}},
			{Name: "the store's CA put back: the archiver starts again in place and catches up", Do: func(ctx context.Context, r *framework.Run) error {
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
				// Revisions written well after the archive stalled must reach it.
				after, err := waitArchived(ctx, r, schedule, max(stalled, before)+500)
				if err != nil {
					return err
				}
				r.T.Logf("archived revisions %d to %d across two CA bundle changes (stalled at %d)", before, after, stalled)
				return sameArchiver(ctx, r, schedule, pod, restarts)
			}},
			{Name: "the bucket's segments hold every revision, with no gap", Do: func(ctx context.Context, r *framework.Run) error {
				return archiveWhole(ctx, r, schedule)
			}},
		}}
}

// archiverPods lists the pods of the schedule's archiver, terminating ones too.
func archiverPods(ctx context.Context, r *framework.Run, schedule string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(resources.ArchiverLabels(r.Cluster, schedule)))
	return pods.Items, err
}

// archiverPod is the schedule's archiver pod and its container's restart count.
func archiverPod(ctx context.Context, r *framework.Run, schedule string) (string, int32, error) {
	pods, err := archiverPods(ctx, r, schedule)
	if err != nil {
		return "", 0, err
	}
	var live []corev1.Pod
	for _, p := range pods {
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

// sameArchiver checks that the archiver still runs in pod, its container not restarted since
// it had restarted restarts times: the archiver started again in place.
func sameArchiver(ctx context.Context, r *framework.Run, schedule, pod string, restarts int32) error {
	now, n, err := archiverPod(ctx, r, schedule)
	switch {
	case err != nil:
		return err
	case now != pod:
		return fmt.Errorf("the archiver's pod was replaced (%s, then %s): a change of the CA bundle alone must not change the operator's pod template", pod, now)
	case n != restarts:
		return fmt.Errorf("the archiver's container in %s restarted (%d restarts, %d before): it must start again in place", pod, n, restarts)
	}
	return nil
}

// archivingCondition is the schedule and its Archiving condition.
func archivingCondition(ctx context.Context, r *framework.Run, schedule string) (*v1alpha1.EtcdBackupSchedule, *metav1.Condition, error) {
	s := &v1alpha1.EtcdBackupSchedule{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedule}, s); err != nil {
		return nil, nil, err
	}
	c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionArchiving)
	if c == nil {
		return nil, nil, fmt.Errorf("no Archiving condition")
	}
	return s, c, nil
}

// untrustedArchive compares the Archiving condition with the one an archiver in pod gives
// when the store's certificate is signed by an authority its bundle does not name: its first
// request to the bucket fails, as blobstore describes it, with a cause that ends in the unknown
// authority.
func untrustedArchive(s *v1alpha1.EtcdBackupSchedule, got *metav1.Condition, pod string) error {
	loc := backup.Location{Bucket: framework.TLSBucketURL("backups")}
	msg := fmt.Sprintf("the archiver's pod %s has not begun archiving: %s", pod,
		(&blobstore.Error{Op: blobstore.OpReach, Loc: loc, Reason: v1alpha1.ReasonStoreCertificateUntrusted, Err: errors.New(causeMark)}).Error())
	return matchCause(*got, metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchiveStarting,
		ObservedGeneration: s.Generation}, msg, x509.UnknownAuthorityError{}.Error())
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
