// Package workload is the conformance workload: clients that issue puts with unique values,
// linearizable gets and compare-and-sets through the official etcd client at a set rate,
// recording every operation with its invocation and response times and its outcome, and a
// poller that asks every member directly for its cluster ID, leader, term and member list.
// It runs in a pod beside the EtcdCluster (cmd/quorate-workload) and never hides an error: a
// write whose outcome the client cannot know is recorded as unknown.
package workload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/e2e/history"
)

// Config of the load.
type Config struct {
	Endpoints []string // client URLs, normally the client Service; exactly one for ServiceOnly
	// Profile is how the clients find the members (DefaultProfile when empty).
	Profile Profile
	TLS     *tls.Config
	Clients int
	Rate    float64 // operations per second, over all clients
	Keys    int
	Prefix  string
	// Mix weights of the operation types.
	PutWeight, GetWeight, CASWeight int
	OpTimeout                       time.Duration
	// WarmUpTimeout bounds how long Start waits for every client's first read (default 60s).
	WarmUpTimeout time.Duration
	Seed          int64
	// Watchers keep watches open on the workload's keys (0: none).
	Watchers int
	// WatchRestart restarts each watch this often, from the revision after its last event (0:
	// only when it breaks).
	WatchRestart time.Duration
	// OpenLoop issues operations on a fixed schedule, Rate per second, whether or not earlier
	// ones returned (each on its own goroutine, over the clients' connections in turn), so
	// that a stall shows as the many operations it delays, not as the few a closed loop would
	// have sent. Closed loop (the default): each client has one operation at a time.
	OpenLoop bool
}

// Defaults of Config: 500 operations per second from 16 clients, so that a write gap of a
// few milliseconds is visible (about 300 writes per second with the default mix).
const (
	DefaultRate    = 500
	DefaultClients = 16
)

// DefaultOpTimeout is how long a client waits for one operation before it records it as
// unknown (a write) or failed (a read) and sends the next.
const DefaultOpTimeout = 2 * time.Second

// Runner runs the clients and records the history.
type Runner struct {
	cfg     Config
	mu      sync.Mutex
	ops     []history.Op
	start   int64
	end     int64
	nextID  atomic.Int64
	cancel  context.CancelFunc
	done    sync.WaitGroup
	running bool
	counts  [3]atomic.Int64 // ok, fail, unknown
	watch   *watchers
	wcancel context.CancelFunc
	// leases are the leases Lease granted and keeps alive, on their own client.
	lmu         sync.Mutex
	leaseClient *clientv3.Client
	leases      map[clientv3.LeaseID]context.CancelFunc
}

