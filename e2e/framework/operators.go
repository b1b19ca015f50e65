package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Operator is the etcd operator a scenario runs against. A scenario without one runs against
// Quorate through the suite's own actions; the side-by-side benchmark (suite=peers) runs the
// same steps through each Operator: Quorate's, and the peers' (hack/peers.sh builds and
// installs them from their source).
type Operator interface {
	// Name is the label the report groups results by: quorate, etcd-io or cozystack.
	Name() string
	// Create creates the run's cluster object with replicas members of etcd version.
	Create(ctx context.Context, r *Run, replicas int32, version string) error
	// Converged returns nil once the cluster has n voting members, all healthy and running
	// version ("": any), and nothing the operator reports as in progress.
	Converged(ctx context.Context, r *Run, n int32, version string) error
	// SetReplicas and SetVersion change the cluster object.
	SetReplicas(ctx context.Context, r *Run, n int32) error
	SetVersion(ctx context.Context, r *Run, version string) error
	// Leader is the pod of the current leader; Volume the PersistentVolumeClaim of a pod.
	Leader(ctx context.Context, r *Run) (string, error)
	Volume(pod string) string
	// Client is how the workload reaches the cluster.
	Client(r *Run) ClientConfig
}

// ClientConfig is how the workload reaches a cluster.
type ClientConfig struct {
	// Endpoints are client URLs.
	Endpoints []string
	// Service is the client Service's URL, the one endpoint of the service-only client
	// profile.
	Service string
	// Secret holds the client certificate (tls.crt, tls.key, ca.crt); "" for plaintext.
	Secret     string
	ServerName string
	// PeerService is the DNS name of the headless Service the split-brain poller resolves to
	// reach every member.
	PeerService string
}

// Quorate is the Operator of this repository, through the suite's own actions.
type Quorate struct{}

func (Quorate) Name() string { return "quorate" }

func (Quorate) Create(ctx context.Context, r *Run, replicas int32, version string) error {
	sc := r.Scenario
	sc.Replicas, sc.Version = replicas, version
	r.Scenario = sc
	return r.CreateEtcdCluster(ctx)
}

func (Quorate) Converged(ctx context.Context, r *Run, n int32, version string) error {
	if err := r.settled(ctx, r.Cluster, n); err != nil {
		return err
	}
	if version == "" {
		return nil
	}
	ec, err := r.GetCluster(ctx)
	if err != nil {
		return err
	}
	for _, m := range ec.Status.Members {
		if m.Version != version {
			return fmt.Errorf("member %s runs etcd %s, not %s", m.Name, m.Version, version)
		}
	}
	return nil
}

func (Quorate) SetReplicas(ctx context.Context, r *Run, n int32) error { return r.SetReplicas(ctx, n) }

func (Quorate) SetVersion(ctx context.Context, r *Run, version string) error {
	return r.Update(ctx, "spec.version = "+version, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Version = version })
}

func (Quorate) Leader(ctx context.Context, r *Run) (string, error) { return r.Leader(ctx) }

// Volume: a member's claim is named after it.
func (Quorate) Volume(pod string) string { return pod }

func (Quorate) Client(r *Run) ClientConfig {
	host := names.ClientHost(r.Cluster, r.Namespace)
	secret := names.ClientSecret(r.Cluster)
	if r.Scenario.ClientSecret != nil {
		secret = r.Scenario.ClientSecret(r.Cluster)
	}
	service := "https://" + host + ":2379"
	return ClientConfig{Endpoints: append(slices.Clone(r.external), service), Service: service, Secret: secret,
		ServerName: host, PeerService: names.PeerService(r.Cluster) + "." + r.Namespace + ".svc"}
}

// Peer is another etcd operator, driven through its own custom resource. Both peers run
// plaintext etcd by default, which is how they are measured: the suite checks membership and
// health through the API server's pod proxy, the same for both.
type Peer struct {
	name string
	gvk  schema.GroupVersionKind
	// replicas and version are the paths of the member count and etcd version in the spec;
	// versionPrefix is put before the version there (etcd-io names image tags, "v3.6.16"),
	// unless --peers-bare-versions.
	replicas, version []string
	versionPrefix     string
	// spec is the rest of the spec at creation (storage).
	spec map[string]any
	// selector finds the member pods; volume names a pod's claim; client is the client
	// Service's host.
	selector func(cluster string) map[string]string
	volume   func(pod string) string
	client   func(cluster, ns string) string
}

