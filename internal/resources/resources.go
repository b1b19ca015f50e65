package resources

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/hash"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/version"
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
	minAvailable := intstr.FromInt32(int32(planner.Quorum(int(c.Spec.Replicas))))
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

// InitialCluster renders etcd's --initial-cluster for the given member names.
func InitialCluster(c *v1alpha1.EtcdCluster, members []string) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m + "=" + names.PeerURL(c.Name, c.Namespace, m, c.Spec.TLS.IsEnabled())
	}
	return strings.Join(parts, ",")
}

// MemberPod describes the member-specific part of a pod.
type MemberPod struct {
	Member string
	// Bootstrap is true for the members that form the cluster (initial-cluster-state=new).
	Bootstrap bool
	// InitialCluster lists the members etcd should know at first start.
	InitialCluster string
	// RequireData makes the launcher refuse to start etcd on an empty data directory.
	RequireData bool
	// ClusterID (hex) the member's data must belong to; empty before bootstrap.
	ClusterID string
}

// Pod builds a member pod.
func Pod(c *v1alpha1.EtcdCluster, p MemberPod, im Images) (*corev1.Pod, error) {
	v, err := version.Parse(c.Spec.Version)
	if err != nil {
		return nil, err
	}
	tls := c.Spec.TLS.IsEnabled()
	tmpl := c.Spec.PodTemplate
	if tmpl == nil {
		tmpl = &v1alpha1.PodTemplate{}
	}
	labels := map[string]string{}
	for k, val := range tmpl.Labels {
		labels[k] = val
	}
	for k, val := range names.MemberLabels(c.Name, p.Member) {
		labels[k] = val
	}
	annotations := map[string]string{}
	for k, val := range tmpl.Annotations {
		annotations[k] = val
	}
	annotations[names.AnnotationSpecHash] = MemberSpecHash(c, im)

	state := "existing"
	if p.Bootstrap {
		state = "new"
	}
	args := []string{
		LauncherPath, "launch",
		"--data-dir=" + DataDir,
		"--marker=" + MarkerFile,
		"--member=" + p.Member,
		"--host=" + names.MemberHost(c.Name, c.Namespace, p.Member),
		"--expected-cluster-id=" + p.ClusterID,
		"--require-data=" + strconv.FormatBool(p.RequireData),
	}
	if tls {
		args = append(args, "--tls-dir="+ServerTLSDir)
	}
	args = append(args, "--", EtcdBinary)
	args = append(args, EtcdFlags(c, v, p.Member, state, p.InitialCluster)...)

	volumes := []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.Member}}},
		{Name: "launcher", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "data", MountPath: DataVolumeMount},
		{Name: "launcher", MountPath: LauncherDir, ReadOnly: true},
	}
	if tls {
		server, peer := names.ServerSecret(c.Name), names.PeerSecret(c.Name)
		if c.Spec.TLS.UserProvided() {
			server, peer = c.Spec.TLS.ServerSecretName, c.Spec.TLS.PeerSecretName
		}
		volumes = append(volumes,
			corev1.Volume{Name: "server-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: server, DefaultMode: ptr.To[int32](0o440)}}},
			corev1.Volume{Name: "peer-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: peer, DefaultMode: ptr.To[int32](0o440)}}},
		)
		mounts = append(mounts,
			corev1.VolumeMount{Name: "server-tls", MountPath: ServerTLSDir, ReadOnly: true},
			corev1.VolumeMount{Name: "peer-tls", MountPath: PeerTLSDir, ReadOnly: true},
		)
	}

	resources := corev1.ResourceRequirements{Requests: corev1.ResourceList{}}
	if tmpl.Resources != nil {
		resources = *tmpl.Resources.DeepCopy()
	}
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(names.MetricsPort), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds:    period,
			TimeoutSeconds:   5,
			FailureThreshold: failures,
		}
	}
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Member, Namespace: c.Namespace, Labels: labels, Annotations: annotations, OwnerReferences: OwnerRefs(c)},
		Spec: corev1.PodSpec{
			Hostname:      p.Member,
			Subdomain:     names.PeerService(c.Name),
			RestartPolicy: corev1.RestartPolicyAlways,
			// etcd flushes on SIGTERM quickly; leadership is moved away before planned stops.
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			EnableServiceLinks:            ptr.To(false),
			AutomountServiceAccountToken:  ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				RunAsGroup:     ptr.To[int64](65532),
				FSGroup:        ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{{
				Name:            "install-launcher",
				Image:           im.Launcher,
				ImagePullPolicy: im.PullPolicy,
				Command:         []string{"/quorate-launcher", "install", LauncherPath},
				VolumeMounts:    []corev1.VolumeMount{{Name: "launcher", MountPath: LauncherDir}},
				SecurityContext: restricted,
			}},
			Containers: []corev1.Container{{
				Name:            "etcd",
				Image:           im.EtcdImage(c),
				ImagePullPolicy: im.PullPolicy,
				Command:         args,
				Ports: []corev1.ContainerPort{
					{Name: "client", ContainerPort: names.ClientPort},
					{Name: "peer", ContainerPort: names.PeerPort},
					{Name: "metrics", ContainerPort: names.MetricsPort},
				},
				Resources:                resources,
				VolumeMounts:             mounts,
				StartupProbe:             probe("/livez", 2, 150),
				LivenessProbe:            probe("/livez", 10, 8),
				ReadinessProbe:           probe("/readyz", 5, 3),
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext:          restricted,
			}},
			Volumes:                   volumes,
			Affinity:                  tmpl.Affinity,
			Tolerations:               tmpl.Tolerations,
			NodeSelector:              tmpl.NodeSelector,
			TopologySpreadConstraints: tmpl.TopologySpreadConstraints,
			PriorityClassName:         tmpl.PriorityClassName,
		},
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: names.MemberSelector(c.Name)},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		}}
	}
	if pod.Spec.TopologySpreadConstraints == nil {
		pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: names.MemberSelector(c.Name)},
		}}
	}
	return pod, nil
}

