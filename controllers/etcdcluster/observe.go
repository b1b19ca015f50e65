package etcdcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/expectations"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

const (
	kindPod = "Pod"
	kindPVC = "PersistentVolumeClaim"
)

// observation is everything a pass knows, read once at its start.
type observation struct {
	cluster   string
	namespace string
	pods      map[string]*corev1.Pod
	pvcs      map[string]*corev1.PersistentVolumeClaim
	// retained are member PVCs of an earlier EtcdCluster of the same name.
	retained map[string]*corev1.PersistentVolumeClaim
	// leftovers are member pods and PVCs an earlier EtcdCluster of the same name controls:
	// deleted since, its dependents not yet garbage-collected.
	leftovers []client.Object
	// expandable says, for the StorageClass of each PVC smaller than spec.storage.size,
	// whether it expands volumes in place.
	expandable map[string]bool

	endpoints map[string]etcd.Endpoint
	client    etcd.Client // nil when no member could be dialled

	// From etcd; members is nil when the member list could not be read.
	members         []etcd.Member
	listedClusterID uint64
	etcdErr         error
	statuses        map[string]etcd.Status
	statusErrs      map[string]error
	alarms          []etcd.Alarm
	// extStatuses and extErrs are the answers of spec.bootstrap.join's endpoints, keyed by
	// externalPrefix and address.
	extStatuses map[string]etcd.Status
	extErrs     map[string]error
	// extConnected are the peers each external endpoint reports working connections to,
	// once the join started (nil for an endpoint whose metrics could not be read).
	extConnected map[string]map[uint64]bool

	desiredHash string
	// inService are the pods the client Service's EndpointSlices list, read only while a pod
	// is out of the Service (names.LabelServing "false").
	inService map[string]bool
	// drainRefused are the pods the API server refused to take out of the client Service.
	drainRefused []string

	// restore is the snapshot a cluster created from a backup restores at bootstrap.
	restore *resources.Restore
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

// memberOf maps an etcd member to the member name its peer URL encodes; ok is false for a
// member the operator did not create.
func (o *observation) memberOf(em etcd.Member) (string, bool) {
	if len(em.PeerURLs) == 0 {
		return "", false
	}
	name, ok := names.MemberFromPeerURL(o.cluster, o.namespace, em.PeerURLs[0])
	if !ok || (em.Name != "" && em.Name != name) {
		return "", false
	}
	return name, true
}

func (r *Reconciler) observe(ctx context.Context, c *v1alpha1.EtcdCluster) (*observation, error) {
	o := &observation{
		cluster:     c.Name,
		namespace:   c.Namespace,
		pods:        map[string]*corev1.Pod{},
		pvcs:        map[string]*corev1.PersistentVolumeClaim{},
		retained:    map[string]*corev1.PersistentVolumeClaim{},
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
		if _, ok := names.MemberIndex(c.Name, p.Name); !ok {
			continue
		}
		switch {
		case metav1.IsControlledBy(p, c):
			o.pods[p.Name] = p
			if p.Status.PodIP != "" && p.DeletionTimestamp.IsZero() {
				o.endpoints[p.Name] = etcd.Endpoint{Member: p.Name, Address: joinHostPort(p.Status.PodIP, names.ClientPort)}
			}
		case leftoverOf(c, p) != nil:
			o.leftovers = append(o.leftovers, p)
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs, client.InNamespace(c.Namespace), sel); err != nil {
		return nil, err
	}
	for i := range pvcs.Items {
		p := &pvcs.Items[i]
		if _, ok := names.MemberIndex(c.Name, p.Name); !ok {
			continue
		}
		switch {
		case resources.Retained(c, p):
			o.pvcs[p.Name] = p
		case leftoverOf(c, p) != nil:
			// Its cluster's volumeRetention was Delete: it goes, not adopted.
			o.leftovers = append(o.leftovers, p)
		case p.DeletionTimestamp.IsZero():
			o.retained[p.Name] = p
		}
	}
	if err := r.observeStorageClasses(ctx, c, o); err != nil {
		return nil, err
	}
	r.observeServiceEndpoints(ctx, c, o)
	for _, p := range o.pods {
		if _, refused := r.drainRefused.Load(p.UID); refused {
			o.drainRefused = append(o.drainRefused, p.Name)
		}
	}
	r.observeEtcd(ctx, c, o)
	return o, nil
}

// endpointSliceController is the managed-by label of the EndpointSlices Kubernetes makes for
// a Service with a selector.
const endpointSliceController = "endpointslice-controller.k8s.io"

// observeServiceEndpoints reads, only while a member's pod is out of the client Service, which
// pods the Service's EndpointSlices still list: the operator stops such a member once its
// endpoint is gone. Read from the API server, not a cache: EndpointSlices change often and the
// operator needs them only for moments.
func (r *Reconciler) observeServiceEndpoints(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation) {
	out := false
	for _, p := range o.pods {
		out = out || p.Labels[names.LabelServing] == "false"
	}
	if !out {
		return
	}
	var endpoints discoveryv1.EndpointSliceList
	if err := r.APIReader.List(ctx, &endpoints, client.InNamespace(c.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: names.ClientService(c.Name)}); err != nil {
		// Not a reason to stop: the member is stopped without the check, and the launcher's
		// stop delay is what is left to clients.
		logf.FromContext(ctx).Error(err, "reading the client Service's EndpointSlices failed: members are stopped without waiting for their endpoint to go; grant the operator list on endpointslices (discovery.k8s.io)")
		return
	}
	o.inService = map[string]bool{}
	for _, es := range endpoints.Items {
		if es.Labels[discoveryv1.LabelManagedBy] != endpointSliceController {
			continue // somebody else's slice carrying the Service's name
		}
		for _, ep := range es.Endpoints {
			if ep.TargetRef == nil || ep.TargetRef.Kind != kindPod {
				continue
			}
			if p, ok := o.pods[ep.TargetRef.Name]; ok && p.UID == ep.TargetRef.UID {
				o.inService[p.Name] = true
			}
		}
	}
}

// observeStorageClasses reads, only while some volume is smaller than spec.storage.size,
// whether its StorageClass can expand it.
func (r *Reconciler) observeStorageClasses(ctx context.Context, c *v1alpha1.EtcdCluster, o *observation) error {
	o.expandable = map[string]bool{}
	for _, p := range o.pvcs {
		class := ptr.Deref(p.Spec.StorageClassName, "")
		if _, seen := o.expandable[class]; seen || !volumeTooSmall(c, p) {
			continue
		}
		sc := &storagev1.StorageClass{}
		switch err := r.APIReader.Get(ctx, types.NamespacedName{Name: class}, sc); {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			// A namespaced install may not read StorageClasses: such a volume moves instead.
			o.expandable[class] = false
		case err != nil:
			return fmt.Errorf("reading StorageClass %q of PVC %s: %w", class, p.Name, err)
		default:
			o.expandable[class] = ptr.Deref(sc.AllowVolumeExpansion, false)
		}
	}
	return nil
}

// volumeTooSmall: the PVC asks for less than spec.storage.size.
func volumeTooSmall(c *v1alpha1.EtcdCluster, p *corev1.PersistentVolumeClaim) bool {
	req := p.Spec.Resources.Requests[corev1.ResourceStorage]
	return req.Cmp(c.Spec.Storage.Size) < 0
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
	defer o.splitExternal()
	eps := o.etcdEndpoints(c)
	if len(eps) == 0 {
		o.etcdErr = etcd.ErrNoEndpoints
		return
	}
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
	o.askEach(ctx, c, cl, eps)
	// Learners refuse membership calls, so membership goes through voters only; and only
	// through members of the recorded cluster: a member list read from another cluster (an
	// endpoint of spec.bootstrap.join that leads elsewhere) would make this cluster's members
	// look removed.
	recorded, _ := names.ParseID(c.Status.ClusterID)
	voters := o.votersOf(eps, recorded)
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
	o.listMembers(ctx, cl, recorded)
	if o.etcdErr != nil && o.listedClusterID == 0 {
		// The list failed (a list from another cluster is no failure to retry).
		r.listThroughLeader(ctx, o, voters, recorded, tlsCfg)
	}
}

// listThroughLeader lists the members again through the leader alone, after a list through
// any voter failed: the list is linearizable, and a voter too slow to follow its leader (its
// disk, or its link) answers for its status at once but times out on the list, which would
// make the pass see no cluster. The leader confirms a linearizable read with the heartbeats
// of a quorum alone. On success the pass goes on with the leader's client.
func (r *Reconciler) listThroughLeader(ctx context.Context, o *observation, voters []etcd.Endpoint, recorded uint64, tlsCfg *tls.Config) {
	// The member that says it leads, in the newest term if two do (an old leader that has not
	// heard of the election yet). A list through the one voter there is has already failed.
	var leader etcd.Endpoint
	var term uint64
	for _, ep := range voters {
		if st, ok := o.statuses[ep.Member]; ok && st.Leader != 0 && st.Leader == st.MemberID && st.RaftTerm >= term {
			leader, term = ep, st.RaftTerm
		}
	}
	if leader.Member == "" || len(voters) == 1 {
		return
	}
	cl, err := r.EtcdFactory(ctx, etcd.Config{Endpoints: []etcd.Endpoint{leader}, TLS: tlsCfg})
	if err != nil {
		return
	}
	first := o.etcdErr
	o.etcdErr = nil
	o.listMembers(ctx, cl, recorded)
	if o.etcdErr != nil {
		o.etcdErr = fmt.Errorf("%w (and through the leader %s alone: %v)", first, leader.Member, o.etcdErr)
		_ = cl.Close()
		return
	}
	logf.FromContext(ctx).Info("listed the members through the leader alone, after a list through any voter failed", "leader", leader.Member, "error", first.Error())
	_ = o.client.Close()
	o.client = cl
}

// etcdEndpoints are the endpoints a pass asks, by member name: the members' and, during a
// join, the external cluster's.
func (o *observation) etcdEndpoints(c *v1alpha1.EtcdCluster) []etcd.Endpoint {
	eps := make([]etcd.Endpoint, 0, len(o.endpoints))
	for _, ep := range o.endpoints {
		eps = append(eps, ep)
	}
	if c.Joining() {
		// The external cluster's members answer too, until the last of them is removed.
		eps = append(eps, externalEndpoints(c)...)
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].Member < eps[j].Member })
	return eps
}

