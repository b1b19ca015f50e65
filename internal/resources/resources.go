package resources

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/hash"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/quorum"
)

// PodFormat is bumped when the operator changes member pods in a way that must be rolled out
// to running members. Any other operator upgrade leaves running members untouched.
// 3: etcd serves its client HTTP endpoints on a port of their own (version.SplitsClientHTTP),
// so that it stops gRPC gracefully and the requests in flight at a member's stop complete.
const PodFormat = "3"

// Paths inside member pods.
const (
	DataVolumeMount = "/var/lib/etcd"
	DataDir         = DataVolumeMount + "/data"
	MarkerFile      = DataVolumeMount + "/quorate-member.json"
	LauncherDir     = "/quorate/bin"
	LauncherPath    = LauncherDir + "/quorate-launcher"
	ServerTLSDir    = "/etc/etcd/tls/server"
	PeerTLSDir      = "/etc/etcd/tls/peer"
	EtcdBinary      = "/usr/local/bin/etcd"
	// EtcdutlBinary restores snapshots; the etcd images (upstream's, and the ones this
	// project builds) hold it beside etcd.
	EtcdutlBinary = "/usr/local/bin/etcdutl"
	// BackupBinary is quorate-backup in the operator image.
	BackupBinary = "/quorate-backup"
	// RestoreSnapshot is where a restoring member's snapshot is fetched to.
	RestoreSnapshot = DataVolumeMount + "/restore/snapshot.db"
	PodInfoDir      = "/etc/quorate/podinfo"
	// PodAnnotationsFile holds the pod's annotations (downward API), one key="value" a line.
	PodAnnotationsFile = PodInfoDir + "/annotations"

	flagForceNewCluster = "--force-new-cluster"
)

// AnnotationBootstrapSize on bootstrap PVCs records how many members the bootstrap started with.
const AnnotationBootstrapSize = names.Prefix + "bootstrap-size"

// Images tells the builders which images to use.
type Images struct {
	// Launcher is the operator image, which holds /quorate-launcher.
	Launcher string
	// EtcdRepository is the repository of the etcd images; the tag is v<version>.
	EtcdRepository string
	// EtcdPinned names the image of a version exactly (by digest, for disconnected installs:
	// OLM's RELATED_IMAGE_ETCD_<version> variables); versions without one use EtcdRepository.
	EtcdPinned map[string]string
	// PullPolicy of both images.
	PullPolicy corev1.PullPolicy
	// Policy is the administrator's rule for both images.
	Policy ImagePolicy
	// UIDs says whether pods ask for a user and groups or leave them to the platform; the
	// operator sets it per namespace (internal/uidpolicy). It is not part of MemberSpecHash:
	// a running member keeps the user its data is owned by.
	UIDs UIDChoice
	// ProxyEnv is the operator's own proxy environment (ProxyEnvFrom), given to the containers
	// that reach an object store: backup Jobs and a restoring member's fetch container. Not
	// part of MemberSpecHash: no running member has it.
	ProxyEnv []corev1.EnvVar
	// StoreEnvLocked: an administrator's storage policy is in force, so a credentials Secret
	// may not redirect the pods that reach a store (LockedStoreEnv).
	StoreEnvLocked bool
}

// proxyVars are the standard proxy variables, as Go's net/http and the storage SDKs read them.
var proxyVars = []string{"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"}

// ProxyEnvFrom reads the proxy variables from environment entries (KEY=VALUE), in a fixed
// order; unset and empty ones are left out.
//
// A proxy URL with credentials in it (http://user:password@proxy:3128) is left out and named
// in withCredentials: the variables are written into the pods' specs in the clusters'
// namespaces, where whoever may read a pod would read the password.
func ProxyEnvFrom(environ []string) (env []corev1.EnvVar, withCredentials []string) {
	set := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || !slices.Contains(proxyVars, k) {
			continue
		}
		if u, err := url.Parse(v); err == nil && u.User != nil {
			withCredentials = append(withCredentials, k)
			continue
		}
		set[k] = v
	}
	for _, k := range proxyVars {
		if v, ok := set[k]; ok {
			env = append(env, corev1.EnvVar{Name: k, Value: v})
		}
	}
	return env, withCredentials
}

// EtcdImage is the etcd image for the cluster: spec.image, or the configured repository
// tagged with the version.
func (im Images) EtcdImage(c *v1alpha1.EtcdCluster) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	if pinned, ok := im.EtcdPinned[c.Spec.Version]; ok {
		return pinned
	}
	return im.EtcdRepository + ":v" + c.Spec.Version
}

