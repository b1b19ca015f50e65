package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/hash"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/quorum"
)

// PodFormat is bumped when the operator changes member pods in a way that must be rolled out
// to running members. Any other operator upgrade leaves running members untouched.
const PodFormat = "1"

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
)

// AnnotationBootstrapSize on bootstrap PVCs records how many members the bootstrap started with.
const AnnotationBootstrapSize = names.Prefix + "bootstrap-size"

// Images tells the builders which images to use.
type Images struct {
	// Launcher is the operator image, which holds /quorate-launcher.
	Launcher string
	// EtcdRepository is the repository of the etcd images; the tag is v<version>.
	EtcdRepository string
	// PullPolicy of both images.
	PullPolicy corev1.PullPolicy
}

// EtcdImage is the etcd image for the cluster: spec.image, or the configured repository
// tagged with the version.
func (im Images) EtcdImage(c *v1alpha1.EtcdCluster) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	return im.EtcdRepository + ":v" + c.Spec.Version
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
			Type:     corev1.ServiceTypeClusterIP,
			Selector: names.MemberSelector(c.Name),
			Ports: []corev1.ServicePort{
				{Name: "client", Port: names.ClientPort, TargetPort: intstr.FromInt32(names.ClientPort)},
			},
		},
	}
	withHash(&s.ObjectMeta, s.Spec)
	return s
}

// PDB keeps a quorum of members available through voluntary disruptions. Unhealthy members
// may always be evicted: they do not count towards quorum anyway.
func PDB(c *v1alpha1.EtcdCluster) *policyv1.PodDisruptionBudget {
	minAvailable := intstr.FromInt32(quorum.Of(c.Spec.Replicas))
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

// PVC is the volume of one member. bootstrapSize is non-zero for bootstrap members.
func PVC(c *v1alpha1.EtcdCluster, member string, bootstrapSize int) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: meta(c, member, names.MemberLabels(c.Name, member)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: c.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: c.Spec.Storage.Size},
			},
		},
	}
	if bootstrapSize > 0 {
		p.Annotations = map[string]string{AnnotationBootstrapSize: strconv.Itoa(bootstrapSize)}
	}
	return p
}

// MemberSpecHash hashes everything a member pod is built from that is the same for every
// member. A pod whose hash differs is replaced by a rolling update.
func MemberSpecHash(c *v1alpha1.EtcdCluster, im Images) string {
	return hash.Of(struct {
		Format      string
		Image       string
		Version     string
		Etcd        v1alpha1.EtcdOptions
		TLS         v1alpha1.TLSSpec
		PodTemplate *v1alpha1.PodTemplate
		PullPolicy  corev1.PullPolicy
	}{PodFormat, im.EtcdImage(c), c.Spec.Version, c.Spec.Etcd, c.Spec.TLS, c.Spec.PodTemplate, im.PullPolicy})
}