// New returns a runner; it does nothing until Start.
func New(cfg Config) *Runner {
	if cfg.Clients <= 0 {
		cfg.Clients = DefaultClients
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 8
	}
	if cfg.PutWeight+cfg.GetWeight+cfg.CASWeight == 0 {
		cfg.PutWeight, cfg.GetWeight, cfg.CASWeight = 4, 4, 2
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	if cfg.WarmUpTimeout <= 0 {
		cfg.WarmUpTimeout = 60 * time.Second
	}
	if cfg.Profile == "" {
		cfg.Profile = DefaultProfile
	}
	return &Runner{cfg: cfg}
}

// Profile is the runner's client profile.
func (r *Runner) Profile() Profile { return r.cfg.Profile }

// check refuses a configuration the profile cannot run.
func (c Config) check() error {
	if _, err := ParseProfile(string(c.Profile)); err != nil {
		return err
	}
	if c.Profile == ServiceOnly && len(c.Endpoints) != 1 {
		return fmt.Errorf("client profile %s takes exactly one endpoint, the client Service, not %d: %v", c.Profile, len(c.Endpoints), c.Endpoints)
	}
	return nil
}

func (r *Runner) key(i int) string { return fmt.Sprintf("%sk%02d", r.cfg.Prefix, i) }

func (r *Runner) newClient() (*clientv3.Client, error) {
	return clientv3.New(clientConfig(r.cfg))
}

// clientConfig is the etcd client configuration of the runner's profile.
func clientConfig(cfg Config) clientv3.Config {
	c := clientv3.Config{
		Endpoints:            cfg.Endpoints,
		TLS:                  cfg.TLS,
		DialTimeout:          cfg.OpTimeout,
		DialKeepAliveTime:    KeepAliveTime,
		DialKeepAliveTimeout: KeepAliveTimeout,
		Logger:               zap.NewNop(),
	}
	if cfg.Profile != ServiceOnly {
		// Like a production client tuned for etcd, learn the members' own client URLs from
		// the member list and balance over them, so that one member cut off from the others
		// (while clients still reach it) costs the requests sent to it, not every request of
		// the client.
		c.AutoSyncInterval = AutoSyncInterval
	}
	return c
}

// Start begins the load. It is a no-op while running. Before the history starts, every client
// connects and completes one linearizable read (of a key outside the workload's keys, so the
// history is unaffected), retrying until Config.WarmUpTimeout: the history then measures what ready
// clients saw, not DNS lookups and TLS handshakes, and a cluster that cannot serve a ready
// client is reported as an error here instead of as an outage in the run.
func (r *Runner) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return nil
	}
	if err := r.cfg.check(); err != nil {
		return err
	}
	// The watchers' clients are made and warmed up with the load's, so that none of them
	// connects after the history starts.
	all := make([]*clientv3.Client, r.cfg.Clients+max(r.cfg.Watchers, 0))
	closeAll := func() {
		for _, c := range all {
			if c != nil {
				c.Close()
			}
		}
	}
	for i := range all {
		c, err := r.newClient()
		if err != nil {
			closeAll()
			return err
		}
		all[i] = c
	}
	if err := r.warmUp(all); err != nil {
		closeAll()
		return err
	}
	clients, watchClients := all[:r.cfg.Clients], all[r.cfg.Clients:]
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.running = cancel, true
	if r.cfg.Watchers > 0 {
		// From the revision after the current one, so that the watchers' window starts with
		// the history.
		rev, err := r.currentRevision(clients[0])
		if err != nil {
			cancel()
			closeAll()
			r.running = false
			return err
		}
		wctx, wcancel := context.WithCancel(context.Background())
		r.watch, r.wcancel = &watchers{r: r}, wcancel
		r.watch.run(wctx, watchClients, rev+1)
	}
	r.start, r.end = time.Now().UnixNano(), 0
	if r.cfg.OpenLoop {
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			r.openLoop(ctx, clients)
		}()
		return nil
	}
	interval := time.Duration(float64(time.Second) * float64(r.cfg.Clients) / r.cfg.Rate)
	for i, c := range clients {
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			defer c.Close()
			r.client(ctx, i, c, interval)
		}()
	}
	return nil
}

func (r *Runner) warmUp(clients []*clientv3.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.WarmUpTimeout)
	defer cancel()
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// Learn the members' own URLs now (the sync the client repeats every
				// AutoSyncInterval), then read through them: the first sync moves every
				// connection from the Service to the members, dozens of TLS handshakes that
				// stalled writes for up to 128 ms when they came 5 s into the history. A sync
				// that fails leaves the endpoints as they were, as the periodic one does. A
				// Service-only client never asks for the member list.
				if r.cfg.Profile != ServiceOnly {
					sctx, scancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
					_ = c.Sync(sctx)
					scancel()
				}
				octx, ocancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
				_, err := c.Get(octx, r.cfg.Prefix+"warm-up")
				ocancel()
				errs[i] = err
				if err == nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("client %d could not complete a read within %s (last error: %v): check that the cluster's client Service has ready endpoints and that the client certificate is accepted", i, r.cfg.WarmUpTimeout, err)
		}
	}
	return nil
}

func (r *Runner) currentRevision(c *clientv3.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.OpTimeout)
	defer cancel()
	resp, err := c.Get(ctx, r.cfg.Prefix+"warm-up")
	if err != nil {
		return 0, fmt.Errorf("reading the current revision for the watchers: %w", err)
	}
	return resp.Header.Revision, nil
}

