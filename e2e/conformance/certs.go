package conformance

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// CertRotation, under load: every generated certificate is renewed (spec.tls.renewCertificates),
// then both CAs are rotated (spec.tls.rotateCA) through Trusting, Reissuing and Dropping. The
// workload reads its certificate and CA bundle from its mounted Secret at every handshake, as
// a client given the new bundle does, and keeps working; members restart only in the two
// phases that change what they trust. The kubelet's delay in projecting the renewed Secret into
// the workload's files is measured.
func CertRotation() framework.Scenario {
	return framework.Scenario{Name: "cert-rotation", Labels: map[string]string{"suite": "safety", "security": "tls"}, Replicas: 3, Class: framework.Planned,
		MinDuration: 20 * time.Second,
		Steps: func(ctx context.Context, r *framework.Run) error {
			secret := types.NamespacedName{Namespace: r.Namespace, Name: names.ClientSecret(r.Cluster)}
			before := &corev1.Secret{}
			if err := r.Suite.Client.Get(ctx, secret, before); err != nil {
				return err
			}
			oldCA, err := pki.ParseCert(before.Data[pki.KeyCACert])
			if err != nil {
				return err
			}
			// 1. Renewal: the same CA signs new certificates; nothing restarts.
			r.Phase("renewing every certificate")
			end := r.Fault("renew", "spec.tls.renewCertificates = renew-1")
			requested := time.Now()
			if err := r.Update(ctx, "spec.tls.renewCertificates = renew-1", func(ec *v1alpha1.EtcdCluster) { ec.Spec.TLS.RenewCertificates = "renew-1" }); err != nil {
				return err
			}
			// The files can change before this poll sees the Secret change: the workload's
			// state is looked for after the spec changed, not after the suite saw the write.
			written, err := secretChange(ctx, r, secret, before.ResourceVersion)
			if err != nil {
				return err
			}
			seen, err := r.WaitTLSChange(ctx, requested)
			end()
			if err != nil {
				return err
			}
			r.Event("note", "projection", fmt.Sprintf("the kubelet projected the renewed Secret %s into the workload's files %s after the spec changed (the suite saw the operator's write %s after it)", secret.Name, seen.Sub(requested).Round(100*time.Millisecond), written.Sub(requested).Round(100*time.Millisecond)))

			// 2. CA rotation.
			r.Phase("rotating the CAs")
			end = r.Fault("ca-rotation", "spec.tls.rotateCA = ca-2")
			if err := r.Update(ctx, "spec.tls.rotateCA = ca-2", func(ec *v1alpha1.EtcdCluster) { ec.Spec.TLS.RotateCA = "ca-2" }); err != nil {
				return err
			}
			phase := ""
			err = r.WaitFor(ctx, "the CA rotation to complete", 20*time.Minute, func() error {
				ec, err := r.GetCluster(ctx)
				if err != nil {
					return err
				}
				var got string
				if ec.Status.TLS != nil && ec.Status.TLS.CARotation != nil && ec.Status.TLS.CARotation.Token == "ca-2" {
					got = ec.Status.TLS.CARotation.Phase
				}
				if got != phase {
					phase = got
					r.Event("note", "ca-rotation", "phase "+phase)
				}
				if got != v1alpha1.CARotationCompleted {
					return fmt.Errorf("phase %q", got)
				}
				return nil
			})
			end()
			if err != nil {
				return err
			}
			if err := r.WaitSettled(ctx, 3, 5*time.Minute); err != nil {
				return err
			}
			after := &corev1.Secret{}
			if err := r.Suite.Client.Get(ctx, secret, after); err != nil {
				return err
			}
			newCA, err := pki.ParseCert(after.Data[pki.KeyCACert])
			if err != nil {
				return err
			}
			cert, err := pki.ParseCert(after.Data[pki.KeyCert])
			if err != nil {
				return err
			}
			if n := strings.Count(string(after.Data[pki.KeyCACert]), "BEGIN CERTIFICATE"); n != 1 || newCA.SerialNumber.Cmp(oldCA.SerialNumber) == 0 || cert.CheckSignatureFrom(newCA) != nil {
				return fmt.Errorf("after the rotation %s trusts %d CAs (serial %x, the old one %x) and its certificate is signed by it: %v", secret.Name, n, newCA.SerialNumber, oldCA.SerialNumber, cert.CheckSignatureFrom(newCA))
			}
			restarts, err := countEvents(ctx, r, v1alpha1.EventMemberRestarting)
			if err != nil {
				return err
			}
			if restarts != 6 {
				return fmt.Errorf("%d member restarts during the rotation, want 6: each member once to trust both CAs and once to trust the new one alone", restarts)
			}
			changes, err := r.TLSChanges(ctx)
			if err != nil {
				return err
			}
			var states []string
			for _, c := range changes {
				states = append(states, fmt.Sprintf("+%.1fs %d CA(s), certificate of %s", time.Duration(c.Time-r.StartTime()).Seconds(), len(c.CAs), c.Issuer))
			}
			r.Event("note", "workload-tls", "the workload's files: "+strings.Join(states, "; "))
			return nil
		}}
}

// secretChange waits until the Secret's resourceVersion differs from rv, and returns when the
// change was seen (polling every 200 ms: the operator's write, within that).
func secretChange(ctx context.Context, r *framework.Run, key types.NamespacedName, rv string) (time.Time, error) {
	var at time.Time
	err := r.WaitFor(ctx, "Secret "+key.Name+" to change", 3*time.Minute, func() error {
		s := &corev1.Secret{}
		if err := r.Suite.Client.Get(ctx, key, s); err != nil {
			return err
		}
		if s.ResourceVersion == rv {
			return fmt.Errorf("unchanged")
		}
		at = time.Now()
		return nil
	})
	return at, err
}

// countEvents counts the operator's Events of a reason about the run's cluster.
func countEvents(ctx context.Context, r *framework.Run, reason string) (int, error) {
	var evs corev1.EventList
	if err := r.Suite.Client.List(ctx, &evs, client.InNamespace(r.Namespace)); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason && e.InvolvedObject.Name == r.Cluster {
			n += int(max(e.Count, 1))
		}
	}
	return n, nil
}
