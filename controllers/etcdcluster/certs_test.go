package etcdcluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
)

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	c, err := pki.ParseCert(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Generated certificates are renewed in their Secrets with a third of their lifetime left,
// from the CA that signed them, which does not change.
func TestCertificatesAreRenewed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	const lifetime = 9 * time.Second
	startWith(t, ns, etcd.NewFake("3.6.16"), "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.CertLifetime = lifetime })
	if err := k8s.Create(ctx, newCluster(ns, "rot", 1)); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *corev1.Secret {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	server, peer := names.ServerSecret("rot"), names.PeerSecret("rot")
	eventually(t, timeout, "the certificates", func() error {
		for _, n := range []string{server, peer} {
			if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &corev1.Secret{}); err != nil {
				return err
			}
		}
		return nil
	})
	first := map[string]*corev1.Secret{server: get(server), peer: get(peer)}
	for n, s := range first {
		c := parseCert(t, s.Data[pki.KeyCert])
		if got := c.NotAfter.Sub(c.NotBefore); got != lifetime+time.Hour { // issued backdated by an hour
			t.Errorf("%s lives %s, want %s plus the hour it is backdated", n, got, lifetime)
		}
	}
	for n, old := range first {
		eventually(t, timeout, n+" renewed", func() error {
			s := get(n)
			if string(s.Data[pki.KeyCert]) == string(old.Data[pki.KeyCert]) {
				return fmt.Errorf("still the first certificate")
			}
			if string(s.Data[pki.KeyCACert]) != string(old.Data[pki.KeyCACert]) {
				return fmt.Errorf("renewed against another CA")
			}
			if string(s.Data[pki.KeyKey]) == string(old.Data[pki.KeyKey]) {
				return fmt.Errorf("renewed with the same key")
			}
			prev, now := parseCert(t, old.Data[pki.KeyCert]), parseCert(t, s.Data[pki.KeyCert])
			if !now.NotAfter.After(prev.NotAfter) {
				return fmt.Errorf("the new certificate ends %s, not after the old %s", now.NotAfter, prev.NotAfter)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(s.Data[pki.KeyCACert])
			if _, err := now.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				return fmt.Errorf("the new certificate does not chain to ca.crt: %v", err)
			}
			return nil
		})
	}
	assertEvent(t, ns, v1alpha1.EventCertificateRenewed, "renewed "+server+" from "+names.CASecretsOf("rot").Cluster+", valid until ")
	assertEvent(t, ns, v1alpha1.EventCertificateRenewed, "renewed "+peer+" from "+names.CASecretsOf("rot").Peer+", valid until ")
}

// A CA rotation goes through its phases, each only once the cluster settled in the last and
// the propagation delay passed: first every ca.crt trusts both CAs and the members restart,
// then every certificate is reissued by the new CA (no restart), then the new CA becomes the
// CA, every ca.crt trusts it alone and the members restart again. A renewal token renews every
// certificate from the same CA, once.
func TestCARotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.CertPropagation = 2 * time.Second })
	bootstrap(t, ns, "demo", 3, fake)
	get := func(name string) *corev1.Secret {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	leaves := []string{names.ServerSecret("demo"), names.PeerSecret("demo"), names.ClientSecret("demo"), names.OperatorSecret("demo")}
	oldCA, oldPeerCA := get(names.CASecretsOf("demo").Cluster), get(names.CASecretsOf("demo").Peer)
	count := func(pem []byte) int { return strings.Count(string(pem), "BEGIN CERTIFICATE") }

	// Renewal: new certificates, same CA, once.
	before := get(names.ServerSecret("demo"))
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) { c.Spec.TLS.RenewCertificates = "r1" })
	waitFor(t, ns, "demo", "the renewal", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.TLS == nil || c.Status.TLS.RenewedToken != "r1" {
			return fmt.Errorf("status.tls %+v", c.Status.TLS)
		}
		return nil
	})
	if after := get(names.ServerSecret("demo")); string(after.Data[pki.KeyCert]) == string(before.Data[pki.KeyCert]) || string(after.Data[pki.KeyCACert]) != string(before.Data[pki.KeyCACert]) {
		t.Fatal("the renewal did not renew the server certificate, or changed its CA")
	}

	podUIDs, stopWatch := watchPodUIDs(t, ns)
	defer stopWatch()
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) { c.Spec.TLS.RotateCA = "ca-2" })
	phases := []string{}
	waitFor(t, ns, "demo", "the rotation to complete", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.TLS == nil || c.Status.TLS.CARotation == nil {
			return fmt.Errorf("no rotation yet")
		}
		p := c.Status.TLS.CARotation.Phase
		if len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
			// Each phase's Secrets, as the phase begins to be true.
			switch p {
			case v1alpha1.CARotationReissuing:
				for _, l := range leaves {
					if n := count(get(l).Data[pki.KeyCACert]); n != 2 {
						t.Errorf("in Reissuing %s trusts %d CAs, want the old and the new", l, n)
					}
				}
			}
		}
		if p != v1alpha1.CARotationCompleted {
			return fmt.Errorf("phase %s", p)
		}
		return nil
	})
	if want := []string{v1alpha1.CARotationTrusting, v1alpha1.CARotationReissuing, v1alpha1.CARotationDropping, v1alpha1.CARotationCompleted}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	newCA, newPeerCA := get(names.CASecretsOf("demo").Cluster), get(names.CASecretsOf("demo").Peer)
	if string(newCA.Data[pki.KeyCACert]) == string(oldCA.Data[pki.KeyCACert]) || string(newPeerCA.Data[pki.KeyCACert]) == string(oldPeerCA.Data[pki.KeyCACert]) {
		t.Fatal("the CAs were not replaced")
	}
	for _, l := range leaves {
		s := get(l)
		ca := newCA
		if l == names.PeerSecret("demo") {
			ca = newPeerCA
		}
		if string(s.Data[pki.KeyCACert]) != string(ca.Data[pki.KeyCACert]) {
			t.Errorf("%s trusts %d CAs after the rotation, want the new one alone", l, count(s.Data[pki.KeyCACert]))
		}
		if err := parseCert(t, s.Data[pki.KeyCert]).CheckSignatureFrom(parseCert(t, ca.Data[pki.KeyCACert])); err != nil {
			t.Errorf("%s is not signed by the new CA: %v", l, err)
		}
	}
	for _, n := range []string{names.CASecretsOf("demo").Cluster + "-next", names.CASecretsOf("demo").Peer + "-next"} {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s is still there: %v", n, err)
		}
	}
	// Each member restarted twice: to trust both CAs, then the new one alone (pods seen by
	// the watcher above: Events are rate-limited per object and cannot be counted on).
	stopWatch()
	for _, m := range []string{"demo-0", "demo-1", "demo-2"} {
		if n := len(podUIDs[m]); n != 3 {
			t.Errorf("%s ran in %d pods, want 3 (the first, then one per trust change)", m, n)
		}
	}
}

