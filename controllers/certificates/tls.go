package certificates

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/statuscond"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/resources"
)

// serverNames are the DNS names the server and peer certificates cover.
func serverNames(c *v1alpha1.EtcdCluster) (server, peer []string) {
	peerSvc := names.PeerService(c.Name) + "." + c.Namespace + ".svc"
	clientSvc := names.ClientService(c.Name)
	peer = []string{"*." + peerSvc, "*." + peerSvc + ".cluster.local"}
	server = append(append([]string{}, peer...),
		clientSvc, clientSvc+"."+c.Namespace, names.ClientHost(c.Name, c.Namespace), names.ClientHost(c.Name, c.Namespace)+".cluster.local", "localhost")
	return server, peer
}

func (m *Manager) secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := m.secrets.get(ctx, m.Client, m.APIReader, types.NamespacedName{Namespace: namespace, Name: name})
	secretReadsOf(ctx).read(name, s, err)
	return s, err
}

func tlsSecret(c *v1alpha1.EtcdCluster, name string, caPEM []byte, pair pki.Pair) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: names.ClusterLabels(c.Name)},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{pki.KeyCert: pair.CertPEM, pki.KeyKey: pair.KeyPEM, pki.KeyCACert: caPEM},
	}
	// The certificates live as long as the volumes: a retained cluster adopted later keeps
	// its clients.
	resources.SetRetention(c, s)
	return s
}

