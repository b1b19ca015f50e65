package certificates

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// A pass dials with the client certificate kept from the Secret, read from the API server
// only the first time and after the Secret changed, and taken from the memo when the memo has
// it; the memo then keeps no copy of the Secret. A deleted cluster's certificate is forgotten.
func TestClientCreds(t *testing.T) {
	ctx := context.Background()
	cluster := types.NamespacedName{Namespace: "ns", Name: "demo"}
	key := types.NamespacedName{Namespace: "ns", Name: names.OperatorSecret("demo")}
	store := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{names.LabelCluster: "demo"}},
		Data:       map[string][]byte{pki.KeyCert: []byte("cert-1"), pki.KeyKey: []byte("key-1"), pki.KeyCACert: []byte("ca-1")}}).Build()
	liveReads := 0
	live := interceptor.NewClient(store, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		liveReads++
		return c.Get(ctx, k, obj, opts...)
	}})
	r := &Manager{Client: store, APIReader: live}
	rv := func() string {
		t.Helper()
		s := &corev1.Secret{}
		if err := store.Get(ctx, key, s); err != nil {
			t.Fatal(err)
		}
		return s.ResourceVersion
	}
	step := func(name string, want clientCred, wantLive int) {
		t.Helper()
		got, err := r.clientCred(ctx, cluster, key.Name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, got, cmp.AllowUnexported(clientCred{})); d != "" || liveReads != wantLive {
			t.Errorf("%s: %d reads from the API server (want %d), certificate (-want +got):\n%s", name, liveReads, wantLive, d)
		}
		if n := len(r.secrets.secrets); n != 0 {
			t.Errorf("%s: the memo keeps %d Secrets", name, n)
		}
	}
	first := clientCred{cluster: "demo", resourceVersion: rv(), cert: []byte("cert-1"), key: []byte("key-1"), ca: []byte("ca-1")}
	step("first pass", first, 1)
	step("the Secret unchanged", first, 1)

	s := &corev1.Secret{}
	if err := store.Get(ctx, key, s); err != nil {
		t.Fatal(err)
	}
	s.Data[pki.KeyCert] = []byte("cert-2")
	if err := store.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	renewed := clientCred{cluster: "demo", resourceVersion: rv(), cert: []byte("cert-2"), key: []byte("key-1"), ca: []byte("ca-1")}
	step("the certificate renewed", renewed, 2)

	// A TLS pass read the Secret again (it reads it at least hourly): the certificate is
	// still the one kept, and the memo drops the Secret.
	r.secrets.secrets = map[types.NamespacedName]*corev1.Secret{key: s.DeepCopy()}
	step("after a TLS pass read the Secret", renewed, 2)

	// The operator writes the Secret: the certificate kept is dropped at once, before the
	// cache has seen the write.
	writer := memoClient{Client: store, memo: &r.secrets}
	s.Data[pki.KeyCert] = []byte("cert-3")
	if err := writer.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.secrets.cred(key); ok {
		t.Errorf("the certificate is still kept after the operator wrote its Secret")
	}
	written := clientCred{cluster: "demo", resourceVersion: rv(), cert: []byte("cert-3"), key: []byte("key-1"), ca: []byte("ca-1")}
	step("after the operator wrote it", written, 3)

	// After a restart, the memo holds the Secret from the cluster's first list (warm).
	r.secrets = secretMemo{secrets: map[types.NamespacedName]*corev1.Secret{key: s.DeepCopy()}}
	step("from the memo after a restart", written, 3)

	r.secrets.forget(cluster)
	if _, ok := r.secrets.cred(key); ok {
		t.Errorf("the certificate of a deleted cluster is still kept")
	}
}
