package storagepolicy

import (
	"fmt"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

func TestCheck(t *testing.T) {
	p, err := Parse(" s3://backups?region=eu-west-1&endpoint=https://minio.corp:9000 , gs://etcd-snapshots", false)
	if err != nil {
		t.Fatal(err)
	}
	notAllowed := `storage.bucketURL %q is not a location the operator's storage policy allows (--allowed-storage): use one of s3://backups?region=eu-west-1&endpoint=https://minio.corp:9000, gs://etcd-snapshots, or ask the operator's administrator to allow it`
	ambient := "the storage names neither credentialsSecret nor identity.serviceAccountName, and the operator's storage policy does not let its pods use their ambient identity (--allow-ambient-storage-identity): name the credentials Secret or the service account (other than default) to reach the bucket as"
	for _, tc := range []struct {
		policy Policy
		st     v1alpha1.BackupStorage
		want   string // "" allowed; %q takes the bucket URL
	}{
		{Policy{}, v1alpha1.BackupStorage{BucketURL: "s3://anything?endpoint=http://169.254.169.254"}, ""},
		// The same options in another order.
		{p, v1alpha1.BackupStorage{BucketURL: "s3://backups?endpoint=https://minio.corp:9000&region=eu-west-1", CredentialsSecret: "keys"}, ""},
		{p, v1alpha1.BackupStorage{BucketURL: "gs://etcd-snapshots", Identity: &v1alpha1.StorageIdentity{ServiceAccountName: "gcs-writer"}}, ""},
		// An option added to an allowed URL, another bucket, another endpoint.
		{p, v1alpha1.BackupStorage{BucketURL: "gs://etcd-snapshots?endpoint=http://10.0.0.1", CredentialsSecret: "keys"}, notAllowed},
		{p, v1alpha1.BackupStorage{BucketURL: "gs://other", CredentialsSecret: "keys"}, notAllowed},
		{p, v1alpha1.BackupStorage{BucketURL: "s3://backups?region=eu-west-1&endpoint=http://169.254.169.254", CredentialsSecret: "keys"}, notAllowed},
		// Allowed, with the pods' ambient identity: refused unless the policy allows it.
		{p, v1alpha1.BackupStorage{BucketURL: "gs://etcd-snapshots", Identity: &v1alpha1.StorageIdentity{Labels: map[string]v1alpha1.LabelValue{"a": "b"}}}, ambient},
		{Policy{Allowed: p.Allowed, AllowAmbient: true}, v1alpha1.BackupStorage{BucketURL: "gs://etcd-snapshots"}, ""},
		{p, v1alpha1.BackupStorage{BucketURL: "gs://etcd-snapshots", Identity: &v1alpha1.StorageIdentity{ServiceAccountName: "default"}}, ambient},
	} {
		err := tc.policy.Check(tc.st)
		want := tc.want
		if want == notAllowed {
			want = fmtQ(notAllowed, tc.st.BucketURL)
		}
		if got := errString(err); got != want {
			t.Errorf("%+v with %+v:\n got %s\nwant %s", tc.st, tc.policy, got, want)
		}
		if _, refused := err.(*Refused); err != nil && !refused {
			t.Errorf("%+v: error %T, want *Refused", tc.st, err)
		}
	}
	if _, err := Parse("s3://user:pw@bucket", false); err == nil {
		t.Error("a URL with a user parsed")
	}
	// Options that do not parse are refused, not dropped.
	if err := p.Check(v1alpha1.BackupStorage{BucketURL: "gs://etcd-snapshots?x=1;endpoint=http://evil", CredentialsSecret: "keys"}); err == nil {
		t.Error("a URL with an unparsable option is allowed")
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func fmtQ(format, s string) string { return fmt.Sprintf(format, s) }

// Under a policy a restore reads only its namespace's snapshots, PREFIX<ns>/<cluster>/<b>.db:
// a prefix chosen to line another namespace's key up with this one's is refused too.
func TestCheckRestoreKey(t *testing.T) {
	p := Policy{Allowed: []string{"s3://backups"}}
	st := v1alpha1.BackupStorage{BucketURL: "s3://backups", CredentialsSecret: "keys", Prefix: "etcd/"}
	refused := func(key, under string) string {
		return fmt.Sprintf("key %q is not a snapshot of this namespace (%s<cluster>/<backup>.db), and under the operator's storage policy a cluster restores only its namespace's own snapshots: restore a backup made in this namespace, or ask the operator's administrator to copy the snapshot under it", key, under)
	}
	shifted := st
	shifted.Prefix = "etcd/victim/"
	for _, tc := range []struct {
		policy Policy
		st     v1alpha1.BackupStorage
		key    string
		want   string
	}{
		{p, st, "etcd/apps/demo/b1.db", ""},
		{p, st, "etcd/apps/demo/nightly-20261129-0300.db", ""},
		{p, st, "etcd/victim/demo/b1.db", refused("etcd/victim/demo/b1.db", "etcd/apps/")},
		{p, st, "apps/demo/b1.db", refused("apps/demo/b1.db", "etcd/apps/")},
		{p, st, "etcd/apps/b1.db", refused("etcd/apps/b1.db", "etcd/apps/")},
		{p, st, "etcd/apps/demo/x/b1.db", refused("etcd/apps/demo/x/b1.db", "etcd/apps/")},
		{p, st, "etcd/apps//b1.db", refused("etcd/apps//b1.db", "etcd/apps/")},
		{p, st, "etcd/apps/demo/b1", refused("etcd/apps/demo/b1", "etcd/apps/")},
		// victim's cluster named apps: etcd/victim/apps/b1.db, under the prefix etcd/victim/.
		{p, shifted, "etcd/victim/apps/b1.db", refused("etcd/victim/apps/b1.db", "etcd/victim/apps/")},
		// No policy: any key, as before policies.
		{Policy{}, st, "etcd/victim/demo/b1.db", ""},
	} {
		got := ""
		if err := tc.policy.CheckRestoreKey(tc.st, "apps", tc.key); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v, key %s: %q, want %q", tc.st, tc.key, got, tc.want)
		}
	}
}
