package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func (d *driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// requestedSize is the size a capacity range asks for: its required bytes, else the default
// size within its limit.
func (d *driver) requestedSize(r *csi.CapacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || limit < 0 {
		return 0, status.Error(codes.InvalidArgument, "negative capacity")
	}
	if limit > 0 && req > limit {
		return 0, status.Errorf(codes.InvalidArgument, "required bytes %d exceed the limit %d", req, limit)
	}
	size := req
	if size == 0 {
		size = defaultVolumeSize
		if limit > 0 && limit < size {
			size = limit
		}
	}
	if size > d.opts.maxVolumeSize {
		return 0, status.Errorf(codes.OutOfRange, "%d bytes exceed the largest volume, %d", size, d.opts.maxVolumeSize)
	}
	return size, nil
}

// pickNode is the node a new node-local volume goes to: the first preferred, else the first
// requisite topology that names one, else the driver's own node.
func (d *driver) pickNode(req *csi.TopologyRequirement) string {
	for _, ts := range [][]*csi.Topology{req.GetPreferred(), req.GetRequisite()} {
		for _, t := range ts {
			if n := t.GetSegments()[topologyKey]; n != "" {
				return n
			}
		}
	}
	return d.opts.nodeID
}

func (d *driver) csiVolume(v *volume) *csi.Volume {
	out := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.Capacity}
	if v.Node != "" {
		out.AccessibleTopology = []*csi.Topology{{Segments: map[string]string{topologyKey: v.Node}}}
	}
	return out
}

