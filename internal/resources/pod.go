package resources

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/intern"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/version"
)

// Names of the containers and volumes of a member pod.
const (
	EtcdContainer     = "etcd"
	LauncherContainer = "install-launcher"
	// FetchContainer downloads and verifies the snapshot a restoring member restores;
	// RestoreContainer restores it with the etcd image's etcdutl.
	FetchContainer   = "fetch-snapshot"
	RestoreContainer = "restore-snapshot"

	volumeData      = "data"
	volumeLauncher  = "launcher"
	volumePodInfo   = "podinfo"
	volumeServerTLS = "server-tls"
	volumePeerTLS   = "peer-tls"
)

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
	// ForceToken is the spec.recovery.forceNewCluster token a ForceNewCluster pod is for: the
	// launcher forces once per token.
	ForceToken string
	// ForceNewCluster starts etcd with --force-new-cluster: the member becomes the single
	// member of the cluster, keeping its data and the cluster ID (a forced recovery).
	ForceNewCluster bool
	// Restore, for a bootstrap member of a cluster created from a backup: the snapshot the
	// member restores before etcd first starts.
	Restore *Restore
	// RequirePeers are peer URLs the launcher must reach before etcd first starts: the
	// external members, for a member joining them (spec.bootstrap.join).
	RequirePeers []string
	// StopEtcd creates the pod with names.AnnotationStopEtcd: the member is fenced at the
	// user's request, and its launcher does not start etcd until the annotation goes.
	StopEtcd bool
}

// Restore is a stored snapshot that bootstrap members restore.
type Restore struct {
	Bucket string
	Key    string
	// SHA256 the snapshot must have; empty: the one its metadata records.
	SHA256 string
	// CredentialsSecret holds the bucket's credentials ("" for none).
	CredentialsSecret string
	// CABundle names the authorities of the store's certificate (nil: the public ones).
	CABundle *v1alpha1.CABundleSource
	// Identity the restoring pod runs as (nil: none).
	Identity *v1alpha1.StorageIdentity
	// ArchivePrefix, with ToRevision or ToTime, restores to a point: the snapshot rebased by
	// the archive under the prefix in the same bucket ("": the snapshot as it is).
	ArchivePrefix string
	ToRevision    int64
	ToTime        time.Time
	// BumpRevision raises the restored revision by this much and marks the revisions below
	// compacted (0: none).
	BumpRevision int64
}

// bumpArgs are etcdutl snapshot restore's flags that raise the restored revision (none
// without).
func (r *Restore) bumpArgs() []string {
	if r.BumpRevision <= 0 {
		return nil
	}
	return []string{"--bump-revision=" + strconv.FormatInt(r.BumpRevision, 10), "--mark-compacted"}
}

// RestoreArchiveDir is where a restore to a point's plan and segments go (archive.Plan):
// beside the snapshot, on the data volume, removed once restored.
const RestoreArchiveDir = DataVolumeMount + "/restore/archive"

// pointInTimeArgs are quorate-backup fetch's flags of a restore to a point (none without one).
func (r *Restore) pointInTimeArgs() []string {
	if r.ArchivePrefix == "" {
		return nil
	}
	args := []string{"--archive-prefix=" + r.ArchivePrefix}
	if r.ToRevision > 0 {
		return append(args, "--to-revision="+strconv.FormatInt(r.ToRevision, 10))
	}
	return append(args, "--to-time="+r.ToTime.UTC().Format(time.RFC3339Nano))
}

// DefaultRequests are a member's requests when the pod template sets none: enough for a small
// cluster's steady load.
func DefaultRequests() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
}

// ForcesNewCluster reports whether a member pod starts etcd with --force-new-cluster.
func ForcesNewCluster(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == EtcdContainer && slices.Contains(c.Command, flagForceNewCluster) {
			return true
		}
	}
	return false
}

