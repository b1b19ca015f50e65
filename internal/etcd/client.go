package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/internal/names"
)

// Member is one entry of the etcd member list.
type Member struct {
	ID         uint64
	Name       string // empty for an added member until it starts; bootstrap members have it from --initial-cluster
	PeerURLs   []string
	ClientURLs []string // empty until the member has started once and published them
	IsLearner  bool
}

// Started reports whether the member has ever run: a member publishes its client URLs when it
// first starts (bootstrap members know their names from --initial-cluster before that, so the
// name is no proof).
func (m Member) Started() bool { return len(m.ClientURLs) > 0 }

// Status is what one member reports about itself.
type Status struct {
	ClusterID   uint64
	MemberID    uint64
	Leader      uint64
	RaftTerm    uint64
	Revision    int64 // the revision the member has applied
	Version     string
	DBSize      int64
	DBSizeInUse int64
	IsLearner   bool
	Errors      []string
}

// Alarm is an alarm etcd raised on one member: NOSPACE or CORRUPT.
type Alarm struct {
	MemberID uint64
	Type     string
}

// KVHash is one member's hash of its key-value store up to a revision (HashKV).
type KVHash struct {
	// Hash of every key revision the member keeps up to Revision.
	Hash uint32
	// CompactRevision is the member's compaction when it hashed: hashes of members compacted
	// at different revisions do not compare.
	CompactRevision int64
	// Revision the hash covers.
	Revision int64
}

// ErrCompacted: the revision asked for is compacted away on the member, so it hashes nothing
// comparable; a later comparison at a newer revision will.
var ErrCompacted = errors.New("the revision is compacted")

// Endpoint addresses one member.
type Endpoint struct {
	// Member is the member (and pod) name.
	Member string
	// Address is host:port of the member's client listener, normally the pod IP.
	Address string
}

// Config tells a Factory how to reach a cluster.
type Config struct {
	Endpoints []Endpoint
	// TLS is nil for a plaintext cluster. Its ServerName must be a name every member's server
	// certificate covers.
	TLS *tls.Config
	// Timeout bounds each call; 5s when zero.
	Timeout time.Duration
}

// Client is what the operator needs from etcd.
type Client interface {
	// MemberList returns the cluster ID and members as seen by any reachable member.
	MemberList(ctx context.Context) (clusterID uint64, members []Member, err error)
	// AddLearner adds a non-voting member with the given peer URL and returns it.
	AddLearner(ctx context.Context, peerURL string) (Member, error)
	// Promote turns a caught-up learner into a voter. ErrLearnerNotReady when it lags.
	Promote(ctx context.Context, id uint64) error
	// Remove removes a member.
	Remove(ctx context.Context, id uint64) error
	// MoveLeader asks the leader (at leaderEndpoint) to hand leadership to transferee.
	MoveLeader(ctx context.Context, leader Endpoint, transferee uint64) error
	// Status asks one member directly.
	Status(ctx context.Context, ep Endpoint) (Status, error)
	// Alarms lists the cluster's alarms.
	Alarms(ctx context.Context) ([]Alarm, error)
	// Disarm clears an alarm.
	Disarm(ctx context.Context, a Alarm) error
	// HashKV asks one member for the hash of its key-value store up to rev. ErrCompacted
	// when the member compacted rev away.
	HashKV(ctx context.Context, ep Endpoint, rev int64) (KVHash, error)
	// Defragment returns a member's free pages to the file system; the member blocks
	// meanwhile.
	Defragment(ctx context.Context, ep Endpoint) error
	// ActivePeers reads from one member's metrics, at its client URL, which peers it has a
	// working connection to (etcd_network_active_peers): peer ID -> active. A peer the member
	// never reached is absent. ErrNoMetrics when the member does not serve /metrics there.
	ActivePeers(ctx context.Context, ep Endpoint) (map[uint64]bool, error)
	// Reaches makes a linearizable read through one member alone. It succeeds only while the
	// member follows a leader that a quorum acknowledges at that moment: a member cut off by a
	// partition fails it (after timeout), though it may still name a leader for a second or so.
	Reaches(ctx context.Context, ep Endpoint, timeout time.Duration) error
	// SyncAuth makes authentication, users and roles match spec (ApplyAuth) and says what
	// changed.
	SyncAuth(ctx context.Context, spec AuthSpec) ([]string, error)
	// AuthEnabled says whether etcd's authentication is on.
	AuthEnabled(ctx context.Context) (bool, error)
	Close() error
}

