package controllers

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/expectations"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
)

const (
	kindPod = "Pod"
	kindPVC = "PersistentVolumeClaim"
)

// observation is everything a pass knows, read once at its start.
type observation struct {
	cluster string
	pods    map[string]*corev1.Pod
	pvcs    map[string]*corev1.PersistentVolumeClaim

	endpoints map[string]etcd.Endpoint
	client    etcd.Client // nil when no member could be dialled

	// From etcd; members is nil when the member list could not be read.
	members         []etcd.Member
	listedClusterID uint64
	etcdErr         error
	statuses        map[string]etcd.Status
	statusErrs      map[string]error

	desiredHash string
	state       planner.State
}

func (o *observation) memberName(i int) string { return names.Member(o.cluster, i) }

func (o *observation) close() {
	if o.client != nil {
		_ = o.client.Close()
	}
}

// cached answers the expectations store from the cache-backed lists of this pass.
func (o *observation) cached(k expectations.Key) (types.UID, bool) {
	switch k.Kind {
	case kindPod:
		if p, ok := o.pods[k.Name]; ok {
			return p.UID, true
		}
	case kindPVC:
		if p, ok := o.pvcs[k.Name]; ok {
			return p.UID, true
		}
	}
	return "", false
}

func ownedBy(obj client.Object, c *v1alpha1.EtcdCluster) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == c.UID && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func (r *Reconciler) observe(ctx context.Context, c *v1alpha1.EtcdCluster) (*observation, error) {
	o := &observation{
		cluster:     c.Name,
		pods:        map[string]*corev1.Pod{},
		pvcs:        map[string]*corev1.PersistentVolumeClaim{},
		endpoints:   map[string]etcd.Endpoint{},
		statuses:    map[string]etcd.Status{},
		statusErrs:  map[string]error{},
		desiredHash: resources.MemberSpecHash(c, r.Images),
	}
	sel := client.MatchingLabels(names.MemberSelector(c.Name))
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, ok := names.MemberIndex(c.Name, p.Name); ok && ownedBy(p, c) {
			o.pods[p.Name] = p
			if p.Status.PodIP != "" && p.DeletionTimestamp.IsZero() {
				o.endpoints[p.Name] = etcd.Endpoint{Member: p.Name, Address: joinHostPort(p.Status.PodIP, names.ClientPort)}
			}
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		if _, ok := names.MemberIndex(c.Name, p.Name); ok && ownedBy(p, c) {
			o.pvcs[p.Name] = p
		}
	}
	r.observeEtcd(ctx, c, o)
	return o, nil
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// observeEtcd reads the member list through any member and asks every member for its status,
// concurrently, so one dead member costs one timeout, not one per member.
func (r *Reconciler) observeEtcd(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation) {
	if len(o.endpoints) == 0 {
		o.etcdErr = etcd.ErrNoEndpoints
		return
	}
	eps := make([]etcd.Endpoint, 0, len(o.endpoints))
	for _, ep := range o.endpoints {
		eps = append(eps, ep)
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Member < eps[j].Member })
	tlsCfg, err := r.clientTLS(ctx, c)
	if err != nil {
		o.etcdErr = err
		return
	}
	cl, err := r.EtcdFactory(ctx, etcd.Config{Endpoints: eps, TLS: tlsCfg})
	if err != nil {
		o.etcdErr = err
		return
	}
	o.client = cl
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := cl.Status(ctx, ep)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				o.statusErrs[ep.Member] = err
				return
			}
			o.statuses[ep.Member] = st
		}()
	}
	wg.Wait()
	// Learners refuse membership calls, so membership goes through voters only.
	var voters []etcd.Endpoint
	for _, ep := range eps {
		if st, ok := o.statuses[ep.Member]; ok && !st.IsLearner {
			voters = append(voters, ep)
		}
	}
	if len(voters) == 0 {
		o.etcdErr = firstError(o.statusErrs)
		return
	}
	_ = cl.Close()
	o.client = nil
	if cl, err = r.EtcdFactory(ctx, etcd.Config{Endpoints: voters, TLS: tlsCfg}); err != nil {
		o.etcdErr = err
		return
	}
	o.client = cl
	o.listedClusterID, o.members, o.etcdErr = cl.MemberList(ctx)
	if o.etcdErr != nil {
		o.members = nil
	}
}

func firstError(errs map[string]error) error {
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return etcd.ErrNoEndpoints
	}
	return errs[keys[0]]
}

// podFailure extracts the launcher's refusal from the etcd container's termination message.
func podFailure(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != "etcd" {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			for _, kind := range []string{planner.FailureDataLost, planner.FailureClusterIDMismatch} {
				if strings.HasPrefix(t.Message, kind+": ") {
					return kind
				}
			}
		}
	}
	return ""
}

// buildState turns the observation into the planner's input. clusterID is the recorded one.
func (o *observation) buildState(c *v1alpha1.EtcdCluster, clusterID uint64, now time.Time) planner.State {
	s := planner.State{
		Cluster:       c.Name,
		Replicas:      int(c.Spec.Replicas),
		Paused:        c.Spec.Paused,
		ClusterID:     clusterID,
		EtcdReachable: o.members != nil,
	}
	byName := map[string]*planner.Member{}
	get := func(name string) *planner.Member {
		if m, ok := byName[name]; ok {
			return m
		}
		idx, _ := names.MemberIndex(c.Name, name)
		m := &planner.Member{Name: name, Index: idx}
		byName[name] = m
		return m
	}
	for _, em := range o.members {
		name, ok := "", len(em.PeerURLs) > 0
		if ok {
			name, ok = names.MemberFromPeerURL(c.Name, c.Namespace, em.PeerURLs[0])
		}
		if !ok || (em.Name != "" && em.Name != name) {
			s.UnknownMembers = append(s.UnknownMembers, memberLabel(em))
			continue
		}
		m := get(name)
		m.InEtcd, m.ID, m.Started, m.Learner = true, em.ID, em.Started(), em.IsLearner
	}
	var term uint64
	for name, st := range o.statuses {
		m := get(name)
		m.Reachable, m.ClusterID, m.HasLeader, m.Alarms = true, st.ClusterID, st.Leader != 0, len(st.Errors) > 0
		if st.Leader != 0 && st.RaftTerm >= term && st.ClusterID == clusterID {
			term, s.LeaderID = st.RaftTerm, st.Leader
		}
	}
	for name, p := range o.pods {
		m := get(name)
		m.HasPod = true
		m.PodTerminating = !p.DeletionTimestamp.IsZero()
		m.PodCurrent = p.Annotations[names.AnnotationSpecHash] == o.desiredHash
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				m.ReadyFor = max(now.Sub(cond.LastTransitionTime.Time), 0)
			}
		}
		m.PodFailure = podFailure(p)
	}
	for name, p := range o.pvcs {
		m := get(name)
		m.HasPVC = true
		m.PVCTerminating = !p.DeletionTimestamp.IsZero()
		m.PVCHasData = p.Annotations[names.AnnotationClusterID] != ""
		if n, err := strconv.Atoi(p.Annotations[resources.AnnotationBootstrapSize]); err == nil && n > s.BootstrapSize {
			s.BootstrapSize = n
		}
	}
	for _, m := range byName {
		s.Members = append(s.Members, *m)
	}
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Index < s.Members[j].Index })
	return s
}

func memberLabel(m etcd.Member) string {
	if m.Name != "" {
		return m.Name + " (" + names.FormatID(m.ID) + ")"
	}
	return names.FormatID(m.ID) + " " + strings.Join(m.PeerURLs, ",")
}
