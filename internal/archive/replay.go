package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Replayed says what Replay did.
type Replayed struct {
	// From is the revision the cluster had (the snapshot's), To the one it has now.
	From, To int64
	// Records applied; Segments read.
	Records, Segments int
	// Granted counts the leases granted after the snapshot that the replay granted again,
	// under their IDs and with the TTLs the archive recorded (Op.LeaseTTL).
	Granted int
	// Revoked counts the leases of Granted revoked at the end, no key being on them at the
	// target.
	Revoked int
	// Unleased counts puts whose lease the restored cluster does not have and the archive
	// recorded no TTL of (it expired or was revoked before the archiver asked, the archiver's
	// lookup failed, or an older archiver wrote the segment): written without a lease.
	Unleased int
}

// ReplayError: the cluster being restored is not in the state the archive continues (another
// snapshot than the archive's, or a client that writes to it during the replay). The record's
// transaction changed nothing when a key was not at the version the archive expects; a record
// that landed at another revision was applied. The restore must stop and start again.
type ReplayError struct {
	Record int64
	// Got is the revision the record landed at; 0 when it changed nothing.
	Got int64
	// Key whose version was not the expected one, when Got is 0.
	Key string
}

func (e *ReplayError) Error() string {
	if e.Got == 0 {
		return fmt.Sprintf("archived revision %d was not applied: key %q is not at the version the archive continues from, so the cluster being restored does not match the archive (the snapshot is not the archive's, or a client writes to it during the restore); restore again from the archive's snapshot, and keep clients away until the replay is done", e.Record, e.Key)
	}
	return fmt.Sprintf("archived revision %d landed at revision %d: the cluster being restored does not match the archive (the snapshot is not the archive's, or a client writes to it during the restore); restore again from the archive's snapshot, and keep clients away until the replay is done", e.Record, e.Got)
}

// Replay applies cluster id's archived records after revision from up to and including
// revision to, one transaction per record, to a cluster that is at revision from (restored
// from a snapshot at from, or replayed to from before) and that no client reaches yet. Each
// transaction applies only if every key it writes is at the version the archive expects, and
// must land at its record's revision. The archive must cover the records (Cover's error
// otherwise), and the cluster must be at from: both are checked before anything is applied.
//
// A lease granted after the snapshot is granted again, under its ID and with the TTL the
// archive recorded, before the first put on it, and kept alive until ctx ends, as the caller
// must keep the snapshot's leases (a lease that ran out would revoke its keys at a revision of
// its own), or until no key is on it any more: then it is revoked. Granting a lease, and
// revoking one without keys, make no revision.
//
// A record is one transaction: etcd refuses one of more operations than its --max-txn-ops
// (128 by default) or bigger than --max-request-bytes, which a lease revocation or a range
// delete of many keys can be. Rebase runs a member without those limits.
func Replay(ctx context.Context, c *clientv3.Client, s Store, prefix string, clusterID uint64, from, to int64) (Replayed, error) {
	resp, err := c.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return Replayed{}, fmt.Errorf("reading the restored cluster's revision: %w", err)
	}
	out := Replayed{From: resp.Header.Revision, To: resp.Header.Revision}
	if out.From != from {
		return out, fmt.Errorf("the cluster to replay onto is at revision %d, not %d: it was restored from another snapshot, or a client wrote to it; restore again, and keep clients away until the replay is done", out.From, from)
	}
	if to < from {
		return out, fmt.Errorf("the target revision %d is before the snapshot's %d: restore from an older snapshot", to, from)
	}
	need, err := cover(ctx, s, prefix, clusterID, from, to)
	if err != nil {
		return out, err
	}
	leases := newLeaseBook()
	err = replayRecords(ctx, c, s, clusterID, need, to, leases, &out)
	out.Granted, out.Unleased = len(leases.mine), leases.unleased
	if err != nil {
		return out, err
	}
	err = leases.revokeEmpty(ctx, c)
	out.Revoked = leases.revoked
	return out, err
}

// replayRecords applies the records of the segments need after out.To up to and including
// to, advancing out.
func replayRecords(ctx context.Context, c *clientv3.Client, s Store, clusterID uint64, need []Span, to int64, leases *leaseBook, out *Replayed) error {
	for _, sp := range need {
		records, err := readSegment(ctx, s, sp, clusterID)
		if err != nil {
			return err
		}
		out.Segments++
		for _, r := range records {
			if r.Revision <= out.To {
				continue
			}
			if r.Revision > to {
				return nil
			}
			if r.Revision != out.To+1 {
				return fmt.Errorf("segment %s: revision %d follows %d: the archive has a gap", sp.Name, r.Revision, out.To)
			}
			if err := apply(ctx, c, r, leases); err != nil {
				return err
			}
			out.Records++
			out.To = r.Revision
		}
	}
	return nil
}