func (d *driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name missing")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	size, err := d.requestedSize(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := idOf("v-", req.GetName())
	src := req.GetVolumeContentSource()
	if existing, err := d.getVolume(id); err == nil {
		limit := req.GetCapacityRange().GetLimitBytes()
		if existing.Capacity < req.GetCapacityRange().GetRequiredBytes() || (limit > 0 && existing.Capacity > limit) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with %d bytes", req.GetName(), existing.Capacity)
		}
		if existing.Source != sourceID(src) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with another content source", req.GetName())
		}
		return &csi.CreateVolumeResponse{Volume: d.withSource(d.csiVolume(existing), src)}, nil
	} else if status.Code(err) != codes.NotFound {
		return nil, err
	}

	v := &volume{ID: id, Name: req.GetName(), Capacity: size, Source: sourceID(src)}
	if d.opts.nodeLocal {
		v.Node = d.pickNode(req.GetAccessibilityRequirements())
	}
	// The content goes to a temporary directory first: a volume's directory exists whole or
	// not at all, and a crash leaves only a temporary directory the next try replaces.
	tmp := d.volumeDir(id) + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := os.Mkdir(tmp, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	// World-writable as csi-driver-host-path's: pods that run as any user and set no fsGroup
	// can write (with an fsGroup, the kubelet changes the owner: CSIDriver fsGroupPolicy File).
	if err := os.Chmod(tmp, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := d.fill(tmp, size, src); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := os.Rename(tmp, d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := writeJSON(d.volumeRecord(id), v); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	return &csi.CreateVolumeResponse{Volume: d.withSource(d.csiVolume(v), src)}, nil
}

// fill puts the content of src (a snapshot or a volume; nothing when nil) into dir, a new
// volume of size bytes.
func (d *driver) fill(dir string, size int64, src *csi.VolumeContentSource) error {
	switch {
	case src.GetSnapshot() != nil:
		s, err := d.getSnapshot(src.GetSnapshot().GetSnapshotId())
		if err != nil {
			return err
		}
		if s.Size > size {
			return status.Errorf(codes.OutOfRange, "snapshot %s is of %d bytes, more than the volume's %d", s.ID, s.Size, size)
		}
		if err := extractArchive(d.snapshotArchive(s.ID), dir); err != nil {
			return status.Errorf(codes.Internal, "restoring snapshot %s: %v", s.ID, err)
		}
	case src.GetVolume() != nil:
		sv, err := d.getVolume(src.GetVolume().GetVolumeId())
		if err != nil {
			return err
		}
		if sv.Capacity > size {
			return status.Errorf(codes.OutOfRange, "volume %s has %d bytes, more than the clone's %d", sv.ID, sv.Capacity, size)
		}
		if err := copyTree(d.volumeDir(sv.ID), dir); err != nil {
			return status.Errorf(codes.Internal, "cloning volume %s: %v", sv.ID, err)
		}
	}
	return nil
}

func sourceID(src *csi.VolumeContentSource) string {
	switch {
	case src.GetSnapshot() != nil:
		return src.GetSnapshot().GetSnapshotId()
	case src.GetVolume() != nil:
		return src.GetVolume().GetVolumeId()
	}
	return ""
}

func (d *driver) withSource(v *csi.Volume, src *csi.VolumeContentSource) *csi.Volume {
	v.ContentSource = src
	return v
}

func (d *driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if !validID(id) {
		// Not one of this driver's: there is nothing to delete.
		return &csi.DeleteVolumeResponse{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// The record goes last: until the directory is gone, a retry still finds the volume.
	if err := os.RemoveAll(d.volumeDir(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := os.Remove(d.volumeRecord(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	if _, err := d.getVolume(req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil //nolint:nilerr // unsupported is an answer, not a failure
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

// ControllerExpandVolume records the new size: a directory has no size of its own, so there is
// nothing for the node to do either.
func (d *driver) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity range missing")
	}
	size, err := d.requestedSize(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.getVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if size > v.Capacity {
		v.Capacity = size
		if err := writeJSON(d.volumeRecord(v.ID), v); err != nil {
			return nil, status.Errorf(codes.Internal, "%v", err)
		}
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: v.Capacity, NodeExpansionRequired: false}, nil
}

func (d *driver) csiSnapshot(s *snapshot) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId: s.ID, SourceVolumeId: s.SourceID, SizeBytes: s.Size,
		CreationTime: timestamppb.New(time.Unix(0, s.Created)), ReadyToUse: true,
	}
}

// CreateSnapshot archives the volume's directory with tar, while it may be in use: the archive
// is what a crash at that moment would have left, as csi-driver-host-path's snapshots are.
func (d *driver) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name missing")
	}
	if req.GetSourceVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "source volume ID missing")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := idOf("s-", req.GetName())
	if s, err := d.getSnapshot(id); err == nil {
		if s.SourceID != req.GetSourceVolumeId() {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists of another volume, %s", req.GetName(), s.SourceID)
		}
		return &csi.CreateSnapshotResponse{Snapshot: d.csiSnapshot(s)}, nil
	} else if status.Code(err) != codes.NotFound {
		return nil, err
	}
	v, err := d.getVolume(req.GetSourceVolumeId())
	if err != nil {
		return nil, err
	}
	// Its size is the volume's, as csi-driver-host-path's is: the least a volume restored from it
	// must have (the snapshot's restoreSize).
	s := &snapshot{ID: id, Name: req.GetName(), SourceID: v.ID, Size: v.Capacity, Created: time.Now().UnixNano()}
	tmp := d.snapshotArchive(id) + ".tmp"
	if err := writeArchive(d.volumeDir(v.ID), tmp); err != nil {
		_ = os.Remove(tmp)
		return nil, status.Errorf(codes.Internal, "archiving volume %s: %v", v.ID, err)
	}
	if err := os.Rename(tmp, d.snapshotArchive(id)); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	if err := writeJSON(d.snapshotRecord(id), s); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	return &csi.CreateSnapshotResponse{Snapshot: d.csiSnapshot(s)}, nil
}

func (d *driver) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot ID missing")
	}
	if !validID(id) {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range []string{d.snapshotArchive(id), d.snapshotRecord(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, status.Errorf(codes.Internal, "%v", err)
		}
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots lists the snapshots by ID, filtered by snapshot or source volume; its page
// token is the index of the next entry.
func (d *driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Error(codes.InvalidArgument, "negative max entries")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []*snapshot
	if id := req.GetSnapshotId(); id != "" {
		s, err := d.getSnapshot(id)
		if status.Code(err) == codes.NotFound {
			return &csi.ListSnapshotsResponse{}, nil
		}
		if err != nil {
			return nil, err
		}
		all = append(all, s)
	} else {
		records, err := filepath.Glob(filepath.Join(d.opts.dataDir, "snapshots", "s-*.json"))
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%v", err)
		}
		sort.Strings(records)
		for _, r := range records {
			var s snapshot
			if found, err := readJSON(r, &s); err != nil || !found {
				continue
			}
			all = append(all, &s)
		}
	}
	var matching []*snapshot
	for _, s := range all {
		if src := req.GetSourceVolumeId(); src == "" || s.SourceID == src {
			matching = append(matching, s)
		}
	}
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(matching) {
			return nil, status.Errorf(codes.Aborted, "invalid starting token %q", t)
		}
		start = n
	}
	end := len(matching)
	if m := int(req.GetMaxEntries()); m > 0 && start+m < end {
		end = start + m
	}
	resp := &csi.ListSnapshotsResponse{}
	for _, s := range matching[start:end] {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: d.csiSnapshot(s)})
	}
	if end < len(matching) {
		resp.NextToken = strconv.Itoa(end)
	}
	return resp, nil
}
