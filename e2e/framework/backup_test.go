package framework

import (
	"reflect"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// TestS3Storage: with --s3-over-tls a scenario's storage is the TLS endpoint trusting the
// copied CA; without, the plain endpoint and no CA.
func TestS3Storage(t *testing.T) {
	for _, tc := range []struct {
		tls  bool
		want v1alpha1.BackupStorage
	}{
		{tls: false, want: v1alpha1.BackupStorage{BucketURL: "s3://backups?endpoint=http://versitygw.quorate-s3.svc:7070&region=us-east-1&use_path_style=true",
			CredentialsSecret: "s3-credentials"}},
		{tls: true, want: v1alpha1.BackupStorage{BucketURL: "s3://backups?endpoint=https://versitygw-tls.quorate-s3.svc&region=us-east-1&use_path_style=true",
			CredentialsSecret: "s3-credentials", CABundle: &v1alpha1.CABundleSource{ConfigMapKeyRef: &v1alpha1.KeyRef{Name: "s3-ca", Key: "ca.crt"}}}},
	} {
		r := &Run{Suite: &Suite{Opts: &Options{S3OverTLS: tc.tls}}}
		if got := r.S3Storage("backups"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--s3-over-tls=%v: S3Storage is %+v, want %+v", tc.tls, got, tc.want)
		}
	}
}
