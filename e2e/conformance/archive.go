package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
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
				before, err = startArchive(ctx, r, schedule)
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

// startArchive creates the EtcdBackupSchedule schedule of the cluster, daily, archiving to
// the S3 store, and waits until its archive holds a revision and keeps up; it returns the
// newest revision it holds.
func startArchive(ctx context.Context, r *framework.Run, schedule string) (int64, error) {
	r.Phase("archiving")
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: schedule, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster, Schedule: "@daily", Storage: r.S3Storage("backups"),
			Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
	if err := r.Suite.Client.Create(ctx, s); err != nil {
		return 0, err
	}
	return waitArchived(ctx, r, schedule, 1)
}

// waitArchived waits until the schedule's archive holds revision rev with Archiving=True, and
// returns the newest revision it holds.
func waitArchived(ctx context.Context, r *framework.Run, schedule string, rev int64) (int64, error) {
	var last int64
	err := r.WaitFor(ctx, fmt.Sprintf("the archive to hold revision %d, keeping up", rev), 3*time.Minute, func() error {
		s, c, err := archivingCondition(ctx, r, schedule)
		if err != nil {
			return err
		}
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("condition Archiving is %s: %s: %s", c.Status, c.Reason, c.Message)
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
	ranges, s, err := archiveRanges(ctx, r, schedule)
	if err != nil {
		return err
	}
	listed := struct{ Objects []string }{ranges}
	var first, last int64
	if len(listed.Objects) == 1 {
		_, _ = fmt.Sscanf(listed.Objects[0], "%d-%d", &first, &last)
	}
	if len(listed.Objects) != 1 || last < s.Status.Archive.LastRevision || len(s.Status.Archive.Ranges) != 1 || s.Status.Archive.Ranges[0] != fmt.Sprintf("%d-%d", first, s.Status.Archive.LastRevision) {
		return fmt.Errorf("the archive's segments cover revisions %v and status.archive.ranges is %v: want one range, from the same revision, reaching revision %d: a change of the cluster is missing from the archive",
			listed.Objects, s.Status.Archive.Ranges, s.Status.Archive.LastRevision)
	}
	return nil
}

// archiveRanges lists the segments of the schedule's archive of the cluster ID its
// status.archive names, in the bucket, and returns the ranges of revisions they cover, with
// the schedule.
func archiveRanges(ctx context.Context, r *framework.Run, schedule string) ([]string, *v1alpha1.EtcdBackupSchedule, error) {
	s := &v1alpha1.EtcdBackupSchedule{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedule}, s); err != nil {
		return nil, nil, err
	}
	if s.Status.Archive == nil {
		return nil, nil, fmt.Errorf("%w: the schedule has no status.archive", framework.ErrStop)
	}
	id, err := names.ParseID(s.Status.Archive.ClusterID)
	if err != nil {
		return nil, nil, fmt.Errorf("status.archive.clusterID %q: %w", s.Status.Archive.ClusterID, err)
	}
	prefix := archive.Dir(resources.ArchivePrefix(s), id) + "/"
	listed, err := r.RunS3Tool(ctx, "list-archive", []string{"list", "--segment-ranges", "--prefix=" + prefix}, "backups")
	if err != nil {
		return nil, nil, err
	}
	r.T.Logf("%s under %s cover %v; status.archive: %+v", listed.Message, prefix, listed.Objects, *s.Status.Archive)
	return listed.Objects, s, nil
}

// RestoreToAPoint (suite=backup), under load: with the cluster archived (spec.archive), a
// backup b1, then keys on two leases granted after b1, one of them revoked later, then a
// restore of b1 to a revision R after that and to a time T, each on 3 members. Each restored
// cluster must hold, on every member, exactly the source's keyspace at its revision (every
// key, value, create and modification revision, version and lease: the kept lease's keys are
// on that lease again), as many leases as the source (the revoked lease is not granted again,
// or is revoked again), and nothing after it: the time's revision must lie between the
// source's revisions read 5 s before T and after T.
func RestoreToAPoint() framework.Scenario {
	const schedule = "pitr"
	var b1 *v1alpha1.EtcdBackup
	var target, early, late pointState
	var at time.Time
	return framework.Scenario{Name: "restore-to-a-point", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: []framework.Step{
			{Name: "use the S3 store", Do: func(ctx context.Context, r *framework.Run) error { return r.UseS3(ctx) }},
			{Name: "archive the cluster, then back it up to b1", Do: func(ctx context.Context, r *framework.Run) (err error) {
				if _, err := startArchive(ctx, r, schedule); err != nil {
					return err
				}
				b1, err = completedBackup(ctx, r, "pitr-b1", r.S3Storage("backups"))
				return err
			}},
			{Name: "after b1, put keys on two leases the workload keeps alive; once the archive holds them, revoke one", Do: func(ctx context.Context, r *framework.Run) error {
				return leasesAfterBackup(ctx, r, schedule)
			}},
			{Name: "choose a revision R and a time T after b1, and wait until the archive holds them", Do: func(ctx context.Context, r *framework.Run) (err error) {
				r.Hold(ctx, 3*time.Second)
				if target, err = sourceKeyspace(ctx, r, 0); err != nil {
					return err
				}
				if target.Leases != 1 {
					return fmt.Errorf("the source has %d leases after the second one's revocation; want 1, the lease the workload keeps alive", target.Leases)
				}
				r.Hold(ctx, 5*time.Second)
				if early, err = sourceKeyspace(ctx, r, 0); err != nil {
					return err
				}
				r.Hold(ctx, 5*time.Second)
				at = time.Now()
				if late, err = sourceKeyspace(ctx, r, 0); err != nil {
					return err
				}
				r.T.Logf("b1 at revision %d; R = %d; T = %s, between revisions %d and %d", b1.Status.Revision, target.Revision, at.UTC().Format(time.RFC3339Nano), early.Revision, late.Revision)
				_, err = waitArchived(ctx, r, schedule, late.Revision)
				return err
			}},
			{Name: "restore b1 to revision R on 3 members: each holds the source's keyspace at R, and nothing after", Do: func(ctx context.Context, r *framework.Run) error {
				s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: schedule, Namespace: r.Namespace}, Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster}}
				got, err := restoreToPoint(ctx, r, "pitr-rev", 3, b1, v1alpha1.PointInTime{Revision: target.Revision, ArchivePrefix: resources.ArchivePrefix(s)})
				if err != nil {
					return err
				}
				if got != target {
					return fmt.Errorf("the cluster restored to revision %d holds %+v; the source held %+v at that revision", target.Revision, got, target)
				}
				return nil
			}},
			{Name: "restore b1 to time T (the schedule's archive by default): the source's keyspace at a revision between those read around T", Do: func(ctx context.Context, r *framework.Run) error {
				got, err := restoreToPoint(ctx, r, "pitr-time", 3, b1, v1alpha1.PointInTime{Time: at.UTC().Format(time.RFC3339Nano)})
				if err != nil {
					return err
				}
				if got.Revision < early.Revision || got.Revision > late.Revision {
					return fmt.Errorf("the cluster restored to %s is at revision %d, outside %d (5 s before) to %d (after)", at.UTC().Format(time.RFC3339Nano), got.Revision, early.Revision, late.Revision)
				}
				want, err := sourceKeyspace(ctx, r, got.Revision)
				if err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("the cluster restored to %s holds %+v; the source held %+v at that revision", at.UTC().Format(time.RFC3339Nano), got, want)
				}
				return nil
			}},
		}}
}