// Stop ends the load and waits for every client's last operation to finish, then for the
// watchers to receive the last acknowledged write (at most WatchCatchUp, 20s by default).
func (r *Runner) Stop() {
	r.mu.Lock()
	if !r.running {
		r.mu.Unlock()
		return
	}
	r.cancel()
	r.mu.Unlock()
	r.done.Wait()
	r.mu.Lock()
	r.running, r.end = false, time.Now().UnixNano()
	var lastAck int64
	for _, o := range r.ops {
		if o.Acknowledged() && o.Revision > lastAck {
			lastAck = o.Revision
		}
	}
	w, wcancel := r.watch, r.wcancel
	r.mu.Unlock()
	if w != nil {
		for deadline := time.Now().Add(20 * time.Second); !w.caughtUp(lastAck, r.cfg.Watchers) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		wcancel()
		w.done.Wait()
	}
}

// Counts returns how many operations succeeded, failed and ended unknown so far.
func (r *Runner) Counts() (ok, fail, unknown int64) {
	return r.counts[0].Load(), r.counts[1].Load(), r.counts[2].Load()
}

// History returns the operations recorded so far.
func (r *Runner) History() history.History {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.end
	if end == 0 {
		end = time.Now().UnixNano()
	}
	ops := append([]history.Op(nil), r.ops...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	h := history.History{Start: r.start, End: end, Ops: ops}
	if r.watch != nil {
		h.WatchPrefix = r.watchPrefix()
		h.WatchEvents, h.WatchMarks = r.watch.record()
	}
	return h
}

func (r *Runner) record(o history.Op) {
	switch o.Status {
	case history.OK:
		r.counts[0].Add(1)
	case history.Fail:
		r.counts[1].Add(1)
	default:
		r.counts[2].Add(1)
	}
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

// opSource draws the operations of one client (closed loop) or of the whole load (open
// loop): the mix of types, keys, unique values, and for compare-and-set the value last seen
// of the key, so that some swaps succeed.
type opSource struct {
	r    *Runner
	rnd  *rand.Rand
	name string
	seq  int
	mu   sync.Mutex
	seen map[string]*string // last value seen per key; nil = absent
}

func (r *Runner) newSource(name string, seed int64) *opSource {
	return &opSource{r: r, rnd: rand.New(rand.NewSource(seed)), name: name, seen: map[string]*string{}}
}

// next draws the next operation for client.
func (s *opSource) next(client int) history.Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg := s.r.cfg
	key := s.r.key(s.rnd.Intn(cfg.Keys))
	s.seq++
	o := history.Op{ID: s.r.nextID.Add(1), Client: client, Key: key}
	switch n := s.rnd.Intn(cfg.PutWeight + cfg.GetWeight + cfg.CASWeight); {
	case n < cfg.PutWeight:
		o.Type, o.Value = history.Put, fmt.Sprintf("%s-%d", s.name, s.seq)
	case n < cfg.PutWeight+cfg.GetWeight:
		o.Type = history.Get
	default:
		o.Type, o.Value = history.CAS, fmt.Sprintf("%s-%d", s.name, s.seq)
		if v, ok := s.seen[key]; ok && v != nil {
			o.Expect = *v
		} else {
			o.ExpectAbsent = true
		}
	}
	return o
}

// learn records what a completed operation showed of its key.
func (s *opSource) learn(o history.Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case o.Status == history.OK && (o.Type == history.Put || o.Succeeded):
		v := o.Value
		s.seen[o.Key] = &v
	case o.Status == history.OK && o.Found:
		v := o.Output
		s.seen[o.Key] = &v
	case o.Status == history.OK:
		s.seen[o.Key] = nil
	case o.Status == history.Unknown:
		delete(s.seen, o.Key)
	}
}