// keepSecret makes an operator-generated Secret follow spec.volumeRetention; one retained by
// an earlier EtcdCluster of the same name is taken over only with spec.adoptRetainedVolumes.
func (m *Manager) keepSecret(ctx context.Context, c *v1alpha1.EtcdCluster, s *corev1.Secret) error {
	if c.Spec.Paused || !resources.Retained(c, s) && !c.Spec.AdoptRetainedVolumes {
		// While paused, retention waits as the volumes' does.
		return nil
	}
	if !madeFor(c, s) {
		// Made for another cluster (this one formed on it before Secrets were checked): never
		// taken over, or deleting that cluster would take it with this one's owner reference.
		return nil
	}
	updated := s.DeepCopy()
	if !resources.Retained(c, s) {
		updated.OwnerReferences = nil
	}
	if !resources.SetRetention(c, updated) {
		return nil
	}
	if err := m.Patch(ctx, updated, client.MergeFromWithOptions(s, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting the retention of secret %s: %w", s.Name, err)
	}
	return nil
}

// tlsShare is EnsureTLS's share of the status: the first certificate to expire (f), and
// whether it does so soon.
func (m *Manager) tlsShare(c *v1alpha1.EtcdCluster, f *v1alpha1.CertificateExpiry, now time.Time) Share {
	return Share{tls: f != nil, setExpiry: true, firstExpiry: f, setValid: true, valid: m.validCondition(c, f, now)}
}

// validCondition says whether the first certificate to expire (f) does so soon: within a
// quarter of the certificate lifetime, at most 21 days (generated certificates are renewed
// with a third left, so one that gets this close was not renewed). Without certificates there
// is no condition (nil).
func (m *Manager) validCondition(c *v1alpha1.EtcdCluster, f *v1alpha1.CertificateExpiry, now time.Time) *metav1.Condition {
	if f == nil {
		return nil
	}
	window := min(21*24*time.Hour, m.certLifetime()/4)
	fix := "replace it in its Secret"
	if !c.Spec.TLS.UserProvided() {
		fix = "the operator renews its certificates with a third of their lifetime left and has not renewed this one: see the operator's log"
	}
	cond := statuscond.New(v1alpha1.ConditionCertificatesValid, true, v1alpha1.ReasonCertificatesValid,
		fmt.Sprintf("every certificate is valid for more than %s; the first to expire is in Secret %s, at %s", window.Round(time.Second), f.Secret, f.Time.UTC().Format(time.RFC3339)), c.Generation)
	switch left := f.Time.Sub(now); {
	case left <= 0:
		cond = statuscond.New(v1alpha1.ConditionCertificatesValid, false, v1alpha1.ReasonCertificateExpired,
			fmt.Sprintf("the certificate in Secret %s expired at %s: %s", f.Secret, f.Time.UTC().Format(time.RFC3339), fix), c.Generation)
	case left <= window:
		cond = statuscond.New(v1alpha1.ConditionCertificatesValid, false, v1alpha1.ReasonCertificateExpiring,
			fmt.Sprintf("the certificate in Secret %s expires at %s, in %s: %s", f.Secret, f.Time.UTC().Format(time.RFC3339), left.Round(time.Minute), fix), c.Generation)
	}
	return &cond
}

// checkUserTLS checks the Secrets spec.tls names: each holds a certificate, its key and the
// CA; the certificate chains to that CA, is valid now, allows what it is used for, and the
// server and peer certificates cover the names members and clients dial. A failed check names
// the Secret, the field and what to fix; no member starts until the Secrets pass.
func (m *Manager) checkUserTLS(ctx context.Context, c *v1alpha1.EtcdCluster) error {
	member := names.Member(c.Name, 0) + "." + names.PeerService(c.Name) + "." + c.Namespace + ".svc"
	client := names.ClientHost(c.Name, c.Namespace)
	for _, u := range []struct {
		field, name string
		check       pki.Check
	}{
		{"spec.tls.serverSecretName", c.Spec.TLS.ServerSecretName, pki.Check{Usage: pki.ServerAndClient, Hosts: []string{member, client}}},
		{"spec.tls.peerSecretName", c.Spec.TLS.PeerSecretName, pki.Check{Usage: pki.ServerAndClient, Hosts: []string{member}}},
		{"spec.tls.clientSecretName", c.Spec.TLS.ClientSecretName, pki.Check{Usage: pki.ClientOnly}},
	} {
		s, err := m.secret(ctx, c.Namespace, u.name)
		if err != nil {
			return fmt.Errorf("reading TLS secret %s (named in spec.tls): %w", u.name, err)
		}
		for _, k := range []string{pki.KeyCert, pki.KeyKey, pki.KeyCACert} {
			if len(s.Data[k]) == 0 {
				return fmt.Errorf("TLS secret %s has no %s: add it (a kubernetes.io/tls Secret plus the CA as ca.crt)", u.name, k)
			}
		}
		u.check.Now = time.Now()
		if err := pki.CheckLeaf(s.Data[pki.KeyCert], s.Data[pki.KeyKey], s.Data[pki.KeyCACert], u.check); err != nil {
			return fmt.Errorf("TLS secret %s (%s): %w; replace its certificate", u.name, u.field, err)
		}
		recordExpiry(ctx, s, pki.KeyCert)
	}
	return nil
}

// EnsureTLS makes sure the certificate Secrets exist: it checks user-provided ones, and
// generates the CAs and the server, peer and client certificates otherwise. A generated leaf
// certificate is rewritten only to renew it; CAs and user-supplied Secrets never are.
//
// A pass that depends on nothing that changed since the last one that found nothing to do
// takes that one's findings (tlsMemo), and reads no Secret.
func (m *Manager) EnsureTLS(ctx context.Context, c *v1alpha1.EtcdCluster) (Share, error) {
	now := time.Now()
	inputs := tlsInputs(c, m.certLifetime())
	if first, ok := m.tlsDone.lookup(ctx, m.Client, c, inputs, now); ok {
		return m.tlsShare(c, first, now), nil
	}
	// The first expiry is found again, from the Secrets as they are.
	reads, found := &secretReads{}, &expiries{}
	cas, err := m.ensureTLSSecrets(withExpiries(withSecretReads(ctx, reads), found), c)
	if err == nil && !reads.wrote {
		m.tlsDone.recordFirst(c, inputs, reads, found.first, m.certLifetime(), now)
	}
	// Their data is read again only when one of them changes. Kept: the client certificate
	// the operator uses on every pass (clientTLS: its own, or the applications' for a cluster
	// from before it had its own, or the user's) until clientTLS has taken what it needs of
	// it (clientCred, which keeps its PEM instead), and with users the cluster CA, which
	// their certificates are checked against on every pass (ensureUserSecrets). A pass that
	// wrote sheds them too: what it wrote the memo already forgot, and the rest is read again
	// at most once.
	keep := []string{names.OperatorSecret(c.Name), c.Spec.TLS.ClientSecretName}
	if rv, read := reads.rvs[names.OperatorSecret(c.Name)]; !read || rv == "" {
		keep = append(keep, names.ClientSecret(c.Name))
	}
	if len(c.Spec.Users) > 0 && cas.Cluster != "" {
		keep = append(keep, cas.Cluster, nextCA(cas.Cluster))
	}
	m.secrets.shed(c.Namespace, reads.rvs, keep...)
	if err != nil {
		return Share{}, err
	}
	return m.tlsShare(c, found.first, now), nil
}

// ensureTLSSecrets is ensureTLS's work on the Secrets. It returns the names of the CA Secrets
// when the operator generates the certificates.
func (m *Manager) ensureTLSSecrets(ctx context.Context, c *v1alpha1.EtcdCluster) (names.CASecrets, error) {
	if !c.Spec.TLS.IsEnabled() {
		return names.CASecrets{}, nil
	}
	if c.Spec.TLS.UserProvided() {
		return names.CASecrets{}, m.checkUserTLS(ctx, c)
	}

	if c.Status.ClusterID == "" {
		if err := m.removeLeftoverSecrets(ctx, c); err != nil {
			return names.CASecrets{}, err
		}
	}
	// After the leftovers went: a new cluster does not take the legacy names from a Secret
	// the garbage collector is about to remove.
	cas, err := m.caSecrets(ctx, c)
	if err != nil {
		return names.CASecrets{}, err
	}
	return cas, m.ensureCASecrets(ctx, c, cas)
}

// ensureCASecrets makes, keeps and renews the CAs named cas and the leaf Secrets they sign.
func (m *Manager) ensureCASecrets(ctx context.Context, c *v1alpha1.EtcdCluster, cas names.CASecrets) error {
	// Two CAs: the cluster CA signs the server certificate and the client certificates (the
	// applications' and the operator's own); the peer CA signs the peer certificate alone, and
	// members trust only it on the peer port: a client certificate is no peer. Clusters made
	// before the peer CA existed keep a peer certificate from the cluster CA (renewals keep the
	// signer). A CA rotation (carotation.go) changes what signs and what is trusted by phase.
	if err := m.checkOwnSecrets(ctx, c, cas); err != nil {
		return err
	}
	now := time.Now()
	renewAll := renewAllRequested(c) && !c.Spec.Paused
	for _, k := range caKinds(c, cas) {
		a, err := m.authorityOf(ctx, c, k)
		if err != nil {
			return err
		}
		if s, err := m.secret(ctx, c.Namespace, k.base); err == nil {
			if err := m.keepSecret(ctx, c, s); err != nil {
				return err
			}
			recordExpiry(ctx, s, pki.KeyCACert)
		}
		for _, n := range k.leaves {
			if err := m.ensureLeaf(ctx, c, cas, n, a, leafRequest(c, n), renewAll, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeLeftoverSecrets deletes, before the cluster forms, the Secrets of its namespace that an
// earlier EtcdCluster of its name still controls (its volumeRetention was Delete and the
// garbage collector has not removed them yet): the cluster makes its own certificates rather
// than start on a CA the collector is about to take away. The reads that follow go to the API
// server (secretMemo holds nothing of a cluster deleted since), so none sees them.
func (m *Manager) removeLeftoverSecrets(ctx context.Context, c *v1alpha1.EtcdCluster) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	// (The cache keeps no Secret's labels: the owner reference tells.)
	if err := m.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
		return fmt.Errorf("listing the Secrets of EtcdCluster %s: %w", c.Name, err)
	}
	for i := range list.Items {
		if _, err := m.Objects.RemoveLeftover(ctx, c, &corev1.Secret{ObjectMeta: list.Items[i].ObjectMeta}); err != nil {
			return err
		}
	}
	return nil
}

// renewAllRequested: spec.tls.renewCertificates holds a token not acted on yet. The pass that
// renews every certificate records it (renewedAll) once the users' Secrets are renewed too.
func renewAllRequested(c *v1alpha1.EtcdCluster) bool {
	return c.Spec.TLS.RenewCertificates != "" && (c.Status.TLS == nil || c.Status.TLS.RenewedToken != c.Spec.TLS.RenewCertificates)
}

// renewedAll records that spec.tls.renewCertificates was acted on: never while paused, when
// only the certificates due are renewed.
func renewedAll(c *v1alpha1.EtcdCluster) Share {
	if !renewAllRequested(c) || c.Spec.Paused {
		return Share{}
	}
	return Share{tls: true, renewedToken: c.Spec.TLS.RenewCertificates}
}

// leafRequest is the certificate a generated leaf Secret holds.
func leafRequest(c *v1alpha1.EtcdCluster, secret string) pki.Request {
	serverDNS, peerDNS := serverNames(c)
	switch secret {
	case names.ServerSecret(c.Name):
		return pki.Request{CommonName: names.ServerCN(c.Name), DNSNames: serverDNS, IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, Usage: pki.ServerAndClient}
	case names.PeerSecret(c.Name):
		return pki.Request{CommonName: names.PeerCN(c.Name), DNSNames: peerDNS, Usage: pki.ServerAndClient}
	case names.OperatorSecret(c.Name):
		return pki.Request{CommonName: names.OperatorCN, Usage: pki.ClientOnly}
	}
	return pki.Request{CommonName: names.ClientCN, Usage: pki.ClientOnly}
}

// ensureLeaf issues a generated leaf Secret that is missing, brings it in line with a CA
// rotation, and renews it when a third of its lifetime is left or every certificate is to be
// renewed (spec.tls.renewCertificates).
func (m *Manager) ensureLeaf(ctx context.Context, c *v1alpha1.EtcdCluster, cas names.CASecrets, name string, a authority, req pki.Request, renewAll bool, now time.Time) error {
	req.Validity = m.certLifetime()
	s, err := m.secret(ctx, c.Namespace, name)
	if apierrors.IsNotFound(err) {
		pair, err := a.signer.Sign(req, now)
		if err != nil {
			return err
		}
		caPEM := a.bundle
		if caPEM == nil {
			caPEM = a.signer.CertPEM
		}
		if err := m.Create(ctx, tlsSecret(c, name, caPEM, pair)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating secret %s: %w", name, err)
		}
		m.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventCertificateIssued, "issued %s from %s", name, a.signer.Cert.Subject.CommonName)
		return nil
	}
	if err != nil {
		return err
	}
	if err := m.keepSecret(ctx, c, s); err != nil {
		return err
	}
	if wrote, err := m.conform(ctx, c, s, a, req, now); err != nil || wrote {
		return err
	}
	defer recordExpiry(ctx, s, pki.KeyCert)
	if (!renewAll && !m.renewalDue(s, now)) || !resources.Retained(c, s) {
		return nil
	}
	signer, caPEM := a.signer, a.bundle
	if caPEM == nil {
		// Renewed from the CA that signed it, whatever the current layout: members that
		// have not seen the new certificate yet must still trust it.
		caName := m.signerOf(ctx, c, cas, s)
		if caName == "" {
			return nil
		}
		if mutant.On("renew-wrong-ca") {
			caName = map[string]string{cas.Cluster: cas.Peer, cas.Peer: cas.Cluster}[caName]
		}
		if signer, err = m.ensureCA(ctx, c, caName); err != nil {
			return err
		}
		caPEM = signer.CertPEM
	}
	if end, err := pki.NotAfter(s.Data[pki.KeyCert]); !renewAll && err == nil && !end.Before(signer.Cert.NotAfter) {
		// It ends with its CA already (pki clamps leaves to their CA): a renewal would give
		// the same end. The CA's rotation, which the operator starts ahead of its end,
		// brings the next certificate.
		return nil
	}
	pair, err := signer.Sign(req, now)
	if err != nil {
		return err
	}
	return m.renew(ctx, c, s, signer, caPEM, pair)
}

// signerOf names the CA Secret whose certificate is the one s trusts (its ca.crt), or "" when
// none is (a Secret edited by hand is not renewed).
func (m *Manager) signerOf(ctx context.Context, c *v1alpha1.EtcdCluster, cas names.CASecrets, s *corev1.Secret) string {
	for _, n := range []string{cas.Cluster, cas.Peer} {
		if ca, err := m.secret(ctx, c.Namespace, n); err == nil && bytes.Equal(ca.Data[pki.KeyCACert], s.Data[pki.KeyCACert]) {
			return n
		}
	}
	logf.FromContext(ctx).Info("not renewing a certificate whose CA is none of the cluster's", "secret", s.Name)
	return ""
}

func (m *Manager) certLifetime() time.Duration {
	if m.CertLifetime > 0 {
		return m.CertLifetime
	}
	return pki.LeafValidity
}

// renewalDue: a generated leaf certificate is renewed once less than a third of the configured
// lifetime is left (one that does not parse is renewed too).
func (m *Manager) renewalDue(s *corev1.Secret, now time.Time) bool {
	end, err := pki.NotAfter(s.Data[pki.KeyCert])
	return err != nil || now.After(renewalTime(end, m.certLifetime()))
}

// renewalTime is when a generated certificate that ends at end is renewed: with a third of
// the lifetime left.
func renewalTime(end time.Time, lifetime time.Duration) time.Time {
	return end.Add(-lifetime / 3)
}

// renew replaces the certificate and key of a generated Secret in place. Members read their
// certificates from the mounted Secret on every new TLS handshake, so the new one reaches them
// when the kubelet updates the volume, without a restart; the old one stays valid meanwhile.
func (m *Manager) renew(ctx context.Context, c *v1alpha1.EtcdCluster, s *corev1.Secret, ca *pki.CA, caPEM []byte, pair pki.Pair) error {
	updated := s.DeepCopy()
	updated.Data[pki.KeyCert], updated.Data[pki.KeyKey], updated.Data[pki.KeyCACert] = pair.CertPEM, pair.KeyPEM, caPEM
	if err := m.Patch(ctx, updated, client.MergeFromWithOptions(s, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("renewing the certificate in secret %s: %w", s.Name, err)
	}
	end, _ := pki.NotAfter(pair.CertPEM)
	m.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventCertificateRenewed, "renewed %s from %s, valid until %s", s.Name, ca.Cert.Subject.CommonName, end.UTC().Format(time.RFC3339))
	recordExpiry(ctx, updated, pki.KeyCert)
	return nil
}

func (m *Manager) ensureCA(ctx context.Context, c *v1alpha1.EtcdCluster, name string) (*pki.CA, error) {
	s, err := m.secret(ctx, c.Namespace, name)
	if err == nil {
		if err := m.ofThisCluster(c, s); err != nil {
			return nil, err
		}
		ca, err := pki.LoadCA(s.Data[pki.KeyCACert], s.Data[pki.KeyCAKey])
		if err == nil && madeFor(c, s) {
			// (Another cluster's CA, which this one formed on, rotates with that cluster.)
			m.cas.seen(c, name, ca.Cert)
		}
		return ca, err
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	ca, err := pki.NewCA(name, time.Now())
	if err != nil {
		return nil, err
	}
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: names.ClusterLabels(c.Name)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM},
	}
	resources.SetRetention(c, s)
	if err := m.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another pass won; use its CA so every certificate chains to the same root.
			return m.ensureCA(ctx, c, name)
		}
		return nil, fmt.Errorf("creating CA secret %s: %w", name, err)
	}
	m.cas.seen(c, name, ca.Cert)
	return ca, nil
}