// Peers are the operators hack/peers.sh installs, by name.
var Peers = map[string]*Peer{
	"etcd-io": {name: "etcd-io", gvk: schema.GroupVersionKind{Group: "operator.etcd.io", Version: "v1alpha1", Kind: "EtcdCluster"},
		replicas: []string{"spec", "size"}, version: []string{"spec", "version"}, versionPrefix: "v",
		spec:     map[string]any{"storageSpec": map[string]any{"volumeSizeRequest": "256Mi"}},
		selector: func(c string) map[string]string { return map[string]string{"app": c} },
		volume:   func(pod string) string { return "etcd-data-" + pod },
		// No client Service: the headless Service's name resolves to every member.
		client: func(c, ns string) string { return c + "." + ns + ".svc" }},
	"cozystack": {name: "cozystack", gvk: schema.GroupVersionKind{Group: "etcd-operator.cozystack.io", Version: "v1alpha2", Kind: "EtcdCluster"},
		replicas: []string{"spec", "replicas"}, version: []string{"spec", "version"},
		spec:     map[string]any{"storage": map[string]any{"size": "256Mi"}},
		selector: func(c string) map[string]string { return map[string]string{"etcd-operator.cozystack.io/cluster": c} },
		volume:   func(pod string) string { return "data-" + pod },
		client:   func(c, ns string) string { return c + "-client." + ns + ".svc" }},
}

func (p *Peer) Name() string { return p.name }

func (p *Peer) object(r *Run) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(p.gvk)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Cluster)
	return u
}

func (p *Peer) Create(ctx context.Context, r *Run, replicas int32, version string) error {
	u := p.object(r)
	u.Object["spec"] = runtimeCopy(p.spec)
	if err := unstructured.SetNestedField(u.Object, int64(replicas), p.replicas...); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, p.versionValue(r, version), p.version...); err != nil {
		return err
	}
	if err := r.Suite.Client.Create(ctx, u); err != nil {
		return fmt.Errorf("creating the %s EtcdCluster: %w", p.name, err)
	}
	return nil
}

func runtimeCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	return out
}

func (p *Peer) patch(ctx context.Context, r *Run, value any, path []string) error {
	u := p.object(r)
	if err := r.Suite.Client.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
		return err
	}
	before := u.DeepCopy()
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		return err
	}
	return r.Suite.Client.Patch(ctx, u, client.MergeFrom(before))
}

func (p *Peer) SetReplicas(ctx context.Context, r *Run, n int32) error {
	r.Event("action", "scale", fmt.Sprintf("%s = %d", strings.Join(p.replicas, "."), n))
	return p.patch(ctx, r, int64(n), p.replicas)
}

func (p *Peer) SetVersion(ctx context.Context, r *Run, version string) error {
	v := p.versionValue(r, version)
	r.Event("action", "etcd-upgrade", fmt.Sprintf("%s = %s", strings.Join(p.version, "."), v))
	return p.patch(ctx, r, v, p.version)
}

// versionValue is how the spec names etcd version: with the peer's prefix, unless
// --peers-bare-versions asks for the bare release.
func (p *Peer) versionValue(r *Run, version string) string {
	if r.Suite.Opts.PeersBareVersions {
		return version
	}
	return p.versionPrefix + version
}

func (p *Peer) Volume(pod string) string { return p.volume(pod) }

func (p *Peer) Client(r *Run) ClientConfig {
	host := p.client(r.Cluster, r.Namespace)
	service := "http://" + host + ":2379"
	return ClientConfig{Endpoints: []string{service}, Service: service, ServerName: host, PeerService: r.Cluster + "." + r.Namespace + ".svc"}
}

// memberStatus is what one member says of itself (etcd's Maintenance.Status, through the
// gRPC gateway: IDs are decimal strings).
type memberStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Version   string `json:"version"`
	Leader    string `json:"leader"`
	IsLearner bool   `json:"isLearner"`
}

type memberList struct {
	Members []struct {
		ID        string `json:"ID"`
		Name      string `json:"name"`
		IsLearner bool   `json:"isLearner"`
	} `json:"members"`
}

