package etcdcluster

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
)

// externalPrefix marks the endpoints of spec.bootstrap.join in an observation's status maps,
// where the operator's members are keyed by name.
const externalPrefix = "external "

// externalEndpoints are spec.bootstrap.join.endpoints as the etcd client addresses them.
func externalEndpoints(c *v1alpha1.EtcdCluster) []etcd.Endpoint {
	var eps []etcd.Endpoint
	for _, raw := range c.Spec.Bootstrap.Join.Endpoints {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue // the schema's pattern admits only scheme://host:port
		}
		eps = append(eps, etcd.Endpoint{Member: externalPrefix + u.Host, Address: u.Host})
	}
	return eps
}

// splitExternal moves the answers of the external endpoints out of the maps of the
// operator's members.
func (o *observation) splitExternal() {
	o.extStatuses, o.extErrs = map[string]etcd.Status{}, map[string]error{}
	for k, st := range o.statuses {
		if strings.HasPrefix(k, externalPrefix) {
			o.extStatuses[k] = st
			delete(o.statuses, k)
		}
	}
	for k, err := range o.statusErrs {
		if strings.HasPrefix(k, externalPrefix) {
			o.extErrs[k] = err
			delete(o.statusErrs, k)
		}
	}
}

// endpointOf addresses a member: one of the cluster's own by its name, else an external one
// (spec.bootstrap.join) by its ID.
func (o *observation) endpointOf(name string, id uint64) (etcd.Endpoint, bool) {
	if ep, ok := o.endpoints[name]; ok {
		return ep, true
	}
	return o.externalEndpointOf(id)
}

// externalEndpointOf is the endpoint of spec.bootstrap.join that answered as member id.
func (o *observation) externalEndpointOf(id uint64) (etcd.Endpoint, bool) {
	for _, k := range sortedKeys(o.extStatuses) {
		if o.extStatuses[k].MemberID == id {
			return etcd.Endpoint{Member: k, Address: strings.TrimPrefix(k, externalPrefix)}, true
		}
	}
	return etcd.Endpoint{}, false
}

// firstExternalError is the error of the first endpoint of spec.bootstrap.join (by address)
// that did not answer, with its address; "" when all answered.
func (o *observation) firstExternalError() string {
	if len(o.extErrs) == 0 {
		return ""
	}
	k := sortedKeys(o.extErrs)[0]
	return fmt.Sprintf("%s: %v", strings.TrimPrefix(k, externalPrefix), o.extErrs[k])
}

// recordedExternal is the set of external member IDs status recorded when the join started.
func recordedExternal(c *v1alpha1.EtcdCluster) map[uint64]bool {
	ids := map[uint64]bool{}
	if c.Status.Join == nil {
		return ids
	}
	for _, m := range c.Status.Join.ExternalMembers {
		if id, err := names.ParseID(m.ID); err == nil {
			ids[id] = true
		}
	}
	return ids
}

// joinState is spec.bootstrap.join for the planner. Before the join starts every member the
// operator did not create is external; after, only those status recorded.
func (o *observation) joinState(c *v1alpha1.EtcdCluster) *planner.Join {
	j := &planner.Join{Started: c.Status.Join != nil, RemoveExternal: c.Spec.Bootstrap.Join.RemoveExternalMembers,
		ListedClusterID: o.listedClusterID, Alarms: o.alarmTypes()}
	extErr := o.firstExternalError()
	if o.members == nil {
		j.Unreachable = "no endpoint answered"
		if o.etcdErr != nil {
			j.Unreachable = o.etcdErr.Error()
		}
		if extErr != "" {
			j.Unreachable = extErr
		}
		return j
	}
	recorded := recordedExternal(c)
	for _, em := range o.members {
		if _, ours := o.memberOf(em); ours || (j.Started && !recorded[em.ID]) {
			continue
		}
		e := planner.External{Name: em.Name, ID: em.ID, Learner: em.IsLearner}
		if ep, ok := o.externalEndpointOf(em.ID); ok {
			st := o.extStatuses[ep.Member]
			e.Endpoint, e.Reachable, e.ClusterID, e.HasLeader, e.Version = true, true, st.ClusterID, st.Leader != 0, st.Version
			e.Connected = o.extConnected[ep.Member]
		} else if extErr != "" {
			// An endpoint that did not answer is taken to be this member's.
			e.Endpoint, e.Problem = true, extErr
		}
		j.External = append(j.External, e)
	}
	sort.Slice(j.External, func(a, b int) bool { return j.External[a].ID < j.External[b].ID })
	return j
}