// client issues one operation at a time, as a closed-loop client does, pacing itself to its
// share of the rate.
func (r *Runner) client(ctx context.Context, id int, c *clientv3.Client, interval time.Duration) {
	src := r.newSource(fmt.Sprintf("c%d", id), r.cfg.Seed+int64(id))
	next := time.Now()
	for {
		if wait := time.Until(next); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		} else if ctx.Err() != nil {
			return
		}
		next = next.Add(interval)
		if time.Until(next) < -interval {
			next = time.Now().Add(interval) // do not burst to catch up after an outage
		}
		o := src.next(id)
		r.do(c, &o)
		r.record(o)
		src.learn(o)
	}
}

// openLoop issues an operation every 1/Rate seconds on its own goroutine, whatever the
// operations before it are doing, over the connections in turn. If the machine falls behind
// the schedule (a starved CPU), the missed operations are issued at once: the schedule, not
// the cluster's answers, decides what is sent.
func (r *Runner) openLoop(ctx context.Context, clients []*clientv3.Client) {
	var inflight sync.WaitGroup
	defer func() {
		inflight.Wait()
		for _, c := range clients {
			c.Close()
		}
	}()
	src := r.newSource("o", r.cfg.Seed)
	interval := time.Duration(float64(time.Second) / r.cfg.Rate)
	start := time.Now()
	for n := int64(0); ; n++ {
		if wait := time.Until(start.Add(time.Duration(n) * interval)); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		} else if ctx.Err() != nil {
			return
		}
		id := int(n % int64(len(clients)))
		o := src.next(id)
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			r.do(clients[id], &o)
			r.record(o)
			src.learn(o)
		}()
	}
}

// do performs o, filling in its times, outcome and results.
func (r *Runner) do(c *clientv3.Client, o *history.Op) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.OpTimeout)
	defer cancel()
	o.Call = time.Now().UnixNano()
	var err error
	switch o.Type {
	case history.Put:
		var resp *clientv3.PutResponse
		if resp, err = c.Put(ctx, o.Key, o.Value); err == nil {
			o.Revision = resp.Header.Revision
		}
	case history.Get:
		var resp *clientv3.GetResponse
		if resp, err = c.Get(ctx, o.Key); err == nil {
			o.Revision = resp.Header.Revision
			if len(resp.Kvs) > 0 {
				o.Found, o.Output = true, string(resp.Kvs[0].Value)
			}
		}
	case history.CAS:
		cmp := clientv3.Compare(clientv3.Value(o.Key), "=", o.Expect)
		if o.ExpectAbsent {
			cmp = clientv3.Compare(clientv3.CreateRevision(o.Key), "=", 0)
		}
		var resp *clientv3.TxnResponse
		resp, err = c.Txn(ctx).If(cmp).Then(clientv3.OpPut(o.Key, o.Value)).Else(clientv3.OpGet(o.Key)).Commit()
		if err == nil {
			o.Revision, o.Succeeded = resp.Header.Revision, resp.Succeeded
			if !resp.Succeeded && len(resp.Responses) > 0 {
				if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
					o.Found, o.Output = true, string(kvs[0].Value)
				}
			}
		}
	}
	o.Return = time.Now().UnixNano()
	o.Status = Classify(o.Type, err)
	if err != nil {
		o.Error = err.Error()
	}
}

// definite are errors a server returns before a write is proposed, so it cannot have applied.
// NOSPACE is not one of them: etcd can answer it for a write it applied (etcd-io/etcd#16659,
// now in etcd's maintenance guide), and the nospace scenario saw it here, in 2 of 4 runs, for
// writes that the cluster's history holds at their revisions.
var definite = []error{rpctypes.ErrGRPCNotCapable, rpctypes.ErrGRPCRequestTooManyRequests, rpctypes.ErrGRPCNoLeader, rpctypes.ErrGRPCNotSupportedForLearner}

// notProposed are raft's own errors for a proposal it refused to append (etcd passes them on
// with code Unknown): during a leadership transfer the leader drops proposals, and a stopped
// node takes none. Only the proposing call returns them, so the write was never in the log.
var notProposed = []string{history.ProposalDropped, "raft: stopped"}