// etcdCall posts body to a member pod's client port through the API server's pod proxy.
func etcdCall(ctx context.Context, r *Run, pod, path string, out any) error {
	b, err := r.Suite.Clientset.CoreV1().RESTClient().Post().Namespace(r.Namespace).Resource("pods").Name(pod + ":2379").
		SubResource("proxy").Suffix(path).Body([]byte("{}")).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%s %s: %w", pod, path, err)
	}
	return json.Unmarshal(b, out)
}

// pods are the cluster's member pods, by name.
func (p *Peer) pods(ctx context.Context, r *Run) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Suite.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.MatchingLabels(p.selector(r.Cluster))); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// statuses asks every member pod for its status; all must answer.
func (p *Peer) statuses(ctx context.Context, r *Run) (map[string]memberStatus, error) {
	pods, err := p.pods(ctx, r)
	if err != nil {
		return nil, err
	}
	out := map[string]memberStatus{}
	for _, pod := range pods {
		var st memberStatus
		if err := etcdCall(ctx, r, pod.Name, "v3/maintenance/status", &st); err != nil {
			return nil, err
		}
		out[pod.Name] = st
	}
	return out, nil
}

// Converged, for a peer, is judged from etcd and the pods alone, the same for both: n member
// pods, all ready and none terminating; n members in etcd's member list, none a learner;
// every member answering, with the same leader and the version asked for.
func (p *Peer) Converged(ctx context.Context, r *Run, n int32, version string) error {
	pods, err := p.pods(ctx, r)
	if err != nil {
		return err
	}
	var problems []string
	for _, pod := range pods {
		switch {
		case pod.DeletionTimestamp != nil:
			problems = append(problems, pod.Name+" terminating")
		case !PodReady(&pod):
			problems = append(problems, pod.Name+" not ready"+waitingReason(&pod))
		}
	}
	if len(pods) != int(n) || len(problems) > 0 {
		return fmt.Errorf("%d of %d member pods; %s", len(pods), n, strings.Join(problems, ", "))
	}
	var ml memberList
	if err := etcdCall(ctx, r, pods[0].Name, "v3/cluster/member/list", &ml); err != nil {
		return err
	}
	for _, m := range ml.Members {
		if m.IsLearner {
			problems = append(problems, "learner "+m.Name)
		}
	}
	if len(ml.Members) != int(n) || len(problems) > 0 {
		return fmt.Errorf("%d members in etcd, %d wanted; %s", len(ml.Members), n, strings.Join(problems, ", "))
	}
	sts, err := p.statuses(ctx, r)
	if err != nil {
		return err
	}
	leaders := map[string]bool{}
	for pod, st := range sts {
		leaders[st.Leader] = true
		if version != "" && st.Version != version {
			problems = append(problems, fmt.Sprintf("%s runs etcd %s, not %s", pod, st.Version, version))
		}
	}
	if len(leaders) != 1 || leaders["0"] || leaders[""] {
		problems = append(problems, fmt.Sprintf("members disagree on the leader or have none: %v", leaders))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func (p *Peer) Leader(ctx context.Context, r *Run) (string, error) {
	sts, err := p.statuses(ctx, r)
	if err != nil {
		return "", err
	}
	for pod, st := range sts {
		if st.Leader != "" && st.Leader == st.Header.MemberID {
			return pod, nil
		}
	}
	return "", fmt.Errorf("no member pod is the leader")
}

// PodReady says whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitingReason names why a pod's containers wait or restart, for messages.
func waitingReason(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return fmt.Sprintf(" (%s: %s, %d restarts)", cs.Name, w.Reason, cs.RestartCount)
		}
		if cs.RestartCount > 0 {
			return fmt.Sprintf(" (%s: %d restarts)", cs.Name, cs.RestartCount)
		}
	}
	return ""
}

// PeerNames are the operators --peers names, in its order.
func (o *Options) PeerNames() []string {
	var out []string
	for _, n := range strings.Split(o.Peers, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// checkPeers rejects a --peers name that is not a known peer.
func (o *Options) checkPeers() error {
	for _, n := range o.PeerNames() {
		if Peers[n] == nil {
			known := slices.Sorted(maps.Keys(Peers))
			return fmt.Errorf("--peers: %q is not a peer etcd operator; known: %s", n, strings.Join(known, ", "))
		}
	}
	return nil
}
