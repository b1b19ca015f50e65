package launcher

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// RestoreOptions of the restore command.
type RestoreOptions struct {
	DataDir    string
	MarkerPath string
	// PodAnnotationsPath is the pod's annotations file (downward API): the operator records
	// there that the member has run.
	PodAnnotationsPath string
	// TLSDir and Host are the member's server certificate directory (empty for plaintext) and
	// its host name, for asking the other members whether this one ran before.
	TLSDir, Host string
	// Factory dials the other members (nil: etcd.NewClient).
	Factory etcd.Factory
	// Snapshot fetched and verified by the fetch-snapshot container.
	Snapshot string
	// Command is etcdutl snapshot restore and its flags, without --data-dir, which Restore
	// adds.
	Command []string
	// ArchiveDir holds a restore to a point's plan and segments (archive.Plan), when the
	// fetch wrote them: the snapshot is rebased to the plan's revision before it is restored,
	// with the etcd beside etcdutl.
	ArchiveDir string
}

// Restore restores the snapshot into the member's data directory with etcdutl, once, under the
// guard a bootstrap launch has (never bootstrap twice): a member that has data, whose marker
// exists, that the operator recorded as having run (its pod's annotations), or that another
// member lists as started is left alone, and the launch that follows judges its volume as
// always: an empty volume of a member that ran is refused (DataLost) and the operator replaces
// the member. Restoring there would bring the backup's old data back under the member's name:
// a silent rollback of a one-member cluster, a raft panic loop in a larger one. etcdutl writes
// into a directory beside the data directory, which is renamed into place only when the
// restore is complete, so a restore cut short leaves no half-restored member. The snapshot is
// removed afterwards.
func Restore(ctx context.Context, o RestoreOptions, logw io.Writer) error {
	logger := log.New(logw, "quorate-launcher restore: ", log.LstdFlags)
	if HasData(o.DataDir) {
		logger.Printf("%s holds data: nothing to restore", o.DataDir)
		return o.cleanUp()
	}
	if ran, why, err := o.hasRun(ctx); err != nil || ran {
		if err != nil {
			return fmt.Errorf("not restoring: %w", err)
		}
		logger.Printf("%s: not restoring; the launch refuses the empty volume and the operator replaces the member", why)
		return o.cleanUp()
	}
	if _, err := os.Stat(o.Snapshot); err != nil {
		return fmt.Errorf("the snapshot to restore is missing (%w): the fetch-snapshot container should have fetched it", err)
	}
	snapshot, err := o.rebase(ctx, logger)
	if err != nil {
		return err
	}
	tmp := o.DataDir + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	args := append(append([]string{}, o.Command[1:]...), "--data-dir="+tmp)
	if snapshot != o.Snapshot {
		for i, a := range args {
			if a == o.Snapshot {
				args[i] = snapshot
			}
		}
	}
	cmd := exec.Command(o.Command[0], args...) //nolint:gosec // etcdutl and the flags the operator put after --
	cmd.Stdout, cmd.Stderr = logw, logw
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s exited with code %d restoring %s: see the container's log", filepath.Base(o.Command[0]), exit.ExitCode(), o.Snapshot)
		}
		return fmt.Errorf("running %s: %w (the etcd image must hold etcdutl beside etcd)", o.Command[0], err)
	}
	if !HasData(tmp) {
		return fmt.Errorf("%s finished without writing a member directory into %s", filepath.Base(o.Command[0]), tmp)
	}
	if err := os.Rename(tmp, o.DataDir); err != nil {
		return err
	}
	logger.Printf("restored %s into %s", snapshot, o.DataDir)
	return o.cleanUp()
}

// rebase makes, for a restore to a point, the snapshot at the plan's revision, and returns
// the snapshot to restore: the fetched one when there is no plan.
func (o RestoreOptions) rebase(ctx context.Context, logger *log.Logger) (string, error) {
	if o.ArchiveDir == "" {
		return o.Snapshot, nil
	}
	plan, err := archive.ReadPlan(o.ArchiveDir)
	if err != nil || plan == nil {
		return o.Snapshot, err
	}
	if plan.To == plan.From {
		logger.Printf("the target (%s) is the snapshot's own revision %d: restoring the snapshot as it is", plan.Asked, plan.From)
		return o.Snapshot, nil
	}
	out := o.Snapshot + ".rebased"
	rb := archive.Rebase{Etcd: filepath.Join(filepath.Dir(o.Command[0]), "etcd"), Etcdutl: o.Command[0], Dir: o.DataDir + ".rebasing"}
	logger.Printf("rebasing the snapshot (revision %d) to revision %d (%s) with the archive's segments", plan.From, plan.To, plan.Asked)
	got, err := rb.Run(ctx, o.Snapshot, archive.PlanStore(o.ArchiveDir), plan.Prefix, plan.ClusterID, plan.To, out)
	if err != nil {
		return "", fmt.Errorf("rebasing the snapshot to revision %d (%s): %w", plan.To, plan.Asked, err)
	}
	if got.From != plan.From {
		return "", fmt.Errorf("the snapshot is at revision %d, and the plan the fetch wrote was made for one at %d: delete this pod so that it fetches again", got.From, plan.From)
	}
	logger.Printf("rebased to revision %d: %d revisions from %d segments; %d leases granted after the snapshot granted again with their TTLs (%d of them revoked at the end, empty at the target); %d puts on leases whose TTL the archive does not know came back without their lease", got.To, got.Records, got.Segments, got.Granted, got.Revoked, got.Unleased)
	return out, nil
}

// cleanUp removes the fetched snapshot, and a restore to a point's rebased snapshot and
// segments.
func (o RestoreOptions) cleanUp() error {
	if o.ArchiveDir != "" {
		if err := os.RemoveAll(o.ArchiveDir); err != nil {
			return err
		}
		if err := removeSnapshot(o.Snapshot + ".rebased"); err != nil {
			return err
		}
	}
	return removeSnapshot(o.Snapshot)
}

// hasRun says whether the member ran before, and how that is known: its marker, the operator's
// record on its pod, or another member that lists it as started.
func (o RestoreOptions) hasRun(ctx context.Context) (bool, string, error) {
	m, err := ReadMarker(o.MarkerPath)
	if err != nil || m != nil {
		return true, fmt.Sprintf("the member has run before (marker %s)", o.MarkerPath), nil
	}
	ann, err := ReadPodAnnotations(o.PodAnnotationsPath)
	if err != nil {
		return false, "", fmt.Errorf("reading the pod's annotations, which say whether the member has run: %w", err)
	}
	member := flagValue(o.Command, "name")
	if ann[names.AnnotationRequireData] == "true" {
		return true, fmt.Sprintf("the operator recorded that member %s has run (pod annotation %s)", member, names.AnnotationRequireData), nil
	}
	var tlsCfg *tls.Config
	if o.TLSDir != "" {
		cfg, err := pki.DirClientTLS(o.TLSDir, o.Host)
		if err != nil {
			return false, "", fmt.Errorf("reading the member's certificate from %s to ask the other members whether it ran: %w", o.TLSDir, err)
		}
		tlsCfg = cfg
	}
	factory := o.Factory
	if factory == nil {
		factory = etcd.NewClient
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	peers := PeerClientURLs(flagValue(o.Command, "initial-cluster"), member)
	if err := CheckNotBootstrappedBefore(cctx, factory, tlsCfg, member, peers); err != nil {
		return true, err.Error(), nil
	}
	return false, "", nil
}

func removeSnapshot(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