// Pod builds a member pod: its metadata, the launcher's init container, the etcd container,
// its volumes and where it may be scheduled.
func Pod(c *v1alpha1.EtcdCluster, p MemberPod, im Images) (*corev1.Pod, error) {
	v, err := version.Parse(c.Spec.Version)
	if err != nil {
		return nil, err
	}
	tmpl := c.Spec.PodTemplate
	if tmpl == nil {
		tmpl = &v1alpha1.PodTemplate{}
	}
	volumes, mounts := podVolumes(c, p.Member)
	etcd := etcdContainer(c, p, v, tmpl, im, mounts)
	pod := &corev1.Pod{
		ObjectMeta: podMeta(c, p.Member, tmpl, im),
		Spec: corev1.PodSpec{
			Hostname:      p.Member,
			Subdomain:     names.PeerService(c.Name),
			RestartPolicy: corev1.RestartPolicyAlways,
			// etcd flushes on SIGTERM quickly; leadership is moved away before planned stops.
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			EnableServiceLinks:            ptr.To(false),
			AutomountServiceAccountToken:  ptr.To(false),
			SecurityContext:               podSecurityContext(im.UIDs),
			InitContainers:                append([]corev1.Container{launcherContainer(im, etcd.Resources)}, restoreContainers(c, p, im, mounts)...),
			Containers:                    []corev1.Container{etcd},
			Volumes:                       volumes,
		},
	}
	if p.Restore != nil {
		pod.Spec.Volumes = append(pod.Spec.Volumes, storeVolumes(p.Restore.CredentialsSecret, p.Restore.CABundle, fetchOnce)...)
		WithIdentity(&pod.ObjectMeta, &pod.Spec, p.Restore.Identity)
	}
	schedule(&pod.Spec, c.Name, tmpl)
	passMutant(&pod.Spec)
	if p.StopEtcd {
		// Not part of the spec hash: fencing a member is no change of its spec.
		pod.Annotations[names.AnnotationStopEtcd] = "true"
	}
	return pod, nil
}

// podMeta is the pod's metadata: the template's labels and annotations under the operator's
// own, and the hash of the spec the pod is built from.
func podMeta(c *v1alpha1.EtcdCluster, member string, tmpl *v1alpha1.PodTemplate, im Images) metav1.ObjectMeta {
	labels := map[string]string{}
	for k, val := range tmpl.Labels {
		labels[k] = string(val)
	}
	for k, val := range names.MemberLabels(c.Name, member) {
		labels[k] = val
	}
	labels[names.LabelServing] = "true"
	annotations := map[string]string{}
	for k, val := range tmpl.Annotations {
		annotations[k] = val
	}
	annotations[names.AnnotationSpecHash] = MemberSpecHash(c, im)
	return metav1.ObjectMeta{Name: member, Namespace: c.Namespace, Labels: labels, Annotations: annotations, OwnerReferences: OwnerRefs(c)}
}

// restricted is the security context of both containers.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// launcherContainer copies the launcher from the operator image into a volume the etcd
// container runs it from, so that any etcd image works. It has the etcd container's resources:
// a namespace whose ResourceQuota or LimitRange asks for requests or limits admits it as it
// admits etcd, and the pod's effective request stays etcd's.
func launcherContainer(im Images, resources corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:            LauncherContainer,
		Image:           im.Launcher,
		ImagePullPolicy: im.PullPolicy,
		Command:         []string{"/quorate-launcher", "install", LauncherPath},
		VolumeMounts:    []corev1.VolumeMount{{Name: volumeLauncher, MountPath: LauncherDir}},
		Resources:       *resources.DeepCopy(),
		SecurityContext: restricted(),
	}
}

// MemberStopDelay is how long a member's etcd keeps serving after its pod is told to stop,
// before leadership leaves and etcd stops (the launcher's stop sequence): the pod's endpoint
// leaves the client Service as it starts terminating, and kube-proxy stops sending new
// connections to it within about a second (its minimum sync period), so that a client that
// knows only the Service reconnects to a member that answers. It is part of the pod's 30 s
// grace period.
const MemberStopDelay = 3 * time.Second

// FencePoll is how often a member's launcher reads the pod's annotations for a fence at the
// user's request (etcd.quorate.dev/stop-etcd).
const FencePoll = time.Second

// flagFencePoll is the launcher's flag that sets FencePoll; a pod whose command carries it
// runs a launcher that stops etcd for a fence (LauncherFences).
const flagFencePoll = "--fence-poll="

// LauncherFences says whether the pod's launcher acts on etcd.quorate.dev/stop-etcd: pods
// created by a release before fencing run a launcher that ignores it.
func LauncherFences(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == EtcdContainer && slices.ContainsFunc(c.Command, func(a string) bool { return strings.HasPrefix(a, flagFencePoll) }) {
			return true
		}
	}
	return false
}

