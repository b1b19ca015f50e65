// Package blobstore stores etcd snapshots in object storage and fetches them back, through
// gocloud.dev/blob (s3, gs, azblob and file URLs):
//   - Store uploads a snapshot and reads it back to verify the stored bytes before the backup
//     counts;
//   - Fetch downloads one for a restore and verifies it;
//   - List and Retain list a schedule's snapshots and delete those its retention lets go.
//
// Only the backup Job (cmd/quorate-backup) and the test suite import it. The operator must
// not: the storage SDKs it links are most of a binary's code (TestOperatorLinksNoStorageSDK).
package blobstore
