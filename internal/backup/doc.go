// Package backup takes, checks, stores and fetches etcd snapshots.
//
// A snapshot is what etcd's Maintenance.Snapshot streams: the member's bbolt database, then
// the SHA-256 of the database (etcd's integrity check, which etcdutl snapshot restore checks
// again). The package
//   - saves a member's snapshot to a local file (Save) and checks its integrity (Verify);
//   - reads what the database holds at its revision (Inspect): the revision, the number of
//     keys and a hash of the keyspace (Keyspace), which the same function computes from a
//     running cluster (KeyspaceAt), so a restore can be compared with its backup;
//   - uploads the snapshot to object storage through gocloud.dev/blob (s3, gs, azblob, file
//     URLs), reads it back to verify the stored bytes before the backup counts (Store), and
//     fetches and verifies it for a restore (Fetch);
//   - applies a schedule's retention to the stored objects (Retain).
//
// The backup Job (cmd/quorate-backup) runs this with the credentials mounted from the user's
// Secret as environment variables; the operator never reads them. Its result reaches the
// operator as the Job's termination message, which Result and ParseResult define.
package backup