// RelatedImageEnv is the environment variable that pins the etcd image of a version:
// RELATED_IMAGE_ETCD_3_6_16 for 3.6.16 (OLM's convention for the images an operator deploys).
func RelatedImageEnv(version string) string {
	return "RELATED_IMAGE_ETCD_" + strings.ReplaceAll(version, ".", "_")
}

// PinnedFromEnv reads the pinned etcd images from environment entries (KEY=VALUE).
func PinnedFromEnv(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if ver, ok := strings.CutPrefix(k, "RELATED_IMAGE_ETCD_"); ok && v != "" {
			out[strings.ReplaceAll(ver, "_", ".")] = v
		}
	}
	return out
}

// OwnerRefs makes the EtcdCluster the controller of an object.
func OwnerRefs(c *v1alpha1.EtcdCluster) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(c, v1alpha1.GroupVersion.WithKind("EtcdCluster"))}
}

func meta(c *v1alpha1.EtcdCluster, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels, OwnerReferences: OwnerRefs(c)}
}

// withHash stamps an object hash annotation computed over the object as built.
func withHash(m *metav1.ObjectMeta, content any) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[names.AnnotationObjectHash] = hash.Of(content)
}

// PeerService is the headless Service that gives every member a stable DNS name. It publishes
// members that are not ready, so that members find each other while they start.
func PeerService(c *v1alpha1.EtcdCluster) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: meta(c, names.PeerService(c.Name), names.ClusterLabels(c.Name)),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 names.MemberSelector(c.Name),
			Ports: []corev1.ServicePort{
				{Name: "client", Port: names.ClientPort, TargetPort: intstr.FromInt32(names.ClientPort)},
				{Name: "peer", Port: names.PeerPort, TargetPort: intstr.FromInt32(names.PeerPort)},
			},
		},
	}
	withHash(&s.ObjectMeta, s.Spec)
	return s
}

// ClientService is the Service clients use; it routes to ready members only.
func ClientService(c *v1alpha1.EtcdCluster) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: meta(c, names.ClientService(c.Name), names.ClusterLabels(c.Name)),
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			// Members the operator is about to stop leave it first (names.LabelServing).
			Selector: names.ServingSelector(c.Name),
			Ports: []corev1.ServicePort{
				{Name: "client", Port: names.ClientPort, TargetPort: intstr.FromInt32(names.ClientPort)},
				// The JSON gateway, /health and /version, on releases that serve them apart
				// from gRPC (on the client port otherwise).
				{Name: "http", Port: names.ClientHTTPPort, TargetPort: intstr.FromInt32(names.ClientHTTPPort)},
			},
		},
	}
	withHash(&s.ObjectMeta, s.Spec)
	return s
}

// Voters counts the voting members of a cluster for its PDB: the operator's own (Members), and
// while a join runs the external ones (External, of which ExternalHealthy are healthy now).
type Voters struct {
	Members, Learners, External, ExternalHealthy int32
}

