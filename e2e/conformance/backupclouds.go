package conformance

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/resources"
)

// BackupRestoreGCS is BackupRestoreCloud against Google Cloud Storage (fake-gcs-server).
func BackupRestoreGCS() framework.Scenario {
	return backupRestoreCloud("backup-restore-gcs", "gcs", framework.GCS)
}

// BackupRestoreAzure is BackupRestoreCloud against Azure Blob (Azurite, with a shared key).
func BackupRestoreAzure() framework.Scenario {
	return backupRestoreCloud("backup-restore-azure", "azure", framework.Azure)
}

// backupRestoreCloud, under load, against an emulated cloud store (--install-stores): the
// store's credentials are copied into the namespace as a user would give them; a backup to
// the store completes; a new cluster restored from its storage and key holds the keyspace the
// backup recorded; a backup to a bucket that does not exist, and one with credentials the
// store refuses (where it checks any), fail at their first request with the reason that names
// the cause, in the message blobstore writes for it.
func backupRestoreCloud(name, short string, store framework.CloudStore) framework.Scenario {
	var b *v1alpha1.EtcdBackup
	return framework.Scenario{Name: name, Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.CloudStores},
		Steps: []framework.Step{
			{Name: "use the " + store.Name + " store", Do: func(ctx context.Context, r *framework.Run) error {
				return r.UseStore(ctx, store)
			}},
			{Name: "back up to " + short + "1", Do: func(ctx context.Context, r *framework.Run) (err error) {
				r.Phase("backing up to " + store.Name)
				b, err = completedBackup(ctx, r, short+"1", store.Storage("backups"))
				return err
			}},
			{Name: "restore " + short + "1 from its storage and key into a new cluster and verify its keyspace", Do: func(ctx context.Context, r *framework.Run) error {
				st := store.Storage("backups")
				return restoreAndVerify(ctx, r, b, v1alpha1.RestoreSource{Storage: &st, Key: b.Status.Key, SHA256: b.Status.SHA256}, false)
			}},
			{Name: "backups the store refuses fail and name the cause", Do: func(ctx context.Context, r *framework.Run) error {
				return refusedCloudBackups(ctx, r, short, store)
			}},
		}}
}

// refusedCloudBackups backs up to a bucket the store does not have, and, where the store
// checks credentials, with a key it refuses: each must fail with its own reason.
func refusedCloudBackups(ctx context.Context, r *framework.Run, short string, store framework.CloudStore) error {
	r.Phase("backups " + store.Name + " refuses")
	type refusal struct {
		name    string
		storage v1alpha1.BackupStorage
		reason  string
	}
	cases := []refusal{{short + "-no-bucket", store.Storage("no-such-bucket"), v1alpha1.ReasonStoreBucketNotFound}}
	if store.WrongKeys != nil {
		wrong := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: short + "-wrong", Namespace: r.Namespace}, StringData: store.WrongKeys}
		if err := r.Suite.Client.Create(ctx, wrong); err != nil {
			return err
		}
		st := store.Storage("backups")
		st.CredentialsSecret = wrong.Name
		cases = append(cases, refusal{short + "-bad-key", st, v1alpha1.ReasonStoreCredentialsRefused})
	}
	var problems []string
	for _, c := range cases {
		b, err := r.Backup(ctx, c.name, c.storage)
		if err != nil {
			return err
		}
		got := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete)
		if b.Status.Phase != v1alpha1.BackupFailed || got == nil {
			problems = append(problems, fmt.Sprintf("EtcdBackup %s: phase %q, condition %+v; want Failed, %s", c.name, b.Status.Phase, got, c.reason))
			continue
		}
		if err := checkStoreFailure(*got, b.Generation, backup.Location{Bucket: c.storage.BucketURL, Key: resources.BackupKey(b)}, c.reason, ""); err != nil {
			problems = append(problems, fmt.Sprintf("EtcdBackup %s: %v", c.name, err))
			continue
		}
		r.Event("note", "refused", fmt.Sprintf("EtcdBackup %s: %s=%s, reason %s, blobstore's message for it", c.name, got.Type, got.Status, got.Reason))
	}
	if len(problems) > 0 {
		return fmt.Errorf("refused backups: %s", strings.Join(problems, "; "))
	}
	return nil
}
