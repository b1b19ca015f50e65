package etcd

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fake is an in-memory etcd cluster for tests. A member starts (publishes its name and begins
// answering) the first time a client is configured with an endpoint for it, which mirrors a
// member pod coming up. Tests can stop members, make them report a foreign cluster ID, inject
// errors, and read the log of membership changes.
type Fake struct {
	mu        sync.Mutex
	clusterID uint64
	members   []Member
	leader    uint64
	term      uint64
	nextID    uint64
	down      map[string]bool
	foreign   map[string]uint64
	notReady  map[uint64]int // promotions refused before a learner is "caught up"
	errs      map[string]failure
	refused   int
	alarms    []Alarm
	dbSize    map[string]int64
	dbInUse   map[string]int64
	revision  map[string]int64
	hashes    map[string]uint32 // members whose data diverged: their HashKV (Diverge)
	answerAs  map[string]string
	servedAt  map[string]string  // endpoint name -> member name (ServeAt)
	held      map[string]bool    // members kept from starting (HoldStart)
	unreached map[[2]string]bool // from, to: from has no working connection to to (Unreach)
	slow      map[string]bool    // members that time out on linearizable reads (SlowReads)
	version   string
	calls     []string
	clients   int
	auth      AuthSpec
	// defragTakes is how long each Defragment takes (SlowDefrag).
	defragTakes time.Duration
}

// NewFake returns an empty, not yet bootstrapped cluster running the given etcd version.
func NewFake(version string) *Fake {
	return &Fake{nextID: 0x1000, down: map[string]bool{}, foreign: map[string]uint64{},
		notReady: map[uint64]int{}, errs: map[string]failure{}, dbSize: map[string]int64{}, dbInUse: map[string]int64{}, revision: map[string]int64{}, hashes: map[string]uint32{}, answerAs: map[string]string{}, servedAt: map[string]string{}, held: map[string]bool{}, unreached: map[[2]string]bool{}, slow: map[string]bool{}, version: version}
}

// Factory returns a Factory whose clients talk to this fake.
func (f *Fake) Factory() Factory {
	return func(_ context.Context, cfg Config) (Client, error) {
		if len(cfg.Endpoints) == 0 {
			return nil, ErrNoEndpoints
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.clients++
		for _, ep := range cfg.Endpoints {
			f.startLocked(f.atLocked(ep.Member))
		}
		return &fakeClient{f: f, eps: cfg.Endpoints}, nil
	}
}

// Bootstrap forms the cluster from members with the given names and peer URLs (parallel
// slices), as `initial-cluster-state=new` does. The first member becomes leader.
func (f *Fake) Bootstrap(clusterID uint64, names, peerURLs []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusterID = clusterID
	for i := range names {
		f.members = append(f.members, Member{ID: f.newIDLocked(), Name: names[i], PeerURLs: []string{peerURLs[i]}, ClientURLs: []string{"https://" + names[i] + ":2379"}})
	}
	f.leader, f.term = f.members[0].ID, 2
}

// HoldStart keeps an added member from starting (true), as a pod whose etcd never runs, or
// lets it start (false).
func (f *Fake) HoldStart(name string, hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[name] = hold
}

// Unreach makes member from report no working connection to member to (true), as a member
// that cannot reach the other's peer listener, or a working one again (false).
func (f *Fake) Unreach(from, to string, blocked bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unreached[[2]string{from, to}] = blocked
}

// SlowReads makes a member answer for its status at once but time out on linearizable reads
// (true), as one too slow to follow its leader (its disk, or its link) does, or answer them
// again (false): a member list through a client that has it among its endpoints fails (the
// client's balancer may pick it), and so does a read through it (Reaches).
func (f *Fake) SlowReads(name string, slow bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slow[name] = slow
}

// SetDown makes a member stop (true) or resume (false) answering.
func (f *Fake) SetDown(name string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[name] = down
	if (down && f.nameOfLocked(f.leader) == name) || (!down && f.leader == 0) || !f.quorumLocked() {
		f.electLocked()
	}
}

// SetLeader makes the named voter the leader, as an election would.
func (f *Fake) SetLeader(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name && !m.IsLearner {
			f.leader, f.term = m.ID, f.term+1
		}
	}
}

// SetForeignClusterID makes a member report another cluster's ID (a split-brain symptom).
func (f *Fake) SetForeignClusterID(name string, id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.foreign[name] = id
}

// FailNext makes the next n calls of op (MemberList, AddLearner, Promote, Remove, MoveLeader,
// Status) fail with err; n = 0 heals op.
func (f *Fake) FailNext(op string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n <= 0 {
		delete(f.errs, op)
		return
	}
	f.errs[op] = failure{err: err, left: n}
}

// LagPromotions makes the next n promotions of any learner fail with ErrLearnerNotReady, as
// etcd refuses to promote a learner that has not caught up with the leader.
func (f *Fake) LagPromotions(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notReady[0] = n
}

// RefusedPromotions counts the promotions refused with ErrLearnerNotReady so far.
func (f *Fake) RefusedPromotions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused
}