// askEach asks every endpoint for its status at once (and an external member of a join which
// peers it is connected to).
func (o *observation) askEach(ctx context.Context, c *v1alpha1.EtcdCluster, cl etcd.Client, eps []etcd.Endpoint) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := cl.Status(ctx, ep)
			var connected map[uint64]bool
			if err == nil && c.Status.Join != nil && strings.HasPrefix(ep.Member, externalPrefix) {
				// Best-effort: a member whose metrics cannot be read is not judged.
				connected, _ = cl.ActivePeers(ctx, ep)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				o.statusErrs[ep.Member] = err
				return
			}
			o.statuses[ep.Member] = st
			if connected != nil {
				if o.extConnected == nil {
					o.extConnected = map[string]map[uint64]bool{}
				}
				o.extConnected[ep.Member] = connected
			}
		}()
	}
	wg.Wait()
}

// votersOf are the endpoints that answered as voters of the recorded cluster (any cluster
// before one is recorded).
func (o *observation) votersOf(eps []etcd.Endpoint, recorded uint64) []etcd.Endpoint {
	var voters []etcd.Endpoint
	for _, ep := range eps {
		if st, ok := o.statuses[ep.Member]; ok && !st.IsLearner && (recorded == 0 || st.ClusterID == recorded) {
			voters = append(voters, ep)
		}
	}
	return voters
}