// A CA with less than a fifth of its lifetime left is rotated by the operator itself, with no
// token asked for, through the same phases; the status says it was automatic, the new CA is
// young, the leaves are its, and the operator does not rotate again.
func TestCARotatedAheadOfItsExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.CertPropagation = 2 * time.Second })
	// CAs made nine years ago (of ten), as an earlier EtcdCluster of this name left them.
	old := map[string][]byte{}
	for _, n := range []string{names.CASecretsOf("old").Cluster, names.CASecretsOf("old").Peer} {
		ca, err := pki.NewCA(n, time.Now().Add(-9*365*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		old[n] = ca.CertPEM
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: names.ClusterLabels("old")},
			Data: map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}}
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	bootstrap(t, ns, "old", 3, fake)
	c := waitFor(t, ns, "old", "an automatic rotation completed", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.TLS == nil || c.Status.TLS.CARotation == nil || c.Status.TLS.CARotation.Phase != v1alpha1.CARotationCompleted {
			return fmt.Errorf("status.tls %+v", c.Status.TLS)
		}
		return nil
	})
	rot := c.Status.TLS.CARotation
	if !rot.Automatic || !strings.HasPrefix(rot.Token, "auto-") || rot.SpecToken != "" {
		t.Errorf("the rotation's record %+v, want an automatic one", rot)
	}
	waitFor(t, ns, "old", "the cluster settled", settled(3))
	for n, before := range old {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, s); err != nil {
			t.Fatal(err)
		}
		if string(s.Data[pki.KeyCACert]) == string(before) {
			t.Fatalf("%s still holds the old CA", n)
		}
		if ca := parseCert(t, s.Data[pki.KeyCACert]); time.Until(ca.NotAfter) < 9*365*24*time.Hour {
			t.Errorf("%s's new CA ends %s", n, ca.NotAfter)
		}
	}
	server := &corev1.Secret{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.ServerSecret("old")}, server); err != nil {
		t.Fatal(err)
	}
	if end := parseCert(t, server.Data[pki.KeyCert]).NotAfter; time.Until(end) < 80*24*time.Hour {
		t.Errorf("the server certificate ends %s: not reissued by the new CA", end)
	}
	// Once replaced, the CA is not due: the record stays as it is.
	if c := getCluster(t, ns, "old"); c.Status.TLS.CARotation.Token != rot.Token || c.Status.TLS.CARotation.Phase != v1alpha1.CARotationCompleted {
		t.Errorf("another rotation: %+v", c.Status.TLS.CARotation)
	}
}