// RaiseAlarm raises an alarm on the named member (NOSPACE, CORRUPT), as etcd does.
func (f *Fake) RaiseAlarm(name, alarm string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.Name == name {
			f.alarms = append(f.alarms, Alarm{MemberID: m.ID, Type: alarm})
		}
	}
}

// Alarms returns the raised alarms.
func (f *Fake) Alarms() []Alarm {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.alarms)
}

// SetDBSize sets the backend size a member reports (20480 bytes by default).
func (f *Fake) SetDBSize(name string, bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dbSize[name] = bytes
}

// SetFragmented makes a member's backend hold free pages: size bytes, inUse of them in use;
// defragmenting it shrinks it to inUse.
func (f *Fake) SetFragmented(name string, size, inUse int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dbSize[name], f.dbInUse[name] = size, inUse
}

// AnswerAs makes the endpoint of member name answer as member as (an IP that a restarted pod
// took over from another); "" ends it.
func (f *Fake) AnswerAs(name, as string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if as == "" {
		delete(f.answerAs, name)
		return
	}
	f.answerAs[name] = as
}

// ServeAt makes the endpoint named endpoint (Endpoint.Member) reach member name: a member
// the operator did not create, addressed by its client URL.
func (f *Fake) ServeAt(endpoint, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.servedAt[endpoint] = name
}

func (f *Fake) atLocked(endpoint string) string {
	if name, ok := f.servedAt[endpoint]; ok {
		return name
	}
	return endpoint
}

// ForceNewCluster does what etcd --force-new-cluster does to the named member: it becomes the
// single member of the cluster, and its leader.
func (f *Fake) ForceNewCluster(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = slices.DeleteFunc(f.members, func(m Member) bool {
		if m.Name != name {
			delete(f.down, m.Name) // a member added later under that name is a new one
			return true
		}
		return false
	})
	if len(f.members) == 1 {
		f.members[0].IsLearner = false
		f.leader, f.term = f.members[0].ID, f.term+1
		f.down[name] = false
	}
}

// SetRevision sets the revision a member reports having applied (1 by default).
func (f *Fake) SetRevision(name string, rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revision[name] = rev
}

// FakeHash is the HashKV every member whose data did not diverge answers.
const FakeHash uint32 = 0x5eed

// Diverge makes a member's HashKV answer hash, as a member whose data differ from its peers';
// FakeHash makes it agree again.
func (f *Fake) Diverge(name string, hash uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hashes[name] = hash
}

// Members returns a copy of the member list.
func (f *Fake) Members() []Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.members)
}

// Calls returns the membership-changing calls made so far, like "AddLearner demo-3".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *Fake) newIDLocked() uint64 { f.nextID += 0x1111; return f.nextID }

