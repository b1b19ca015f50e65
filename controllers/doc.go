// Package controllers holds nothing but this map of its subpackages, the operator's
// reconcilers and what they share (the RBAC markers of each live beside its code, under
// controllers/..., where make manifests reads them):
//   - etcdcluster: the EtcdCluster reconciler, one pass per cluster: observe, plan input,
//     execute, status.
//   - certificates: the clusters' certificates (issue, renew, CA rotation, application
//     users) and the memo of the Secrets they live in, behind the one interface a pass uses
//     (etcdcluster.Certificates).
//   - backup: the EtcdBackup and EtcdBackupSchedule reconcilers.
//   - ownership: the claim (a Lease) an install holds on each cluster it manages.
//   - settle: the end of a pass every reconciler shares (status patch, out-of-date views).
//   - managercache: what the manager's cache holds of each kind.
//   - statuscond: the status conditions' builder.
package controllers
