package archive

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Replayed says what Replay did.
type Replayed struct {
	// From is the revision the cluster had (the snapshot's), To the one it has now.
	From, To int64
	// Records applied; Segments read.
	Records, Segments int
	// Unleased counts puts whose lease the restored cluster does not have (granted after the
	// snapshot: the archive has the attachment, not the grant): written without a lease.
	Unleased int
}

// ReplayError: a record did not land at its revision, so the restored cluster is not the
// archived one (another snapshot than the archive's, or writes by someone else during the
// replay). The restore must stop.
type ReplayError struct {
	Record, Got int64
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("archived revision %d landed at revision %d: the cluster being restored does not match the archive (the snapshot is not the archive's, or a client writes to it during the restore); nothing after revision %d was applied", e.Record, e.Got, e.Record-1)
}

// Replay applies the archive's records after revision from up to and including revision to,
// one transaction per record, to a cluster that is at revision from (restored from a snapshot
// at from, or replayed to from before) and that no client reaches yet, and checks each record
// landed at its revision. The archive must cover them (Cover's error otherwise), and the
// cluster must be at from: both are checked before anything is applied.
func Replay(ctx context.Context, c *clientv3.Client, s Store, prefix string, from, to int64) (Replayed, error) {
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
	spans, err := Segments(ctx, s, prefix)
	if err != nil {
		return out, err
	}
	need, err := Cover(spans, out.From, to)
	if err != nil {
		return out, err
	}
	leases := map[int64]bool{}
	for _, sp := range need {
		data, err := s.Get(ctx, sp.Name)
		if err != nil {
			return out, fmt.Errorf("reading segment %s: %w", sp.Name, err)
		}
		_, records, err := Decode(data)
		if err != nil {
			return out, fmt.Errorf("segment %s: %w", sp.Name, err)
		}
		out.Segments++
		for _, r := range records {
			if r.Revision <= out.To {
				continue
			}
			if r.Revision > to {
				return out, nil
			}
			unleased, err := apply(ctx, c, r, leases)
			if err != nil {
				return out, err
			}
			out.Records++
			out.Unleased += unleased
			out.To = r.Revision
		}
	}
	return out, nil
}

// apply writes one record as one transaction.
func apply(ctx context.Context, c *clientv3.Client, r Record, leases map[int64]bool) (unleased int, err error) {
	ops := make([]clientv3.Op, 0, len(r.Ops))
	for _, op := range r.Ops {
		switch op.Type {
		case Put:
			var opts []clientv3.OpOption
			if op.Lease != 0 {
				ok, err := hasLease(ctx, c, op.Lease, leases)
				if err != nil {
					return 0, err
				}
				if ok {
					opts = append(opts, clientv3.WithLease(clientv3.LeaseID(op.Lease)))
				} else {
					unleased++
				}
			}
			ops = append(ops, clientv3.OpPut(string(op.Key), string(op.Value), opts...))
		case Delete:
			ops = append(ops, clientv3.OpDelete(string(op.Key)))
		default:
			return 0, fmt.Errorf("revision %d: unknown operation %q", r.Revision, op.Type)
		}
	}
	resp, err := c.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("applying revision %d: %w", r.Revision, err)
	}
	if resp.Header.Revision != r.Revision {
		return 0, &ReplayError{Record: r.Revision, Got: resp.Header.Revision}
	}
	return unleased, nil
}

func hasLease(ctx context.Context, c *clientv3.Client, id int64, known map[int64]bool) (bool, error) {
	if ok, seen := known[id]; seen {
		return ok, nil
	}
	ttl, err := c.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return false, fmt.Errorf("looking up lease %x: %w", id, err)
	}
	known[id] = ttl.TTL > 0
	return known[id], nil
}

// ResolveTime finds the newest archived revision received at or before t, among the records
// after revision from (a snapshot's); from itself when none is.
func ResolveTime(ctx context.Context, s Store, prefix string, from int64, t time.Time) (int64, error) {
	spans, err := Segments(ctx, s, prefix)
	if err != nil {
		return 0, err
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
		return 0, err
	}
	at := from
	for _, sp := range need {
		data, err := s.Get(ctx, sp.Name)
		if err != nil {
			return 0, fmt.Errorf("reading segment %s: %w", sp.Name, err)
		}
		_, records, err := Decode(data)
		if err != nil {
			return 0, fmt.Errorf("segment %s: %w", sp.Name, err)
		}
		for _, r := range records {
			if r.Revision <= from {
				continue
			}
			if r.At().After(t) {
				return at, nil
			}
			at = r.Revision
		}
	}
	return at, nil
}