// LaunchArgs is the etcd container's command: the launcher, its checks of the volume, then
// etcd and its flags.
func LaunchArgs(c *v1alpha1.EtcdCluster, p MemberPod, v version.Version) []string {
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
		"--pod-annotations=" + PodAnnotationsFile,
		"--stop-delay=" + MemberStopDelay.String(),
		flagFencePoll + FencePoll.String(),
	}
	if c.Spec.TLS.IsEnabled() {
		args = append(args, "--tls-dir="+ServerTLSDir)
	}
	if p.ForceNewCluster && p.ForceToken != "" {
		args = append(args, "--force-token="+p.ForceToken)
	}
	if len(p.RequirePeers) > 0 {
		if c.Spec.TLS.IsEnabled() {
			args = append(args, "--peer-tls-dir="+PeerTLSDir)
		}
		args = append(args, "--require-peers="+strings.Join(p.RequirePeers, ","))
	}
	args = append(args, "--", EtcdBinary)
	args = append(args, EtcdFlags(c, v, p.Member, state, p.InitialCluster)...)
	if p.ForceNewCluster {
		args = append(args, flagForceNewCluster)
	}
	return args
}

// etcdContainer runs etcd behind the launcher, with probes on the metrics listener.
func etcdContainer(c *v1alpha1.EtcdCluster, p MemberPod, v version.Version, tmpl *v1alpha1.PodTemplate, im Images, mounts []corev1.VolumeMount) corev1.Container {
	// Without requests a member would be BestEffort: the first evicted under memory
	// pressure, and starved of CPU. The template's requests replace these.
	resources := corev1.ResourceRequirements{Requests: DefaultRequests()}
	if tmpl.Resources != nil {
		resources = *tmpl.Resources.DeepCopy()
		if len(resources.Requests) == 0 && len(resources.Limits) == 0 {
			resources.Requests = DefaultRequests()
		}
	}
	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(names.MetricsPort), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds:    period,
			TimeoutSeconds:   5,
			FailureThreshold: failures,
		}
	}
	return corev1.Container{
		Name:            EtcdContainer,
		Image:           im.EtcdImage(c),
		ImagePullPolicy: im.PullPolicy,
		Command:         LaunchArgs(c, p, v),
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: names.ClientPort},
			{Name: "peer", ContainerPort: names.PeerPort},
			{Name: "metrics", ContainerPort: names.MetricsPort},
			{Name: "client-http", ContainerPort: names.ClientHTTPPort},
		},
		Resources:                resources,
		VolumeMounts:             mounts,
		StartupProbe:             probe("/livez", 2, 150),
		LivenessProbe:            probe("/livez", 10, 8),
		ReadinessProbe:           readiness(probe("/readyz", 5, 3)),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted(),
	}
}

// podVolumes are the member's PVC, the launcher's volume and, with TLS, the certificates; and
// where the etcd container mounts them.
func podVolumes(c *v1alpha1.EtcdCluster, member string) ([]corev1.Volume, []corev1.VolumeMount) {
	// The pod's annotations reach the launcher through the downward API: the operator
	// annotates a member that has run, and the launcher reads that at every start.
	podInfo := &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
		Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}}}
	volumes := []corev1.Volume{
		{Name: volumeData, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: member}}},
		{Name: volumeLauncher, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: volumePodInfo, VolumeSource: corev1.VolumeSource{DownwardAPI: podInfo}},
	}
	mounts := []corev1.VolumeMount{
		{Name: volumeData, MountPath: DataVolumeMount},
		{Name: volumeLauncher, MountPath: LauncherDir, ReadOnly: true},
		{Name: volumePodInfo, MountPath: PodInfoDir, ReadOnly: true},
	}
	if !c.Spec.TLS.IsEnabled() {
		return volumes, mounts
	}
	server, peer := names.ServerSecret(c.Name), names.PeerSecret(c.Name)
	if c.Spec.TLS.UserProvided() {
		server, peer = c.Spec.TLS.ServerSecretName, c.Spec.TLS.PeerSecretName
	}
	secret := func(name, secretName string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName, DefaultMode: ptr.To[int32](0o440)}}}
	}
	volumes = append(volumes, secret(volumeServerTLS, server), secret(volumePeerTLS, peer))
	mounts = append(mounts,
		corev1.VolumeMount{Name: volumeServerTLS, MountPath: ServerTLSDir, ReadOnly: true},
		corev1.VolumeMount{Name: volumePeerTLS, MountPath: PeerTLSDir, ReadOnly: true},
	)
	return volumes, mounts
}

