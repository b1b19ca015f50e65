package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Defaults mirrored from the CRD schema, applied in memory so that code paths never see an
// unset option (objects built by hand in tests, or stored before a default was added).
const (
	DefaultReplicas                = 3
	DefaultHeartbeatIntervalMillis = 100
	DefaultElectionTimeoutMillis   = 1000
	DefaultQuotaBackendBytes       = 2 << 30
	// WALReserve is the room a member's volume keeps beyond its database for etcd's
	// write-ahead log: the segment in use and the next, preallocated, 64 MB each.
	WALReserve = 128 << 20
	// MinQuotaBackendBytes is the smallest quota the API accepts.
	MinQuotaBackendBytes           = 16 << 20
	DefaultAutoCompactionMode      = "periodic"
	DefaultAutoCompactionRetention = "1h"
	// VolumeRetain and VolumeDelete are the values of spec.volumeRetention.
	VolumeRetain           = "Retain"
	VolumeDelete           = "Delete"
	DefaultVolumeRetention = VolumeRetain
)

// Default fills unset fields with the CRD's defaults.
func (c *EtcdCluster) Default() {
	s := &c.Spec
	if s.Replicas == 0 {
		s.Replicas = DefaultReplicas
	}
	if s.VolumeRetention == "" {
		s.VolumeRetention = DefaultVolumeRetention
	}
	if s.TLS.Enabled == nil {
		s.TLS.Enabled = ptr.To(true)
	}
	if s.NetworkPolicy.Enabled == nil {
		s.NetworkPolicy.Enabled = ptr.To(true)
	}
	o := &s.Etcd
	if o.HeartbeatIntervalMillis == 0 {
		o.HeartbeatIntervalMillis = DefaultHeartbeatIntervalMillis
	}
	if o.ElectionTimeoutMillis == 0 {
		o.ElectionTimeoutMillis = DefaultElectionTimeoutMillis
	}
	if o.QuotaBackendBytes == 0 {
		o.QuotaBackendBytes = QuotaFor(s.Storage.Size)
	}
	if o.AutoCompactionMode == "" {
		o.AutoCompactionMode = DefaultAutoCompactionMode
	}
	if o.AutoCompactionRetention == "" {
		o.AutoCompactionRetention = DefaultAutoCompactionRetention
	}
}

// QuotaFor is the quota of a cluster whose spec sets none: half of what a volume of size holds
// beyond WALReserve, so that the database, one copy of it (a snapshot received from the leader,
// a defragmentation's new file) and the write-ahead log fit; whole MiB, at least
// MinQuotaBackendBytes and at most DefaultQuotaBackendBytes, etcd's own default.
func QuotaFor(size resource.Quantity) int64 {
	q := (size.Value() - WALReserve) / 2
	q -= q % (1 << 20)
	return max(MinQuotaBackendBytes, min(DefaultQuotaBackendBytes, q))
}
