package launcher

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
)

// RestoreOptions of the restore command.
type RestoreOptions struct {
	DataDir    string
	MarkerPath string
	// Snapshot fetched and verified by the fetch-snapshot container.
	Snapshot string
	// Command is etcdutl snapshot restore and its flags, without --data-dir, which Restore
	// adds.
	Command []string
}

// Restore restores the snapshot into the member's data directory with etcdutl, once: a member
// that has data, or that has run before (its marker exists), is left alone, and the launch
// that follows judges its volume as always. etcdutl writes into a directory beside the data
// directory, which is renamed into place only when the restore is complete, so a restore cut
// short leaves no half-restored member. The snapshot is removed afterwards.
func Restore(o RestoreOptions, logw io.Writer) error {
	logger := log.New(logw, "quorate-launcher restore: ", log.LstdFlags)
	if HasData(o.DataDir) {
		logger.Printf("%s holds data: nothing to restore", o.DataDir)
		return removeSnapshot(o.Snapshot)
	}
	if m, err := ReadMarker(o.MarkerPath); err != nil || m != nil {
		// The member has run: its launch refuses the empty volume (DataLost), and the operator
		// replaces it. Restoring the backup here would bring back old data under its name.
		logger.Printf("the member has run before (marker %s): not restoring", o.MarkerPath)
		return nil
	}
	if _, err := os.Stat(o.Snapshot); err != nil {
		return fmt.Errorf("the snapshot to restore is missing (%w): the fetch-snapshot container should have fetched it", err)
	}
	tmp := o.DataDir + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	args := append(append([]string{}, o.Command[1:]...), "--data-dir="+tmp)
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
	logger.Printf("restored %s into %s", o.Snapshot, o.DataDir)
	return removeSnapshot(o.Snapshot)
}

func removeSnapshot(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
