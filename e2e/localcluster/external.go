package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/internal/names"
)

// externalPrefix names the daemons of external etcd clusters; Down stops any left behind.
const externalPrefix = "external-"

// ExternalEtcdSpec describes an etcd cluster of plain processes on the node, outside
// Kubernetes, as users run on VMs: members listen on the node's address, so that pods reach
// them, and resolve the cluster's Service names through its DNS, so that they reach members
// added in pods.
type ExternalEtcdSpec struct {
	// Name of the cluster; its members are <Name>-0, <Name>-1, ...
	Name    string
	Members int
	// BasePort: member i listens for clients on BasePort+2i and for peers on BasePort+2i+1.
	BasePort int
	// Nameserver is the address of the cluster's DNS server the members ask: a CoreDNS pod's,
	// which the node routes to (the Service address would leave the node where kube-proxy
	// has no rule for it yet).
	Nameserver string
	// CA, Server and Peer are PEM files' contents: the CA both sides trust, the members'
	// server certificate and their peer certificate (both with the node's address).
	CA, ServerCert, ServerKey, PeerCert, PeerKey []byte
}

// ExternalEtcd is a running external etcd cluster.
type ExternalEtcd struct {
	c    *Cluster
	spec ExternalEtcdSpec
	dir  string
	// ClientURLs of the members, in order.
	ClientURLs []string
}

func (s ExternalEtcdSpec) member(i int) string { return fmt.Sprintf("%s-%d", s.Name, i) }

// StartExternalEtcd starts the cluster's members (Client tells when they answer). They run
// the etcd release of the Kubernetes cluster's own etcd.
func (n *Node) StartExternalEtcd(ctx context.Context, spec ExternalEtcdSpec) (*ExternalEtcd, error) {
	c := New(n.cfg, nil)
	e := &ExternalEtcd{c: c, spec: spec, dir: n.cfg.path("external", spec.Name)}
	if err := os.RemoveAll(e.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.crt": spec.CA, "server.crt": spec.ServerCert, "server.key": spec.ServerKey, "peer.crt": spec.PeerCert, "peer.key": spec.PeerKey,
		// The members look up the new members' peer names (<pod>.<peer service>.<ns>.svc) in
		// the cluster's DNS; only their mount namespace sees this file as /etc/resolv.conf.
		"resolv.conf": fmt.Appendf(nil, "nameserver %s\nsearch svc.cluster.local cluster.local\noptions ndots:5\n", spec.Nameserver)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	var initial []string
	for i := 0; i < spec.Members; i++ {
		initial = append(initial, fmt.Sprintf("%s=https://%s:%d", spec.member(i), n.cfg.NodeIP, spec.BasePort+2*i+1))
	}
	for i := 0; i < spec.Members; i++ {
		if err := portFree(n.cfg.NodeIP, spec.BasePort+2*i); err != nil {
			return nil, err
		}
		if err := portFree(n.cfg.NodeIP, spec.BasePort+2*i+1); err != nil {
			return nil, err
		}
		client := fmt.Sprintf("https://%s:%d", n.cfg.NodeIP, spec.BasePort+2*i)
		peer := fmt.Sprintf("https://%s:%d", n.cfg.NodeIP, spec.BasePort+2*i+1)
		e.ClientURLs = append(e.ClientURLs, client)
		f := func(name string) string { return filepath.Join(e.dir, name) }
		args := []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, f("resolv.conf"),
			n.cfg.etcdBin(), "--name=" + spec.member(i), "--data-dir=" + f(spec.member(i)+".data"),
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=" + strings.Join(initial, ","), "--initial-cluster-state=new", "--initial-cluster-token=" + spec.Name,
			"--cert-file=" + f("server.crt"), "--key-file=" + f("server.key"), "--trusted-ca-file=" + f("ca.crt"), "--client-cert-auth",
			"--peer-cert-file=" + f("peer.crt"), "--peer-key-file=" + f("peer.key"), "--peer-trusted-ca-file=" + f("ca.crt"), "--peer-client-cert-auth",
			"--logger=zap", "--log-outputs=stderr"}
		if err := c.start(daemon{name: externalPrefix + spec.member(i), args: args}); err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// Names are the members' names, in the order of ClientURLs.
func (e *ExternalEtcd) Names() []string {
	var out []string
	for i := 0; i < e.spec.Members; i++ {
		out = append(out, e.spec.member(i))
	}
	return out
}

// LogFiles are the members' log files.
func (e *ExternalEtcd) LogFiles() []string {
	var logs []string
	for i := 0; i < e.spec.Members; i++ {
		logs = append(logs, e.c.LogFile(externalPrefix+e.spec.member(i)))
	}
	return logs
}

// Client connects to the members with a client certificate of the cluster's CA; serverName is
// a name the members' server certificate carries.
func (e *ExternalEtcd) Client(cert tls.Certificate, serverName string) (*clientv3.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.spec.CA) {
		return nil, errors.New("no CA certificate in the external cluster's spec")
	}
	return clientv3.New(clientv3.Config{Endpoints: e.ClientURLs, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}})
}

// Stop stops the members that still run and deletes their data.
func (e *ExternalEtcd) Stop() {
	for i := 0; i < e.spec.Members; i++ {
		e.c.stop(externalPrefix+e.spec.member(i), 10*time.Second)
	}
	_ = os.RemoveAll(e.dir)
}

// stopExternal stops the members of external clusters a run left behind.
func (c *Cluster) stopExternal() {
	pids, _ := filepath.Glob(c.pidFile(externalPrefix + "*"))
	for _, p := range pids {
		c.stop(strings.TrimSuffix(filepath.Base(p), ".pid"), 10*time.Second)
	}
}

// firewallChain holds the rules of (*ExternalEtcd).Firewall; Down removes it with the
// cluster's other chains.
const firewallChain = "QUORATE-E2E-PEERS"

// Firewall rejects peer connections between the external members and the pods, as a firewall
// between a VM network and a Kubernetes cluster would: toExternal the pods' connections to the
// members' peer ports, fromExternal the node's (the members') connections to the pods' peer
// port. Each call replaces the rules of the last; false, false lets everything through.
func (e *ExternalEtcd) Firewall(ctx context.Context, toExternal, fromExternal bool) error {
	cfg := e.c.cfg
	_ = run(ctx, "iptables", "-w", "-N", firewallChain)
	if err := run(ctx, "iptables", "-w", "-F", firewallChain); err != nil {
		return err
	}
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		if exec.CommandContext(ctx, "iptables", "-w", "-C", hook, "-j", firewallChain).Run() != nil {
			if err := run(ctx, "iptables", "-w", "-I", hook, "1", "-j", firewallChain); err != nil {
				return err
			}
		}
	}
	if toExternal {
		var ports []string
		for i := 0; i < e.spec.Members; i++ {
			ports = append(ports, fmt.Sprint(e.spec.BasePort+2*i+1))
		}
		if err := run(ctx, "iptables", "-w", "-A", firewallChain, "-s", cfg.PodCIDR, "-d", cfg.NodeIP, "-p", "tcp",
			"-m", "multiport", "--dports", strings.Join(ports, ","), "-j", "REJECT", "--reject-with", "tcp-reset"); err != nil {
			return err
		}
	}
	if fromExternal {
		if err := run(ctx, "iptables", "-w", "-A", firewallChain, "-d", cfg.PodCIDR, "-p", "tcp", "--dport", fmt.Sprint(names.PeerPort),
			"-j", "REJECT", "--reject-with", "tcp-reset"); err != nil {
			return err
		}
	}
	return nil
}
