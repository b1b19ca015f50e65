// Package etcdsim plays the members of many etcd clusters in memory, for the operator's scale
// test (hack/scale): each cluster is an etcd.Fake, formed as soon as the operator first asks
// for all of its bootstrap members, as real members form once their pods run. Nothing here runs
// in a released operator: cmd/ uses it only when built with the tag scalesim.
//
// The scale test names each cluster <namespace>-<n>, which is how a member name (<cluster>-<i>)
// leads here to the cluster's namespace and so to the peer URLs the operator expects.
package etcdsim

import (
	"context"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
)

// Sim holds the simulated clusters.
type Sim struct {
	replicas int
	version  string

	mu       sync.Mutex
	clusters map[string]*cluster
}

type cluster struct {
	fake   *etcd.Fake
	formed bool
}

// New returns a simulation whose clusters form with the given number of members and run the
// given etcd version.
func New(replicas int, version string) *Sim {
	return &Sim{replicas: replicas, version: version, clusters: map[string]*cluster{}}
}

// ClusterOf returns the cluster and namespace a member name of the scale test belongs to.
func ClusterOf(member string) (clusterName, namespace string, ok bool) {
	i := strings.LastIndexByte(member, '-')
	if i <= 0 {
		return "", "", false
	}
	clusterName = member[:i]
	j := strings.LastIndexByte(clusterName, '-')
	if j <= 0 {
		return "", "", false
	}
	return clusterName, clusterName[:j], true
}

// Factory returns an etcd.Factory whose clients talk to the simulated cluster of their
// endpoints.
func (s *Sim) Factory() etcd.Factory {
	return func(ctx context.Context, cfg etcd.Config) (etcd.Client, error) {
		if len(cfg.Endpoints) == 0 {
			return nil, etcd.ErrNoEndpoints
		}
		name, ns, ok := ClusterOf(cfg.Endpoints[0].Member)
		if !ok {
			return nil, etcd.ErrNoEndpoints
		}
		s.mu.Lock()
		c := s.clusters[name]
		if c == nil {
			c = &cluster{fake: etcd.NewFake(s.version)}
			s.clusters[name] = c
		}
		if !c.formed && s.allBootstrapMembers(name, cfg.Endpoints) {
			var members, urls []string
			for i := range s.replicas {
				m := names.Member(name, i)
				members, urls = append(members, m), append(urls, names.PeerURL(name, ns, m, true))
			}
			c.fake.Bootstrap(clusterID(name), members, urls)
			c.formed = true
		}
		s.mu.Unlock()
		return c.fake.Factory()(ctx, cfg)
	}
}

// allBootstrapMembers says whether the endpoints name every bootstrap member of the cluster:
// their pods all have addresses.
func (s *Sim) allBootstrapMembers(name string, eps []etcd.Endpoint) bool {
	seen := 0
	for _, ep := range eps {
		if i, ok := names.MemberIndex(name, ep.Member); ok && i < s.replicas {
			seen++
		}
	}
	return seen == s.replicas
}

// Clusters returns how many clusters have formed.
func (s *Sim) Clusters() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.clusters {
		if c.formed {
			n++
		}
	}
	return n
}

func clusterID(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64() | 1
}
