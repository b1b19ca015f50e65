package certificates

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// A CA rotation (spec.tls.rotateCA) replaces the cluster CA and the peer CA without a moment
// in which a member or a client distrusts a certificate it is shown. Each phase has a desired
// state of the Secrets, which ensureTLS converges to on every pass (so a crash between two
// writes is harmless); the phase moves on only once the cluster has settled in it and the
// kubelet has had time to project the Secrets into every pod (--certificate-propagation):
//
//	Trusting   next CAs exist (<ca>-next); every ca.crt trusts the old and the next CA;
//	           members restart to load it (TrustGeneration changes).
//	Reissuing  every leaf certificate is reissued by the next CA; ca.crt still trusts both.
//	Dropping   the next CA becomes the CA (its Secret takes the next one's certificate and
//	           key, the -next Secret goes); every ca.crt trusts it alone; members restart again.
//	Completed  nothing left to do.

// caKind is one of the two CAs and the leaf Secrets it signs.
type caKind struct {
	base   string   // the CA Secret
	leaves []string // the leaf Secrets it signs (users' Secrets are added by the caller)
}

// caKinds are the cluster's two CAs, under the names cas (Manager.caSecrets).
func caKinds(c *v1alpha1.EtcdCluster, cas names.CASecrets) []caKind {
	return []caKind{
		{base: cas.Cluster, leaves: []string{names.ServerSecret(c.Name), names.ClientSecret(c.Name), names.OperatorSecret(c.Name)}},
		{base: cas.Peer, leaves: []string{names.PeerSecret(c.Name)}},
	}
}

// caSecrets names the cluster's CA Secrets, each CA on its own (caName): the cluster CA by
// what the server and operator certificates trust, the peer CA by what the peer certificate
// trusts.
func (m *Manager) caSecrets(ctx context.Context, c *v1alpha1.EtcdCluster) (names.CASecrets, error) {
	cur, legacy := names.CASecretsOf(c.Name), names.LegacyCASecretsOf(c.Name)
	cluster, err := m.caName(ctx, c, cur.Cluster, legacy.Cluster, names.ServerSecret(c.Name), names.OperatorSecret(c.Name))
	if err != nil {
		return names.CASecrets{}, err
	}
	peer, err := m.caName(ctx, c, cur.Peer, legacy.Peer, names.PeerSecret(c.Name))
	return names.CASecrets{Cluster: cluster, Peer: peer}, err
}

// caName decides, the same way on every pass, whether one of the cluster's CAs is under its
// current name (names.CASecretsOf, which cannot collide with another cluster's) or its legacy
// one (names.LegacyCASecretsOf, where cluster foo's peer CA and cluster foo-peer's CA shared
// foo-peer-ca):
//
//  1. a formed cluster keeps the CA its leaves trust (their ca.crt holds it), the current one
//     first: its members and clients trust that CA, whoever made the Secret (a cluster that
//     formed on another's Secret, before Secrets were checked, keeps running on it;
//     ofThisCluster says so in an Event, and it is never rotated or taken over from here);
//  2. else the one the operator made for the cluster, the current one first: an operator
//     rolled back for a while may have made a legacy one beside it;
//  3. else the current name: new clusters, and the one whose legacy name another cluster's
//     Secret (or a user's) has taken.
func (m *Manager) caName(ctx context.Context, c *v1alpha1.EtcdCluster, cur, legacy string, leaves ...string) (string, error) {
	found := map[string]*corev1.Secret{}
	for _, n := range []string{cur, legacy} {
		s, err := m.secret(ctx, c.Namespace, n)
		switch {
		case err == nil:
			found[n] = s
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("reading secret %s: %w", n, err)
		}
	}
	if c.Status.ClusterID != "" {
		for _, n := range []string{cur, legacy} {
			if s := found[n]; s != nil {
				if trusted, err := m.leavesTrust(ctx, c, s, leaves); err != nil || trusted {
					return n, err
				}
			}
		}
	}
	for _, n := range []string{cur, legacy} {
		if s := found[n]; s != nil && madeFor(c, s) {
			return n, nil
		}
	}
	return cur, nil
}

// leavesTrust: one of the leaf Secrets trusts the CA in s (its ca.crt, a bundle during a
// rotation, holds s's certificate).
func (m *Manager) leavesTrust(ctx context.Context, c *v1alpha1.EtcdCluster, s *corev1.Secret, leaves []string) (bool, error) {
	ca := bytes.TrimSpace(s.Data[pki.KeyCACert])
	if len(ca) == 0 {
		return false, nil
	}
	for _, n := range leaves {
		leaf, err := m.secret(ctx, c.Namespace, n)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading secret %s: %w", n, err)
		}
		if bytes.Contains(leaf.Data[pki.KeyCACert], ca) {
			return true, nil
		}
	}
	return false, nil
}

// madeFor: the operator made s for this cluster (it controls it, or the retention annotation
// names it), or for an earlier EtcdCluster of its name (the name label).
func madeFor(c *v1alpha1.EtcdCluster, s *corev1.Secret) bool {
	return resources.Retained(c, s) || s.Labels[names.LabelCluster] == c.Name
}