// ofThisCluster refuses a certificate Secret that another cluster made, or that the operator
// did not make: names of two clusters could collide (under the legacy CA names, cluster foo's
// peer CA and cluster foo-peer's CA are both foo-peer-ca; a user's Secret can take any name),
// and a CA or certificate loaded without this check
// would make one cluster trust, or serve, another's. A Secret is this cluster's if the cluster
// controls it or its retention annotation names the cluster's UID, or if it carries the
// cluster's name label (an earlier EtcdCluster of this name retained it). Only a cluster that
// has not formed stops on another's Secret: one that formed with it (before this check) keeps
// running on it, with a SecretCollision Event, as refusing would stop its every pass.
func (m *Manager) ofThisCluster(c *v1alpha1.EtcdCluster, s *corev1.Secret) error {
	if madeFor(c, s) {
		return nil
	}
	whose := "was not made by the operator for an EtcdCluster"
	if other := s.Labels[names.LabelCluster]; other != "" {
		whose = fmt.Sprintf("belongs to EtcdCluster %s: the two clusters' Secret names collide", other)
	}
	if c.Status.ClusterID != "" {
		m.Recorder.Eventf(c, corev1.EventTypeWarning, v1alpha1.EventSecretCollision,
			"secret %s, which this cluster uses for its certificates, %s; both clusters keep using it. Move one cluster's data into an EtcdCluster of a name that does not collide (a backup and a restore)", s.Name, whose)
		return nil
	}
	return fmt.Errorf("secret %s, which EtcdCluster %s needs for its certificates, %s; the Secret is left alone. Create this cluster under another name", s.Name, c.Name, whose)
}