// Factory creates a Client for a cluster. The controller takes one so tests can substitute Fake.
type Factory func(ctx context.Context, cfg Config) (Client, error)

// ErrNoMetrics: the member does not serve /metrics at its client URL (it serves them on
// another listener, --listen-client-http-urls or --listen-metrics-urls).
var ErrNoMetrics = errors.New("the member serves no metrics at its client URL")

// ErrLearnerNotReady is returned by Promote while the learner is still catching up.
var ErrLearnerNotReady = errors.New("learner is not yet in sync with the leader")

// ErrUnhealthyCluster: etcd refused a membership change because the members it needs have not
// all been connected to one another for the last 5 s (--strict-reconfig-check), as after a
// member restarted or came back from a partition. Asking again later is all there is to do.
var ErrUnhealthyCluster = errors.New("etcd refuses membership changes until the members have been connected to one another for 5 s (etcdserver: unhealthy cluster)")

// membershipErr names etcd's refusal of an unhealthy cluster as ErrUnhealthyCluster.
func membershipErr(err error) error {
	if errors.Is(err, rpctypes.ErrUnhealthy) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCUnhealthy) {
		return ErrUnhealthyCluster
	}
	return err
}

// ErrNoEndpoints is returned when there is no member to talk to.
var ErrNoEndpoints = errors.New("no member endpoints")

var (
	_ Client  = (*realClient)(nil)
	_ Factory = NewClient
)

type realClient struct {
	cfg Config
	c   *clientv3.Client
}

// NewClient is the Factory for real clusters.
func NewClient(_ context.Context, cfg Config) (Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, ErrNoEndpoints
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	c, err := dial(cfg, cfg.Endpoints...)
	if err != nil {
		return nil, err
	}
	return &realClient{cfg: cfg, c: c}, nil
}

func urlOf(cfg Config, ep Endpoint) string {
	if cfg.TLS != nil {
		return "https://" + ep.Address
	}
	return "http://" + ep.Address
}

func dial(cfg Config, eps ...Endpoint) (*clientv3.Client, error) {
	urls := make([]string, len(eps))
	for i, ep := range eps {
		urls[i] = urlOf(cfg, ep)
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            urls,
		TLS:                  cfg.TLS,
		DialTimeout:          cfg.Timeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: cfg.Timeout,
		Logger:               zap.NewNop(),
	})
}

func (r *realClient) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.Timeout)
}

func (r *realClient) MemberList(ctx context.Context) (uint64, []Member, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	resp, err := r.c.MemberList(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("listing members: %w", err)
	}
	out := make([]Member, len(resp.Members))
	for i, m := range resp.Members {
		out[i] = Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
	}
	return resp.Header.ClusterId, out, nil
}

func (r *realClient) AddLearner(ctx context.Context, peerURL string) (Member, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	resp, err := r.c.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return Member{}, fmt.Errorf("adding learner %s: %w", peerURL, membershipErr(err))
	}
	m := resp.Member
	return Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}, nil
}

func (r *realClient) Promote(ctx context.Context, id uint64) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	if _, err := r.c.MemberPromote(ctx, id); err != nil {
		if errors.Is(err, rpctypes.ErrMemberLearnerNotReady) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCLearnerNotReady) {
			return ErrLearnerNotReady
		}
		return fmt.Errorf("promoting member %x: %w", id, membershipErr(err))
	}
	return nil
}

func (r *realClient) Remove(ctx context.Context, id uint64) error {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	if _, err := r.c.MemberRemove(ctx, id); err != nil {
		return fmt.Errorf("removing member %x: %w", id, membershipErr(err))
	}
	return nil
}

func (r *realClient) MoveLeader(ctx context.Context, leader Endpoint, transferee uint64) error {
	c, err := dial(r.cfg, leader)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timeout)
	defer cancel()
	if _, err := c.MoveLeader(ctx, transferee); err != nil {
		return fmt.Errorf("moving leadership from %s to %x: %w", leader.Member, transferee, err)
	}
	return nil
}

