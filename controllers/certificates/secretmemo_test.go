package certificates

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/internal/names"
)

// The memo reads a Secret from the API server only when the cache's resourceVersion differs
// from the one it read last: after the operator wrote it, after anyone else did, or the first
// time; and it forgets a deleted Secret.
func TestSecretMemo(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "demo-ca"}
	store := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{names.LabelCluster: "demo"}},
		Data:       map[string][]byte{"ca.crt": []byte("one")}}).Build()
	liveReads := 0
	live := interceptor.NewClient(store, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		liveReads++
		return c.Get(ctx, k, obj, opts...)
	}})
	memo := &secretMemo{}
	writer := memoClient{Client: store, memo: memo}
	read := func(step string, wantData string, wantLive int) {
		t.Helper()
		s, err := memo.get(ctx, store, live, key)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if string(s.Data["ca.crt"]) != wantData || liveReads != wantLive {
			t.Fatalf("%s: read %q with %d reads from the API server, want %q with %d", step, s.Data["ca.crt"], liveReads, wantData, wantLive)
		}
	}
	read("first read", "one", 1)
	read("unchanged", "one", 1)
	read("unchanged again", "one", 1)

	s := &corev1.Secret{}
	if err := store.Get(ctx, key, s); err != nil {
		t.Fatal(err)
	}
	s.Data["ca.crt"] = []byte("two")
	if err := writer.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	read("written by the operator", "two", 2)
	read("unchanged after the write", "two", 2)

	s.Data["ca.crt"] = []byte("three")
	if err := store.Update(ctx, s); err != nil { // someone else
		t.Fatal(err)
	}
	read("written by someone else", "three", 3)

	// A copy handed out is the caller's to change.
	got, _ := memo.get(ctx, store, live, key)
	got.Data["ca.crt"] = []byte("scribbled")
	read("after a caller changed its copy", "three", 3)

	if err := store.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := memo.get(ctx, store, live, key); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted: got %v, want NotFound", err)
	}
	if len(memo.secrets) != 0 {
		t.Fatalf("the memo still holds %d Secrets after the deletion", len(memo.secrets))
	}

	// A deleted cluster's Secrets are forgotten.
	memo.secrets = map[types.NamespacedName]*corev1.Secret{key: {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{names.LabelCluster: "demo"}}},
		{Namespace: "ns", Name: "other"}: {ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{names.LabelCluster: "other"}}}}
	memo.forget(types.NamespacedName{Namespace: "ns", Name: "demo"})
	if _, ok := memo.secrets[key]; ok || len(memo.secrets) != 1 {
		t.Fatalf("after forget: %v", memo.secrets)
	}
}

// A cluster's Secrets are read in one request the first time, and not again while unchanged.
func TestSecretMemoWarm(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{names.LabelCluster: "demo"}
	store := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo-ca", Labels: labels}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo-peer-tls", Labels: labels}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-ca", Labels: map[string]string{names.LabelCluster: "other"}}},
	).Build()
	var requests []string
	var lists []*corev1.SecretList
	live := interceptor.NewClient(store, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			requests = append(requests, "get "+k.Name)
			return c.Get(ctx, k, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			requests = append(requests, "list")
			lists = append(lists, list.(*corev1.SecretList))
			return c.List(ctx, list, opts...)
		}})
	memo := &secretMemo{}
	cluster := types.NamespacedName{Namespace: "ns", Name: "demo"}
	for range 2 {
		if err := memo.warm(ctx, live, cluster); err != nil {
			t.Fatal(err)
		}
	}
	// No remembered Secret is an element of the list it came in: one would keep the whole
	// list, the shed Secrets' data included, alive as long as it is remembered.
	for key, s := range memo.secrets {
		for _, l := range lists {
			for i := range l.Items {
				if s == &l.Items[i] {
					t.Errorf("the memo keeps %s as element %d of the list it was read in", key, i)
				}
			}
		}
	}
	for _, name := range []string{"demo-ca", "demo-peer-tls", "other-ca"} {
		if _, err := memo.get(ctx, store, live, types.NamespacedName{Namespace: "ns", Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"list", "get other-ca"}; !slices.Equal(requests, want) {
		t.Fatalf("requests %v, want %v", requests, want)
	}
	memo.forget(cluster)
	if err := memo.warm(ctx, live, cluster); err != nil {
		t.Fatal(err)
	}
	if want := []string{"list", "get other-ca", "list"}; !slices.Equal(requests, want) {
		t.Fatalf("after forget: requests %v, want %v", requests, want)
	}
}
