package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

// External is an etcd cluster of plain processes on the node that a scenario moves into an
// EtcdCluster (spec.bootstrap.join).
type External struct {
	etcd *localcluster.ExternalEtcd
	// Endpoints are the members' client URLs.
	Endpoints []string
	// ClusterID the external cluster formed with.
	ClusterID uint64
	// MemberIDs of its members, and their Names, in the order of Endpoints.
	MemberIDs []uint64
	Names     []string
	// firewalled: Firewall put rules in place that teardown must remove.
	firewalled bool
	// cert and clientHost make a client of the members (their client certificate, the name
	// their server certificate carries).
	cert       tls.Certificate
	clientHost string
}

// The Secrets of the external cluster's certificates, named in the EtcdCluster's spec.tls.
const (
	ExternalServerSecret = "external-server"
	ExternalPeerSecret   = "external-peer"
	ExternalClientSecret = "external-client"
)

// StartExternal starts an external etcd cluster of n members on the node, with certificates of
// one CA that also issues the run's EtcdCluster's (in ExternalServerSecret, ExternalPeerSecret
// and ExternalClientSecret), and waits until it has a leader. It is stopped at teardown.
func (r *Run) StartExternal(ctx context.Context, n int) (*External, error) {
	if r.Suite.Node == nil {
		return nil, fmt.Errorf("%s starts etcd processes on the node, which only --provider=local can do", r.Scenario.Name)
	}
	clientHost := names.ClientHost(r.Cluster, r.Namespace)
	certs, err := r.externalCerts(ctx, clientHost)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certs.client.CertPEM, certs.client.KeyPEM)
	if err != nil {
		return nil, err
	}
	x := &External{cert: cert, clientHost: clientHost}
	nameserver, err := r.clusterDNS(ctx)
	if err != nil {
		return nil, err
	}
	x.etcd, err = r.Suite.Node.StartExternalEtcd(ctx, localcluster.ExternalEtcdSpec{Name: "vm", Members: n, BasePort: 22379, Nameserver: nameserver,
		CA: certs.ca.CertPEM, ServerCert: certs.server.CertPEM, ServerKey: certs.server.KeyPEM, PeerCert: certs.peer.CertPEM, PeerKey: certs.peer.KeyPEM})
	if err != nil {
		return nil, err
	}
	r.OnCleanup(func(context.Context) error { x.etcd.Stop(); return nil })
	x.Endpoints, x.Names = x.etcd.ClientURLs, x.etcd.Names()
	c, err := x.etcd.Client(cert, clientHost)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	if err := x.waitLeader(ctx, r, c, n); err != nil {
		return nil, err
	}
	r.Event("action", "external", fmt.Sprintf("external etcd cluster %s started: %s", names.FormatID(x.ClusterID), strings.Join(x.Endpoints, ",")))
	return x, nil
}

// externalTLS are the external cluster's CA and the certificates it issued.
type externalTLS struct {
	ca                   *pki.CA
	server, peer, client pki.Pair
}

// externalCerts makes the external cluster's CA and certificates, and stores them in the
// Secrets ExternalServerSecret, ExternalPeerSecret and ExternalClientSecret.
func (r *Run) externalCerts(ctx context.Context, clientHost string) (externalTLS, error) {
	var certs externalTLS
	now := time.Now()
	ca, err := pki.NewCA("external-etcd-ca", now)
	if err != nil {
		return certs, err
	}
	certs.ca = ca
	// Members check a peer's certificate against the address it connects from (its name, by
	// reverse lookup): the new members' names with and without the cluster domain, the external
	// members' addresses as pods see them.
	ips := r.Suite.Node.Addresses()
	members := "*." + names.PeerService(r.Cluster) + "." + r.Namespace + ".svc"
	hosts := []string{members, members + ".cluster.local", clientHost, "localhost"}
	if certs.server, err = ca.Issue("external-etcd", hosts, ips, pki.ServerAndClient, now); err != nil {
		return certs, err
	}
	if certs.peer, err = ca.Issue("external-etcd-peer", hosts, ips, pki.ServerAndClient, now); err != nil {
		return certs, err
	}
	if certs.client, err = ca.Issue("quorate-client", nil, nil, pki.ClientOnly, now); err != nil {
		return certs, err
	}
	for name, p := range map[string]pki.Pair{ExternalServerSecret: certs.server, ExternalPeerSecret: certs.peer, ExternalClientSecret: certs.client} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{pki.KeyCert: p.CertPEM, pki.KeyKey: p.KeyPEM, pki.KeyCACert: ca.CertPEM}}
		if err := r.Suite.Client.Create(ctx, s); err != nil {
			return certs, fmt.Errorf("creating Secret %s: %w", name, err)
		}
	}
	return certs, nil
}