func (r *realClient) Status(ctx context.Context, ep Endpoint) (Status, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	resp, err := r.c.Status(ctx, urlOf(r.cfg, ep))
	if err != nil {
		return Status{}, fmt.Errorf("status of %s: %w", ep.Member, err)
	}
	return Status{
		ClusterID:   resp.Header.ClusterId,
		MemberID:    resp.Header.MemberId,
		Leader:      resp.Leader,
		RaftTerm:    resp.RaftTerm,
		Revision:    resp.Header.Revision,
		Version:     resp.Version,
		DBSize:      resp.DbSize,
		DBSizeInUse: resp.DbSizeInUse,
		IsLearner:   resp.IsLearner,
		Errors:      resp.Errors,
	}, nil
}

func (r *realClient) Alarms(ctx context.Context) ([]Alarm, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	resp, err := r.c.AlarmList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing alarms: %w", err)
	}
	out := make([]Alarm, 0, len(resp.Alarms))
	for _, a := range resp.Alarms {
		out = append(out, Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}
	return out, nil
}

func (r *realClient) Disarm(ctx context.Context, a Alarm) error {
	t, ok := etcdserverpb.AlarmType_value[a.Type]
	if !ok {
		return fmt.Errorf("unknown alarm %q", a.Type)
	}
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	if _, err := r.c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: etcdserverpb.AlarmType(t)}); err != nil {
		return fmt.Errorf("disarming %s of member %x: %w", a.Type, a.MemberID, err)
	}
	return nil
}

func (r *realClient) HashKV(ctx context.Context, ep Endpoint, rev int64) (KVHash, error) {
	// Hashing reads the member's whole database: as long as a defragmentation may take.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := r.c.HashKV(ctx, urlOf(r.cfg, ep), rev)
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCCompacted) {
			return KVHash{}, fmt.Errorf("hash of %s at revision %d: %w", ep.Member, rev, ErrCompacted)
		}
		return KVHash{}, fmt.Errorf("hash of %s at revision %d: %w", ep.Member, rev, err)
	}
	return KVHash{Hash: resp.Hash, CompactRevision: resp.CompactRevision, Revision: rev}, nil
}

func (r *realClient) Defragment(ctx context.Context, ep Endpoint) error {
	// Defragmenting a large database takes a while; etcd's own default timeout is a minute.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := r.c.Defragment(ctx, urlOf(r.cfg, ep)); err != nil {
		return fmt.Errorf("defragmenting %s: %w", ep.Member, err)
	}
	return nil
}

func (r *realClient) SyncAuth(ctx context.Context, spec AuthSpec) ([]string, error) {
	return ApplyAuth(ctx, r.c, spec)
}

func (r *realClient) AuthEnabled(ctx context.Context) (bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	st, err := r.c.AuthStatus(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the authentication status: %w", err)
	}
	return st.Enabled, nil
}

func (r *realClient) ActivePeers(ctx context.Context, ep Endpoint) (map[uint64]bool, error) {
	ctx, cancel := r.ctx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, urlOf(r.cfg, ep)+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: r.cfg.TLS, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", ep.Member, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, ErrNoMetrics
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics of %s: %s", ep.Member, resp.Status)
	}
	return parseActivePeers(resp.Body)
}

func (r *realClient) Reaches(ctx context.Context, ep Endpoint, timeout time.Duration) error {
	c, err := dial(r.cfg, ep)
	if err != nil {
		return fmt.Errorf("dialling %s: %w", ep.Member, err)
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// As etcdctl's endpoint health does: a linearizable read of one key. etcd confirms the
	// read with the leader and a quorum before it checks permissions, so a refusal means the
	// member reached them too.
	_, err = c.Get(ctx, "health", clientv3.WithCountOnly())
	if err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		return fmt.Errorf("a linearizable read through %s: %w", ep.Member, err)
	}
	return nil
}

// parseActivePeers reads etcd_network_active_peers{Local, Remote} from etcd's metrics.
func parseActivePeers(in io.Reader) (map[uint64]bool, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(in)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	out := map[uint64]bool{}
	fam, ok := families["etcd_network_active_peers"]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "Remote" {
				continue
			}
			id, err := names.ParseID(l.GetValue())
			if err != nil {
				return nil, fmt.Errorf("etcd_network_active_peers: Remote %q: %w", l.GetValue(), err)
			}
			out[id] = out[id] || m.GetGauge().GetValue() > 0
		}
	}
	return out, nil
}

func (r *realClient) Close() error { return r.c.Close() }
