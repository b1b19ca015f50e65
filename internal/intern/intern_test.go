package intern

import (
	"reflect"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fresh is s in memory of its own, as a decoder gives it.
func fresh(s string) string { return string([]byte(s)) }

// same says whether a and b are one copy in memory.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) } //nolint:gosec // compares addresses, reads nothing

// Two objects decoded apart share what they repeat after Meta, and keep the same values.
func TestMetaShares(t *testing.T) {
	decode := func(name string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{
			Name: fresh(name), Namespace: fresh("scale-001"),
			Labels:          map[string]string{fresh("etcd.quorate.dev/cluster"): fresh("orders")},
			Annotations:     map[string]string{fresh("etcd.quorate.dev/spec-hash"): fresh("h-1")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("etcd.quorate.dev/v1alpha1"), Kind: fresh("EtcdCluster"), Name: fresh("orders"), UID: types.UID(fresh("u-1"))}},
			Finalizers:      []string{fresh("etcd.quorate.dev/protect")},
		}
	}
	a, b := decode("orders-0"), decode("orders-1")
	wantA := a.DeepCopy()
	Meta(a)
	Meta(b)
	if !reflect.DeepEqual(a, wantA) {
		t.Fatalf("Meta changed the values: %+v, want %+v", a, wantA)
	}
	keyOf := func(m map[string]string) string {
		for k := range m {
			return k
		}
		return ""
	}
	for what, pair := range map[string][2]string{
		"namespace":             {a.Namespace, b.Namespace},
		"label key":             {keyOf(a.Labels), keyOf(b.Labels)},
		"label value":           {a.Labels["etcd.quorate.dev/cluster"], b.Labels["etcd.quorate.dev/cluster"]},
		"annotation key":        {keyOf(a.Annotations), keyOf(b.Annotations)},
		"owner's API version":   {a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion},
		"owner's kind":          {a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind},
		"owner's name":          {a.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
		"finalizer":             {a.Finalizers[0], b.Finalizers[0]},
		"owner's UID":           {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"the label value again": {String(fresh("orders")), a.Labels["etcd.quorate.dev/cluster"]},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("%s %q is not shared", what, pair[0])
		}
	}
	if same(a.Annotations["etcd.quorate.dev/spec-hash"], b.Annotations["etcd.quorate.dev/spec-hash"]) {
		t.Errorf("annotation values, each object's own, were shared")
	}
}

// The pool starts again when full, and strings interned before stay valid.
func TestPoolLimit(t *testing.T) {
	first := String(fresh("kept"))
	for i := 0; i < limit; i++ {
		String(fresh(string(rune(i)) + "x"))
	}
	if len(pool.m) >= limit {
		t.Fatalf("pool holds %d strings, limit %d", len(pool.m), limit)
	}
	if first != "kept" {
		t.Fatalf("an interned string changed: %q", first)
	}
}

// Maps with equal entries, decoded apart, become one map with the same entries; a map that
// differs in one value does not join them; nil and empty maps stay as they are.
func TestSharedMap(t *testing.T) {
	decode := func(hash string) map[string]string {
		return map[string]string{fresh("etcd.quorate.dev/spec-hash"): fresh(hash), fresh("etcd.quorate.dev/owner-uid"): fresh("u-1")}
	}
	addr := func(m map[string]string) unsafe.Pointer { return reflect.ValueOf(m).UnsafePointer() }
	a, b, other := SharedMap(decode("h-1")), SharedMap(decode("h-1")), SharedMap(decode("h-2"))
	if !reflect.DeepEqual(a, decode("h-1")) || !reflect.DeepEqual(other, decode("h-2")) {
		t.Fatalf("SharedMap changed the entries: %v, %v", a, other)
	}
	if addr(a) != addr(b) {
		t.Errorf("two maps with equal entries are not one map")
	}
	if addr(a) == addr(other) {
		t.Errorf("a map with another value is the same map as %v", a)
	}
	for k, v := range other {
		if !same(k, String(fresh(k))) || !same(v, String(fresh(v))) {
			t.Errorf("entry %s=%s is not shared", k, v)
		}
	}
	if m := SharedMap(nil); m != nil {
		t.Errorf("SharedMap(nil) = %v", m)
	}
	empty := map[string]string{}
	if m := SharedMap(empty); m == nil || addr(m) != addr(empty) {
		t.Errorf("SharedMap of an empty map is not that map")
	}
}