// schedule applies the template's placement, with a soft spread of members across nodes and
// zones where the template says nothing.
func schedule(spec *corev1.PodSpec, cluster string, tmpl *v1alpha1.PodTemplate) {
	spec.Affinity = tmpl.Affinity
	spec.Tolerations = tmpl.Tolerations
	spec.NodeSelector = v1alpha1.LabelMap(tmpl.NodeSelector)
	spec.TopologySpreadConstraints = tmpl.TopologySpreadConstraints
	spec.PriorityClassName = tmpl.PriorityClassName
	members := &metav1.LabelSelector{MatchLabels: names.MemberSelector(cluster)}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight:          100,
				PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: members, TopologyKey: corev1.LabelHostname},
			}},
		}}
	}
	if spec.TopologySpreadConstraints == nil {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     members,
		}}
	}
}

// restoreContainers fetch and restore the snapshot of a cluster created from a backup, in a
// bootstrap member's pod: the operator image downloads it (with the bucket's credentials in
// its environment) and checks its SHA-256, then the etcd image's etcdutl restores it, run by
// the launcher, which restores only into a member that has no data and has never run (its
// marker, the operator's record in the pod's annotations, and the other members say), and
// moves the restored directory into place whole. Both see the pod's annotations; the restore
// mounts what the etcd container does (mounts), its certificate to ask the other members.
func restoreContainers(c *v1alpha1.EtcdCluster, p MemberPod, im Images, mounts []corev1.VolumeMount) []corev1.Container {
	if p.Restore == nil {
		return nil
	}
	data := corev1.VolumeMount{Name: volumeData, MountPath: DataVolumeMount}
	podInfo := corev1.VolumeMount{Name: volumePodInfo, MountPath: PodInfoDir, ReadOnly: true}
	fetch := corev1.Container{
		Name:            FetchContainer,
		Image:           im.Launcher,
		ImagePullPolicy: im.PullPolicy,
		Command: append([]string{BackupBinary, "fetch", "--bucket=" + p.Restore.Bucket, "--key=" + p.Restore.Key, "--sha256=" + p.Restore.SHA256,
			"--out=" + RestoreSnapshot, "--data-dir=" + DataDir, "--marker=" + MarkerFile, "--pod-annotations=" + PodAnnotationsFile},
			slices.Concat(CABundleArgs(p.Restore.CABundle), CredentialsArgs(p.Restore.CredentialsSecret), p.Restore.pointInTimeArgs())...),
		VolumeMounts:             []corev1.VolumeMount{data, podInfo},
		Resources:                corev1.ResourceRequirements{Requests: DefaultRequests()},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted(),
	}
	reachStore(&fetch, p.Restore.Bucket, p.Restore.CredentialsSecret, p.Restore.CABundle, im, fetchOnce)
	restore := corev1.Container{
		Name:            RestoreContainer,
		Image:           im.EtcdImage(c),
		ImagePullPolicy: im.PullPolicy,
		Command: slices.Concat(restoreFlags(c, p), []string{"--",
			EtcdutlBinary, "snapshot", "restore", RestoreSnapshot, "--name=" + p.Member, "--initial-cluster=" + p.InitialCluster,
			"--initial-cluster-token=" + string(c.UID), "--initial-advertise-peer-urls=" + names.PeerURL(c.Name, c.Namespace, p.Member, c.Spec.TLS.IsEnabled())}, p.Restore.bumpArgs()),
		VolumeMounts:             slices.Clone(mounts),
		Resources:                corev1.ResourceRequirements{Requests: DefaultRequests()},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restricted(),
	}
	return []corev1.Container{fetch, restore}
}

// restoreFlags are the launcher's restore command and its flags, before etcdutl's.
func restoreFlags(c *v1alpha1.EtcdCluster, p MemberPod) []string {
	args := []string{LauncherPath, "restore", "--data-dir=" + DataDir, "--marker=" + MarkerFile, "--snapshot=" + RestoreSnapshot,
		"--pod-annotations=" + PodAnnotationsFile, "--host=" + names.MemberHost(c.Name, c.Namespace, p.Member)}
	if c.Spec.TLS.IsEnabled() {
		args = append(args, "--tls-dir="+ServerTLSDir)
	}
	if p.Restore.ArchivePrefix != "" {
		args = append(args, "--archive-dir="+RestoreArchiveDir)
	}
	return args
}