// Classify decides the outcome of an operation from its error. A read that failed had no
// effect. A write is unknown unless the error proves it was never proposed.
func Classify(t history.OpType, err error) history.Status {
	if err == nil {
		return history.OK
	}
	if t == history.Get {
		return history.Fail
	}
	for _, d := range definite {
		if errors.Is(err, d) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(d) {
			return history.Fail
		}
	}
	if slices.Contains(notProposed, rpctypes.ErrorDesc(err)) {
		return history.Fail
	}
	return history.Unknown
}

// FillResult is what Fill wrote.
type FillResult struct {
	Bytes  int64  `json:"bytes"`
	Writes int    `json:"writes"`
	Error  string `json:"error,omitempty"` // the error that stopped it (NOSPACE when it filled the quota)
}

// Fill writes values of valueSize bytes under the prefix's "filler/" keys, outside the
// workload's keys, until a write fails (NOSPACE once the database reaches its quota) or limit
// bytes are written.
func (r *Runner) Fill(ctx context.Context, valueSize int, limit int64) FillResult {
	var res FillResult
	c, err := r.newClient()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer c.Close()
	value := strings.Repeat("x", valueSize)
	for res.Bytes < limit {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.Put(octx, fmt.Sprintf("%sfiller/%06d", r.cfg.Prefix, res.Writes), value)
		cancel()
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Writes++
		res.Bytes += int64(valueSize)
	}
	return res
}

// Final reads back, for every key, all writes applied to it (walking its versions backwards
// from the current revision) and a linearizable read of its value.
func (r *Runner) Final(ctx context.Context) *history.Final {
	f := &history.Final{Applied: map[string][]history.AppliedWrite{}, Values: map[string]string{}, Complete: true}
	c, err := r.newClient()
	if err != nil {
		f.Complete, f.Error = false, err.Error()
		return f
	}
	defer c.Close()
	var errs []error
	for i := 0; i < r.cfg.Keys; i++ {
		key := r.key(i)
		// A key's read gets a bounded share of the time: a cluster that cannot answer is
		// reported after one timeout, not after every key's.
		kctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		resp, err := c.Get(kctx, key)
		cancel()
		if err != nil && len(errs) > 0 {
			errs = append(errs, fmt.Errorf("reading %s: %w", key, err))
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", key, err))
			continue
		}
		if len(resp.Kvs) == 0 {
			continue
		}
		f.Values[key] = string(resp.Kvs[0].Value)
		var chain []history.AppliedWrite
		kv := resp.Kvs[0]
		for {
			chain = append(chain, history.AppliedWrite{Key: key, Value: string(kv.Value), ModRevision: kv.ModRevision})
			if kv.Version <= 1 {
				break
			}
			prev, err := c.Get(ctx, key, clientv3.WithRev(kv.ModRevision-1))
			if errors.Is(err, rpctypes.ErrCompacted) {
				// Older history is gone: the chain starts at the key's value at the
				// compaction (the checkers decide what that may excuse).
				if f.Compacted == nil {
					f.Compacted = map[string]bool{}
				}
				f.Compacted[key] = true
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("reading %s at revision %d: %w", key, kv.ModRevision-1, err))
				break
			}
			if len(prev.Kvs) == 0 {
				errs = append(errs, fmt.Errorf("%s has version %d at revision %d but nothing before", key, kv.Version, kv.ModRevision))
				break
			}
			kv = prev.Kvs[0]
		}
		for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
			chain[i], chain[j] = chain[j], chain[i]
		}
		f.Applied[key] = chain
	}
	if err := errors.Join(errs...); err != nil {
		f.Complete, f.Error = false, err.Error()
	}
	return f
}

// UnfillResult is what Unfill did.
type UnfillResult struct {
	Deleted  int64  `json:"deleted"`
	Revision int64  `json:"revision"` // the revision compacted up to
	Error    string `json:"error,omitempty"`
}

// Unfill deletes what Fill wrote and compacts the history up to that deletion, so that the
// members' database files hold free pages (fragmentation) that defragmentation returns. Call it
// before the load starts: compacting revisions the load wrote would keep the final read-back
// (Final) from walking their history.
func (r *Runner) Unfill(ctx context.Context) UnfillResult {
	var res UnfillResult
	c, err := r.newClient()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer c.Close()
	del, err := c.Delete(ctx, r.cfg.Prefix+"filler/", clientv3.WithPrefix())
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Deleted, res.Revision = del.Deleted, del.Header.Revision
	if _, err := c.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		res.Error = err.Error()
	}
	return res
}

