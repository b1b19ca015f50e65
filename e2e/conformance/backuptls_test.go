//go:build !e2e

package conformance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
)

// checkUntrusted takes the condition an untrusted certificate gives, as the operator writes it
// from quorate-backup's result, and nothing else: another reason, status, generation, hint,
// operation, location or cause is refused.
func TestCheckUntrusted(t *testing.T) {
	loc := backup.Location{Bucket: "s3://backups?endpoint=https://versitygw-tls.quorate-s3.svc&region=us-east-1&use_path_style=true", Key: "ns/demo/tls-untrusted.db"}
	const sdk = `blob (code=Unknown): operation error S3: ListObjectsV2, exceeded maximum number of attempts, 3, https response error StatusCode: 0, RequestID: , HostID: , request send failed, Get "https://versitygw-tls.quorate-s3.svc/backups?list-type=2&max-keys=1": tls: failed to verify certificate: x509: certificate signed by unknown authority`
	const hint = "the store's certificate is signed by an authority the pod does not trust: name its CA in storage.caBundle"
	msg := "reaching the bucket of s3://backups/ns/demo/tls-untrusted.db: " + hint + " (" + sdk + ")"
	good := metav1.Condition{Type: v1alpha1.ConditionBackupComplete, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonStoreCertificateUntrusted,
		ObservedGeneration: 1, Message: msg, LastTransitionTime: metav1.Now()}
	if err := checkUntrusted(good, 1, loc); err != nil {
		t.Fatalf("the untrusted certificate's condition is refused: %v", err)
	}
	for name, change := range map[string]func(c *metav1.Condition){
		"completed":        func(c *metav1.Condition) { c.Status = metav1.ConditionTrue },
		"another reason":   func(c *metav1.Condition) { c.Reason = v1alpha1.ReasonBackupFailed },
		"an old condition": func(c *metav1.Condition) { c.ObservedGeneration = 0 },
		"another type":     func(c *metav1.Condition) { c.Type = "Ready" },
		"another hint": func(c *metav1.Condition) {
			c.Message = "reaching the bucket of s3://backups/ns/demo/tls-untrusted.db: check the URL (" + sdk + ")"
		},
		"another operation": func(c *metav1.Condition) {
			c.Message = "writing s3://backups/ns/demo/tls-untrusted.db: " + hint + " (" + sdk + ")"
		},
		"another object": func(c *metav1.Condition) {
			c.Message = "reaching the bucket of s3://backups/ns/demo/other.db: " + hint + " (" + sdk + ")"
		},
		"another cause": func(c *metav1.Condition) {
			c.Message = "reaching the bucket of s3://backups/ns/demo/tls-untrusted.db: " + hint + " (x509: certificate is valid for other.example, not versitygw-tls.quorate-s3.svc)"
		},
		"cut short": func(c *metav1.Condition) { c.Message = msg[:len(msg)-1] },
	} {
		c := good
		change(&c)
		if err := checkUntrusted(c, 1, loc); err == nil {
			t.Errorf("%s: %+v is taken for an untrusted certificate's condition", name, c)
		}
	}
}
