package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"
)

func (d *driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	// No STAGE_UNSTAGE_VOLUME (a bind mount needs no staging) and no EXPAND_VOLUME (a
	// directory grows with no help): the controller's answer completes an expansion.
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}}},
	}}, nil
}

func (d *driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	resp := &csi.NodeGetInfoResponse{NodeId: d.opts.nodeID}
	if d.opts.nodeLocal {
		resp.AccessibleTopology = &csi.Topology{Segments: map[string]string{topologyKey: d.opts.nodeID}}
	}
	return resp, nil
}

// NodePublishVolume bind-mounts the volume's directory on the target path (read-only if asked):
// the target is under the kubelet's pods directory, which the node's container mounts with
// Bidirectional propagation, so the mount reaches the host and the pod.
func (d *driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target := req.GetVolumeId(), req.GetTargetPath()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "target path missing")
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume capability missing")
	}
	if err := checkCapabilities([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.getVolume(id)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "creating %s: %v", target, err)
	}
	mounted, err := d.mounter.IsMountPoint(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "checking %s: %v", target, err)
	}
	if mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	opts := []string{"bind"}
	if req.GetReadonly() {
		opts = append(opts, "ro")
	}
	opts = append(opts, req.GetVolumeCapability().GetMount().GetMountFlags()...)
	if err := d.mounter.Mount(d.volumeDir(v.ID), target, "", opts); err != nil {
		return nil, status.Errorf(codes.Internal, "mounting volume %s on %s: %v", v.ID, target, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (d *driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "target path missing")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Unmounts (if mounted) and removes the target; nothing there is success too.
	if err := mount.CleanupMountPoint(req.GetTargetPath(), d.mounter, true); err != nil {
		return nil, status.Errorf(codes.Internal, "unmounting %s: %v", req.GetTargetPath(), err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats reports the volume's recorded capacity and the bytes and inodes its
// directory holds.
func (d *driver) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID missing")
	}
	if req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume path missing")
	}
	v, err := d.getVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(req.GetVolumePath()); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume path %s: %v", req.GetVolumePath(), err)
	}
	var used, inodes int64
	err = filepath.WalkDir(d.volumeDir(v.ID), func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		inodes++
		fi, err := e.Info()
		if err != nil {
			return nil //nolint:nilerr // removed while walking
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			used += st.Blocks * 512
		} else {
			used += fi.Size()
		}
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "measuring volume %s: %v", v.ID, err)
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: v.Capacity, Used: used, Available: max(0, v.Capacity-used)},
		{Unit: csi.VolumeUsage_INODES, Used: inodes},
	}}, nil
}
