//go:build mutants

package launcher

import (
	"bytes"
	"errors"
	"log"
	"slices"
	"testing"

	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// bootstrap-blank-volume: a member that has run (its pod requires data, or its marker says it
// held data) starts on an empty volume.
func TestBootstrapBlankVolumeMutant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		marker  *Marker
		require bool
	}{
		{"required data missing", nil, true},
		{"marker without data", &Marker{ClusterID: "abc", MemberID: "12", Member: "demo-1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := volume(t, false, tc.marker)
			v.RequireData = tc.require
			var r *Refusal
			if _, err := v.Check(); !errors.As(err, &r) || r.Kind != RefusalDataLost {
				t.Fatalf("without the mutant: %v, want a %s refusal", err, RefusalDataLost)
			}
			defer mutant.Set("bootstrap-blank-volume")()
			if _, err := v.Check(); err != nil {
				t.Fatalf("with bootstrap-blank-volume: %v, want a start", err)
			}
		})
	}
}

// keep-force-new-cluster: the survivor forced for this recovery is forced again at its next
// start.
func TestKeepForceNewClusterMutant(t *testing.T) {
	etcdCmd := []string{"/usr/local/bin/etcd", "--name=demo-1", flagForceNewCluster}
	o := Options{Volume: Volume{Member: "demo-1"}, ForceToken: "incident-1", Command: etcdCmd}
	marker := &Marker{Member: "demo-1", ForcedToken: "incident-1"}
	logger := log.New(&bytes.Buffer{}, "", 0)
	if got, forcing := o.forceOnce(marker, logger); forcing || !slices.Equal(got.Command, etcdCmd[:2]) {
		t.Fatalf("without the mutant: forcing %v, %q", forcing, got.Command)
	}
	defer mutant.Set("keep-force-new-cluster")()
	if got, forcing := o.forceOnce(marker, logger); !forcing || !slices.Equal(got.Command, etcdCmd) {
		t.Fatalf("with keep-force-new-cluster: forcing %v, %q", forcing, got.Command)
	}
}

// launcher-trusts-marker: another cluster's data behind a member's marker is started.
func TestLauncherTrustsMarkerMutant(t *testing.T) {
	a := testsupport.StartEtcd(t, "a", false)
	b := testsupport.StartEtcd(t, "b", false)
	idA := identityOf(t, a)
	a.Stop()
	b.Stop()
	v := volume(t, false, markerOf(idA, "a"))
	v.DataDir = b.DataDir
	var r *Refusal
	if _, err := v.Check(); !errors.As(err, &r) || r.Kind != RefusalClusterIDMismatch {
		t.Fatalf("without the mutant: %v, want a %s refusal", err, RefusalClusterIDMismatch)
	}
	defer mutant.Set("launcher-trusts-marker")()
	if _, err := v.Check(); err != nil {
		t.Fatalf("with launcher-trusts-marker: %v, want a start", err)
	}
}
