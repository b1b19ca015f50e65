package conformance

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// ArchiveFollowsWrites (suite=backup), under load: a schedule's continuous archive
// (spec.archive) starts, keeps up (Archiving=True: no change waits unstored longer than
// maxLag and the margin), goes on across the loss of the leader's pod, and the segments in the
// bucket hold every revision from the archive's first to its newest, with no gap: no change
// of the cluster is missing from the archive.
func ArchiveFollowsWrites() framework.Scenario {
	const schedule = "arch"
	var before int64
	return framework.Scenario{Name: "archive-follows-writes", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: []framework.Step{
			{Name: "use the S3 store", Do: func(ctx context.Context, r *framework.Run) error { return r.UseS3(ctx) }},
			{Name: "archive the cluster", Do: func(ctx context.Context, r *framework.Run) (err error) {
				r.Phase("archiving")
				s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: schedule, Namespace: r.Namespace},
					Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster, Schedule: "@daily", Storage: framework.Storage("backups"),
						Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
				if err := r.Suite.Client.Create(ctx, s); err != nil {
					return err
				}
				before, err = waitArchived(ctx, r, schedule, 1)
				return err
			}},
			{Name: "the archive goes on across the loss of the leader's pod", Do: func(ctx context.Context, r *framework.Run) error {
				leader, err := r.Leader(ctx)
				if err != nil {
					return err
				}
				if err := r.DeletePod(ctx, leader, 3); err != nil {
					return err
				}
				// Revisions written after the pod came back must reach the archive.
				after, err := waitArchived(ctx, r, schedule, before+1)
				if err != nil {
					return err
				}
				after, err = waitArchived(ctx, r, schedule, after+500)
				r.T.Logf("archived revisions %d to %d across the deletion of %s", before, after, leader)
				return err
			}},
			{Name: "the bucket's segments hold every revision, with no gap", Do: func(ctx context.Context, r *framework.Run) error {
				return archiveWhole(ctx, r, schedule)
			}},
		}}
}

// waitArchived waits until the schedule's archive holds revision rev with Archiving=True, and
// returns the newest revision it holds.
func waitArchived(ctx context.Context, r *framework.Run, schedule string, rev int64) (int64, error) {
	var last int64
	err := r.WaitFor(ctx, fmt.Sprintf("the archive to hold revision %d, keeping up", rev), 3*time.Minute, func() error {
		s := &v1alpha1.EtcdBackupSchedule{}
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedule}, s); err != nil {
			return err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionArchiving)
		if c == nil {
			return fmt.Errorf("no Archiving condition yet")
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Archiving is %s: %s: %s", c.Status, c.Reason, c.Message)
		}
		if s.Status.Archive == nil || s.Status.Archive.LastRevision < rev {
			return fmt.Errorf("status.archive is %+v", s.Status.Archive)
		}
		last = s.Status.Archive.LastRevision
		return nil
	})
	return last, err
}

// archiveWhole lists the schedule's segments of the cluster's ID in the bucket: their
// revisions must form one range, reaching the newest revision status.archive names.
func archiveWhole(ctx context.Context, r *framework.Run, schedule string) error {
	s := &v1alpha1.EtcdBackupSchedule{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedule}, s); err != nil {
		return err
	}
	if s.Status.Archive == nil {
		return fmt.Errorf("%w: the schedule has no status.archive", framework.ErrStop)
	}
	id, err := names.ParseID(s.Status.Archive.ClusterID)
	if err != nil {
		return fmt.Errorf("status.archive.clusterID %q: %w", s.Status.Archive.ClusterID, err)
	}
	prefix := archive.Dir(resources.ArchivePrefix(s), id) + "/"
	listed, err := r.RunTool(ctx, "list-archive", []string{"list", "--bucket=" + framework.BucketURL("backups"), "--prefix=" + prefix}, framework.S3Credentials, nil, nil)
	if err != nil {
		return err
	}
	var spans []archive.Span
	for _, k := range listed.Objects {
		if sp, ok := archive.ParseSegmentName(k); ok {
			spans = append(spans, sp)
		}
	}
	archive.SortSpans(spans)
	ranges := archive.Ranges(spans)
	r.T.Logf("%d segments under %s cover %v; status.archive: %+v", len(spans), prefix, archive.FormatRanges(ranges), *s.Status.Archive)
	if len(ranges) != 1 || ranges[0][1] < s.Status.Archive.LastRevision {
		return fmt.Errorf("the archive's %d segments cover revisions %v, want one range reaching revision %d: a change of the cluster is missing from the archive",
			len(spans), archive.FormatRanges(ranges), s.Status.Archive.LastRevision)
	}
	return nil
}