// EtcdFlags are the etcd server flags of one member.
func EtcdFlags(c *v1alpha1.EtcdCluster, v version.Version, member, state, initialCluster string) []string {
	tls := c.Spec.TLS.IsEnabled()
	scheme := "http"
	if tls {
		scheme = "https"
	}
	o := c.Spec.Etcd
	flags := []string{
		"--name=" + member,
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", scheme, names.ClientPort),
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", scheme, names.PeerPort),
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", names.MetricsPort),
		"--advertise-client-urls=" + names.ClientURL(c.Name, c.Namespace, member, tls),
		"--initial-advertise-peer-urls=" + names.PeerURL(c.Name, c.Namespace, member, tls),
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + string(c.UID),
		fmt.Sprintf("--heartbeat-interval=%d", o.HeartbeatIntervalMillis),
		fmt.Sprintf("--election-timeout=%d", o.ElectionTimeoutMillis),
		fmt.Sprintf("--quota-backend-bytes=%d", o.QuotaBackendBytes),
		"--auto-compaction-mode=" + o.AutoCompactionMode,
		"--auto-compaction-retention=" + o.AutoCompactionRetention,
		"--logger=zap",
		"--log-outputs=stderr",
		version.InitialCorruptCheckFlag(v),
	}
	if tls {
		flags = append(flags,
			"--client-cert-auth=true",
			"--trusted-ca-file="+ServerTLSDir+"/ca.crt",
			"--cert-file="+ServerTLSDir+"/tls.crt",
			"--key-file="+ServerTLSDir+"/tls.key",
			"--peer-client-cert-auth=true",
			"--peer-trusted-ca-file="+PeerTLSDir+"/ca.crt",
			"--peer-cert-file="+PeerTLSDir+"/tls.crt",
			"--peer-key-file="+PeerTLSDir+"/tls.key",
			version.PeerSkipClientSANFlag(v),
		)
	}
	return flags
}
