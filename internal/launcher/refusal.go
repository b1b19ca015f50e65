package launcher

import (
	"os"
	"strings"
)

// RefusalKind names why the launcher refused to start etcd. The operator reads it back from
// the etcd container's termination message with ParseTermination; the kinds and the message
// format are defined here, once.
type RefusalKind string

const (
	// RefusalDataLost: the member has run before but its volume no longer holds its data.
	RefusalDataLost RefusalKind = "DataLost"
	// RefusalClusterIDMismatch: the volume holds the data of another etcd cluster.
	RefusalClusterIDMismatch RefusalKind = "ClusterIDMismatch"
	// RefusalPeersUnreachable: a member joining a cluster cannot reach the peers it was told
	// to require (--require-peers), so etcd is not started.
	RefusalPeersUnreachable RefusalKind = "PeersUnreachable"
	// RefusalDiskFull: the volume has less room than etcd needs to start (its write-ahead log
	// preallocates a segment of 64 MB as it opens), so etcd would only crash-loop on "no space
	// left on device". The data is intact.
	RefusalDiskFull RefusalKind = "DiskFull"
	// RefusalVolumeUnreadable: the pod's user may not read the volume's marker or data (the
	// pod runs as another user than the one that wrote them). The data may be intact: this is
	// never read as a lost volume.
	RefusalVolumeUnreadable RefusalKind = "VolumeUnreadable"
	// RefusalCorruptAtStart: etcd itself refused to start, its initial corruption check having
	// found the member's data differ from its peers'; it would refuse at every restart.
	RefusalCorruptAtStart RefusalKind = "CorruptAtStart"
)

// RefusalKinds lists every kind, for tests and for parsing.
var RefusalKinds = []RefusalKind{RefusalDataLost, RefusalClusterIDMismatch, RefusalPeersUnreachable, RefusalDiskFull, RefusalVolumeUnreadable, RefusalCorruptAtStart}

// Refusal is a reason not to start etcd.
type Refusal struct {
	Kind    RefusalKind
	Message string
}

// Error is also the termination message: "<Kind>: <Message>".
func (r *Refusal) Error() string { return string(r.Kind) + ": " + r.Message }

// ParseTermination reads a refusal back from a termination message. It returns nil for any
// other message (etcd's own exit, a log tail written by Kubernetes).
func ParseTermination(msg string) *Refusal {
	kind, rest, ok := strings.Cut(msg, ": ")
	if !ok {
		return nil
	}
	for _, k := range RefusalKinds {
		if RefusalKind(kind) == k {
			return &Refusal{Kind: k, Message: rest}
		}
	}
	return nil
}

// WriteTerminationMessage records a refusal where Kubernetes shows it as the container's
// termination message.
func WriteTerminationMessage(path string, r *Refusal) error {
	return writeTerminationLog(path, r.Error())
}

// writeTerminationLog writes the container's termination message, which the kubelet reads.
func writeTerminationLog(path, msg string) error {
	return os.WriteFile(path, []byte(msg), 0o644) //nolint:gosec // the kubelet reads it; it holds no secret
}
