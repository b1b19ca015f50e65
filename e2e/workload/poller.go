package workload

import (
	"context"
	"crypto/tls"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/quorate-dev/quorate/e2e/history"
)

// Poller asks every member directly, several times a second, for its cluster ID, leader, raft
// term and its own view of the member list. Members are found by resolving the headless peer
// Service, which lists every member pod, ready or not.
type Poller struct {
	PeerService string // DNS name of the headless peer Service
	Port        int
	TLS         *tls.Config
	Interval    time.Duration
	Timeout     time.Duration

	mu      sync.Mutex
	samples []history.Sample
	clients map[string]*clientv3.Client
}

// Run polls until ctx ends.
func (p *Poller) Run(ctx context.Context) {
	if p.Interval == 0 {
		p.Interval = 250 * time.Millisecond
	}
	if p.Timeout == 0 {
		p.Timeout = time.Second
	}
	p.clients = map[string]*clientv3.Client{}
	defer func() {
		for _, c := range p.clients {
			c.Close()
		}
	}()
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		p.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Samples returns what was collected so far.
func (p *Poller) Samples() []history.Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]history.Sample(nil), p.samples...)
	sort.Slice(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out
}

func (p *Poller) client(addr string) (*clientv3.Client, error) {
	if c, ok := p.clients[addr]; ok {
		return c, nil
	}
	scheme := "http://"
	if p.TLS != nil {
		scheme = "https://"
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{scheme + addr}, TLS: p.TLS, DialTimeout: p.Timeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, err
	}
	p.clients[addr] = c
	return c, nil
}

func (p *Poller) round(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupHost(rctx, p.PeerService)
	now := time.Now().UnixNano()
	if err != nil {
		p.add(history.Sample{Time: now, Endpoint: p.PeerService, Error: "resolving members: " + err.Error()})
		return
	}
	var wg sync.WaitGroup
	for _, ip := range ips {
		addr := net.JoinHostPort(ip, strconv.Itoa(p.Port))
		c, err := p.client(addr)
		if err != nil {
			p.add(history.Sample{Time: now, Endpoint: addr, Error: err.Error()})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.add(sample(rctx, c, addr))
		}()
	}
	wg.Wait()
}

func sample(ctx context.Context, c *clientv3.Client, addr string) history.Sample {
	s := history.Sample{Time: time.Now().UnixNano(), Endpoint: addr}
	st, err := c.Status(ctx, c.Endpoints()[0])
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.MemberID, s.ClusterID, s.Leader, s.RaftTerm, s.Learner = st.Header.MemberId, st.Header.ClusterId, st.Leader, st.RaftTerm, st.IsLearner
	ml, err := c.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		s.Error = "member list: " + err.Error()
		return s
	}
	for _, m := range ml.Members {
		s.Members = append(s.Members, m.ID)
	}
	return s
}

func (p *Poller) add(s history.Sample) {
	p.mu.Lock()
	p.samples = append(p.samples, s)
	p.mu.Unlock()
}
