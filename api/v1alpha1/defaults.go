package v1alpha1

import "k8s.io/utils/ptr"

// Defaults mirrored from the CRD schema, applied in memory so that code paths never see an
// unset option (objects built by hand in tests, or stored before a default was added).
const (
	DefaultReplicas                = 3
	DefaultHeartbeatIntervalMillis = 100
	DefaultElectionTimeoutMillis   = 1000
	DefaultQuotaBackendBytes       = 2 << 30
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
		o.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if o.AutoCompactionMode == "" {
		o.AutoCompactionMode = DefaultAutoCompactionMode
	}
	if o.AutoCompactionRetention == "" {
		o.AutoCompactionRetention = DefaultAutoCompactionRetention
	}
}
