package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Archiver writes every revision of a cluster into segments.
type Archiver struct {
	Client *clientv3.Client
	Store  Store
	// Prefix of the archive's objects in Store (e.g. "<namespace>/<cluster>/archive").
	Prefix string
	// ClusterID the archive belongs to (required): its segments go under Dir(Prefix,
	// ClusterID), and a watch answered by another cluster (a member replaced by one of
	// another cluster under the same address) ends the run.
	ClusterID uint64
	// MaxLag bounds how long a received revision waits before its segment is written (with
	// the store's write time, the archive's recovery point); 500 ms when zero.
	MaxLag time.Duration
	// MaxRecords and MaxBytes bound a segment (10000 revisions, 8 MiB of keys and values
	// when zero).
	MaxRecords, MaxBytes int
	// Archived is told each segment written (may be nil): for status and metrics.
	Archived func(Progress)
	// ClusterRevision reads the cluster's revision now (may be nil). With it, the archiver
	// closes time every CloseEvery (5 s when zero): once it has stored every revision the
	// cluster has, it writes the archive's Closed mark, which a restore to a time needs.
	ClusterRevision func(context.Context) (int64, error)
	CloseEvery      time.Duration
	// ClosedMark is told each closed mark written (may be nil).
	ClosedMark func(Closed)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Progress is where the archive stands.
type Progress struct {
	// Revision is the newest revision archived, Time when it was received.
	Revision int64
	Time     time.Time
	// Segment just written.
	Segment string
}

// GapError: etcd compacted revisions the archive has not got; the archive cannot go on from
// After. Take a full snapshot (at a revision of at least Compacted) and archive from it.
type GapError struct {
	After, Compacted int64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("etcd has compacted up to revision %d, and the archive holds revisions up to %d only: take a full snapshot and archive on from its revision", e.Compacted, e.After)
}

// ForeignClusterError: the watch was answered by a cluster of another ID.
type ForeignClusterError struct{ Want, Got uint64 }

func (e *ForeignClusterError) Error() string {
	return fmt.Sprintf("the watch was answered by cluster %x, not %x, whose archive this is: the endpoints reach another cluster; archiving stops", e.Got, e.Want)
}

func (a *Archiver) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Archiver) maxLag() time.Duration {
	if a.MaxLag > 0 {
		return a.MaxLag
	}
	return 500 * time.Millisecond
}

// Last is the newest revision cluster id's archive under prefix holds (0 when it holds none).
func Last(ctx context.Context, s Store, prefix string, clusterID uint64) (int64, error) {
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil {
		return 0, err
	}
	var last int64
	for _, sp := range spans {
		last = max(last, sp.Last)
	}
	return last, nil
}

// Run archives every revision after from (the newest one archived, or the revision of the
// snapshot the archive starts from) until ctx ends or something stops it: compaction past the
// archive (GapError), another cluster (ForeignClusterError), a revision that does not follow
// the one before, a watch that fails, a segment that cannot be written. What was received is
// written before it returns. Run again from Last after an error; a GapError needs a snapshot
// first.
//
// It relies on etcd delivering a revision's events in one watch response (no WithFragment),
// and on every revision holding at least one event.
func (a *Archiver) Run(ctx context.Context, from int64) error {
	if a.ClusterID == 0 {
		return errors.New("the archiver needs the cluster's ID")
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	w := &segmentWriter{a: a, last: from}
	// No progress notifications: a client that reconnects resumes from a notification's
	// revision, which some etcd releases sent ahead of events not yet delivered.
	wch := a.Client.Watch(wctx, "", clientv3.WithPrefix(), clientv3.WithRev(from+1))
	// Fires when the oldest pending revision has waited MaxLag.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	arm := func() {
		if len(w.pending) == 0 {
			timer.Stop()
			return
		}
		timer.Reset(max(w.oldest.Add(a.maxLag()).Sub(a.now()), 0))
	}
	closeEvery := a.CloseEvery
	if closeEvery <= 0 {
		closeEvery = 5 * time.Second
	}
	closer := time.NewTicker(closeEvery)
	defer closer.Stop()
	stop := func(err error) error {
		// What was received is archived even when the run ends; its own deadline, since ctx
		// may be what ended it.
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer fcancel()
		return errors.Join(err, w.flush(fctx))
	}
	for {
		select {
		case <-ctx.Done():
			return stop(ctx.Err())
		case <-closer.C:
			if err := w.close(ctx); err != nil {
				return stop(err)
			}
			arm()
		case <-timer.C:
			if w.due() {
				if err := w.flush(ctx); err != nil {
					return stop(err)
				}
			}
			arm()
		case resp, ok := <-wch:
			if !ok {
				if err := ctx.Err(); err != nil {
					return stop(err)
				}
				return stop(fmt.Errorf("the watch from revision %d ended", w.last+1))
			}
			// The cluster first: another cluster's compaction is not this archive's gap.
			if resp.Header.ClusterId != 0 && resp.Header.ClusterId != a.ClusterID {
				return stop(&ForeignClusterError{Want: a.ClusterID, Got: resp.Header.ClusterId})
			}
			if resp.CompactRevision != 0 {
				return stop(&GapError{After: w.last, Compacted: resp.CompactRevision})
			}
			if err := resp.Err(); err != nil {
				return stop(fmt.Errorf("watching from revision %d: %w", w.last+1, err))
			}
			if err := w.add(ctx, resp.Events); err != nil {
				return stop(err)
			}
			arm()
		}
	}
}

// segmentWriter collects records and writes them as segments.
type segmentWriter struct {
	a       *Archiver
	last    int64 // the newest revision received
	pending []Record
	bytes   int
	oldest  time.Time
	// ttls are the granted TTLs of the leases seen in this run (learnLeases).
	ttls map[int64]int64
}

