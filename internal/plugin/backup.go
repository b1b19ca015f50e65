package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// BackupOptions says where a backup goes: a bucket (To, with Prefix and CredentialsSecret),
// or, without To, where the cluster's EtcdBackupSchedule stores its backups.
type BackupOptions struct {
	To, Prefix, CredentialsSecret string
	Timeout                       time.Duration
}

// backupStorage picks the storage of a backup: the one given, or the schedule's of the
// cluster (the first by name when it has several).
func backupStorage(cluster string, o BackupOptions, schedules []v1alpha1.EtcdBackupSchedule) (v1alpha1.BackupStorage, string, error) {
	if o.To != "" {
		return v1alpha1.BackupStorage{BucketURL: o.To, Prefix: o.Prefix, CredentialsSecret: o.CredentialsSecret}, "", nil
	}
	var mine []v1alpha1.EtcdBackupSchedule
	for _, s := range schedules {
		if s.Spec.ClusterName == cluster {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return v1alpha1.BackupStorage{}, "", fmt.Errorf("cluster %s has no EtcdBackupSchedule to take the storage from: name a bucket with --to (and --credentials-secret)", cluster)
	}
	slices.SortFunc(mine, func(a, b v1alpha1.EtcdBackupSchedule) int { return strings.Compare(a.Name, b.Name) })
	return mine[0].Spec.Storage, mine[0].Name, nil
}

// newBackup is the EtcdBackup the backup command creates.
func newBackup(namespace, cluster string, storage v1alpha1.BackupStorage) *v1alpha1.EtcdBackup {
	return &v1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: cluster + "-"},
		Spec:       v1alpha1.EtcdBackupSpec{ClusterName: cluster, Storage: storage},
	}
}

// backupState says whether a backup finished, and how.
func backupState(b *v1alpha1.EtcdBackup) (done bool, progress string, err error) {
	switch b.Status.Phase {
	case v1alpha1.BackupCompleted:
		return true, fmt.Sprintf("Completed: revision %d, %d keys, %d bytes, sha256 %s, at %s", b.Status.Revision, b.Status.Keys, b.Status.Size, b.Status.SHA256, b.Status.Location), nil
	case v1alpha1.BackupFailed:
		msg := "no reason recorded"
		if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete); c != nil {
			msg = c.Reason + ": " + c.Message
		}
		return true, "", fmt.Errorf("backup %s failed: %s", b.Name, msg)
	}
	phase := b.Status.Phase
	if phase == "" {
		phase = v1alpha1.BackupPending
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete); c != nil {
		return false, fmt.Sprintf("%s (%s: %s)", phase, c.Reason, c.Message), nil
	}
	return false, phase, nil
}

// Backup creates an EtcdBackup of the cluster and waits until it is stored and verified.
func (e *Env) Backup(ctx context.Context, cluster string, o BackupOptions) error {
	if _, err := e.cluster(ctx, cluster); err != nil {
		return err
	}
	var schedules v1alpha1.EtcdBackupScheduleList
	if o.To == "" {
		if err := e.Client.List(ctx, &schedules, client.InNamespace(e.Namespace)); err != nil {
			return fmt.Errorf("listing EtcdBackupSchedules for the storage: %w", err)
		}
	}
	storage, from, err := backupStorage(cluster, o, schedules.Items)
	if err != nil {
		return err
	}
	b := newBackup(e.Namespace, cluster, storage)
	if err := e.Client.Create(ctx, b); err != nil {
		return fmt.Errorf("creating an EtcdBackup of %s: %w", cluster, err)
	}
	where := storage.BucketURL
	if from != "" {
		where += " (the storage of EtcdBackupSchedule " + from + ")"
	}
	fmt.Fprintf(e.Err, "created EtcdBackup %s/%s into %s\n", e.Namespace, b.Name, where)
	var msg string
	err = e.waitFor(ctx, o.Timeout, "backup "+b.Name, func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, "", err
		}
		done, progress, err := backupState(b)
		msg = progress
		return done, progress, err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "backup %s: %s\n", b.Name, msg)
	return nil
}

// RestoreOptions: the new cluster's name and what differs from the backed-up cluster.
type RestoreOptions struct {
	Into, Version, StorageSize string
	Replicas                   int32
	// ToRevision: the revision the user means to restore to (0: the backup's, whatever it
	// is). Backups are snapshots: only a revision a completed backup holds can be reached.
	ToRevision int64
	Timeout    time.Duration
}

// restoredCluster is the EtcdCluster restore creates: the backed-up cluster's settings (when
// it still exists), bootstrapped from the backup. Its certificates are new ones the
// operator generates; users, token fields and bootstrap settings are not copied.
func restoredCluster(b *v1alpha1.EtcdBackup, src *v1alpha1.EtcdCluster, o RestoreOptions) (*v1alpha1.EtcdCluster, error) {
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: o.Into}}
	if src != nil {
		c.Spec.Replicas = src.Spec.Replicas
		c.Spec.Version = src.Spec.Version
		c.Spec.Image = src.Spec.Image
		c.Spec.Storage = src.Spec.Storage
		c.Spec.Etcd = src.Spec.Etcd
		c.Spec.PodTemplate = src.Spec.PodTemplate.DeepCopy()
		c.Spec.Maintenance = *src.Spec.Maintenance.DeepCopy()
		// Requests made of the source cluster are not the new cluster's.
		c.Spec.Maintenance.DefragNow, c.Spec.Maintenance.MoveLeader = "", nil
		c.Spec.VolumeRetention = src.Spec.VolumeRetention
		if !src.Spec.TLS.IsEnabled() {
			c.Spec.TLS.Enabled = src.Spec.TLS.Enabled
		}
	}
	if o.Version != "" {
		c.Spec.Version, c.Spec.Image = o.Version, ""
	}
	if c.Spec.Version == "" {
		c.Spec.Version = strings.TrimPrefix(b.Status.EtcdVersion, "v")
	}
	if o.Replicas != 0 {
		c.Spec.Replicas = o.Replicas
	}
	if o.StorageSize != "" {
		q, err := resource.ParseQuantity(o.StorageSize)
		if err != nil {
			return nil, fmt.Errorf("--storage-size %q: %w", o.StorageSize, err)
		}
		c.Spec.Storage.Size = q
	}
	if c.Spec.Storage.Size.IsZero() {
		return nil, fmt.Errorf("cluster %s, which backup %s was taken of, is gone: give the new cluster's volume size with --storage-size", b.Spec.ClusterName, b.Name)
	}
	if c.Spec.Version == "" {
		return nil, fmt.Errorf("backup %s records no etcd version: give one with --version", b.Name)
	}
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: b.Name}}
	return c, nil
}

