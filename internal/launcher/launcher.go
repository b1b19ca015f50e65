// Package launcher runs inside every member pod, in front of etcd. It guards the member's volume
// before etcd touches it and records which cluster the volume belongs to:
//
//   - A marker file beside the data directory names the cluster and member the data belongs to.
//     It is written once etcd has started and answered with its cluster and member IDs.
//   - A volume whose marker exists but whose data directory is gone refuses to start (DataLost):
//     the operator replaces the member instead of letting it rejoin with an empty log.
//   - A volume whose marker names another cluster refuses to start (ClusterIDMismatch).
//   - A pod that must find data (the member has run before) refuses an empty volume (DataLost).
//   - A bootstrap member with an empty volume first asks its peers whether it has run before
//     (its name is published in the member list); if so it refuses rather than bootstrap twice.
//
// Refusals are written to the container's termination message, where the operator reads them.
package launcher

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
)

// Marker is the content of the marker file.
type Marker struct {
	ClusterID string    `json:"clusterID"`
	MemberID  string    `json:"memberID"`
	Member    string    `json:"member"`
	Written   time.Time `json:"written"`
	// ForcedToken is the spec.recovery.forceNewCluster token of the forced recovery this
	// member was restarted for, once it led the cluster alone: a later start carrying the flag
	// for the same token does not force again.
	ForcedToken string `json:"forcedToken,omitempty"`
}

// ReadMarker returns the marker, or nil if there is none.
func ReadMarker(path string) (*Marker, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the path is the launcher's --marker flag, set by the operator
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("marker %s is corrupt: %w", path, err)
	}
	return &m, nil
}

// WriteMarker writes the marker atomically.
func WriteMarker(path string, m Marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// HasData reports whether dataDir holds an etcd member's data.
func HasData(dataDir string) bool {
	data, _ := hasData(dataDir)
	return data
}

// hasData is HasData, with the error when the data directory cannot be searched (permission
// denied): then nothing is known about the data, and it must not be taken for lost.
func hasData(dataDir string) (bool, error) {
	for _, p := range []string{"member/wal", "member/snap/db"} {
		_, err := os.Stat(filepath.Join(dataDir, p))
		if err == nil {
			return true, nil
		}
		if errors.Is(err, fs.ErrPermission) {
			return false, err
		}
	}
	return false, nil
}

// unreadable is the refusal of a volume the pod's user may not read.
func unreadable(err error) *Refusal {
	return &Refusal{Kind: RefusalVolumeUnreadable, Message: fmt.Sprintf("%v: this pod runs as user %d, group %d, and may not read the volume's files, which another user wrote; the data is left as it is. Run the member as the user that owns them (the PVC's %s annotation records it), or make the files readable by this pod's group", err, os.Getuid(), os.Getgid(), names.AnnotationPodUser)}
}

// ReadPodAnnotations reads the pod's annotations as the downward API writes them: one
// key="value" a line, the value quoted as Go quotes strings. A missing file gives none.
func ReadPodAnnotations(path string) (map[string]string, error) {
	out := map[string]string{}
	b, err := os.ReadFile(path) //nolint:gosec // the path is the launcher's --pod-annotations flag, set by the operator
	if errors.Is(err, os.ErrNotExist) || path == "" {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, quoted, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not key=\"value\"", path, line)
		}
		v, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("%s: value of %s: %w", path, k, err)
		}
		out[k] = v
	}
	return out, nil
}

// FromAnnotations tightens the volume check with what the operator recorded on the pod after
// the member first ran: from then on the member requires its data and its cluster ID, even
// in a pod created before (a bootstrap pod, whose flags allow an empty volume).
func (v Volume) FromAnnotations(ann map[string]string) Volume {
	if ann[names.AnnotationRequireData] == "true" {
		v.RequireData = true
	}
	if id := ann[names.AnnotationClusterID]; id != "" && v.ExpectedClusterID == "" {
		v.ExpectedClusterID = id
	}
	return v
}

// Volume is what the launcher checks before starting etcd.
type Volume struct {
	DataDir           string
	MarkerPath        string
	Member            string
	ExpectedClusterID string // hex; empty before bootstrap
	RequireData       bool
}

// Check decides whether etcd may start on this volume. It returns the marker if there is one.
func (v Volume) Check() (*Marker, error) {
	marker, err := ReadMarker(v.MarkerPath)
	if errors.Is(err, fs.ErrPermission) {
		return nil, unreadable(err)
	}
	if err != nil {
		return nil, &Refusal{Kind: RefusalDataLost, Message: err.Error()}
	}
	data, err := hasData(v.DataDir)
	if err != nil {
		return marker, unreadable(err)
	}
	switch {
	case !data && mutant.On("bootstrap-blank-volume"):
		return marker, nil
	case marker != nil && v.ExpectedClusterID != "" && marker.ClusterID != v.ExpectedClusterID:
		return marker, &Refusal{Kind: RefusalClusterIDMismatch, Message: fmt.Sprintf(
			"this volume holds data of etcd cluster %s, not of cluster %s; refusing to start", marker.ClusterID, v.ExpectedClusterID)}
	case marker != nil && !data:
		return marker, &Refusal{Kind: RefusalDataLost, Message: fmt.Sprintf(
			"the volume's marker says it held member %s (%s) of cluster %s, but %s has no etcd data", marker.Member, marker.MemberID, marker.ClusterID, v.DataDir)}
	case v.RequireData && !data:
		return marker, &Refusal{Kind: RefusalDataLost, Message: fmt.Sprintf(
			"member %s has run before but %s is empty; refusing to rejoin with an empty log", v.Member, v.DataDir)}
	}
	if marker != nil && data {
		// What etcd's log says the data is, against what the marker says it should be. A
		// log whose head cannot be read is checked once etcd answers instead (verifyServing).
		if id, err := ReadDataIdentity(v.DataDir); err == nil {
			if r := id.mismatch(marker, v.DataDir, false); r != nil {
				return marker, r
			}
		}
	}
	return marker, nil
}

// PeerClientURLs turns the peer URLs of --initial-cluster (except member's own) into client
// URLs of the same hosts.
func PeerClientURLs(initialCluster, member string) []string {
	var out []string
	for _, part := range strings.Split(initialCluster, ",") {
		name, peer, ok := strings.Cut(part, "=")
		if !ok || name == member {
			continue
		}
		u, err := url.Parse(peer)
		if err != nil {
			continue
		}
		out = append(out, net.JoinHostPort(u.Hostname(), fmt.Sprint(names.ClientPort)))
	}
	return out
}

// CheckNotBootstrappedBefore asks the peers of a bootstrap member whether the member has run
// before. An unreachable peer tells nothing, and a genuine bootstrap finds no peer or finds
// the member not started; a member that was started and lost its volume is refused.
func CheckNotBootstrappedBefore(ctx context.Context, factory etcd.Factory, tlsCfg *tls.Config, member string, peers []string) error {
	for _, addr := range peers {
		c, err := factory(ctx, etcd.Config{Endpoints: []etcd.Endpoint{{Member: addr, Address: addr}}, TLS: tlsCfg, Timeout: 2 * time.Second})
		if err != nil {
			continue
		}
		cid, members, err := c.MemberList(ctx)
		c.Close()
		if err != nil {
			continue
		}
		for _, m := range members {
			if m.Name == member && m.Started() {
				return &Refusal{Kind: RefusalDataLost, Message: fmt.Sprintf(
					"member %s already ran in cluster %x (peer %s lists it) but its volume is empty; refusing to bootstrap a second time", member, cid, addr)}
			}
		}
		return nil
	}
	return nil
}