// maxKnownLeases bounds segmentWriter.ttls: past it the map starts again empty (a lease seen
// again is asked again).
const maxKnownLeases = 100000

// leaseLookupTimeout bounds one lease's lookup (a follower forwards it to the leader, which
// answers once it has applied what it committed).
const leaseLookupTimeout = 5 * time.Second

// learnLeases asks the cluster, before any event of a watch response is added, the granted TTL
// of each lease its puts attach keys to that this run has not seen: the watch tells which
// lease a key is attached to, not the lease's grant, and a restore grants a lease its snapshot
// lacks with it, under the same ID. A lease that no longer exists (expired or revoked before
// the archiver asked; its keys' deletion follows in the archive) is known as 0. A lookup that
// fails is not remembered: the next put on the lease asks again, and this one's TTL is 0. It
// fails only when ctx ended, so that no revision is added without its TTLs.
func (w *segmentWriter) learnLeases(ctx context.Context, events []*clientv3.Event) error {
	if w.ttls == nil || len(w.ttls) >= maxKnownLeases {
		w.ttls = map[int64]int64{}
	}
	for _, ev := range events {
		id := ev.Kv.Lease
		if ev.Type == mvccpb.DELETE || id == 0 {
			continue
		}
		if _, seen := w.ttls[id]; seen {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, leaseLookupTimeout)
		resp, err := w.a.Client.TimeToLive(rctx, clientv3.LeaseID(id))
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			continue
		}
		// GrantedTTL: 0 only for a lease that does not exist (TTL, the time left in whole
		// seconds, is 0 for a live lease with less than a second left).
		w.ttls[id] = max(resp.GrantedTTL, 0)
	}
	return nil
}

// add appends the events to the pending records; a full segment is written before a revision
// that would not fit begins (a revision is never split).
func (w *segmentWriter) add(ctx context.Context, events []*clientv3.Event) error {
	// Received now, however long the leases' lookups take.
	now := w.a.now()
	if err := w.learnLeases(ctx, events); err != nil {
		return err
	}
	for _, ev := range events {
		rev := ev.Kv.ModRevision
		n := len(w.pending)
		switch {
		case n > 0 && rev == w.pending[n-1].Revision:
		case rev == w.last+1:
			if w.full() {
				if err := w.flush(ctx); err != nil {
					return err
				}
				n = 0
			}
			if n == 0 {
				w.oldest = now
			}
			w.pending = append(w.pending, Record{Revision: rev, Time: now.UnixMilli()})
			w.last = rev
		default:
			return fmt.Errorf("the watch delivered revision %d after %d: revisions must follow one another; archiving stops", rev, w.last)
		}
		op := Op{Type: Put, Key: ev.Kv.Key, Value: ev.Kv.Value, Version: ev.Kv.Version, Lease: ev.Kv.Lease}
		if ev.Type == mvccpb.DELETE {
			op = Op{Type: Delete, Key: ev.Kv.Key}
		} else if op.Lease != 0 {
			op.LeaseTTL = w.ttls[op.Lease]
		}
		r := &w.pending[len(w.pending)-1]
		r.Ops = append(r.Ops, op)
		w.bytes += len(op.Key) + len(op.Value)
	}
	return nil
}

// close stores what is pending, and if the cluster has no revision after the newest stored,
// writes the Closed mark: every revision received up to the time before the cluster was asked
// is stored.
func (w *segmentWriter) close(ctx context.Context) error {
	if w.a.ClusterRevision == nil {
		return nil
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	asked := w.a.now()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	rev, err := w.a.ClusterRevision(rctx)
	cancel()
	switch {
	case err != nil || rev > w.last:
		// Not known to be complete yet: the next tick tries again.
		return nil
	case rev < w.last:
		// The cluster under this ID went back before revisions the archive holds (a forced
		// recovery from a member that lacked them): nothing may be closed on that. The run
		// ends, and the next one's CheckContinues says what to do.
		return fmt.Errorf("the cluster answers at revision %d, before revision %d the archive received from it: its history was rewritten under the same cluster ID, and no closed mark is written", rev, w.last)
	}
	c := Closed{Revision: w.last, Time: asked.UnixMilli()}
	if err := writeClosed(ctx, w.a.Store, w.a.Prefix, w.a.ClusterID, c); err != nil {
		return err
	}
	if w.a.ClosedMark != nil {
		w.a.ClosedMark(c)
	}
	return nil
}

func (w *segmentWriter) due() bool {
	return len(w.pending) > 0 && w.a.now().Sub(w.oldest) >= w.a.maxLag()
}

func (w *segmentWriter) full() bool {
	maxRecords, maxBytes := w.a.MaxRecords, w.a.MaxBytes
	if maxRecords <= 0 {
		maxRecords = 10000
	}
	if maxBytes <= 0 {
		maxBytes = 8 << 20
	}
	return len(w.pending) >= maxRecords || w.bytes >= maxBytes
}

func (w *segmentWriter) flush(ctx context.Context) error {
	if len(w.pending) == 0 {
		return nil
	}
	data, err := Encode(w.a.ClusterID, w.pending)
	if err != nil {
		return err
	}
	first, last := w.pending[0], w.pending[len(w.pending)-1]
	name := SegmentName(w.a.Prefix, w.a.ClusterID, first.Revision, last.Revision)
	if err := w.a.Store.Put(ctx, name, data); err != nil {
		return fmt.Errorf("writing segment %s (revisions %d–%d): %w", name, first.Revision, last.Revision, err)
	}
	w.pending, w.bytes = nil, 0
	if w.a.Archived != nil {
		w.a.Archived(Progress{Revision: last.Revision, Time: last.At(), Segment: name})
	}
	return nil
}
