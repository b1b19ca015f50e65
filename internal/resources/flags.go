package resources

import (
	"fmt"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/version"
)

// InitialCluster renders etcd's --initial-cluster for the given member names.
func InitialCluster(c *v1alpha1.EtcdCluster, members []string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m + "=" + names.PeerURL(c.Name, c.Namespace, m, c.Spec.TLS.IsEnabled())
	}
	return strings.Join(parts, ",")
}

// EtcdFlags are the etcd server flags of one member.
func EtcdFlags(c *v1alpha1.EtcdCluster, v version.Version, member, state, initialCluster string) []string {
	tls := c.Spec.TLS.IsEnabled()
	scheme := "http"
	if tls {
		scheme = "https"
	}
	o := c.Spec.Etcd
	flags := []string{
		"--name=" + member,
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", scheme, names.ClientPort),
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", scheme, names.PeerPort),
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", names.MetricsPort),
		"--advertise-client-urls=" + names.ClientURL(c.Name, c.Namespace, member, tls),
		"--initial-advertise-peer-urls=" + names.PeerURL(c.Name, c.Namespace, member, tls),
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + string(c.UID),
		fmt.Sprintf("--heartbeat-interval=%d", o.HeartbeatIntervalMillis),
		fmt.Sprintf("--election-timeout=%d", o.ElectionTimeoutMillis),
		fmt.Sprintf("--quota-backend-bytes=%d", o.QuotaBackendBytes),
		"--auto-compaction-mode=" + o.AutoCompactionMode,
		"--auto-compaction-retention=" + o.AutoCompactionRetention,
		"--logger=zap",
		"--log-outputs=stderr",
		version.InitialCorruptCheckFlag(v),
		version.CorruptCheckTimeFlag(v),
	}
	if version.SplitsClientHTTP(v) {
		flags = append(flags, fmt.Sprintf("--listen-client-http-urls=%s://0.0.0.0:%d", scheme, names.ClientHTTPPort))
	}
	if tls {
		flags = append(flags,
			"--client-cert-auth=true",
			"--trusted-ca-file="+ServerTLSDir+"/ca.crt",
			"--cert-file="+ServerTLSDir+"/tls.crt",
			"--key-file="+ServerTLSDir+"/tls.key",
			"--peer-client-cert-auth=true",
			"--peer-trusted-ca-file="+PeerTLSDir+"/ca.crt",
			"--peer-cert-file="+PeerTLSDir+"/tls.crt",
			"--peer-key-file="+PeerTLSDir+"/tls.key",
			version.PeerSkipClientSANFlag(v),
		)
	}
	return flags
}