// clusterDNS is the address of a CoreDNS pod, for the external members to resolve the new
// members' names with.
func (r *Run) clusterDNS(ctx context.Context) (string, error) {
	var dns corev1.PodList
	if err := r.Suite.Client.List(ctx, &dns, client.InNamespace("kube-system"), client.MatchingLabels{"k8s-app": "kube-dns"}); err != nil {
		return "", err
	}
	nameserver := ""
	for _, p := range dns.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp.IsZero() {
			nameserver = p.Status.PodIP
		}
	}
	if nameserver == "" {
		return "", fmt.Errorf("no CoreDNS pod (kube-system, k8s-app=kube-dns) has an address for the external members to resolve the new members' names with")
	}
	return nameserver, nil
}

// waitLeader waits until every external member reports a leader, and records the cluster's
// and the members' IDs.
func (x *External) waitLeader(ctx context.Context, r *Run, c *clientv3.Client, n int) error {
	return r.WaitFor(ctx, fmt.Sprintf("the %d external members to elect a leader", n), 2*time.Minute, func() error {
		x.MemberIDs = nil
		for _, ep := range x.Endpoints {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := c.Status(sctx, ep)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w (logs: %s)", ep, err, strings.Join(x.etcd.LogFiles(), ", "))
			}
			if st.Leader == 0 {
				return fmt.Errorf("%s has no leader", ep)
			}
			x.ClusterID = st.Header.ClusterId
			x.MemberIDs = append(x.MemberIDs, st.Header.MemberId)
		}
		return nil
	})
}

// Firewall rejects peer connections between the external members and the pods: toExternal
// the pods' connections to the members' peer URLs, fromExternal the members' connections to
// the pods'. Teardown lets everything through again.
func (x *External) Firewall(ctx context.Context, r *Run, toExternal, fromExternal bool) error {
	if !x.firewalled {
		x.firewalled = true
		r.OnCleanup(func(ctx context.Context) error { return x.etcd.Firewall(ctx, false, false) })
	}
	r.Event("action", "firewall", fmt.Sprintf("peer connections rejected: pods to the external members %t, external members to the pods %t", toExternal, fromExternal))
	return x.etcd.Firewall(ctx, toExternal, fromExternal)
}

// External is the external member for the planner's messages.
func (x *External) External(i int) planner.External {
	return planner.External{Name: x.Names[i], ID: x.MemberIDs[i]}
}

// WaitLauncherRefusal waits until the launcher in member's pod refused to start etcd with the
// given kind (the etcd container's termination message) and returns the refusal.
func (r *Run) WaitLauncherRefusal(ctx context.Context, member string, kind launcher.RefusalKind, timeout time.Duration) (*launcher.Refusal, error) {
	var got *launcher.Refusal
	err := r.WaitFor(ctx, fmt.Sprintf("the launcher of %s to refuse with %s", member, kind), timeout, func() error {
		p := &corev1.Pod{}
		if err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: member}, p); err != nil {
			return err
		}
		got = resources.LauncherRefusal(p)
		if got == nil || got.Kind != kind {
			return fmt.Errorf("pod %s: refusal %+v, containers %+v", member, got, p.Status.ContainerStatuses)
		}
		return nil
	})
	return got, err
}

// WaitJoin waits until status.join reaches phase.
func (r *Run) WaitJoin(ctx context.Context, phase string, timeout time.Duration) error {
	return r.WaitFor(ctx, "the join to reach "+phase, timeout, func() error {
		ec, err := r.GetCluster(ctx)
		if err != nil {
			return err
		}
		if j := ec.Status.Join; j != nil && j.Phase == phase {
			return nil
		}
		return fmt.Errorf("status.join %+v; Progressing %s", ec.Status.Join, conditionText(ec, v1alpha1.ConditionProgressing))
	})
}

// conditionText is a condition's reason and message.
func conditionText(ec *v1alpha1.EtcdCluster, typ string) string {
	for _, c := range ec.Status.Conditions {
		if c.Type == typ {
			return c.Reason + ": " + c.Message
		}
	}
	return "(none)"
}

// GoAhead sets spec.bootstrap.join.removeExternalMembers: the operator removes the external
// members.
func (r *Run) GoAhead(ctx context.Context) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	if ec.Spec.Bootstrap == nil || ec.Spec.Bootstrap.Join == nil {
		return fmt.Errorf("EtcdCluster %s has no spec.bootstrap.join", r.Cluster)
	}
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Bootstrap.Join.RemoveExternalMembers = true
	r.Event("action", "go-ahead", "spec.bootstrap.join.removeExternalMembers = true")
	return r.Suite.Client.Patch(ctx, ec, patch)
}