// checkOwnSecrets refuses, before any Secret is written, a cluster whose CA or certificate
// Secrets another cluster made (ofThisCluster): a pass that stopped halfway would have renewed
// some of them first.
func (m *Manager) checkOwnSecrets(ctx context.Context, c *v1alpha1.EtcdCluster, cas names.CASecrets) error {
	for _, k := range caKinds(c, cas) {
		for _, n := range append([]string{k.base}, k.leaves...) {
			s, err := m.secret(ctx, c.Namespace, n)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if err := m.ofThisCluster(c, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// ClientTLS is the TLS configuration the operator uses to talk to the cluster's members.
func (m *Manager) ClientTLS(ctx context.Context, c *v1alpha1.EtcdCluster) (*tls.Config, error) {
	if !c.Spec.TLS.IsEnabled() {
		return nil, nil
	}
	// The operator's own client certificate; clusters made before it existed use the
	// applications' one.
	name := names.OperatorSecret(c.Name)
	if c.Spec.TLS.UserProvided() {
		name = c.Spec.TLS.ClientSecretName
	}
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	cred, err := m.clientCred(ctx, cluster, name)
	if apierrors.IsNotFound(err) && !c.Spec.TLS.UserProvided() {
		name = names.ClientSecret(c.Name)
		cred, err = m.clientCred(ctx, cluster, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading client certificate secret %s: %w", name, err)
	}
	return pki.ClientTLS(cred.cert, cred.key, cred.ca, names.ClientHost(c.Name, c.Namespace))
}