// leasesAfterBackup has the workload put 3 keys on a lease it keeps alive and 2 on another,
// then revoke the second once the archive of schedule holds its keys: the archiver has asked
// for the lease's TTL by then, so a replay grants it again, attaches its keys, deletes them
// and revokes the lease, empty at the target.
func leasesAfterBackup(ctx context.Context, r *framework.Run, schedule string) error {
	if _, err := r.Lease(ctx, 3600, 3); err != nil {
		return err
	}
	gone, err := r.Lease(ctx, 3600, 2)
	if err != nil {
		return err
	}
	if _, err := waitArchived(ctx, r, schedule, gone.Revision); err != nil {
		return err
	}
	_, err = r.Revoke(ctx, gone.ID)
	return err
}

// pointState is a cluster's keyspace at a revision, with how many leases it has when read (a
// lease is not versioned: in a restore, once the source's leases change no more).
type pointState struct {
	backup.Keyspace
	Leases int64
}

// sourceKeyspace is the source cluster's keyspace at rev (0: its newest).
func sourceKeyspace(ctx context.Context, r *framework.Run, rev int64) (pointState, error) {
	return keyspaceOf(ctx, r, r.Cluster, names.Member(r.Cluster, 0), rev)
}

// keyspaceOf reads, with quorate-backup keyspace in a Job, the keyspace of member of cluster at
// rev (0: its newest) and its leases, over TLS with the operator's client certificate.
func keyspaceOf(ctx context.Context, r *framework.Run, cluster, member string, rev int64) (pointState, error) {
	res, err := r.RunTool(ctx, "keyspace", []string{"keyspace",
		"--endpoint=" + names.ClientURL(cluster, r.Namespace, member, true), fmt.Sprintf("--revision=%d", rev),
		"--tls-dir=/tls", "--server-name=" + names.ClientHost(cluster, r.Namespace)}, "",
		[]corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: names.OperatorSecret(cluster)}}}},
		[]corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}})
	if err != nil {
		return pointState{}, err
	}
	if res.Kind != backup.ResultKeyspace || res.Info == nil {
		return pointState{}, fmt.Errorf("reading the keyspace of %s: %s %s", member, res.Kind, res.Error)
	}
	return pointState{Keyspace: res.Info.Keyspace, Leases: res.Leases}, nil
}