// cover lists cluster id's segments and picks those from from+1 to to.
func cover(ctx context.Context, s Store, prefix string, clusterID uint64, from, to int64) ([]Span, error) {
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil {
		return nil, err
	}
	return Cover(spans, from, to)
}

// readSegment reads and decodes a segment, and checks that it is the one its name says: of
// cluster id, with the revisions of its name.
func readSegment(ctx context.Context, s Store, sp Span, clusterID uint64) ([]Record, error) {
	data, err := s.Get(ctx, sp.Name)
	if err != nil {
		return nil, fmt.Errorf("reading segment %s: %w", sp.Name, err)
	}
	h, records, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("segment %s: %w", sp.Name, err)
	}
	if h.ClusterID != clusterID || h.First != sp.First || h.Last != sp.Last {
		return nil, fmt.Errorf("segment %s holds revisions %d–%d of cluster %016x: not what its name says", sp.Name, h.First, h.Last, h.ClusterID)
	}
	return records, nil
}

// apply writes one record as one transaction, if every key it writes is at the version the
// archive expects.
func apply(ctx context.Context, c *clientv3.Client, r Record, leases *leaseBook) error {
	ops := make([]clientv3.Op, 0, len(r.Ops))
	cmps := make([]clientv3.Cmp, 0, len(r.Ops))
	for _, op := range r.Ops {
		key := string(op.Key)
		switch op.Type {
		case Put:
			var opts []clientv3.OpOption
			if op.Lease != 0 {
				ok, err := leases.ensure(ctx, c, op.Lease, op.LeaseTTL)
				if err != nil {
					return err
				}
				if ok {
					opts = append(opts, clientv3.WithLease(clientv3.LeaseID(op.Lease)))
				} else {
					leases.unleased++
				}
			}
			ops = append(ops, clientv3.OpPut(key, string(op.Value), opts...))
			if op.Version > 0 {
				cmps = append(cmps, clientv3.Compare(clientv3.Version(key), "=", op.Version-1))
			}
		case Delete:
			ops = append(ops, clientv3.OpDelete(key))
			cmps = append(cmps, clientv3.Compare(clientv3.Version(key), ">", 0))
		default:
			return fmt.Errorf("revision %d: unknown operation %q", r.Revision, op.Type)
		}
	}
	resp, err := c.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("applying revision %d: %w", r.Revision, err)
	}
	if !resp.Succeeded {
		return &ReplayError{Record: r.Revision, Key: firstDiffering(ctx, c, r)}
	}
	if resp.Header.Revision != r.Revision {
		return &ReplayError{Record: r.Revision, Got: resp.Header.Revision}
	}
	return nil
}

// firstDiffering names the first key of r that is not at the version r expects.
func firstDiffering(ctx context.Context, c *clientv3.Client, r Record) string {
	for _, op := range r.Ops {
		resp, err := c.Get(ctx, string(op.Key))
		if err != nil {
			return string(op.Key)
		}
		var v int64
		if len(resp.Kvs) > 0 {
			v = resp.Kvs[0].Version
		}
		if op.Type == Put && op.Version > 0 && v != op.Version-1 || op.Type == Delete && v == 0 {
			return string(op.Key)
		}
	}
	return ""
}

// leaseBook is what a replay knows of the leases its records attach keys to.
type leaseBook struct {
	// known: whether the cluster has the lease (looked up, or granted by the replay).
	known map[int64]bool
	// mine are the leases the replay granted, with what stops keeping each alive.
	mine              map[int64]context.CancelFunc
	unleased, revoked int
}

func newLeaseBook() *leaseBook {
	return &leaseBook{known: map[int64]bool{}, mine: map[int64]context.CancelFunc{}}
}

