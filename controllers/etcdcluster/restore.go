package etcdcluster

import (
	"cmp"
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/resources"
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
		return &resources.Restore{Bucket: src.Storage.BucketURL, Key: src.Key, SHA256: src.SHA256, CredentialsSecret: src.Storage.CredentialsSecret, CABundle: src.Storage.CABundle, Identity: src.Storage.Identity}, nil
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
	return &resources.Restore{Bucket: b.Spec.Storage.BucketURL, Key: b.Status.Key, SHA256: b.Status.SHA256, CredentialsSecret: b.Spec.Storage.CredentialsSecret, CABundle: b.Spec.Storage.CABundle, Identity: b.Spec.Storage.Identity}, nil
}
