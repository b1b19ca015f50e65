package certificates

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// The names of a cluster's CA Secrets are decided the same way on every pass, each CA on its
// own, from what the Secrets show: a formed cluster keeps the CA its leaves trust (the current
// name first), whoever made it; else the one made for it (current first); else the current
// name, which no other cluster's Secret can take.
func TestCASecrets(t *testing.T) {
	ctx := context.Background()
	cur, legacy := names.CASecretsOf("foo-peer"), names.LegacyCASecretsOf("foo-peer")
	newCA := func(name string) []byte {
		t.Helper()
		ca, err := pki.NewCA(name, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return ca.CertPEM
	}
	fooPeerCA, ownCA, ownPeerCA, legacyCA, legacyPeerCA := newCA("foo-peer-ca"), newCA(cur.Cluster), newCA(cur.Peer), newCA(legacy.Cluster), newCA(legacy.Peer)
	secret := func(name, cluster string, ca []byte) client.Object {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{pki.KeyCACert: ca}}
		if cluster != "" {
			s.Labels = names.ClusterLabels(cluster)
		}
		return s
	}
	// leaves are foo-peer's server and operator Secrets trusting ca, and its peer Secret
	// trusting peerCA.
	leaves := func(ca, peerCA []byte, more ...client.Object) []client.Object {
		return append([]client.Object{secret(names.ServerSecret("foo-peer"), "foo-peer", ca), secret(names.OperatorSecret("foo-peer"), "foo-peer", ca),
			secret(names.PeerSecret("foo-peer"), "foo-peer", peerCA)}, more...)
	}
	for _, tc := range []struct {
		name    string
		formed  bool
		secrets []client.Object
		want    names.CASecrets
	}{
		{"a new cluster", false, nil, cur},
		{"a new cluster; its legacy CA name is foo's peer CA", false, []client.Object{secret(legacy.Cluster, "foo", fooPeerCA)}, cur},
		{"formed on its own CAs; foo's peer CA under its legacy name", true,
			leaves(ownCA, ownPeerCA, secret(cur.Cluster, "foo-peer", ownCA), secret(cur.Peer, "foo-peer", ownPeerCA), secret(legacy.Cluster, "foo", fooPeerCA)), cur},
		{"formed on its own CAs, not read yet; foo's peer CA under its legacy name", true,
			leaves(ownCA, ownPeerCA, secret(legacy.Cluster, "foo", fooPeerCA)), cur},
		{"its current CAs, and legacy ones made for it later (an operator rolled back) that nothing trusts", true,
			leaves(ownCA, ownPeerCA, secret(cur.Cluster, "foo-peer", ownCA), secret(cur.Peer, "foo-peer", ownPeerCA),
				secret(legacy.Cluster, "foo-peer", legacyCA), secret(legacy.Peer, "foo-peer", legacyPeerCA)), cur},
		{"its current CAs, and legacy ones an operator rolled back made and rotated its leaves to", true,
			leaves(legacyCA, legacyPeerCA, secret(cur.Cluster, "foo-peer", ownCA), secret(cur.Peer, "foo-peer", ownPeerCA),
				secret(legacy.Cluster, "foo-peer", legacyCA), secret(legacy.Peer, "foo-peer", legacyPeerCA)), legacy},
		{"a cluster from before the current names", true,
			leaves(legacyCA, legacyPeerCA, secret(legacy.Cluster, "foo-peer", legacyCA), secret(legacy.Peer, "foo-peer", legacyPeerCA)), legacy},
		{"a cluster from before the current names, not formed yet", false,
			[]client.Object{secret(legacy.Cluster, "foo-peer", legacyCA), secret(legacy.Peer, "foo-peer", legacyPeerCA)}, legacy},
		{"a cluster from before the current names whose cluster CA Secret was deleted", true,
			leaves(legacyCA, legacyPeerCA, secret(legacy.Peer, "foo-peer", legacyPeerCA)), names.CASecrets{Cluster: cur.Cluster, Peer: legacy.Peer}},
		{"a cluster from before the peer CA (its peer certificate from the cluster CA)", true,
			leaves(legacyCA, legacyCA, secret(legacy.Cluster, "foo-peer", legacyCA)), names.CASecrets{Cluster: legacy.Cluster, Peer: cur.Peer}},
		{"formed on foo's peer CA before Secrets were checked", true,
			leaves(fooPeerCA, legacyPeerCA, secret(legacy.Cluster, "foo", fooPeerCA), secret(legacy.Peer, "foo-peer", legacyPeerCA)), legacy},
		{"a foreign Secret under the legacy name with an empty ca.crt", true,
			leaves(ownCA, ownPeerCA, secret(legacy.Cluster, "foo", []byte(" \n"))), cur},
		{"a current CA Secret another made, and nothing legacy", false, []client.Object{secret(cur.Cluster, "", ownCA)}, cur},
	} {
		store := fake.NewClientBuilder().WithObjects(tc.secrets...).Build()
		m := &Manager{Client: store, APIReader: store}
		c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "foo-peer", UID: "u-1"}}
		if tc.formed {
			c.Status.ClusterID = "c1a55"
		}
		got, err := m.caSecrets(ctx, c)
		if err != nil || got != tc.want {
			t.Errorf("%s: caSecrets = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// A CA Secret another cluster made, which this cluster formed on before Secrets were checked,
// is never written from this cluster: a CA rotation leaves it alone (Dropping would move this
// cluster's next CA into it), and adopting retained volumes does not take it over (deleting
// the other cluster would then delete it).
func TestAnotherClustersCAIsNotWritten(t *testing.T) {
	ctx := context.Background()
	legacy := names.LegacyCASecretsOf("foo-peer")
	ca, err := pki.NewCA(legacy.Cluster, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	next, err := pki.NewCA(legacy.Cluster+"-next", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: legacy.Cluster, Labels: names.ClusterLabels("foo"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "etcd.quorate.dev/v1alpha1", Kind: "EtcdCluster", Name: "foo", UID: "u-foo", Controller: ptr.To(true)}}},
		Data: map[string][]byte{pki.KeyCACert: ca.CertPEM, pki.KeyCAKey: ca.KeyPEM}}
	nextSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: nextCA(legacy.Cluster), Labels: names.ClusterLabels("foo-peer")},
		Data: map[string][]byte{pki.KeyCACert: next.CertPEM, pki.KeyCAKey: next.KeyPEM}}
	store := fake.NewClientBuilder().WithObjects(foreign, nextSecret).Build()
	m := &Manager{Client: store, APIReader: store, Recorder: record.NewFakeRecorder(100)}
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "foo-peer", UID: "u-1"}}
	c.Status.ClusterID = "c1a55"
	c.Spec.AdoptRetainedVolumes = true
	c.Status.TLS = &v1alpha1.TLSStatus{CARotation: &v1alpha1.CARotationStatus{Token: "r1", Phase: v1alpha1.CARotationDropping}}
	a, err := m.authorityOf(ctx, c, caKind{base: legacy.Cluster, leaves: []string{names.ServerSecret("foo-peer")}})
	if err != nil {
		t.Fatal(err)
	}
	if !a.signer.Cert.Equal(ca.Cert) || a.bundle != nil {
		t.Errorf("authority of another cluster's CA in Dropping: signer %s, bundle %d bytes; want that CA, as outside a rotation", a.signer.Cert.Subject.CommonName, len(a.bundle))
	}
	if err := m.keepSecret(ctx, c, foreign.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	after := &corev1.Secret{}
	if err := store.Get(ctx, client.ObjectKeyFromObject(foreign), after); err != nil {
		t.Fatal(err)
	}
	if string(after.Data[pki.KeyCACert]) != string(ca.CertPEM) || len(after.OwnerReferences) != 1 || after.OwnerReferences[0].UID != "u-foo" || len(after.Annotations) != 0 {
		t.Errorf("another cluster's CA Secret was written: owners %+v, annotations %v", after.OwnerReferences, after.Annotations)
	}
}
