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

// Under a policy a restore reads only its namespace's snapshots, [DIRS/]<ns>/<cluster>/<b>.db,
// whatever prefix the restore names: another namespace's key, or one whose namespace segment
// merely ends in this namespace's name (prod-apps), is refused.
func TestCheckRestoreKey(t *testing.T) {
	p := Policy{Allowed: []string{"s3://backups"}}
	refused := func(key string) string {
		return fmt.Sprintf("key %q is not a snapshot of this namespace ([PREFIX/]apps/<cluster>/<backup>.db), and under the operator's storage policy a cluster restores only its namespace's own snapshots", key)
	}
	for _, tc := range []struct {
		policy Policy
		key    string
		want   string
	}{
		{p, "etcd/apps/demo/b1.db", ""},
		{p, "apps/demo/b1.db", ""},
		{p, "a/b/apps/demo/nightly-20261129-030000.db", ""},
		{p, "etcd/victim/demo/b1.db", refused("etcd/victim/demo/b1.db")},
		{p, "etcd/prod-apps/db/nightly-20261129-030000.db", refused("etcd/prod-apps/db/nightly-20261129-030000.db")},
		{p, "etcd/apps/b1.db", refused("etcd/apps/b1.db")},
		{p, "etcd/apps/demo/x/b1.db", refused("etcd/apps/demo/x/b1.db")},
		{p, "etcd/apps//b1.db", refused("etcd/apps//b1.db")},
		{p, "etcd/apps/demo/b1", refused("etcd/apps/demo/b1")},
		{p, "etcd/apps/demo/.db", refused("etcd/apps/demo/.db")},
		{p, "etcd/apps/Demo/b1.db", refused("etcd/apps/Demo/b1.db")},
		{p, "etcd/apps/demo/../b1.db", refused("etcd/apps/demo/../b1.db")},
		// No policy: any key, as before policies.
		{Policy{}, "etcd/victim/demo/b1.db", ""},
	} {
		got := ""
		if err := tc.policy.CheckRestoreKey("apps", tc.key); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("key %s: %q, want %q", tc.key, got, tc.want)
		}
	}
}

// Under a policy a restore to a point replays only its namespace's archives,
// [DIRS/]<ns>/<cluster>/archive/<schedule>.
func TestCheckArchivePrefix(t *testing.T) {
	p := Policy{Allowed: []string{"s3://backups"}}
	refused := func(prefix string) string {
		return fmt.Sprintf("archive prefix %q is not an archive of this namespace ([PREFIX]apps/<cluster>/archive/<schedule>), and under the operator's storage policy a cluster restores only its namespace's own archives", prefix)
	}
	for _, tc := range []struct {
		policy Policy
		prefix string
		want   string
	}{
		{p, "etcd/apps/demo/archive/nightly", ""},
		{p, "apps/demo/archive/nightly", ""},
		{p, "etcd/victim/demo/archive/nightly", refused("etcd/victim/demo/archive/nightly")},
		{p, "etcd/prod-apps/demo/archive/nightly", refused("etcd/prod-apps/demo/archive/nightly")},
		{p, "etcd/apps/demo/archives/nightly", refused("etcd/apps/demo/archives/nightly")},
		{p, "etcd/apps/demo/archive/nightly/x", refused("etcd/apps/demo/archive/nightly/x")},
		{p, "apps/archive/nightly", refused("apps/archive/nightly")},
		{p, "etcd/apps/../archive/nightly", refused("etcd/apps/../archive/nightly")},
		{Policy{}, "etcd/victim/demo/archive/nightly", ""},
	} {
		got := ""
		if err := tc.policy.CheckArchivePrefix("apps", tc.prefix); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("prefix %s: %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

// Under a policy a prefix ends a path segment: "etcd/prod-" would put namespace apps's keys
// among prod-apps's.
func TestPrefixEndsASegment(t *testing.T) {
	p := Policy{Allowed: []string{"s3://backups"}}
	for prefix, want := range map[string]string{
		"":           "",
		"etcd/":      "",
		"a/b/":       "",
		"etcd/prod-": `storage.prefix "etcd/prod-" does not end in /, and under the operator's storage policy a prefix must (keys are PREFIX<namespace>/<cluster>/<backup>.db, and a prefix that ends mid-segment reaches another namespace's keys in the shared bucket): add the /`,
	} {
		got := ""
		if err := p.Check(v1alpha1.BackupStorage{BucketURL: "s3://backups", CredentialsSecret: "keys", Prefix: prefix}); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("prefix %q: %q, want %q", prefix, got, want)
		}
		if err := (Policy{}).Check(v1alpha1.BackupStorage{BucketURL: "s3://backups", Prefix: prefix}); err != nil {
			t.Errorf("prefix %q without a policy: %v", prefix, err)
		}
	}
}