// PodForCache is the operator's cache transform for pods. A member pod's spec (two containers
// with their flags, environment and mounts, volumes, affinity, the defaults the API server adds)
// is most of its size, and the operator reads only its node and whether the etcd container
// forces a new cluster (ForcesNewCluster). So the cache keeps a pod's metadata (managedFields
// apart), its node, and the etcd container (its name and --force-new-cluster) only when it
// forces a new cluster: a container is over 400 bytes, and at thousands of clusters every pod's
// would be megabytes (make bench-scale). Of its status it keeps the phase, reason and message,
// the two conditions the operator reads (Ready, PodScheduled), the pod's IP, and of each
// container's status its name, state, last state, readiness and restarts (where the launcher's
// and the backup's termination messages are): not the images, IDs, resources and mounts. A
// cached pod is therefore never a base to write from: the operator builds pods with Pod and
// only creates and deletes them. Anything that is not a pod (a tombstone) passes unchanged.
func PodForCache(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	// Of the etcd container's command, only the flags the operator reads are kept (the
	// commands are shared: the cache's objects are never changed).
	var containers []corev1.Container
	switch force, fences := ForcesNewCluster(p), LauncherFences(p); {
	case force && fences:
		containers = []corev1.Container{{Name: EtcdContainer, Command: cachedForceFences}}
	case force:
		containers = []corev1.Container{{Name: EtcdContainer, Command: cachedForce}}
	case fences:
		containers = []corev1.Container{{Name: EtcdContainer, Command: cachedFences}}
	}
	p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: containers}
	st := p.Status
	p.Status = corev1.PodStatus{Phase: st.Phase, Reason: st.Reason, Message: st.Message, Conditions: conditionsForCache(st.Conditions), PodIP: st.PodIP,
		InitContainerStatuses: containerStatusesForCache(st.InitContainerStatuses), ContainerStatuses: containerStatusesForCache(st.ContainerStatuses)}
	intern.Meta(p)
	p.Annotations = intern.SharedMap(p.Annotations) // a cluster's members carry one spec hash
	return p, nil
}

// The etcd container's command as the cache keeps it (PodForCache).
var (
	cachedForce       = []string{flagForceNewCluster}
	cachedFences      = []string{flagFencePoll + FencePoll.String()}
	cachedForceFences = []string{flagForceNewCluster, flagFencePoll + FencePoll.String()}
)

// conditionsForCache are the pod's Ready and PodScheduled conditions, the only ones the
// operator reads (how long the pod has been ready; why it cannot be scheduled), with their type,
// status and reason shared.
func conditionsForCache(in []corev1.PodCondition) []corev1.PodCondition {
	n := 0
	for _, c := range in {
		if c.Type == corev1.PodReady || c.Type == corev1.PodScheduled {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]corev1.PodCondition, 0, n)
	for _, c := range in {
		if c.Type == corev1.PodReady || c.Type == corev1.PodScheduled {
			c.Type, c.Status, c.Reason = corev1.PodConditionType(intern.String(string(c.Type))), corev1.ConditionStatus(intern.String(string(c.Status))), intern.String(c.Reason)
			out = append(out, c)
		}
	}
	return out
}

func containerStatusesForCache(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{Name: intern.String(cs.Name), State: cs.State, LastTerminationState: cs.LastTerminationState,
			Ready: cs.Ready, RestartCount: cs.RestartCount, Started: cs.Started}
	}
	return out
}

// LauncherRefusal is the launcher's refusal to start etcd, read from the etcd container's
// termination message (of its current or its last run); nil when it did not refuse.
func LauncherRefusal(p *corev1.Pod) *launcher.Refusal {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != EtcdContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			if r := launcher.ParseTermination(t.Message); r != nil {
				return r
			}
		}
	}
	return nil
}

// readiness is the etcd container's readiness probe; the mutant ready-before-answers (a build
// with the mutants tag alone) counts the member Ready once its client port accepts connections.
func readiness(p *corev1.Probe) *corev1.Probe {
	if mutant.On("ready-before-answers") {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(names.ClientPort)}},
			PeriodSeconds: p.PeriodSeconds, TimeoutSeconds: p.TimeoutSeconds, FailureThreshold: p.FailureThreshold}
	}
	return p
}

// passMutant hands the operator's active mutant (a build with the mutants tag alone) to every
// container of a member pod or a backup Job: the launcher's, the restore's and the backup
// tool's mutants act there. In a shipped
// build Active is the constant "" and the pod is unchanged.
func passMutant(spec *corev1.PodSpec) {
	name := mutant.Active()
	if name == "" {
		return
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			cs[i].Env = append(cs[i].Env, corev1.EnvVar{Name: mutant.EnvVar, Value: name})
		}
	}
}
