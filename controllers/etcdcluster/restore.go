package etcdcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/version"
)

// restoreSource resolves spec.bootstrap.fromBackup: a named EtcdBackup must have Completed.
func (r *Reconciler) restoreSource(ctx context.Context, c *v1alpha1.EtcdCluster) (*resources.Restore, error) {
	src := c.Spec.Bootstrap.FromBackup
	if src.BackupName == "" {
		if src.Storage == nil {
			return nil, fmt.Errorf("spec.bootstrap.fromBackup names neither a backupName nor a storage: name the EtcdBackup to restore, or its storage and key")
		}
		if err := r.StoragePolicy.Check(*src.Storage); err != nil {
			return nil, fmt.Errorf("spec.bootstrap.fromBackup.storage: %w; the cluster starts once the storage is allowed", err)
		}
		if err := r.StoragePolicy.CheckRestoreKey(c.Namespace, src.Key); err != nil {
			return nil, fmt.Errorf("spec.bootstrap.fromBackup.key: %w: nothing is started; spec.bootstrap cannot change, so delete this EtcdCluster and create it from a snapshot of this namespace", err)
		}
		out := &resources.Restore{Bucket: src.Storage.BucketURL, Key: src.Key, SHA256: src.SHA256, CredentialsSecret: src.Storage.CredentialsSecret, CABundle: src.Storage.CABundle, Identity: src.Storage.Identity}
		return out, errors.Join(r.pointInTime(c, out, ""), bumpRevision(c, out))
	}
	b := &v1alpha1.EtcdBackup{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: src.BackupName}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("spec.bootstrap.fromBackup names EtcdBackup %s, which does not exist in %s; the cluster starts once it does and has completed", src.BackupName, c.Namespace)
		}
		return nil, err
	}
	if b.Status.Phase != v1alpha1.BackupCompleted {
		return nil, fmt.Errorf("EtcdBackup %s is %s, not Completed; the cluster starts once it has completed", b.Name, cmp.Or(b.Status.Phase, v1alpha1.BackupPending))
	}
	if err := r.StoragePolicy.Check(b.Spec.Storage); err != nil {
		return nil, fmt.Errorf("EtcdBackup %s's storage: %w; the cluster starts once the storage is allowed", b.Name, err)
	}
	// The key comes from the backup pod's result: read only this namespace's snapshots.
	if err := r.StoragePolicy.CheckRestoreKey(c.Namespace, b.Status.Key); err != nil {
		return nil, fmt.Errorf("EtcdBackup %s's status.key: %w: nothing is started; spec.bootstrap cannot change, so delete this EtcdCluster and create it from another backup", b.Name, err)
	}
	out := &resources.Restore{Bucket: b.Spec.Storage.BucketURL, Key: b.Status.Key, SHA256: b.Status.SHA256, CredentialsSecret: b.Spec.Storage.CredentialsSecret, CABundle: b.Spec.Storage.CABundle, Identity: b.Spec.Storage.Identity}
	var scheduled string
	if c.Spec.Bootstrap.FromBackup.PointInTime != nil && c.Spec.Bootstrap.FromBackup.PointInTime.ArchivePrefix == "" {
		var err error
		if scheduled, err = r.backupArchive(ctx, b); err != nil {
			return nil, err
		}
	}
	if err := r.pointInTime(c, out, scheduled); err != nil {
		return nil, err
	}
	return out, bumpRevision(c, out)
}

// bumpRevisionSince is the first etcd whose etcdutl restores with --bump-revision.
var bumpRevisionSince = version.Version{Major: 3, Minor: 5, Patch: 10}

// bumpRevision adds spec.bootstrap.fromBackup.bumpRevision to a restore, for an etcd whose
// etcdutl has the flag.
func bumpRevision(c *v1alpha1.EtcdCluster, out *resources.Restore) error {
	bump := c.Spec.Bootstrap.FromBackup.BumpRevision
	if bump == 0 {
		return nil
	}
	if v, err := version.Parse(c.Spec.Version); err == nil && v.Less(bumpRevisionSince) {
		return fmt.Errorf("spec.bootstrap.fromBackup.bumpRevision needs etcd %s or later (its etcdutl's --bump-revision), and spec.version is %s: nothing is started; delete this EtcdCluster and create it at a later version, or without bumpRevision", bumpRevisionSince, c.Spec.Version)
	}
	out.BumpRevision = bump
	return nil
}

// backupArchive is the archive a restore of b to a point replays by default: that of the
// schedule that took b, or else of the one schedule of b's cluster that archives to the same
// bucket ("" when there is none).
func (r *Reconciler) backupArchive(ctx context.Context, b *v1alpha1.EtcdBackup) (string, error) {
	if sched := b.Labels[names.LabelSchedule]; sched != "" {
		return resources.ArchivePrefixOf(b.Spec.Storage.Prefix, b.Namespace, b.Spec.ClusterName, sched), nil
	}
	var list v1alpha1.EtcdBackupScheduleList
	if err := r.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return "", err
	}
	var found []string
	var prefix string
	for i := range list.Items {
		s := &list.Items[i]
		if s.Spec.ClusterName == b.Spec.ClusterName && s.Spec.Archive != nil && s.Spec.Archive.Enabled && s.Spec.Storage.BucketURL == b.Spec.Storage.BucketURL {
			found = append(found, s.Name)
			prefix = resources.ArchivePrefix(s)
		}
	}
	if len(found) <= 1 {
		return prefix, nil
	}
	return "", fmt.Errorf("EtcdBackup %s was taken by hand, and EtcdBackupSchedules %s all archive cluster %s: nothing is started; delete this EtcdCluster and create it naming the archive (pointInTime.archivePrefix)", b.Name, strings.Join(found, ", "), b.Spec.ClusterName)
}

// pointInTime adds spec.bootstrap.fromBackup.pointInTime to a restore: its target, and its
// archive (the one named, or the one of the schedule that took the backup: scheduled).
func (r *Reconciler) pointInTime(c *v1alpha1.EtcdCluster, out *resources.Restore, scheduled string) error {
	pit := c.Spec.Bootstrap.FromBackup.PointInTime
	if pit == nil {
		return nil
	}
	out.ArchivePrefix = cmp.Or(pit.ArchivePrefix, scheduled)
	if out.ArchivePrefix == "" {
		return fmt.Errorf("spec.bootstrap.fromBackup.pointInTime names no archivePrefix, and no EtcdBackupSchedule archives the backup's cluster to its bucket: nothing is started; delete this EtcdCluster and create it with the archive's prefix (an EtcdBackupSchedule's status.archive.location)")
	}
	if err := r.StoragePolicy.CheckArchivePrefix(c.Namespace, out.ArchivePrefix); err != nil {
		return fmt.Errorf("spec.bootstrap.fromBackup.pointInTime.archivePrefix: %w: nothing is started", err)
	}
	out.ToRevision = pit.Revision
	if pit.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, pit.Time)
		if err != nil {
			return fmt.Errorf("spec.bootstrap.fromBackup.pointInTime.time %q is not an RFC 3339 time (such as 2026-11-29T10:00:00.25Z): nothing is started", pit.Time)
		}
		out.ToTime = t
	}
	return nil
}
