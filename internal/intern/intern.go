// Package intern makes the strings that cached objects repeat share one copy. Every object the
// API server sends is decoded into fresh strings, so at thousands of clusters the cache holds
// thousands of copies of the same label keys, namespaces, owner references and condition
// types. The informers' transforms pass each object's metadata through Meta; the copies they
// replace are garbage at once.
package intern

import (
	"hash/maphash"
	"maps"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// limit bounds the pool: when it holds this many strings it starts again empty. Strings that
// objects still hold stay shared among them; the next ones share a new copy. So the pool never
// keeps more than limit strings alive that no object holds (the names of deleted clusters),
// and each string has at most a copy per generation. (Go's unique package would drop a string
// at each collection once its handle is gone, so objects decoded after it would not share it.)
const limit = 1 << 16

var pool = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// String is the shared copy of s.
func String(s string) string {
	if s == "" {
		return s
	}
	pool.Lock()
	defer pool.Unlock()
	if c, ok := pool.m[s]; ok {
		return c
	}
	if len(pool.m) >= limit {
		pool.m = map[string]string{}
	}
	s = strings.Clone(s) // its own memory, not a part of a larger buffer
	pool.m[s] = s
	return s
}

// Map is m with shared keys and values, a new map (nil for nil).
func Map(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[String(k)] = String(v)
	}
	return out
}

// Keys is m with shared keys, a new map (nil for nil): for annotations, whose values (hashes,
// UIDs) are mostly an object's own.
func Keys(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[String(k)] = v
	}
	return out
}

// maps is the pool of SharedMap, by a hash of their entries. Like the string pool, it starts
// again empty when it holds limit maps.
var mapPool = struct {
	sync.Mutex
	seed maphash.Seed
	m    map[uint64]map[string]string
}{seed: maphash.MakeSeed(), m: map[uint64]map[string]string{}}

// SharedMap is a map with m's entries, keys and values shared, and the same map as an earlier
// call's for equal entries: the cached objects of a kind that carry equal maps (the
// annotations of a cluster's member pods: its spec hash; of its volumes: its UID and cluster
// ID) then hold one between them, about 300 bytes each saved. Nil and empty maps are
// returned as they are. The maps it returns are shared: nothing may change them (the cache
// gives its readers deep copies).
func SharedMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	var h uint64
	for k, v := range m {
		// Order-free: the sum of each entry's hash.
		var e maphash.Hash
		e.SetSeed(mapPool.seed)
		e.WriteString(k)
		e.WriteByte(0)
		e.WriteString(v)
		h += e.Sum64()
	}
	mapPool.Lock()
	c, ok := mapPool.m[h]
	mapPool.Unlock()
	if ok && maps.Equal(c, m) {
		return c
	}
	c = Map(m)
	mapPool.Lock()
	defer mapPool.Unlock()
	if len(mapPool.m) >= limit {
		mapPool.m = map[uint64]map[string]string{}
	}
	mapPool.m[h] = c
	return c
}

// Meta makes what objects repeat in o's metadata shared: the namespace, the labels, the
// annotations' keys, the owner references and the finalizers. Names, UIDs and
// resourceVersions are each object's own and stay as they are.
func Meta(o metav1.Object) {
	o.SetNamespace(String(o.GetNamespace()))
	o.SetGenerateName(String(o.GetGenerateName()))
	o.SetLabels(Map(o.GetLabels()))
	o.SetAnnotations(Keys(o.GetAnnotations()))
	refs := o.GetOwnerReferences()
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = String(r.APIVersion), String(r.Kind), String(r.Name), types.UID(String(string(r.UID)))
	}
	fs := o.GetFinalizers()
	for i, f := range fs {
		fs[i] = String(f)
	}
}

// Conditions makes the conditions' type, status and reason shared (messages stay).
func Conditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Status, c.Reason = String(c.Type), metav1.ConditionStatus(String(string(c.Status))), String(c.Reason)
	}
}
