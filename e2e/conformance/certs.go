package conformance

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/label"
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
	c := &certRotation{}
	return framework.Scenario{Name: "cert-rotation", Labels: map[string]string{label.Suite: label.SuiteSafety, label.Security: "tls"}, Replicas: 3, Class: framework.Planned,
		MinDuration: 20 * time.Second,
		Steps: []framework.Step{
			{Name: "read the client Secret's CA", Do: c.readCA},
			// 1. Renewal: the same CA signs new certificates; nothing restarts.
			{Name: "renew every certificate", Do: c.renew},
			{Name: "wait for the renewed Secret in the workload's files", Do: c.waitRenewed},
			{Name: "check: the renewed client certificate is new, and its CA the same", Do: c.checkRenewed},
			// 2. CA rotation.
			{Name: "rotate the CAs", Do: c.rotateCA},
			{Name: "wait for the CA rotation to complete", Do: c.waitRotated},
			waitSettled(3),
			{Name: "check: the client Secret trusts the new CA alone", Do: c.checkNewCA},
			{Name: "check: each member restarted twice", Do: c.checkRestarts},
			{Name: "record the workload's TLS changes", Do: c.recordTLSChanges},
		}}
}

// certRotation is what the steps of CertRotation share.
type certRotation struct {
	secret    types.NamespacedName
	before    *corev1.Secret
	oldCA     *x509.Certificate
	requested time.Time
	end       func()
}

func (c *certRotation) readCA(ctx context.Context, r *framework.Run) (err error) {
	c.secret = types.NamespacedName{Namespace: r.Namespace, Name: names.ClientSecret(r.Cluster)}
	c.before = &corev1.Secret{}
	if err := r.Suite.Client.Get(ctx, c.secret, c.before); err != nil {
		return err
	}
	c.oldCA, err = pki.ParseCert(c.before.Data[pki.KeyCACert])
	return err
}

func (c *certRotation) renew(ctx context.Context, r *framework.Run) error {
	r.Phase("renewing every certificate")
	c.end = r.Fault("renew", "spec.tls.renewCertificates = renew-1")
	c.requested = time.Now()
	return r.Update(ctx, "spec.tls.renewCertificates = renew-1", func(ec *v1alpha1.EtcdCluster) { ec.Spec.TLS.RenewCertificates = "renew-1" })
}

func (c *certRotation) waitRenewed(ctx context.Context, r *framework.Run) error {
	// The files can change before this poll sees the Secret change: the workload's
	// state is looked for after the spec changed, not after the suite saw the write.
	written, err := secretChange(ctx, r, c.secret, c.before.ResourceVersion)
	if err != nil {
		return err
	}
	seen, err := r.WaitTLSChange(ctx, c.requested)
	c.end()
	if err != nil {
		return err
	}
	r.Event("note", "projection", fmt.Sprintf("the kubelet projected the renewed Secret %s into the workload's files %s after the spec changed (the suite saw the operator's write %s after it)", c.secret.Name, seen.Sub(c.requested).Round(100*time.Millisecond), written.Sub(c.requested).Round(100*time.Millisecond)))
	return nil
}

// checkRenewed: a renewal issues a new certificate from the CA that signed the old one, and the
// Secret keeps trusting that CA alone (a renewal from the other CA would move every client to
// the peer CA's trust, and refuse the certificates not renewed with them: the users').
func (c *certRotation) checkRenewed(ctx context.Context, r *framework.Run) error {
	after := &corev1.Secret{}
	if err := r.Suite.Client.Get(ctx, c.secret, after); err != nil {
		return err
	}
	ca, err := pki.ParseCert(after.Data[pki.KeyCACert])
	if err != nil {
		return err
	}
	cert, err := pki.ParseCert(after.Data[pki.KeyCert])
	if err != nil {
		return err
	}
	old, err := pki.ParseCert(c.before.Data[pki.KeyCert])
	if err != nil {
		return err
	}
	switch {
	case cert.SerialNumber.Cmp(old.SerialNumber) == 0:
		return fmt.Errorf("%s still holds the certificate of serial %x: not renewed", c.secret.Name, old.SerialNumber)
	case ca.SerialNumber.Cmp(c.oldCA.SerialNumber) != 0:
		return fmt.Errorf("after the renewal %s trusts the CA %q (serial %x), not the one it trusted, %q (serial %x)", c.secret.Name, ca.Subject.CommonName, ca.SerialNumber, c.oldCA.Subject.CommonName, c.oldCA.SerialNumber)
	case cert.CheckSignatureFrom(c.oldCA) != nil:
		return fmt.Errorf("the renewed certificate of %s is not signed by the CA that signed the old one (%q): %v", c.secret.Name, c.oldCA.Subject.CommonName, cert.CheckSignatureFrom(c.oldCA))
	}
	return nil
}

func (c *certRotation) rotateCA(ctx context.Context, r *framework.Run) error {
	r.Phase("rotating the CAs")
	c.end = r.Fault("ca-rotation", "spec.tls.rotateCA = ca-2")
	return r.Update(ctx, "spec.tls.rotateCA = ca-2", func(ec *v1alpha1.EtcdCluster) { ec.Spec.TLS.RotateCA = "ca-2" })
}

func (c *certRotation) waitRotated(ctx context.Context, r *framework.Run) error {
	phase := ""
	err := r.WaitFor(ctx, "the CA rotation to complete", 20*time.Minute, func() error {
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
	c.end()
	return err
}

func (c *certRotation) checkNewCA(ctx context.Context, r *framework.Run) error {
	after := &corev1.Secret{}
	if err := r.Suite.Client.Get(ctx, c.secret, after); err != nil {
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
	if n := strings.Count(string(after.Data[pki.KeyCACert]), "BEGIN CERTIFICATE"); n != 1 || newCA.SerialNumber.Cmp(c.oldCA.SerialNumber) == 0 || cert.CheckSignatureFrom(newCA) != nil {
		return fmt.Errorf("after the rotation %s trusts %d CAs (serial %x, the old one %x) and its certificate is signed by it: %v", c.secret.Name, n, newCA.SerialNumber, c.oldCA.SerialNumber, cert.CheckSignatureFrom(newCA))
	}
	return nil
}

func (c *certRotation) checkRestarts(ctx context.Context, r *framework.Run) error {
	restarts, err := countEvents(ctx, r, v1alpha1.EventMemberRestarting)
	if err != nil {
		return err
	}
	if restarts != 6 {
		return fmt.Errorf("%d member restarts during the rotation, want 6: each member once to trust both CAs and once to trust the new one alone", restarts)
	}
	return nil
}

func (c *certRotation) recordTLSChanges(ctx context.Context, r *framework.Run) error {
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