// watchPodUIDs records the UID of every pod in ns from now until stop returns: a watch from
// the listed resourceVersion, resumed from the last event it received, so that a pod that
// lived for less than a polling interval, or while the API server was slow to answer, is seen
// as well.
func watchPodUIDs(t *testing.T, ns string) (map[string]map[types.UID]bool, func()) {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]map[types.UID]bool{}
	record := func(p *corev1.Pod) {
		if uids[p.Name] == nil {
			uids[p.Name] = map[types.UID]bool{}
		}
		uids[p.Name][p.UID] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	var list corev1.PodList
	if err := wc.List(ctx, &list, client.InNamespace(ns)); err != nil {
		cancel()
		t.Fatal(err)
	}
	for i := range list.Items {
		record(&list.Items[i])
	}
	rv := list.ResourceVersion
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*corev1.Pod); ok {
					record(p)
					rv = p.ResourceVersion
				}
			}
			w.Stop()
		}
	}()
	return uids, func() {
		cancel()
		<-done
	}
}

// While spec.paused, certificates that are due are still renewed (the operator's, the members'
// and the users'): an expired certificate would break the cluster pausing means to leave
// alone. A renewCertificates token is not acted on, nor recorded as done, until the cluster is
// resumed.
func TestCertificatesRenewedWhilePaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	const lifetime = 9 * time.Second
	fake := etcd.NewFake("3.6.16")
	startWith(t, ns, fake, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.CertLifetime = lifetime })
	kubelet(t, ns)
	c := newCluster(ns, "held", 1)
	c.Spec.Users = []v1alpha1.UserSpec{{Name: "orders", ReadWrite: []string{"/orders/"}}}
	bootstrapCluster(t, c, fake)
	secrets := []string{names.ServerSecret("held"), names.PeerSecret("held"), names.UserSecret("held", "orders")}
	certOf := func(name string) (string, error) {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			return "", err
		}
		return string(s.Data[pki.KeyCert]), nil
	}
	first := map[string]string{}
	eventually(t, timeout, "the certificates", func() error {
		for _, n := range secrets {
			cert, err := certOf(n)
			if err != nil {
				return err
			}
			first[n] = cert
		}
		return nil
	})
	patchCluster(t, ns, "held", func(c *v1alpha1.EtcdCluster) { c.Spec.Paused, c.Spec.TLS.RenewCertificates = true, "r1" })
	for _, n := range secrets {
		eventually(t, timeout, n+" renewed while paused", func() error {
			cert, err := certOf(n)
			if err != nil {
				return err
			}
			if cert == first[n] {
				return fmt.Errorf("still the certificate from before the pause")
			}
			return nil
		})
	}
	if got := getCluster(t, ns, "held").Status.TLS; got != nil && got.RenewedToken == "r1" {
		t.Fatalf("renewCertificates r1 was recorded as done while paused: %+v", got)
	}
	patchCluster(t, ns, "held", func(c *v1alpha1.EtcdCluster) { c.Spec.Paused = false })
	waitFor(t, ns, "held", "r1 acted on once resumed", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.TLS == nil || c.Status.TLS.RenewedToken != "r1" {
			return fmt.Errorf("status.tls %+v", c.Status.TLS)
		}
		return nil
	})
}

