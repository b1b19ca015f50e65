package conformance

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/resources"
)

// BackupRestoreTLS, under load, against the store over TLS with a certificate a private CA
// signs (https://versitygw-tls.quorate-s3.svc): the CA's certificate is copied into the
// namespace as a ConfigMap, as a user is given their store's CA; a backup whose storage names
// it in caBundle completes; a backup of the same storage without caBundle fails with the
// reason and message of an untrusted certificate; a new cluster restored from the first
// backup's storage (with caBundle) and key holds the keyspace the backup recorded.
func BackupRestoreTLS() framework.Scenario {
	var b *v1alpha1.EtcdBackup
	return framework.Scenario{Name: "backup-restore-tls", Labels: map[string]string{label.Suite: label.SuiteBackup}, Replicas: 3, Class: framework.Planned,
		Needs: []framework.Prerequisite{framework.ObjectStore},
		Steps: []framework.Step{
			useS3OverTLS,
			{Name: "back up over TLS to tls1 with caBundle", Do: func(ctx context.Context, r *framework.Run) (err error) {
				r.Phase("backing up over TLS")
				b, err = completedBackup(ctx, r, "tls1", framework.TLSStorage("backups"))
				return err
			}},
			{Name: "a backup without caBundle fails: the certificate is untrusted", Do: untrustedBackup},
			{Name: "restore tls1 from its storage and key into a new cluster and verify its keyspace", Do: func(ctx context.Context, r *framework.Run) error {
				st := framework.TLSStorage("backups")
				return restoreAndVerify(ctx, r, b, v1alpha1.RestoreSource{Storage: &st, Key: b.Status.Key, SHA256: b.Status.SHA256}, false)
			}},
		}}
}

// useS3OverTLS copies the S3 store's keys and its CA (a ConfigMap) into the run's namespace.
var useS3OverTLS = framework.Step{Name: "use the S3 store over TLS, trusting its CA", Do: func(ctx context.Context, r *framework.Run) error {
	if err := r.UseS3(ctx); err != nil {
		return err
	}
	return r.UseS3CA(ctx)
}}

// untrustedBackup backs up to the TLS endpoint without caBundle: the pod trusts only the
// public roots, so the backup fails at its first request with the condition blobstore's
// classification gives an unknown authority.
func untrustedBackup(ctx context.Context, r *framework.Run) error {
	r.Phase("backing up over TLS without the CA")
	st := framework.TLSStorage("backups")
	st.CABundle = nil
	b, err := r.Backup(ctx, "tls-untrusted", st)
	if err != nil {
		return err
	}
	got := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete)
	if b.Status.Phase != v1alpha1.BackupFailed || got == nil {
		return fmt.Errorf("EtcdBackup tls-untrusted without caBundle: phase %q, condition %+v; want Failed, %s", b.Status.Phase, got, v1alpha1.ReasonStoreCertificateUntrusted)
	}
	if err := checkUntrusted(*got, b.Generation, backup.Location{Bucket: st.BucketURL, Key: resources.BackupKey(b)}); err != nil {
		return fmt.Errorf("EtcdBackup tls-untrusted without caBundle: %w", err)
	}
	r.Event("note", "untrusted", fmt.Sprintf("EtcdBackup tls-untrusted without caBundle: %s=%s, reason %s, blobstore's message for it", got.Type, got.Status, got.Reason))
	return nil
}

// checkUntrusted compares a backup's Complete condition with the one a store's untrusted
// certificate gives (checkStoreFailure), whose cause must end in the unknown authority.
func checkUntrusted(got metav1.Condition, generation int64, loc backup.Location) error {
	return checkStoreFailure(got, generation, loc, v1alpha1.ReasonStoreCertificateUntrusted, x509.UnknownAuthorityError{}.Error())
}

// checkStoreFailure compares a backup's Complete condition with the one a failure of reason
// at the first request to loc's bucket gives: type, status, reason and generation exactly, and
// the message as blobstore.Error writes it, whose cause, the SDK's error (with its retries and
// request details), must end in causeSuffix.
func checkStoreFailure(got metav1.Condition, generation int64, loc backup.Location, reason, causeSuffix string) error {
	msg := (&blobstore.Error{Op: blobstore.OpReach, Loc: loc, Reason: reason, Err: errors.New(causeMark)}).Error()
	return matchCause(got, metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: generation}, msg, causeSuffix)
}

// causeMark stands for the SDK's error in an expected message (matchCause).
const causeMark = "\x00cause\x00"

// matchCause compares a condition with want (its message aside), and its message with msg,
// in which causeMark stands for an error (the SDK's, with its retries and request details)
// that must end in causeSuffix.
func matchCause(got, want metav1.Condition, msg, causeSuffix string) error {
	prefix, suffix, _ := strings.Cut(msg, causeMark)
	want.Message = got.Message
	sdk, ok := strings.CutPrefix(got.Message, prefix)
	if ok {
		sdk, ok = strings.CutSuffix(sdk, suffix)
	}
	if !ok || !strings.HasSuffix(sdk, causeSuffix) {
		want.Message = prefix + "…" + causeSuffix + suffix
	}
	got.LastTransitionTime = metav1.Time{}
	if got != want {
		return fmt.Errorf("condition %+v; want %+v", got, want)
	}
	return nil
}