func (f *Fake) nameOfLocked(id uint64) string {
	for _, m := range f.members {
		if m.ID == id {
			return m.Name
		}
	}
	return ""
}

// startLocked publishes the name and client URL of a member added but not started whose peer
// URL names it.
func (f *Fake) startLocked(name string) {
	for i, m := range f.members {
		if !m.Started() && len(m.PeerURLs) > 0 && strings.Contains(m.PeerURLs[0], "//"+name+".") && !f.held[name] {
			f.members[i].Name, f.members[i].ClientURLs = name, []string{"https://" + name + ":2379"}
		}
	}
}

func (f *Fake) upLocked(m Member) bool { return m.Started() && !f.down[m.Name] }

func (f *Fake) quorumLocked() bool {
	voters, up := 0, 0
	for _, m := range f.members {
		if m.IsLearner {
			continue
		}
		voters++
		if f.upLocked(m) {
			up++
		}
	}
	return voters > 0 && up >= voters/2+1
}

func (f *Fake) electLocked() {
	f.leader = 0
	if !f.quorumLocked() {
		return
	}
	for _, m := range f.members {
		if !m.IsLearner && f.upLocked(m) {
			f.leader, f.term = m.ID, f.term+1
			return
		}
	}
}

// failure is an error injected into the next calls of an operation.
type failure struct {
	err  error
	left int
}

func (f *Fake) errLocked(op string) error {
	fl, ok := f.errs[op]
	if !ok {
		return nil
	}
	if fl.left--; fl.left <= 0 {
		delete(f.errs, op)
	} else {
		f.errs[op] = fl
	}
	return fl.err
}

var _ Client = (*fakeClient)(nil)

type fakeClient struct {
	f   *Fake
	eps []Endpoint
}

var errUnavailable = errors.New("etcdserver: request timed out (fake: no reachable member with quorum)")

// reachableLocked: some configured endpoint is an up member of a cluster with quorum.
func (c *fakeClient) reachableLocked() error {
	f := c.f
	if f.clusterID == 0 || !f.quorumLocked() {
		return errUnavailable
	}
	for _, ep := range c.eps {
		for _, m := range f.members {
			if m.Name == f.atLocked(ep.Member) && f.upLocked(m) {
				return nil
			}
		}
	}
	return errUnavailable
}

func (c *fakeClient) MemberList(context.Context) (uint64, []Member, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("MemberList"); err != nil {
		return 0, nil, err
	}
	if err := c.reachableLocked(); err != nil {
		return 0, nil, err
	}
	for _, ep := range c.eps {
		if name := f.atLocked(ep.Member); f.slow[name] {
			return 0, nil, fmt.Errorf("listing members: context deadline exceeded (fake: through %s, which is slow)", name)
		}
	}
	return f.clusterID, slices.Clone(f.members), nil
}

func (c *fakeClient) AddLearner(_ context.Context, peerURL string) (Member, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("AddLearner"); err != nil {
		return Member{}, err
	}
	if err := c.reachableLocked(); err != nil {
		return Member{}, err
	}
	for _, m := range f.members {
		if m.IsLearner {
			return Member{}, errors.New("etcdserver: too many learner members in cluster")
		}
		if slices.Contains(m.PeerURLs, peerURL) {
			return Member{}, errors.New("etcdserver: Peer URLs already exists")
		}
	}
	m := Member{ID: f.newIDLocked(), PeerURLs: []string{peerURL}, IsLearner: true}
	f.members = append(f.members, m)
	f.calls = append(f.calls, "AddLearner "+peerURL)
	return m, nil
}

