// Package backup takes and checks etcd snapshots, and defines what the backup Job reports.
//
// A snapshot is what etcd's Maintenance.Snapshot streams: the member's bbolt database, then
// the SHA-256 of the database (etcd's integrity check, which etcdutl snapshot restore checks
// again). The package
//   - saves a member's snapshot to a local file (Save) and checks its integrity (Verify);
//   - reads what the database holds at its revision (Inspect): the revision, the number of
//     keys and a hash of the keyspace (Keyspace), which the same function computes from a
//     running cluster (KeyspaceAt), so a restore can be compared with its backup;
//   - says which stored snapshots a schedule's retention lets go (Retention), and where a
//     snapshot is (Location) and what its stored metadata records (Info).
//
// Package blobstore moves snapshots to and from object storage. It alone links the storage
// SDKs (gocloud.dev/blob: AWS, Azure, Google Cloud), so the operator, which imports this
// package for the values above, does not: they were a third of its binary's code.
//
// The backup Job (cmd/quorate-backup) runs this and blobstore with the credentials mounted from the user's
// Secret as environment variables; the operator never reads them. Its result reaches the
// operator as the Job's termination message, which Result and ParseResult define.
package backup