// restoreState says whether the restored cluster is Available, or why not yet.
func restoreState(c *v1alpha1.EtcdCluster) (bool, string) {
	if a := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionAvailable); a != nil && a.Status == metav1.ConditionTrue {
		return true, fmt.Sprintf("Available: %d of %d members ready, cluster ID %s", c.Status.ReadyMembers, c.Spec.Replicas, c.Status.ClusterID)
	}
	var parts []string
	for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded} {
		if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil {
			parts = append(parts, fmt.Sprintf("%s=%s %s", cond.Type, cond.Status, cond.Reason))
		}
	}
	if len(parts) == 0 {
		return false, "waiting for the operator to create the members"
	}
	return false, strings.Join(parts, ", ")
}

// Restore creates a new EtcdCluster from a Completed EtcdBackup and waits until it is
// Available. The backed-up cluster is not touched.
func (e *Env) Restore(ctx context.Context, backup string, o RestoreOptions) error {
	if o.Into == "" {
		return errors.New("restore needs --into NAME: the new EtcdCluster the backup is restored into (an existing cluster is never overwritten)")
	}
	b := &v1alpha1.EtcdBackup{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: backup}, b); err != nil {
		return fmt.Errorf("reading EtcdBackup %s/%s: %w", e.Namespace, backup, err)
	}
	if b.Status.Phase != v1alpha1.BackupCompleted {
		return fmt.Errorf("EtcdBackup %s is %s, not Completed: only a stored and verified backup can be restored", backup, orNothing(b.Status.Phase))
	}
	if o.ToRevision != 0 && o.ToRevision != b.Status.Revision {
		return e.revisionNotInBackup(ctx, b, o.ToRevision)
	}
	var src *v1alpha1.EtcdCluster
	if s, err := e.cluster(ctx, b.Spec.ClusterName); err == nil {
		src = s
	}
	c, err := restoredCluster(b, src, o)
	if err != nil {
		return err
	}
	if err := e.Client.Create(ctx, c); err != nil {
		return fmt.Errorf("creating EtcdCluster %s from backup %s: %w", o.Into, backup, err)
	}
	fmt.Fprintf(e.Err, "created EtcdCluster %s/%s from EtcdBackup %s (revision %d)\n", e.Namespace, o.Into, backup, b.Status.Revision)
	var msg string
	err = e.waitFor(ctx, o.Timeout, "restoring into "+o.Into, func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, "", err
		}
		done, progress := restoreState(c)
		msg = progress
		return done, progress, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "%s: %s\n", o.Into, msg)
	return nil
}

// revisionNotInBackup is the refusal of --to-revision r where backup b holds another revision:
// it names the backup that holds r, if one does, or else the revisions the cluster's completed
// backups hold. A backup is a snapshot of one revision; nothing between two can be reached.
func (e *Env) revisionNotInBackup(ctx context.Context, b *v1alpha1.EtcdBackup, r int64) error {
	var list v1alpha1.EtcdBackupList
	if err := e.Client.List(ctx, &list, client.InNamespace(b.Namespace)); err != nil {
		return fmt.Errorf("EtcdBackup %s holds revision %d, not %d; listing the other backups of cluster %s: %w", b.Name, b.Status.Revision, r, b.Spec.ClusterName, err)
	}
	var held []v1alpha1.EtcdBackup
	for _, o := range list.Items {
		if o.Spec.ClusterName == b.Spec.ClusterName && o.Status.Phase == v1alpha1.BackupCompleted && o.Status.Revision > 0 {
			held = append(held, o)
		}
	}
	slices.SortFunc(held, func(x, y v1alpha1.EtcdBackup) int {
		return cmp.Or(cmp.Compare(x.Status.Revision, y.Status.Revision), strings.Compare(x.Name, y.Name))
	})
	for _, o := range held {
		if o.Status.Revision == r {
			return fmt.Errorf("EtcdBackup %s holds revision %d, not %d; EtcdBackup %s holds revision %d: restore that one (kubectl quorate restore %s --into ...)", b.Name, b.Status.Revision, r, o.Name, r, o.Name)
		}
	}
	var covered []string
	for _, o := range held {
		covered = append(covered, fmt.Sprintf("%d (%s)", o.Status.Revision, o.Name))
	}
	if len(covered) == 0 {
		covered = append(covered, "none")
	}
	return fmt.Errorf("no completed backup of cluster %s holds revision %d: backups are snapshots, each of one revision, and a revision between two of them cannot be restored; the revisions held: %s",
		b.Spec.ClusterName, r, strings.Join(covered, ", "))
}