// PDB keeps a quorum of the current voters available through voluntary disruptions, and
// follows the membership as it changes. Learners are counted on top, so that an eviction can
// never take a voter while a learner stands in for it. (etcd's own /readyz, the member's
// readiness, fails on a learner from 3.5.19 and in 3.6, so there a learner's pod is never a
// healthy pod of the budget; before 3.5.19 nothing excludes it, and this margin is what holds:
// TestLearnerIsNotReady.) Unhealthy members may always be
// evicted: they do not count towards quorum anyway. A single voter has no redundancy to keep:
// its budget lets a drain evict it (the member is down until it is rescheduled) rather than
// block the drain forever.
//
// While a join runs, the quorum is the combined cluster's, and the budget selects only the
// operator's pods: of the quorum of all voters, the healthy external ones cover what they can,
// and the operator's members must cover the rest (never more than there are), and never less
// than a quorum of the operator's own members (the margin outside a join): minAvailable =
// min(max(quorum(members+external) - externalHealthy, quorum(members)), members) + learners. An external member
// that is down makes the operator's members count for more; one healthy external voter of a
// 1+3 cluster whose two other external members are down leaves no operator's pod evictable.
func PDB(c *v1alpha1.EtcdCluster, v Voters) *policyv1.PodDisruptionBudget {
	// Never less than a quorum of the operator's own members, as outside a join: the healthy
	// external count is from the last pass, and one external failure must not be what stands
	// between an eviction and a lost quorum.
	need := min(max(quorum.Of(v.Members+v.External)-v.ExternalHealthy, quorum.Of(v.Members)), v.Members) + v.Learners
	if mutant.On("pdb-counts-learners") {
		need -= v.Learners
	}
	if v.Members+v.External <= 1 {
		need = 0
	}
	minAvailable := intstr.FromInt32(need)
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: meta(c, names.PDB(c.Name), names.ClusterLabels(c.Name)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               &minAvailable,
			Selector:                   &metav1.LabelSelector{MatchLabels: names.MemberSelector(c.Name)},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
	withHash(&p.ObjectMeta, p.Spec)
	return p
}

// PVC is the volume of one member. bootstrapSize is non-zero for bootstrap members. It names
// its EtcdCluster by UID; it is owned by it (deleted with it) only when spec.volumeRetention
// is Delete.
func PVC(c *v1alpha1.EtcdCluster, member string, bootstrapSize int) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: c.Namespace, Labels: names.MemberLabels(c.Name, member),
			Annotations: map[string]string{names.AnnotationOwnerUID: string(c.UID)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: c.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: c.Spec.Storage.Size},
			},
		},
	}
	if bootstrapSize > 0 {
		p.Annotations[AnnotationBootstrapSize] = strconv.Itoa(bootstrapSize)
	}
	SetRetention(c, p)
	return p
}

// Retained reports whether obj belongs to this EtcdCluster: controlled by it, or naming it by
// UID (what it keeps: member volumes and certificate Secrets, under spec.volumeRetention).
func Retained(c *v1alpha1.EtcdCluster, obj metav1.Object) bool {
	return metav1.IsControlledBy(obj, c) || obj.GetAnnotations()[names.AnnotationOwnerUID] == string(c.UID)
}

// SetRetention makes an object of c that outlives it under spec.volumeRetention (a member PVC,
// a certificate Secret) follow the policy: an owner reference to c (so that it is deleted with
// c) for Delete, none for Retain, and c's UID in an annotation either way; the label says
// which. It reports whether it changed anything.
func SetRetention(c *v1alpha1.EtcdCluster, obj metav1.Object) bool {
	policy := c.Spec.VolumeRetention
	if policy == "" {
		policy = v1alpha1.DefaultVolumeRetention
	}
	changed := false
	if labels := obj.GetLabels(); labels[names.LabelRetention] != policy {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[names.LabelRetention] = policy
		obj.SetLabels(labels)
		changed = true
	}
	if ann := obj.GetAnnotations(); ann[names.AnnotationOwnerUID] != string(c.UID) {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[names.AnnotationOwnerUID] = string(c.UID)
		obj.SetAnnotations(ann)
		changed = true
	}
	owned := metav1.IsControlledBy(obj, c)
	switch {
	case policy == v1alpha1.VolumeDelete && !owned:
		obj.SetOwnerReferences(append(obj.GetOwnerReferences(), OwnerRefs(c)...))
		changed = true
	case policy != v1alpha1.VolumeDelete && owned:
		obj.SetOwnerReferences(slices.DeleteFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == c.UID }))
		changed = true
	}
	return changed
}

// MemberSpecHash hashes everything a member pod is built from that is the same for every
// member. A pod whose hash differs is replaced by a rolling update.
func MemberSpecHash(c *v1alpha1.EtcdCluster, im Images) string {
	tls := c.Spec.TLS
	// Renewals and rotations reach members through their Secrets (certificates) or TrustGeneration
	// (trusted CAs), not as spec changes.
	tls.RenewCertificates, tls.RotateCA = "", ""
	return hash.Of(struct {
		Format      string
		Image       string
		Version     string
		Etcd        v1alpha1.EtcdOptions
		TLS         v1alpha1.TLSSpec
		Trust       string
		PodTemplate *v1alpha1.PodTemplate
		PullPolicy  corev1.PullPolicy
	}{PodFormat, im.EtcdImage(c), c.Spec.Version, c.Spec.Etcd, tls, TrustGeneration(c), c.Spec.PodTemplate, im.PullPolicy})
}