// ensure says whether the cluster has lease id, granting it first, under that ID and with
// ttl seconds, when it does not and ttl is known; a lease it grants is kept alive until ctx
// ends, or until revokeEmpty revokes it.
func (b *leaseBook) ensure(ctx context.Context, c *clientv3.Client, id, ttl int64) (bool, error) {
	has, seen := b.known[id]
	if !seen {
		var err error
		if has, err = leaseExists(ctx, c, id); err != nil {
			return false, err
		}
		b.known[id] = has
	}
	if has || ttl <= 0 {
		return has, nil
	}
	_, err := clientv3.RetryLeaseClient(c).LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: ttl})
	if errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseExist) {
		// A grant that was applied, then retried after a timeout: it is there.
		err = nil
	}
	if err != nil {
		return false, fmt.Errorf("granting lease %x (TTL %d s), granted after the snapshot, to attach the archive's keys to: %w", id, ttl, err)
	}
	kctx, stop := context.WithCancel(ctx)
	if err := keepAlive(kctx, c, id); err != nil {
		stop()
		return false, err
	}
	b.known[id] = true
	b.mine[id] = stop
	return true, nil
}

// revokeEmpty revokes, once the replay is done, each lease it granted that no key is on at
// the target (etcd says which keys are on each): the original revoked it or moved its keys
// off, and an empty lease kept would only load the restored cluster. Revoking a lease without
// keys makes no revision. (Done at the end, not as a lease empties, so that no lease ID is
// revoked and granted again within a replay, where a keepalive answer about the revoked lease
// could end the new one's.)
func (b *leaseBook) revokeEmpty(ctx context.Context, c *clientv3.Client) error {
	for id, stop := range b.mine {
		resp, err := c.TimeToLive(ctx, clientv3.LeaseID(id), clientv3.WithAttachedKeys())
		if status.Code(err) == codes.ResourceExhausted {
			// Too many keys on it to list in one answer: not empty.
			continue
		}
		if err != nil {
			return fmt.Errorf("looking up the keys on lease %x, granted by the replay: %w", id, err)
		}
		if len(resp.Keys) > 0 {
			continue
		}
		if _, err := c.Revoke(ctx, clientv3.LeaseID(id)); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("revoking lease %x, which no key is on at the target: %w", id, err)
		}
		b.revoked++
		stop()
	}
	return nil
}

// leaseExists says whether the cluster has lease id. A lease's TTL is the time it has left,
// in whole seconds (0 for a live lease with less than a second left); its granted TTL is 0
// only for a lease that does not exist.
func leaseExists(ctx context.Context, c *clientv3.Client, id int64) (bool, error) {
	resp, err := c.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return false, fmt.Errorf("looking up lease %x: %w", id, err)
	}
	return resp.GrantedTTL > 0, nil
}

// Resolved is the revision a time resolves to.
type Resolved struct {
	Revision int64
	// Time the archiver received Revision (the snapshot's time when it is the snapshot's).
	Time time.Time
	// Newest is the newest revision the archive holds after the snapshot without a gap, and
	// NewestTime when it was received: a time well after it may fall in an outage of the
	// archiver rather than in a quiet spell of the cluster.
	Newest     int64
	NewestTime time.Time
}

// ResolveTime finds the newest revision of cluster id's archive received at or before t,
// among the records that continue a snapshot taken at revision from, at time taken. A time
// before the snapshot is refused: only an older snapshot reaches it. Times are the archiver's:
// when it received a revision, within its lag of the commit.
func ResolveTime(ctx context.Context, s Store, prefix string, clusterID uint64, from int64, taken, t time.Time) (Resolved, error) {
	if t.Before(taken) {
		return Resolved{}, fmt.Errorf("%s is before the snapshot, taken at %s at revision %d: restore from an older snapshot", t.UTC().Format(time.RFC3339Nano), taken.UTC().Format(time.RFC3339Nano), from)
	}
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil {
		return Resolved{}, err
	}
	// The archive's revisions that continue the snapshot without a gap.
	end := from
	for _, r := range Ranges(spans) {
		if r[0] <= from+1 && r[1] > from {
			end = r[1]
		}
	}
	need, err := Cover(spans, from, end)
	if err != nil {
		return Resolved{}, err
	}
	out := Resolved{Revision: from, Time: taken, Newest: from, NewestTime: taken}
	found := false
	for _, sp := range need {
		records, err := readSegment(ctx, s, sp, clusterID)
		if err != nil {
			return Resolved{}, err
		}
		for _, r := range records {
			if r.Revision <= from {
				continue
			}
			out.Newest, out.NewestTime = r.Revision, r.At()
			if !found && r.At().After(t) {
				found = true
			}
			if !found {
				out.Revision, out.Time = r.Revision, r.At()
			}
		}
	}
	return out, nil
}