// restoreToPoint creates the n-member cluster name from b restored to pit, waits for it, and
// returns its keyspace now and its leases, the same on every member; the cluster is deleted after.
func restoreToPoint(ctx context.Context, r *framework.Run, name string, n int32, b *v1alpha1.EtcdBackup, pit v1alpha1.PointInTime) (pointState, error) {
	src, err := r.GetCluster(ctx)
	if err != nil {
		return pointState{}, err
	}
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: n, Version: src.Spec.Version, Storage: v1alpha1.StorageSpec{Size: resource.MustParse("256Mi")},
			VolumeRetention: "Delete", Bootstrap: &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: b.Name, PointInTime: &pit}}}}
	r.Suite.Opts.Shape.Apply(&c.Spec)
	r.Phase("restoring " + b.Name + " into " + name)
	start := time.Now()
	end := r.Fault("restore", fmt.Sprintf("EtcdCluster %s created from EtcdBackup %s to a point", name, b.Name))
	if err := r.Suite.Client.Create(ctx, c); err != nil {
		return pointState{}, err
	}
	defer func() {
		if err := r.Suite.Client.Delete(context.WithoutCancel(ctx), c); err != nil {
			r.T.Logf("deleting EtcdCluster %s: %v", name, err)
		}
	}()
	if err := r.WaitClusterSettled(ctx, name, n, 5*time.Minute); err != nil {
		return pointState{}, err
	}
	end()
	took := time.Since(start)
	var first pointState
	for i := range int(n) {
		ks, err := keyspaceOf(ctx, r, name, names.Member(name, i), 0)
		if err != nil {
			return pointState{}, err
		}
		if i == 0 {
			first = ks
		} else if ks != first {
			return pointState{}, fmt.Errorf("the members of %s differ: %s holds %+v, %s holds %+v", name, names.Member(name, 0), first, names.Member(name, i), ks)
		}
	}
	r.Event("note", "restore-verified", fmt.Sprintf("%s restored to revision %d in %s: %d keys, %d leases", name, first.Revision, took.Round(time.Second), first.Keys, first.Leases))
	return first, nil
}