func (c *fakeClient) Promote(_ context.Context, id uint64) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Promote"); err != nil {
		return err
	}
	if err := c.reachableLocked(); err != nil {
		return err
	}
	for i, m := range f.members {
		if m.ID != id {
			continue
		}
		if !m.IsLearner {
			return errors.New("etcdserver: can only promote a learner member")
		}
		if !f.upLocked(m) || f.notReady[0] > 0 {
			if f.notReady[0] > 0 {
				f.notReady[0]--
			}
			f.refused++
			return ErrLearnerNotReady
		}
		f.members[i].IsLearner = false
		f.calls = append(f.calls, "Promote "+m.Name)
		return nil
	}
	return errors.New("etcdserver: member not found")
}

func (c *fakeClient) Remove(_ context.Context, id uint64) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Remove"); err != nil {
		return err
	}
	if err := c.reachableLocked(); err != nil {
		return err
	}
	for i, m := range f.members {
		if m.ID == id {
			f.members = slices.Delete(f.members, i, i+1)
			f.calls = append(f.calls, "Remove "+m.Name)
			if f.leader == id {
				f.electLocked()
			}
			return nil
		}
	}
	return errors.New("etcdserver: member not found")
}

func (c *fakeClient) MoveLeader(_ context.Context, leader Endpoint, transferee uint64) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("MoveLeader"); err != nil {
		return err
	}
	if f.nameOfLocked(f.leader) != f.atLocked(leader.Member) {
		return errors.New("etcdserver: not leader")
	}
	for _, m := range f.members {
		if m.ID == transferee && !m.IsLearner && f.upLocked(m) {
			f.leader, f.term = transferee, f.term+1
			f.calls = append(f.calls, "MoveLeader "+m.Name)
			return nil
		}
	}
	return fmt.Errorf("etcdserver: bad leader transferee %x", transferee)
}

func (c *fakeClient) Status(_ context.Context, ep Endpoint) (Status, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Status"); err != nil {
		return Status{}, err
	}
	name := f.atLocked(ep.Member)
	if as, ok := f.answerAs[name]; ok {
		name = as
	}
	for _, m := range f.members {
		if m.Name != name || !f.upLocked(m) {
			continue
		}
		cid := f.clusterID
		if id, ok := f.foreign[m.Name]; ok {
			cid = id
		}
		leader := f.leader
		if !f.quorumLocked() {
			leader = 0
		}
		size := f.dbSize[m.Name]
		if size == 0 {
			size = 20480
		}
		inUse := size
		if u, ok := f.dbInUse[m.Name]; ok {
			inUse = u
		}
		var errs []string
		for _, a := range f.alarms {
			errs = append(errs, fmt.Sprintf("memberID:%d alarm:%s", a.MemberID, a.Type))
		}
		return Status{ClusterID: cid, MemberID: m.ID, Leader: leader, RaftTerm: f.term, Revision: max(f.revision[m.Name], 1),
			Version: f.version, DBSize: size, DBSizeInUse: inUse, IsLearner: m.IsLearner, Errors: errs}, nil
	}
	return Status{}, fmt.Errorf("status of %s: connection refused (fake)", ep.Member)
}

func (c *fakeClient) Alarms(context.Context) ([]Alarm, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Alarms"); err != nil {
		return nil, err
	}
	if err := c.reachableLocked(); err != nil {
		return nil, err
	}
	return slices.Clone(f.alarms), nil
}

func (c *fakeClient) Disarm(_ context.Context, a Alarm) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Disarm"); err != nil {
		return err
	}
	if err := c.reachableLocked(); err != nil {
		return err
	}
	f.alarms = slices.DeleteFunc(f.alarms, func(b Alarm) bool { return b == a })
	f.calls = append(f.calls, fmt.Sprintf("Disarm %s %s", f.nameOfLocked(a.MemberID), a.Type))
	return nil
}

// SlowDefrag makes every defragmentation take d, as one of a large database does.
func (f *Fake) SlowDefrag(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defragTakes = d
}