// CheckMovedIn checks what the EtcdCluster's members themselves answer the workload's
// split-brain poller (from inside the cluster) after the move: every member reports the
// external cluster's ID, and a member list of the EtcdCluster's n voters only.
func (x *External) CheckMovedIn(ctx context.Context, r *Run, n int) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	var want []uint64
	for _, m := range ec.Status.Members {
		id, err := names.ParseID(m.ID)
		if err != nil {
			return fmt.Errorf("status.members: %s has ID %q: %w", m.Name, m.ID, err)
		}
		if slices.Contains(x.MemberIDs, id) {
			return fmt.Errorf("status.members lists external member %s", m.ID)
		}
		want = append(want, id)
	}
	slices.Sort(want)
	if len(want) != n {
		return fmt.Errorf("status.members has %d members, want %d", len(want), n)
	}
	return x.waitPoller(ctx, r, want, "only the EtcdCluster's members")
}

// CheckStayed checks, after a join was aborted (the EtcdCluster deleted before the go-ahead),
// what the external members answer themselves: each reports the external cluster's ID and a
// leader, and the member list holds the external members alone.
func (x *External) CheckStayed(ctx context.Context, r *Run) error {
	c, err := x.etcd.Client(x.cert, x.clientHost)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	want := slices.Sorted(slices.Values(x.MemberIDs))
	return r.WaitFor(ctx, fmt.Sprintf("the external members to report cluster ID %s, a leader, and themselves alone as members", names.FormatID(x.ClusterID)), time.Minute, func() error {
		for _, ep := range x.Endpoints {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := c.Status(sctx, ep)
			cancel()
			switch {
			case err != nil:
				return fmt.Errorf("%s: %w", ep, err)
			case st.Header.ClusterId != x.ClusterID:
				return fmt.Errorf("%w: %s reports cluster ID %s, the external cluster's was %s", ErrStop, ep, names.FormatID(st.Header.ClusterId), names.FormatID(x.ClusterID))
			case st.Leader == 0:
				return fmt.Errorf("%s has no leader", ep)
			}
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		ml, err := c.MemberList(sctx)
		if err != nil {
			return err
		}
		var got []uint64
		for _, m := range ml.Members {
			got = append(got, m.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("the member list is %v, want the external members %v", got, want)
		}
		return nil
	})
}

// waitPoller waits, a minute at most, until len(want) endpoints have answered the workload's
// poller since now, each with the external cluster's ID and exactly the members want.
func (x *External) waitPoller(ctx context.Context, r *Run, want []uint64, what string) error {
	n := len(want)
	since := time.Now().UnixNano()
	return r.WaitFor(ctx, fmt.Sprintf("%d members to answer with cluster ID %s and %s", n, names.FormatID(x.ClusterID), what), time.Minute, func() error {
		h, err := r.Workload().History(ctx)
		if err != nil {
			return err
		}
		last := map[string]history.Sample{}
		for _, sm := range h.Samples {
			if sm.Time >= since && sm.Error == "" {
				last[sm.Endpoint] = sm
			}
		}
		if len(last) < n {
			return fmt.Errorf("%d members answered the poller since then", len(last))
		}
		for ep, sm := range last {
			got := slices.Sorted(slices.Values(sm.Members))
			if sm.ClusterID != x.ClusterID {
				return fmt.Errorf("%s reports cluster ID %s, the external cluster's was %s", ep, names.FormatID(sm.ClusterID), names.FormatID(x.ClusterID))
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s lists members %v, want %v (%s)", ep, got, want, what)
			}
		}
		return nil
	})
}

// WantDegraded is nil when the cluster's Degraded condition is True with exactly this reason
// and message.
func (r *Run) WantDegraded(ctx context.Context, reason, message string) error {
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	c := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || c.Message != message {
		return fmt.Errorf("condition Degraded is %s, want True %s: %q", conditionText(ec, v1alpha1.ConditionDegraded), reason, message)
	}
	return nil
}

// WantOnlyMembers is nil when the cluster's member pods are exactly these.
func (r *Run) WantOnlyMembers(ctx context.Context, members ...string) error {
	var pods corev1.PodList
	if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels(names.MemberSelector(r.Cluster))); err != nil {
		return err
	}
	var got []string
	for _, p := range pods.Items {
		got = append(got, p.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, members) {
		return fmt.Errorf("member pods %v, want %v", got, members)
	}
	return nil
}