// listMembers reads the member list through the voters, refused when it comes from another
// cluster than the recorded one, and the alarms.
func (o *observation) listMembers(ctx context.Context, cl etcd.Client, recorded uint64) {
	o.listedClusterID, o.members, o.etcdErr = cl.MemberList(ctx)
	if o.etcdErr == nil && recorded != 0 && o.listedClusterID != recorded {
		o.etcdErr = fmt.Errorf("the member list came from etcd cluster %s, but this cluster is %s", names.FormatID(o.listedClusterID), names.FormatID(recorded))
	}
	if o.etcdErr != nil {
		o.members = nil
		return
	}
	// Alarms are read best-effort: without them the cluster is managed as before.
	if alarms, err := cl.Alarms(ctx); err == nil {
		o.alarms = alarms
	}
}

// alarmTypes are the distinct alarm types raised, sorted.
func (o *observation) alarmTypes() []string {
	var types []string
	for _, a := range o.alarms {
		if !slices.Contains(types, a.Type) {
			types = append(types, a.Type)
		}
	}
	slices.Sort(types)
	return types
}

// firstError is the error of the first member by name, so that the same failure is reported
// from pass to pass.
func firstError(errs map[string]error) error {
	keys := sortedKeys(errs)
	if len(keys) == 0 {
		return etcd.ErrNoEndpoints
	}
	return errs[keys[0]]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// clientTLS is the TLS configuration the operator dials the members with (none in plaintext).
func (r *Reconciler) clientTLS(ctx context.Context, c *v1alpha1.EtcdCluster) (*tls.Config, error) {
	if !c.Spec.TLS.IsEnabled() {
		return nil, nil
	}
	return r.certs.ClientTLS(ctx, c)
}