// Under the legacy CA names, cluster foo's peer CA and cluster foo-peer's CA were both
// foo-peer-ca. A cluster that has its legacy CA keeps the legacy names; a new cluster whose
// legacy name another cluster's Secret has taken, and every other new cluster, takes
// names.CASecretsOf, which cannot collide: foo (legacy) and foo-peer, and bar and bar-peer
// (both new), each run on CAs of their own, and one cluster's client certificate does not
// chain to the other's peer CA. A Secret under a new cluster's CA name that the operator did
// not make for it is refused (TLSNotReady), and left alone.
func TestClustersWhoseNamesCollideHaveTheirOwnCAs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	get := func(name string) (*corev1.Secret, error) {
		s := &corev1.Secret{}
		return s, k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
	}
	mustGet := func(name string) *corev1.Secret {
		t.Helper()
		var s *corev1.Secret
		eventually(t, timeout, "secret "+name, func() (err error) { s, err = get(name); return err })
		return s
	}
	// foo as an operator from before names.CASecretsOf left it: its CAs under the legacy names.
	legacy := names.LegacyCASecretsOf("foo")
	for _, n := range []string{legacy.Cluster, legacy.Peer} {
		ca, err := pki.NewCA(n, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n, Labels: names.ClusterLabels("foo")},
			Data: map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"foo", "bar", "bar-peer"} {
		if err := k8s.Create(ctx, newCluster(ns, n, 1)); err != nil {
			t.Fatal(err)
		}
	}
	fooPeerCA := mustGet(legacy.Peer) // foo-peer-ca: foo's peer CA, foo-peer's legacy CA name
	if err := k8s.Create(ctx, newCluster(ns, "foo-peer", 1)); err != nil {
		t.Fatal(err)
	}
	want := map[string]names.CASecrets{"foo": legacy, "foo-peer": names.CASecretsOf("foo-peer"), "bar": names.CASecretsOf("bar"), "bar-peer": names.CASecretsOf("bar-peer")}
	peerRoots := map[string]*x509.CertPool{}
	for cluster, cas := range want {
		ca, peerCA := mustGet(cas.Cluster), mustGet(cas.Peer)
		for _, s := range []*corev1.Secret{ca, peerCA} {
			if s.Labels[names.LabelCluster] != cluster {
				t.Errorf("CA secret %s has cluster label %q, want %s", s.Name, s.Labels[names.LabelCluster], cluster)
			}
		}
		for leaf, signer := range map[string]*corev1.Secret{names.ServerSecret(cluster): ca, names.ClientSecret(cluster): ca, names.PeerSecret(cluster): peerCA} {
			if got := mustGet(leaf); string(got.Data[pki.KeyCACert]) != string(signer.Data[pki.KeyCACert]) {
				t.Errorf("%s trusts a CA other than %s's own %s", leaf, cluster, signer.Name)
			}
		}
		peerRoots[cluster] = x509.NewCertPool()
		peerRoots[cluster].AddCert(parseCert(t, peerCA.Data[pki.KeyCACert]))
	}
	for _, n := range []string{names.CASecretsOf("foo").Cluster, names.CASecretsOf("foo").Peer} {
		if _, err := get(n); !apierrors.IsNotFound(err) {
			t.Errorf("foo, a cluster with its legacy CA, has a CA secret %s too (%v)", n, err)
		}
	}
	if after := mustGet(legacy.Peer); after.ResourceVersion != fooPeerCA.ResourceVersion {
		t.Errorf("foo's peer CA %s was changed by foo-peer's passes", legacy.Peer)
	}
	// A client certificate of one cluster is no peer of the other: it does not chain to the
	// other's peer CA (members trust it alone on the peer port), while the peer's own does.
	verify := func(leaf string, roots *x509.CertPool) error {
		_, err := parseCert(t, mustGet(leaf).Data[pki.KeyCert]).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}
	for _, pair := range [][2]string{{"foo", "foo-peer"}, {"foo-peer", "foo"}, {"bar", "bar-peer"}, {"bar-peer", "bar"}} {
		if err := verify(names.ClientSecret(pair[0]), peerRoots[pair[1]]); err == nil {
			t.Errorf("%s's client certificate chains to %s's peer CA", pair[0], pair[1])
		}
		if err := verify(names.PeerSecret(pair[1]), peerRoots[pair[1]]); err != nil {
			t.Errorf("%s's own peer certificate does not chain to its peer CA: %v", pair[1], err)
		}
	}
	for _, n := range []string{"foo", "foo-peer", "bar", "bar-peer"} {
		eventually(t, timeout, n+"'s member", func() error {
			if pods := objectNames(t, ns, &corev1.PodList{}); !slices.Contains(pods, names.Member(n, 0)) {
				return fmt.Errorf("no pod %s among %v", names.Member(n, 0), pods)
			}
			return nil
		})
	}

	// A Secret of the new CA name that the operator did not make for the cluster.
	taken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CASecretsOf("baz").Cluster}, Data: map[string][]byte{"x": []byte("y")}}
	if err := k8s.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, newCluster(ns, "baz", 1)); err != nil {
		t.Fatal(err)
	}
	msg := "secret baz.ca, which EtcdCluster baz needs for its certificates, was not made by the operator for an EtcdCluster; the Secret is left alone. Create this cluster under another name"
	wantCondition(t, ns, "baz", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonTLSNotReady, msg))
	if pods := objectNames(t, ns, &corev1.PodList{}); slices.Contains(pods, "baz-0") {
		t.Fatalf("baz started a member on a CA it did not make: pods %v", pods)
	}
	if after, err := get(taken.Name); err != nil || after.ResourceVersion != taken.ResourceVersion {
		t.Fatalf("the Secret baz.ca was changed by baz's passes (%v)", err)
	}
}
