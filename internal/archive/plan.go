package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Plan is what a restore to a point does after the fetch: the fetch container (which reaches
// the bucket) writes it beside the snapshot with the segments it needs in a DirStore, and the
// restore container (which has etcd and etcdutl, not the bucket) rebases the snapshot by it
// before restoring. It is the contract between the two.
type Plan struct {
	// ClusterID and Prefix name the archive, as in the bucket (the DirStore keeps the names).
	ClusterID uint64 `json:"clusterID"`
	Prefix    string `json:"prefix"`
	// From is the snapshot's revision; To the revision the restore goes to.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Asked is the target as the spec gave it ("revision 42", "time 2026-…"), for messages.
	Asked string `json:"asked"`
}

// planFile and storeDir are the plan and the fetched segments in a restore's archive
// directory.
const (
	planFile = "plan.json"
	storeDir = "store"
)

// Store is the directory's fetched segments.
func PlanStore(dir string) DirStore { return DirStore(filepath.Join(dir, storeDir)) }

// WritePlan writes the plan into dir, through a temporary file: it is the last thing the fetch
// writes, so a plan that exists has its segments.
func WritePlan(dir string, p Plan) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	// A restore to the snapshot's own revision fetches no segment: nothing made dir yet.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, planFile+".part")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, planFile))
}

// ReadPlan reads dir's plan; nil when there is none (a restore of the snapshot as it is).
func ReadPlan(dir string) (*Plan, error) {
	data, err := os.ReadFile(filepath.Join(dir, planFile)) //nolint:gosec // the restore's own directory
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("the restore's plan %s does not decode: %w", filepath.Join(dir, planFile), err)
	}
	return &p, nil
}

// Closed is the archive's mark that every revision the archiver received up to Time (Unix
// milliseconds) is stored, the newest being Revision: the cluster was asked after Time and had
// no revision after it. A restore to a time after the mark cannot be told yet.
type Closed struct {
	Revision int64 `json:"revision"`
	Time     int64 `json:"time"`
}

// closedName is where the mark of cluster id's archive goes.
func closedName(prefix string, clusterID uint64) string {
	return Dir(prefix, clusterID) + "/closed.json"
}

func writeClosed(ctx context.Context, s Store, prefix string, clusterID uint64, c Closed) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := s.Put(ctx, closedName(prefix, clusterID), data); err != nil {
		return fmt.Errorf("writing the archive's closed mark: %w", err)
	}
	return nil
}

// ReadClosed reads cluster id's closed mark.
func ReadClosed(ctx context.Context, s Store, prefix string, clusterID uint64) (Closed, error) {
	data, err := s.Get(ctx, closedName(prefix, clusterID))
	if err != nil {
		return Closed{}, fmt.Errorf("reading the archive's closed mark (the archiver writes it every few seconds while it is current): %w", err)
	}
	var c Closed
	if err := json.Unmarshal(data, &c); err != nil {
		return Closed{}, fmt.Errorf("the archive's closed mark does not decode: %w", err)
	}
	return c, nil
}

// Target is where a restore to a point goes: a revision, or a time (the newest revision the
// archiver had received by then).
type Target struct {
	Revision int64
	Time     time.Time
}

func (t Target) String() string {
	if t.Revision > 0 {
		return fmt.Sprintf("revision %d", t.Revision)
	}
	return "time " + t.Time.UTC().Format(time.RFC3339Nano)
}

// Prepare makes the plan of a restore to target from a snapshot of cluster id at revision
// from, and copies the segments it needs from s into dir's store. It
// refuses a target the archive does not reach from the snapshot (CoverError, naming what it
// covers), a revision before the snapshot's, and a time before the snapshot's revision was
// received (only an older snapshot reaches it).
func Prepare(ctx context.Context, s Store, prefix string, clusterID uint64, from int64, target Target, dir string) (Plan, error) {
	p := Plan{ClusterID: clusterID, Prefix: prefix, From: from, To: target.Revision, Asked: target.String()}
	if target.Revision == 0 {
		taken, err := snapshotTime(ctx, s, prefix, clusterID, from)
		if err != nil {
			return Plan{}, err
		}
		res, err := ResolveTime(ctx, s, prefix, clusterID, from, taken, target.Time)
		if err != nil {
			return Plan{}, err
		}
		// A record received after the time closes it; else the archive's closed mark must
		// reach it, at the end of this range: otherwise the revision at that time may be one
		// the archive has not got yet (every member must resolve the same revision), or lie in
		// a gap after the range.
		if res.Revision == res.Newest {
			c, err := ReadClosed(ctx, s, prefix, clusterID)
			if err != nil {
				return Plan{}, fmt.Errorf("the archive holds nothing received after %s: %w", target.Time.UTC().Format(time.RFC3339Nano), err)
			}
			if c.Revision > res.Newest {
				return Plan{}, fmt.Errorf("%s lies after the archive's range from the snapshot, which ends at revision %d received at %s: if the archive resumed after a gap (status.archive.ranges), restore from a snapshot taken after the gap; otherwise this tries again",
					target.Time.UTC().Format(time.RFC3339Nano), res.Newest, res.NewestTime.UTC().Format(time.RFC3339Nano))
			}
			if c.Revision != res.Newest || time.UnixMilli(c.Time).Before(target.Time) {
				return Plan{}, fmt.Errorf("the archive is known complete up to %s (revision %d), and its range from the snapshot ends at revision %d received at %s: the revision at %s is not known yet; this tries again until the archive reaches it",
					time.UnixMilli(c.Time).UTC().Format(time.RFC3339Nano), c.Revision, res.Newest, res.NewestTime.UTC().Format(time.RFC3339Nano), target.Time.UTC().Format(time.RFC3339Nano))
			}
		}
		p.To = res.Revision
	}
	if p.To < from {
		return Plan{}, fmt.Errorf("the target %s is before the snapshot's revision %d: restore from an older snapshot", target, from)
	}
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil {
		return Plan{}, err
	}
	need, err := Cover(spans, from, p.To)
	if err != nil {
		return Plan{}, err
	}
	local := PlanStore(dir)
	for _, sp := range need {
		data, err := s.Get(ctx, sp.Name)
		if err != nil {
			return Plan{}, fmt.Errorf("fetching segment %s: %w", sp.Name, err)
		}
		if err := local.Put(ctx, sp.Name, data); err != nil {
			return Plan{}, err
		}
	}
	return p, WritePlan(dir, p)
}

// snapshotTime is when the archiver received revision rev (the snapshot's), or, when the
// archive starts right after it, the next one: a time before it cannot be told apart from one
// before the snapshot, and is refused.
func snapshotTime(ctx context.Context, s Store, prefix string, clusterID uint64, rev int64) (time.Time, error) {
	spans, err := Segments(ctx, s, prefix, clusterID)
	if err != nil {
		return time.Time{}, err
	}
	for _, want := range []int64{rev, rev + 1} {
		for _, sp := range spans {
			if sp.First > want || sp.Last < want {
				continue
			}
			records, err := readSegment(ctx, s, sp, clusterID)
			if err != nil {
				return time.Time{}, err
			}
			for _, r := range records {
				if r.Revision == want {
					return r.At(), nil
				}
			}
		}
	}
	return time.Time{}, &CoverError{From: rev, To: rev + 1, Covered: Ranges(spans)}
}