// TrustGeneration names the CAs members must trust: etcd loads its trusted CAs only when it
// starts, so a CA rotation restarts members (one at a time) when every ca.crt begins to trust
// both CAs, and again when it trusts the new one alone.
func TrustGeneration(c *v1alpha1.EtcdCluster) string {
	if c.Status.TLS == nil || c.Status.TLS.CARotation == nil {
		return ""
	}
	r := c.Status.TLS.CARotation
	switch r.Phase {
	case v1alpha1.CARotationTrusting, v1alpha1.CARotationReissuing:
		return r.Token + "/both"
	}
	return r.Token + "/new"
}

// DefaultOperatorLabels select the operator's pods (names.OperatorLabels): the control-plane
// label alone would admit every kubebuilder operator of a shared OLM namespace to the etcd
// clusters' client port.
func DefaultOperatorLabels() map[string]string { return names.OperatorLabels() }

// Operator says how the operator's pods are selected, for the NetworkPolicy's client rule.
type Operator struct {
	// Namespace of the operator's pods; empty: any namespace.
	Namespace string
	// Labels of the operator's pods.
	Labels map[string]string
}

func (o Operator) peer() networkingv1.NetworkPolicyPeer {
	ns := &metav1.LabelSelector{}
	if o.Namespace != "" {
		ns.MatchLabels = map[string]string{corev1.LabelMetadataName: o.Namespace}
	}
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: ns, PodSelector: &metav1.LabelSelector{MatchLabels: o.Labels}}
}

// joinPeers admit, while a join is under way (spec.bootstrap.join), peer traffic from the
// external members whose peer URLs name an address; a member named by a host name cannot be
// written in a NetworkPolicy (docs/user-guide.md says to turn the policy off for the move).
func joinPeers(c *v1alpha1.EtcdCluster) []networkingv1.NetworkPolicyPeer {
	js := c.Status.Join
	if !c.Joining() || js == nil {
		return nil // no join, or not started yet: no external member is recorded
	}
	var peers []networkingv1.NetworkPolicyPeer
	seen := map[string]bool{}
	for _, m := range js.ExternalMembers {
		for _, raw := range m.PeerURLs {
			u, err := url.Parse(raw)
			if err != nil {
				continue
			}
			ip := net.ParseIP(u.Hostname())
			if ip == nil || seen[ip.String()] {
				continue
			}
			seen[ip.String()] = true
			bits := 32
			if ip.To4() == nil {
				bits = 128
			}
			peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: fmt.Sprintf("%s/%d", ip, bits)}})
		}
	}
	return peers
}

// BackupJobPeer selects the pods of a cluster's backup Jobs (BackupJob labels them).
func BackupJobPeer(cluster string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: names.ClusterLabels(cluster),
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: names.LabelBackup, Operator: metav1.LabelSelectorOpExists}}}}
}

// NetworkPolicy admits, to the cluster's members, peer traffic from its members only, client
// traffic from spec.networkPolicy.clients with the operator, the members and the backup Jobs
// (anyone when none are named), and metrics and health traffic from
// spec.networkPolicy.monitoring (anyone when none are named). It restricts ingress only:
// members reach each other and DNS as before.
func NetworkPolicy(c *v1alpha1.EtcdCluster, op Operator) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	port := func(ps ...int32) []networkingv1.NetworkPolicyPort {
		var out []networkingv1.NetworkPolicyPort
		for _, p := range ps {
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(p))})
		}
		return out
	}
	members := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: names.MemberSelector(c.Name)}}
	peers := append([]networkingv1.NetworkPolicyPeer{members}, joinPeers(c)...)
	spec := c.Spec.NetworkPolicy
	var clients []networkingv1.NetworkPolicyPeer
	if len(spec.Clients) > 0 {
		// Named clients never shut out the cluster's own: the operator, the members (a
		// starting member asks the others whether the cluster was bootstrapped before) and
		// the pods of its backup Jobs.
		clients = append([]networkingv1.NetworkPolicyPeer{op.peer(), members, BackupJobPeer(c.Name)}, spec.Clients...)
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: meta(c, names.NetworkPolicy(c.Name), names.ClusterLabels(c.Name)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: names.MemberSelector(c.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: port(names.PeerPort), From: peers},
				{Ports: port(names.ClientPort, names.ClientHTTPPort), From: clients},
				{Ports: port(names.MetricsPort), From: append([]networkingv1.NetworkPolicyPeer(nil), spec.Monitoring...)},
			},
		},
	}
	withHash(&np.ObjectMeta, np.Spec)
	return np
}