// ArchiveRetention (suite=backup), under load: a schedule backs the archived cluster up every
// 30 s and keeps one backup. After three backups, the bucket holds one snapshot, and the
// archive's segments start at the one holding its revision: retention deleted the segments
// only the expired snapshots needed, and kept one range from the kept snapshot on. The kept
// backup, restored to the archive's newest revision, holds the source's keyspace at it.
func ArchiveRetention() framework.Scenario {
	const schedule = "chain"
	var kept *v1alpha1.EtcdBackup
	var expired int64
	return framework.Scenario{Name: "archive-retention", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: []framework.Step{
			{Name: "use the S3 store", Do: func(ctx context.Context, r *framework.Run) error { return r.UseS3(ctx) }},
			{Name: "archive the cluster and back it up every 30 s, keeping one backup, three times", Do: func(ctx context.Context, r *framework.Run) (err error) {
				kept, expired, err = scheduledChain(ctx, r, schedule)
				return err
			}},
			{Name: "the archive starts at the kept backup's revision", Do: func(ctx context.Context, r *framework.Run) error {
				ranges, _, err := archiveRanges(ctx, r, schedule)
				if err != nil {
					return err
				}
				var first, last int64
				if len(ranges) == 1 {
					_, _ = fmt.Sscanf(ranges[0], "%d-%d", &first, &last)
				}
				if len(ranges) != 1 || first > kept.Status.Revision || first <= expired || last < kept.Status.Revision {
					return fmt.Errorf("the archive's segments cover %v: want one range from the segment holding the kept backup's revision %d, after the newest expired backup's %d",
						ranges, kept.Status.Revision, expired)
				}
				r.Event("note", "archive-retention", fmt.Sprintf("the archive covers %s; kept backup %s at revision %d; expired backups up to revision %d", ranges[0], kept.Name, kept.Status.Revision, expired))
				return nil
			}},
			{Name: "restore the kept backup to the archive's newest revision: the source's keyspace at it", Do: func(ctx context.Context, r *framework.Run) error {
				newest, err := waitArchived(ctx, r, schedule, kept.Status.Revision+1)
				if err != nil {
					return err
				}
				want, err := sourceKeyspace(ctx, r, newest)
				if err != nil {
					return err
				}
				s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: schedule, Namespace: r.Namespace}, Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster}}
				got, err := restoreToPoint(ctx, r, "chain-rev", 1, kept, v1alpha1.PointInTime{Revision: newest, ArchivePrefix: resources.ArchivePrefix(s)})
				if err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("the cluster restored to revision %d holds %+v; the source held %+v at that revision", newest, got, want)
				}
				return nil
			}},
		}}
}

// scheduledChain creates the archiving schedule, waits for three of its backups, suspends it,
// and waits until one completed backup is left: it returns that one, and the newest revision
// of the backups retention expired.
func scheduledChain(ctx context.Context, r *framework.Run, schedule string) (*v1alpha1.EtcdBackup, int64, error) {
	r.Phase("scheduled backups of an archived cluster, keeping one")
	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: schedule, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: r.Cluster, Schedule: "@every 30s", Storage: r.S3Storage("backups"),
			Retention: v1alpha1.BackupRetention{MaxCount: 1}, Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
	if err := r.Suite.Client.Create(ctx, s); err != nil {
		return nil, 0, err
	}
	revisions := map[string]int64{}
	list := func() ([]v1alpha1.EtcdBackup, error) {
		var l v1alpha1.EtcdBackupList
		if err := r.Suite.Client.List(ctx, &l, client.InNamespace(r.Namespace), client.MatchingLabels{names.LabelSchedule: schedule}); err != nil {
			return nil, err
		}
		for _, b := range l.Items {
			if b.Status.Phase == v1alpha1.BackupFailed {
				return nil, fmt.Errorf("%w: scheduled EtcdBackup %s failed: %s", framework.ErrStop, b.Name, backupMessage(&b))
			}
			if b.Status.Phase == v1alpha1.BackupCompleted {
				revisions[b.Name] = b.Status.Revision
			}
		}
		return l.Items, nil
	}
	err := r.WaitFor(ctx, "three scheduled backups", 5*time.Minute, func() error {
		if _, err := list(); err != nil || len(revisions) < 3 {
			return fmt.Errorf("%d scheduled backups completed (%v)", len(revisions), err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Spec.Suspend = true
	if err := r.Suite.Client.Patch(ctx, s, patch); err != nil {
		return nil, 0, err
	}
	var kept *v1alpha1.EtcdBackup
	err = r.WaitFor(ctx, "one completed backup left, none running", 2*time.Minute, func() error {
		items, err := list()
		if err != nil {
			return err
		}
		var completed []*v1alpha1.EtcdBackup
		for i := range items {
			b := &items[i]
			if b.Status.Phase != v1alpha1.BackupCompleted {
				return fmt.Errorf("EtcdBackup %s is %q", b.Name, b.Status.Phase)
			}
			if b.DeletionTimestamp.IsZero() {
				completed = append(completed, b)
			}
		}
		if len(completed) != 1 {
			return fmt.Errorf("%d completed backups left", len(completed))
		}
		kept = completed[0]
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	var expired int64
	for name, rev := range revisions {
		if name != kept.Name {
			expired = max(expired, rev)
		}
	}
	return kept, expired, nil
}
