package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// HistoryError: the cluster's history is not the one the archive holds up to its newest
// revision (a forced recovery rewrote it under the same cluster ID, or the data was replaced):
// archiving on would mix two histories in one archive.
type HistoryError struct {
	Last    int64
	Cluster int64
	Why     string
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("the cluster (at revision %d) does not continue the archive, which holds revisions up to %d: %s; archiving on would mix two histories under one cluster ID: move the archive's directory for this cluster ID aside in the bucket (restores up to revision %d stay possible from it), then the archiver starts a new archive",
		e.Cluster, e.Last, e.Why, e.Last)
}

// CheckContinues checks, before archiving on after revision last, that the cluster still has
// the history the archive holds: its revision is not behind last, and revision last's changes
// are in it as the archive recorded them. A revision etcd compacted cannot be checked, and
// passes (the watch then reports the gap).
func CheckContinues(ctx context.Context, c *clientv3.Client, s Store, prefix string, clusterID uint64, last int64) error {
	if last == 0 {
		return nil
	}
	resp, err := c.Get(ctx, "\x00", clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("reading the cluster's revision: %w", err)
	}
	if resp.Header.ClusterId != clusterID {
		return &ForeignClusterError{Want: clusterID, Got: resp.Header.ClusterId}
	}
	if resp.Header.Revision < last {
		return &HistoryError{Last: last, Cluster: resp.Header.Revision, Why: "the cluster is behind the archive"}
	}
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil {
		return err
	}
	var holding *Span
	for i := range spans {
		if spans[i].First <= last && spans[i].Last >= last {
			holding = &spans[i]
		}
	}
	if holding == nil {
		return nil
	}
	records, err := readSegment(ctx, s, *holding, clusterID)
	if err != nil {
		return err
	}
	for _, r := range records {
		if r.Revision != last {
			continue
		}
		for _, op := range r.Ops {
			got, err := c.Get(ctx, string(op.Key), clientv3.WithRev(last))
			if errors.Is(err, rpctypes.ErrCompacted) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading key %q at revision %d: %w", op.Key, last, err)
			}
			switch {
			case op.Type == Delete && len(got.Kvs) > 0:
				return &HistoryError{Last: last, Cluster: resp.Header.Revision, Why: fmt.Sprintf("key %q, deleted at revision %d in the archive, exists there in the cluster", op.Key, last)}
			case op.Type == Put && (len(got.Kvs) == 0 || got.Kvs[0].ModRevision != last || !bytes.Equal(got.Kvs[0].Value, op.Value)):
				return &HistoryError{Last: last, Cluster: resp.Header.Revision, Why: fmt.Sprintf("key %q, written at revision %d in the archive, is not written so there in the cluster", op.Key, last)}
			}
		}
	}
	return nil
}