// LeaseResult is what Lease or Revoke did.
type LeaseResult struct {
	ID       int64  `json:"id"`
	Keys     int    `json:"keys"`     // put on the lease
	Revision int64  `json:"revision"` // of the last write
	Error    string `json:"error,omitempty"`
}

// Lease grants a lease of ttl seconds, puts n keys on it (the prefix's "leased/<lease ID>/<i>",
// outside the workload's keys) and keeps it alive for as long as the workload runs, or until
// Revoke: keys a client keeps on a lease, as elections and service registries do. A keepalive
// the client gives up on is not started again: give a TTL well above any fault of the run. A
// lease whose keys could not all be put is revoked.
func (r *Runner) Lease(ctx context.Context, ttl int64, n int) LeaseResult {
	var res LeaseResult
	c, err := r.leasingClient()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	l, err := c.Grant(ctx, ttl)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.ID = int64(l.ID)
	// The keepalive outlives the request: it stops with Revoke, or with the process.
	kctx, stop := context.WithCancel(context.Background())
	ka, err := c.KeepAlive(kctx, l.ID)
	if err != nil {
		stop()
		res.Error = err.Error()
		return res
	}
	go func() {
		for range ka {
		}
	}()
	r.lmu.Lock()
	r.leases[l.ID] = stop
	r.lmu.Unlock()
	for i := range n {
		resp, err := c.Put(ctx, fmt.Sprintf("%sleased/%x/%d", r.cfg.Prefix, int64(l.ID), i), "v", clientv3.WithLease(l.ID))
		if err != nil {
			res.Error = err.Error()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if rev := r.Revoke(rctx, res.ID); rev.Error != "" {
				res.Error += "; revoking the lease: " + rev.Error
			}
			return res
		}
		res.Keys++
		res.Revision = resp.Header.Revision
	}
	return res
}

// Revoke stops keeping lease id alive and revokes it, which deletes the keys on it; a lease
// whose revocation fails expires a TTL later.
func (r *Runner) Revoke(ctx context.Context, id int64) LeaseResult {
	res := LeaseResult{ID: id}
	c, err := r.leasingClient()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	r.lmu.Lock()
	if stop := r.leases[clientv3.LeaseID(id)]; stop != nil {
		stop()
		delete(r.leases, clientv3.LeaseID(id))
	}
	r.lmu.Unlock()
	resp, err := c.Revoke(ctx, clientv3.LeaseID(id))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Revision = resp.Header.Revision
	return res
}

// leasingClient is the client that grants, keeps alive and revokes Lease's leases, made on
// first use and kept until Close.
func (r *Runner) leasingClient() (*clientv3.Client, error) {
	r.lmu.Lock()
	defer r.lmu.Unlock()
	if r.leaseClient == nil {
		c, err := r.newClient()
		if err != nil {
			return nil, err
		}
		r.leaseClient, r.leases = c, map[clientv3.LeaseID]context.CancelFunc{}
	}
	return r.leaseClient, nil
}

// Close stops keeping Lease's leases alive (they expire a TTL later, and their keys with them)
// and closes the client they were granted on. The workload's load is stopped by Stop.
func (r *Runner) Close() error {
	r.lmu.Lock()
	defer r.lmu.Unlock()
	for id, stop := range r.leases {
		stop()
		delete(r.leases, id)
	}
	if r.leaseClient == nil {
		return nil
	}
	err := r.leaseClient.Close()
	r.leaseClient = nil
	return err
}

// Probe writes a value to key, outside the load's history, and returns the error etcd answered
// ("" for none): a user limited to a prefix must be refused outside it.
func (r *Runner) Probe(ctx context.Context, key string) string {
	c, err := r.newClient()
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	if _, err := c.Put(ctx, key, "probe"); err != nil {
		return err.Error()
	}
	return ""
}