// isExternal: em is one of the external members of a join under way.
func isExternal(c *v1alpha1.EtcdCluster, em etcd.Member) bool {
	if !c.Joining() {
		return false
	}
	return c.Status.Join == nil || recordedExternal(c)[em.ID]
}

// startJoin records the external cluster's ID and members (its share of the status): from here
// on the cluster is this EtcdCluster's, and only these members besides the operator's own may
// be in it.
func (r *Reconciler) startJoin(c *v1alpha1.EtcdCluster, o *observation, s planner.State, a planner.Action) statusShare {
	now := metav1.NewTime(s.Now)
	js := &v1alpha1.JoinStatus{Phase: v1alpha1.JoinAddingMembers, StartTime: &now}
	for _, e := range s.Join.External {
		m := v1alpha1.ExternalMember{ID: names.FormatID(e.ID), Name: e.Name}
		for _, em := range o.members {
			if em.ID == e.ID {
				m.PeerURLs = em.PeerURLs
			}
		}
		js.ExternalMembers = append(js.ExternalMembers, m)
	}
	js.Remaining = count32(len(js.ExternalMembers))
	r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventJoinStarted, "%s", a.Message)
	return statusShare{join: js, clusterID: names.FormatID(s.Join.ListedClusterID)}
}

// advanceJoin keeps status.join's phase and count current from a pass that read the member
// list, and completes the join once no external member is left (planner.JoinPhase decides).
// It returns its share of the status.
func (r *Reconciler) advanceJoin(c *v1alpha1.EtcdCluster, s planner.State, a planner.Action) statusShare {
	js := c.Status.Join
	if js == nil {
		return statusShare{}
	}
	phase, moves := planner.JoinPhase(s, a, js.Phase, true)
	if !moves {
		return statusShare{}
	}
	js = js.DeepCopy()
	js.Remaining = count32(len(s.Join.External))
	if phase == v1alpha1.JoinCompleted {
		now := metav1.NewTime(s.Now)
		js.CompletionTime = &now
		took := ""
		if js.StartTime != nil {
			took = fmt.Sprintf(" in %s", s.Now.Sub(js.StartTime.Time).Round(time.Second))
		}
		r.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventJoinCompleted, "the last external member is gone: the cluster %s is managed by the operator alone (joined%s)", c.Status.ClusterID, took)
	}
	js.Phase = phase
	return statusShare{join: js}
}

// externalPeers are the name=peerURL pairs of the external members for --initial-cluster.
func externalPeers(c *v1alpha1.EtcdCluster, o *observation) []string {
	var pairs []string
	for _, em := range externalMembers(c, o) {
		for _, u := range em.PeerURLs {
			pairs = append(pairs, em.Name+"="+u)
		}
	}
	sort.Strings(pairs)
	return pairs
}

// externalPeerURLs are the peer URLs of the external members: a member joining them must reach
// every one before etcd starts (the launcher's --require-peers).
func externalPeerURLs(c *v1alpha1.EtcdCluster, o *observation) []string {
	var urls []string
	for _, em := range externalMembers(c, o) {
		urls = append(urls, em.PeerURLs...)
	}
	sort.Strings(urls)
	return urls
}

// externalMembers are the started external members in etcd's member list.
func externalMembers(c *v1alpha1.EtcdCluster, o *observation) []etcd.Member {
	var out []etcd.Member
	for _, em := range o.members {
		if _, ours := o.memberOf(em); ours || !isExternal(c, em) || em.Name == "" {
			continue
		}
		out = append(out, em)
	}
	return out
}
