package certificates

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// The names of a cluster's CA Secrets are decided the same way on every pass, from what the
// Secrets show: current names once the cluster has its current CA, whatever appears under a
// legacy name; legacy names for a cluster whose legacy CA was made for it, or whose leaves
// trust a legacy-named CA another made (it formed on it); current names otherwise.
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
	fooPeerCA, ownCA := newCA("foo-peer-ca"), newCA(cur.Cluster)
	secret := func(name, cluster string, ca []byte) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string][]byte{pki.KeyCACert: ca}}
		if cluster != "" {
			s.Labels = names.ClusterLabels(cluster)
		}
		return s
	}
	// leaves are foo-peer's server and peer Secrets, trusting ca.
	leaves := func(ca []byte) []client.Object {
		return []client.Object{secret(names.ServerSecret("foo-peer"), "foo-peer", ca), secret(names.PeerSecret("foo-peer"), "foo-peer", ca)}
	}
	for _, tc := range []struct {
		name    string
		formed  bool
		secrets []client.Object
		want    names.CASecrets
	}{
		{"a new cluster", false, nil, cur},
		{"a new cluster; its legacy name is foo's peer CA", false, []client.Object{secret(legacy.Cluster, "foo", fooPeerCA)}, cur},
		{"formed on its own CAs; foo's peer CA under its legacy name", true,
			append(leaves(ownCA), secret(cur.Cluster, "foo-peer", ownCA), secret(legacy.Cluster, "foo", fooPeerCA)), cur},
		{"formed on its own CAs, the current one not seen yet; foo's peer CA under its legacy name", true,
			append(leaves(ownCA), secret(legacy.Cluster, "foo", fooPeerCA)), cur},
		{"its current CA, and a legacy one made for it later (an operator rolled back)", true,
			append(leaves(ownCA), secret(cur.Cluster, "foo-peer", ownCA), secret(legacy.Cluster, "foo-peer", newCA(legacy.Cluster))), cur},
		{"a cluster from before the current names", true, append(leaves(fooPeerCA), secret(legacy.Cluster, "foo-peer", fooPeerCA)), legacy},
		{"a cluster from before the current names, not formed yet", false, []client.Object{secret(legacy.Cluster, "foo-peer", fooPeerCA)}, legacy},
		{"a cluster from before the current names whose cluster CA Secret was deleted", true,
			append(leaves(fooPeerCA), secret(legacy.Peer, "foo-peer", newCA(legacy.Peer))), legacy},
		{"formed on foo's peer CA before Secrets were checked", true, append(leaves(fooPeerCA), secret(legacy.Cluster, "foo", fooPeerCA)), legacy},
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