func (c *fakeClient) Defragment(ctx context.Context, ep Endpoint) error {
	f := c.f
	f.mu.Lock()
	takes := f.defragTakes
	f.mu.Unlock()
	if takes > 0 {
		select {
		case <-time.After(takes):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Defragment"); err != nil {
		return err
	}
	f.calls = append(f.calls, "Defragment "+ep.Member)
	if u, ok := f.dbInUse[ep.Member]; ok {
		f.dbSize[ep.Member] = u
	}
	return nil
}

// HashKV answers FakeHash, or what Diverge set, for a member that is up and has applied rev.
func (c *fakeClient) HashKV(_ context.Context, ep Endpoint, rev int64) (KVHash, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("HashKV"); err != nil {
		return KVHash{}, err
	}
	name := f.atLocked(ep.Member)
	for _, m := range f.members {
		if m.Name != name || !f.upLocked(m) {
			continue
		}
		if rev > max(f.revision[m.Name], 1) {
			return KVHash{}, fmt.Errorf("hash of %s at revision %d: etcdserver: mvcc: required revision is a future revision (fake)", ep.Member, rev)
		}
		h, ok := f.hashes[m.Name]
		if !ok {
			h = FakeHash
		}
		f.calls = append(f.calls, fmt.Sprintf("HashKV %s %d", m.Name, rev))
		return KVHash{Hash: h, Revision: rev}, nil
	}
	return KVHash{}, fmt.Errorf("hash of %s: connection refused (fake)", ep.Member)
}

// Reaches: the member is up, the cluster has a quorum, and the member and the leader have
// working connections to each other (Unreach cuts them).
func (c *fakeClient) Reaches(_ context.Context, ep Endpoint, _ time.Duration) error {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("Reaches"); err != nil {
		return err
	}
	name := f.atLocked(ep.Member)
	leader := f.nameOfLocked(f.leader)
	up := slices.ContainsFunc(f.members, func(m Member) bool { return m.Name == name && f.upLocked(m) })
	if !up || !f.quorumLocked() || f.unreached[[2]string{name, leader}] || f.unreached[[2]string{leader, name}] || f.slow[name] {
		return fmt.Errorf("a linearizable read through %s: context deadline exceeded (fake)", ep.Member)
	}
	return nil
}

// SyncAuth records the spec; Auth returns it. The changes it reports name what differs.
func (c *fakeClient) ActivePeers(_ context.Context, ep Endpoint) (map[uint64]bool, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("ActivePeers"); err != nil {
		return nil, err
	}
	name := f.atLocked(ep.Member)
	self := slices.IndexFunc(f.members, func(m Member) bool { return m.Name == name && f.upLocked(m) })
	if self < 0 {
		return nil, fmt.Errorf("metrics of %s: connection refused (fake)", ep.Member)
	}
	out := map[uint64]bool{}
	for _, m := range f.members {
		if m.Name != name && f.upLocked(m) {
			out[m.ID] = !f.unreached[[2]string{name, m.Name}]
		}
	}
	return out, nil
}

func (c *fakeClient) SyncAuth(_ context.Context, spec AuthSpec) ([]string, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("SyncAuth"); err != nil {
		return nil, err
	}
	var changes []string
	if spec.Enabled != f.auth.Enabled {
		changes = append(changes, fmt.Sprintf("authentication enabled: %v", spec.Enabled))
	}
	if !reflect.DeepEqual(spec.Users, f.auth.Users) {
		changes = append(changes, fmt.Sprintf("users: %d", len(spec.Users)))
	}
	f.auth = spec
	return changes, nil
}

func (c *fakeClient) AuthEnabled(context.Context) (bool, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errLocked("AuthEnabled"); err != nil {
		return false, err
	}
	return f.auth.Enabled, nil
}

// SetAuth sets etcd's authentication as if applied before (by an earlier operator or cluster).
func (f *Fake) SetAuth(spec AuthSpec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = spec
}

// Auth is the authentication spec last applied.
func (f *Fake) Auth() AuthSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.auth
}

func (c *fakeClient) Close() error { return nil }
