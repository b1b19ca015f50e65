package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
	mount "k8s.io/mount-utils"
)

// topologyKey is the node label-like key a node-local volume's topology is given under.
const topologyKey = "topology.hostpath.csi.quorate.dev/node"

// defaultVolumeSize is the size of a volume whose request names none.
const defaultVolumeSize = 1 << 30

// driver serves the CSI services. Its state is the data directory alone:
//
//	volumes/<id>/        a volume's content
//	volumes/<id>.json    its record (volume)
//	snapshots/<id>.tar   a snapshot's content, a tar archive of the volume
//	snapshots/<id>.json  its record (snapshot)
//
// IDs are derived from the names the sidecars create volumes and snapshots under, so that a
// retried request finds what an earlier one made, across restarts.
type driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer

	opts    options
	mounter mount.Interface
	// mu serialises the controller's changes to the data directory (and the node's mounts).
	mu sync.Mutex
}

// volume is a volume's record.
type volume struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	// Node is the node the volume is pinned to ("" when not node-local).
	Node string `json:"node,omitempty"`
	// Source is the snapshot or volume it was made from.
	Source string `json:"source,omitempty"`
}

// snapshot is a snapshot's record.
type snapshot struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	SourceID string `json:"sourceVolumeID"`
	Size     int64  `json:"size"`
	// Created is its creation time in Unix nanoseconds.
	Created int64 `json:"created"`
}

func newDriver(o options) (*driver, error) {
	for _, d := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(o.dataDir, d), 0o750); err != nil {
			return nil, err
		}
	}
	d := &driver{opts: o}
	if o.mode != "controller" {
		// The mount(8) and umount(8) of the image do the bind mounts; no systemd-run in a
		// container.
		d.mounter = mount.NewWithoutSystemd("")
	}
	return d, nil
}

// healthy says whether the data directory is there and writable.
func (d *driver) healthy() error {
	f, err := os.CreateTemp(d.opts.dataDir, ".health-")
	if err != nil {
		return err
	}
	_ = f.Close()
	return os.Remove(f.Name())
}

func idOf(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:16])
}

func (d *driver) volumeDir(id string) string { return filepath.Join(d.opts.dataDir, "volumes", id) }
func (d *driver) volumeRecord(id string) string {
	return filepath.Join(d.opts.dataDir, "volumes", id+".json")
}
func (d *driver) snapshotArchive(id string) string {
	return filepath.Join(d.opts.dataDir, "snapshots", id+".tar")
}
func (d *driver) snapshotRecord(id string) string {
	return filepath.Join(d.opts.dataDir, "snapshots", id+".json")
}

// validID refuses IDs that are not this driver's, which could otherwise name paths outside the
// data directory.
func validID(id string) bool {
	if len(id) != 2+32 || (id[:2] != "v-" && id[:2] != "s-") {
		return false
	}
	_, err := hex.DecodeString(id[2:])
	return err == nil
}

// readJSON reads the record at path into v; found is false when there is none.
func readJSON(path string, v any) (found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// writeJSON writes v to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// getVolume returns the volume id names, or a NotFound error.
func (d *driver) getVolume(id string) (*volume, error) {
	var v volume
	if !validID(id) || id[:2] != "v-" {
		return nil, status.Errorf(codes.NotFound, "no volume %q", id)
	}
	found, err := readJSON(d.volumeRecord(id), &v)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading volume %s: %v", id, err)
	}
	if !found {
		return nil, status.Errorf(codes.NotFound, "no volume %q", id)
	}
	return &v, nil
}

// getSnapshot returns the snapshot id names, or a NotFound error.
func (d *driver) getSnapshot(id string) (*snapshot, error) {
	var s snapshot
	if !validID(id) || id[:2] != "s-" {
		return nil, status.Errorf(codes.NotFound, "no snapshot %q", id)
	}
	found, err := readJSON(d.snapshotRecord(id), &s)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reading snapshot %s: %v", id, err)
	}
	if !found {
		return nil, status.Errorf(codes.NotFound, "no snapshot %q", id)
	}
	return &s, nil
}

// checkCapabilities accepts file system volumes in any access mode (every node reaches every
// directory), and refuses block volumes.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	for _, c := range caps {
		if c == nil || c.GetAccessMode() == nil {
			return status.Error(codes.InvalidArgument, "a volume capability has no access mode")
		}
		if c.GetBlock() != nil {
			return status.Error(codes.InvalidArgument, "block volumes are not supported: volumes are directories")
		}
		if c.GetMount() == nil {
			return status.Error(codes.InvalidArgument, "a volume capability has no access type")
		}
	}
	return nil
}

// Identity service.

func (d *driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.opts.driverName, VendorVersion: version}, nil
}

func (d *driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	svc := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
	}
	caps := []*csi.PluginCapability{
		svc(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}
	if d.opts.nodeLocal {
		caps = append(caps, svc(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS))
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

func (d *driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if err := d.healthy(); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "data directory: %v", err)
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// String is how a volume appears in logs.
func (v *volume) String() string { return fmt.Sprintf("%s (%s, %d bytes)", v.ID, v.Name, v.Capacity) }