func nextCA(base string) string { return base + "-next" }

// rotationPhase is the phase of the CA rotation under way ("" when none is).
func rotationPhase(c *v1alpha1.EtcdCluster) string {
	if c.Status.TLS == nil || c.Status.TLS.CARotation == nil || c.Status.TLS.CARotation.Phase == v1alpha1.CARotationCompleted {
		return ""
	}
	return c.Status.TLS.CARotation.Phase
}

// authority is what signs a kind's leaves now, and the ca.crt they carry.
type authority struct {
	signer *pki.CA
	// bundle is the leaves' ca.crt; nil outside a rotation, where each leaf keeps the CA that
	// signed it (clusters from before the peer CA have a peer certificate of the cluster CA).
	bundle []byte
}

// authorityOf returns the kind's authority in the current phase, creating the CAs it needs,
// and in Dropping moves the next CA into the CA's Secret.
func (m *Manager) authorityOf(ctx context.Context, c *v1alpha1.EtcdCluster, k caKind) (authority, error) {
	phase := rotationPhase(c)
	if s, err := m.secret(ctx, c.Namespace, k.base); phase != "" && err == nil && !madeFor(c, s) {
		// Another cluster's CA, which this one formed on (caName): a rotation here would write
		// the other's Secret (Dropping moves the next CA into it). This CA is left as it is;
		// the other rotates in the rotation.
		phase = ""
	}
	if phase == v1alpha1.CARotationDropping {
		if err := m.promoteNext(ctx, c, k.base); err != nil {
			return authority{}, err
		}
	}
	base, err := m.ensureCA(ctx, c, k.base)
	if err != nil {
		return authority{}, err
	}
	switch phase {
	case v1alpha1.CARotationTrusting, v1alpha1.CARotationReissuing:
		next, err := m.ensureCA(ctx, c, nextCA(k.base))
		if err != nil {
			return authority{}, err
		}
		bundle := joinPEM(base.CertPEM, next.CertPEM)
		// Whatever the leaves trust now stays trusted until Dropping.
		for _, l := range k.leaves {
			if s, err := m.secret(ctx, c.Namespace, l); err == nil {
				bundle = joinPEM(bundle, s.Data[pki.KeyCACert])
			}
		}
		if phase == v1alpha1.CARotationReissuing {
			return authority{signer: next, bundle: bundle}, nil
		}
		return authority{signer: base, bundle: bundle}, nil
	case v1alpha1.CARotationDropping:
		return authority{signer: base, bundle: base.CertPEM}, nil
	}
	return authority{signer: base}, nil
}

// promoteNext makes the next CA the CA: its certificate and key go into the CA's Secret, then
// the -next Secret is deleted. Done once: later passes find no -next Secret.
func (m *Manager) promoteNext(ctx context.Context, c *v1alpha1.EtcdCluster, base string) error {
	next, err := m.secret(ctx, c.Namespace, nextCA(base))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cur, err := m.secret(ctx, c.Namespace, base)
	if err != nil {
		return err
	}
	if !bytes.Equal(cur.Data[pki.KeyCACert], next.Data[pki.KeyCACert]) {
		updated := cur.DeepCopy()
		updated.Data[pki.KeyCACert], updated.Data[pki.KeyCAKey] = next.Data[pki.KeyCACert], next.Data[pki.KeyCAKey]
		if err := m.Patch(ctx, updated, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("making the next CA the CA of %s: %w", base, err)
		}
	}
	return m.Objects.DeleteOwned(ctx, c, next, v1alpha1.EventCARotation, "the next CA is now the CA")
}

// conform brings a leaf Secret in line with its authority during a rotation: its ca.crt is
// the bundle, and from Reissuing on its certificate is the signer's. It reports whether it
// wrote.
func (m *Manager) conform(ctx context.Context, c *v1alpha1.EtcdCluster, s *corev1.Secret, a authority, req pki.Request, now time.Time) (bool, error) {
	if a.bundle == nil {
		return false, nil
	}
	updated := s.DeepCopy()
	reissue := false
	if phase := rotationPhase(c); phase == v1alpha1.CARotationReissuing || phase == v1alpha1.CARotationDropping {
		reissue = !signedBy(s.Data[pki.KeyCert], a.signer)
	}
	if reissue {
		req.Validity = m.certLifetime()
		pair, err := a.signer.Sign(req, now)
		if err != nil {
			return false, err
		}
		updated.Data[pki.KeyCert], updated.Data[pki.KeyKey] = pair.CertPEM, pair.KeyPEM
	}
	updated.Data[pki.KeyCACert] = a.bundle
	if !reissue && bytes.Equal(s.Data[pki.KeyCACert], a.bundle) {
		return false, nil
	}
	if err := m.Patch(ctx, updated, client.MergeFromWithOptions(s, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("updating secret %s for the CA rotation: %w", s.Name, err)
	}
	what := "now trusts " + describeBundle(a.bundle)
	if reissue {
		what = "reissued by " + a.signer.Cert.Subject.CommonName + "; " + what
	}
	m.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventCARotation, "%s %s", s.Name, what)
	return true, nil
}

