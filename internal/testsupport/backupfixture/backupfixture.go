// Package backupfixture holds the backup storage and the backup result that the tests of the
// backup controllers and of the EtcdCluster reconciler's restores share.
package backupfixture

import (
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
)

// S3 is the bucket the tests' backups go to.
var S3 = v1alpha1.BackupStorage{BucketURL: "s3://backups?endpoint=http://s3.local:7070&region=us-east-1&use_path_style=true", Prefix: "etcd/", CredentialsSecret: "s3-keys"}

// Stored is the result of a backup Job that stored a snapshot of member at key.
func Stored(member, key string, rev int64) backup.Result {
	return backup.Result{Kind: backup.ResultStored, Member: member, Location: "s3://backups/" + key, Key: key,
		Info: &backup.Info{Keyspace: backup.Keyspace{Revision: rev, Keys: 42, Hash: "feed"}, SHA256: strings.Repeat("ab", 32), Size: 8224, Version: "3.6.16", ClusterID: "c1a55"}}
}
