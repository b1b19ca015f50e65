// Package expectations remembers the creates and deletes the operator has made until its cache
// has seen them. The cache lags behind the API server: right after creating a member's Pod the
// cache may still say the Pod does not exist, and right after deleting one it may still list
// it. Decisions taken from such a stale view could create a member twice or delete a volume
// that is still in use, so the controller waits until every expectation is met before it plans.
package expectations

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/internal/mutant"
)

// Key names an object of a cluster: its kind and name.
type Key struct{ Kind, Name string }

func (k Key) String() string { return k.Kind + "/" + k.Name }

type pending struct {
	creates map[Key]time.Time
	deletes map[Key]deleteExp
}

// superseded is a resourceVersion of the owner itself that the operator has replaced by
// writing the owner (its status): a cached copy still at that version is older than what the
// operator knows.
type superseded struct {
	resourceVersion string
	at              time.Time
}

type deleteExp struct {
	uid types.UID
	at  time.Time
}

// Expectations is safe for concurrent use.
type Expectations struct {
	mu      sync.Mutex
	ttl     time.Duration
	now     func() time.Time
	byOwner map[types.NamespacedName]*pending
	owners  map[types.NamespacedName]superseded
}

// New returns an empty store. An expectation older than ttl is dropped, so a create that
// somebody else undid at once cannot block a cluster forever.
func New(ttl time.Duration) *Expectations {
	return &Expectations{ttl: ttl, now: time.Now, byOwner: map[types.NamespacedName]*pending{}, owners: map[types.NamespacedName]superseded{}}
}

func (e *Expectations) get(owner types.NamespacedName) *pending {
	p := e.byOwner[owner]
	if p == nil {
		p = &pending{creates: map[Key]time.Time{}, deletes: map[Key]deleteExp{}}
		e.byOwner[owner] = p
	}
	return p
}

// ExpectCreate records that the object was created.
func (e *Expectations) ExpectCreate(owner types.NamespacedName, k Key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(owner).creates[k] = e.now()
}

// ExpectDelete records that the object with this UID was deleted.
func (e *Expectations) ExpectDelete(owner types.NamespacedName, k Key, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(owner).deletes[k] = deleteExp{uid: uid, at: e.now()}
}

// Observed tells what the cache holds: the UID of the object, or ok=false when absent.
type Observed func(k Key) (uid types.UID, ok bool)

// Satisfied reports whether the cache reflects every recorded change of the owner, clearing
// the ones it does. When it does not, it says what is still awaited.
func (e *Expectations) Satisfied(owner types.NamespacedName, observed Observed) (bool, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.byOwner[owner]
	if p == nil || mutant.On("drop-expectations") {
		return true, ""
	}
	now := e.now()
	var waiting []string
	for k, at := range p.creates {
		if _, ok := observed(k); ok || now.Sub(at) > e.ttl {
			delete(p.creates, k)
			continue
		}
		waiting = append(waiting, "creation of "+k.String())
	}
	for k, d := range p.deletes {
		if uid, ok := observed(k); !ok || uid != d.uid || now.Sub(d.at) > e.ttl {
			delete(p.deletes, k)
			continue
		}
		waiting = append(waiting, "deletion of "+k.String())
	}
	if len(waiting) == 0 {
		delete(e.byOwner, owner)
		return true, ""
	}
	sort.Strings(waiting)
	return false, fmt.Sprintf("waiting for the cache to see the %v", waiting)
}

// ExpectOwnerNewerThan records that the operator wrote the owner, replacing its
// resourceVersion rv: until the cache holds another version, a cached copy is stale (its status
// lacks what the operator just wrote, and a pass planned from it would undo or repeat that).
func (e *Expectations) ExpectOwnerNewerThan(owner types.NamespacedName, rv string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.owners[owner] = superseded{resourceVersion: rv, at: e.now()}
}

// OwnerCurrent reports whether a cached copy of the owner at resourceVersion rv is at least as
// new as the operator's last write of it, clearing the record once it is.
func (e *Expectations) OwnerCurrent(owner types.NamespacedName, rv string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.owners[owner]
	if !ok {
		return true
	}
	if s.resourceVersion == rv && e.now().Sub(s.at) <= e.ttl {
		return false
	}
	delete(e.owners, owner)
	return true
}

// Forget drops everything recorded for an owner (when it is deleted).
func (e *Expectations) Forget(owner types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byOwner, owner)
	delete(e.owners, owner)
}