// signedBy reports whether the certificate was signed by ca.
func signedBy(certPEM []byte, ca *pki.CA) bool {
	cert, err := pki.ParseCert(certPEM)
	return err == nil && cert.CheckSignatureFrom(ca.Cert) == nil
}

// joinPEM concatenates PEM bundles, each certificate once, in order.
func joinPEM(bundles ...[]byte) []byte {
	var out []byte
	seen := map[string]bool{}
	for _, b := range bundles {
		for rest := b; ; {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			if seen[string(block.Bytes)] {
				continue
			}
			seen[string(block.Bytes)] = true
			out = append(out, pem.EncodeToMemory(block)...)
		}
	}
	return out
}

// describeBundle names the CAs of a bundle.
func describeBundle(b []byte) string {
	var cns []string
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if c, err := pki.ParseCert(pem.EncodeToMemory(block)); err == nil {
			cns = append(cns, fmt.Sprintf("%s (serial %x)", c.Subject.CommonName, c.SerialNumber.Bytes()[:min(4, len(c.SerialNumber.Bytes()))]))
		}
	}
	return fmt.Sprint(cns)
}

// advanceRotation starts a CA rotation that spec.tls.rotateCA asks for, and moves one under
// way to its next phase once the cluster has settled in the current one (the pass planned
// nothing) and the propagation delay has passed since the phase began. It only changes the
// status; the Secrets follow on the next pass (ensureTLS), and the members through
// TrustGeneration. It returns its share of the status.
func (m *Manager) advanceRotation(c *v1alpha1.EtcdCluster, settled bool, now time.Time) Share {
	if !c.Spec.TLS.IsEnabled() || c.Spec.TLS.UserProvided() {
		return Share{}
	}
	var cur *v1alpha1.CARotationStatus
	if c.Status.TLS != nil {
		cur = c.Status.TLS.CARotation
	}
	want, automatic := planner.RotationToken(c.Spec.TLS.RotateCA, cur, m.cas.due(c, now))
	if want == "" {
		return Share{}
	}
	share := Share{tls: true}
	if phase := planner.NextRotationPhase(want, cur, settled, now, m.propagation()); phase != "" {
		share.rotation = &v1alpha1.CARotationStatus{Token: want, Phase: phase, PhaseTime: metav1.NewTime(now)}
		if automatic {
			share.rotation.Automatic, share.rotation.SpecToken = true, c.Spec.TLS.RotateCA
			if cur != nil && cur.Automatic && cur.Token == want {
				share.rotation.SpecToken = cur.SpecToken
			}
		}
		m.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventCARotation, "CA rotation %s: %s", want, rotationMessages[phase])
	}
	return share
}

// caExpiries remembers, per cluster, the generated CAs this process loaded (ensureCA), to
// tell when one is due for an automatic rotation.
type caExpiries struct{ m sync.Map } // cluster -> *sync.Map of CA Secret -> *x509.Certificate

// seen records a current CA (not the next one of a rotation) of the cluster.
func (e *caExpiries) seen(c *v1alpha1.EtcdCluster, secret string, cert *x509.Certificate) {
	if strings.HasSuffix(secret, nextCA("")) {
		return
	}
	v, _ := e.m.LoadOrStore(types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, &sync.Map{})
	v.(*sync.Map).Store(secret, cert)
}

// due returns the token of an automatic rotation when one of the cluster's CAs has less than
// a fifth of its lifetime left (two years of the ten a generated CA lasts): auto-<its serial>.
func (e *caExpiries) due(c *v1alpha1.EtcdCluster, now time.Time) string {
	v, ok := e.m.Load(types.NamespacedName{Namespace: c.Namespace, Name: c.Name})
	if !ok {
		return ""
	}
	var first *x509.Certificate
	v.(*sync.Map).Range(func(_, cert any) bool {
		if x := cert.(*x509.Certificate); first == nil || x.NotAfter.Before(first.NotAfter) {
			first = x
		}
		return true
	})
	if first == nil || now.Before(first.NotAfter.Add(-first.NotAfter.Sub(first.NotBefore)/5)) {
		return ""
	}
	return fmt.Sprintf("auto-%x", first.SerialNumber.Bytes()[:min(8, len(first.SerialNumber.Bytes()))])
}

func (e *caExpiries) forget(cluster types.NamespacedName) { e.m.Delete(cluster) }

var rotationMessages = map[string]string{
	v1alpha1.CARotationTrusting:  "every ca.crt trusts the current and a new CA; members restart one at a time to load it",
	v1alpha1.CARotationReissuing: "every certificate is reissued by the new CA; applications pick up theirs from their Secrets",
	v1alpha1.CARotationDropping:  "the new CA is the CA; every ca.crt trusts it alone; members restart one at a time to load it",
	v1alpha1.CARotationCompleted: "completed",
}

// propagation is how long a phase lasts at least: the time the kubelet takes to project an
// updated Secret into the pods that mount it.
func (m *Manager) propagation() time.Duration {
	if m.CertPropagation > 0 {
		return m.CertPropagation
	}
	return 2 * time.Minute
}
