package resources

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

func cluster() *v1alpha1.EtcdCluster {
	c := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "uid-1"},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: 3, Version: "3.6.16",
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
	}
	c.Default()
	return c
}

var images = Images{Launcher: "quorate/operator:1", EtcdRepository: "registry.local/etcd"}

func TestMemberSpecHash(t *testing.T) {
	base := MemberSpecHash(cluster(), images)
	for _, tc := range []struct {
		name    string
		mutate  func(*v1alpha1.EtcdCluster, *Images)
		changes bool
	}{
		{"replicas do not restart members", func(c *v1alpha1.EtcdCluster, _ *Images) { c.Spec.Replicas = 5 }, false},
		{"an operator upgrade does not restart members", func(_ *v1alpha1.EtcdCluster, im *Images) { im.Launcher = "quorate/operator:2" }, false},
		{"paused does not restart members", func(c *v1alpha1.EtcdCluster, _ *Images) { c.Spec.Paused = true }, false},
		{"a new version rolls members", func(c *v1alpha1.EtcdCluster, _ *Images) { c.Spec.Version = "3.6.17" }, true},
		{"a new image rolls members", func(c *v1alpha1.EtcdCluster, _ *Images) { c.Spec.Image = "mine/etcd:v3.6.16" }, true},
		{"etcd options roll members", func(c *v1alpha1.EtcdCluster, _ *Images) { c.Spec.Etcd.HeartbeatIntervalMillis = 200 }, true},
		{"pod template labels roll members", func(c *v1alpha1.EtcdCluster, _ *Images) {
			c.Spec.PodTemplate = &v1alpha1.PodTemplate{Labels: map[string]v1alpha1.LabelValue{"team": "a"}}
		}, true},
	} {
		c, im := cluster(), images
		tc.mutate(c, &im)
		if changed := MemberSpecHash(c, im) != base; changed != tc.changes {
			t.Errorf("%s: hash changed = %v", tc.name, changed)
		}
	}
}

func flagsOf(t *testing.T, c *v1alpha1.EtcdCluster, p MemberPod) []string {
	t.Helper()
	pod, err := Pod(c, p, images)
	if err != nil {
		t.Fatal(err)
	}
	return pod.Spec.Containers[0].Command
}

func TestPodFlags(t *testing.T) {
	c := cluster()
	ic := InitialCluster(c, []string{"demo-0", "demo-1"})
	if ic != "demo-0=https://demo-0.demo-peer.ns.svc:2380,demo-1=https://demo-1.demo-peer.ns.svc:2380" {
		t.Fatalf("InitialCluster = %s", ic)
	}
	launcher := func(member, clusterID, requireData string) []string {
		return []string{"/quorate/bin/quorate-launcher", "launch", "--data-dir=/var/lib/etcd/data", "--marker=/var/lib/etcd/quorate-member.json",
			"--member=" + member, "--host=" + member + ".demo-peer.ns.svc", "--expected-cluster-id=" + clusterID, "--require-data=" + requireData,
			"--pod-annotations=/etc/quorate/podinfo/annotations", "--stop-delay=3s", "--fence-poll=1s"}
	}
	etcd := func(member, state string, minor6, splitHTTP bool) []string {
		skipSAN, corrupt, periodic := "--peer-skip-client-san-verification=true", "--feature-gates=InitialCorruptCheck=true", "--corrupt-check-time=10m"
		if !minor6 {
			skipSAN, corrupt, periodic = "--experimental-peer-skip-client-san-verification=true", "--experimental-initial-corrupt-check=true", "--experimental-corrupt-check-time=10m"
		}
		out := []string{"/usr/local/bin/etcd", "--name=" + member, "--data-dir=/var/lib/etcd/data",
			"--listen-client-urls=https://0.0.0.0:2379", "--listen-peer-urls=https://0.0.0.0:2380", "--listen-metrics-urls=http://0.0.0.0:2381",
			"--advertise-client-urls=https://" + member + ".demo-peer.ns.svc:2379", "--initial-advertise-peer-urls=https://" + member + ".demo-peer.ns.svc:2380",
			"--initial-cluster=" + ic, "--initial-cluster-state=" + state, "--initial-cluster-token=uid-1",
			"--heartbeat-interval=100", "--election-timeout=1000", "--quota-backend-bytes=469762048",
			"--auto-compaction-mode=periodic", "--auto-compaction-retention=1h", "--logger=zap", "--log-outputs=stderr", corrupt, periodic}
		if splitHTTP {
			out = append(out, "--listen-client-http-urls=https://0.0.0.0:2382")
		}
		return append(out, "--client-cert-auth=true", "--trusted-ca-file=/etc/etcd/tls/server/ca.crt", "--cert-file=/etc/etcd/tls/server/tls.crt", "--key-file=/etc/etcd/tls/server/tls.key",
			"--peer-client-cert-auth=true", "--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt", "--peer-cert-file=/etc/etcd/tls/peer/tls.crt", "--peer-key-file=/etc/etcd/tls/peer/tls.key",
			skipSAN, "--peer-cert-allowed-cn=demo-peer")
	}
	// withoutPeerPin: the user's own peer certificates are trusted by their CA alone.
	withoutPeerPin := func(args []string) []string {
		return slices.DeleteFunc(args, func(a string) bool { return a == "--peer-cert-allowed-cn=demo-peer" })
	}
	withTLS := func(args ...[]string) []string {
		out := append([]string{}, args[0]...)
		out = append(out, "--tls-dir=/etc/etcd/tls/server", "--")
		return append(out, args[1]...)
	}
	for _, tc := range []struct {
		name    string
		version string
		pod     MemberPod
		want    []string
	}{
		{"a bootstrap member", "3.6.16", MemberPod{Member: "demo-0", Bootstrap: true, InitialCluster: ic},
			withTLS(launcher("demo-0", "", "false"), etcd("demo-0", "new", true, true))},
		{"a member joining a formed cluster", "3.6.16", MemberPod{Member: "demo-1", InitialCluster: ic, RequireData: true, ClusterID: "abc"},
			withTLS(launcher("demo-1", "abc", "true"), etcd("demo-1", "existing", true, true))},
		{"a 3.5 member gets the experimental flag names", "3.5.35", MemberPod{Member: "demo-1", InitialCluster: ic, ClusterID: "abc"},
			withTLS(launcher("demo-1", "abc", "false"), etcd("demo-1", "existing", false, true))},
		{"a 3.5 member before 3.5.8 serves HTTP on the client port", "3.5.7", MemberPod{Member: "demo-1", InitialCluster: ic, ClusterID: "abc"},
			withTLS(launcher("demo-1", "abc", "false"), etcd("demo-1", "existing", false, false))},
		{"a member joining external members must reach them first", "3.6.16",
			MemberPod{Member: "demo-1", InitialCluster: ic, ClusterID: "abc", RequirePeers: []string{"https://10.87.0.1:22380", "https://10.87.0.1:22382"}},
			append(append(launcher("demo-1", "abc", "false"), "--tls-dir=/etc/etcd/tls/server", "--peer-tls-dir=/etc/etcd/tls/peer",
				"--require-peers=https://10.87.0.1:22380,https://10.87.0.1:22382", "--"), etcd("demo-1", "existing", true, true)...)},
		{"a forced recovery", "3.6.16", MemberPod{Member: "demo-1", InitialCluster: ic, RequireData: true, ClusterID: "abc", ForceNewCluster: true, ForceToken: "incident-1"},
			append(append(append(launcher("demo-1", "abc", "true"), "--tls-dir=/etc/etcd/tls/server", "--force-token=incident-1", "--"),
				etcd("demo-1", "existing", true, true)...), "--force-new-cluster")},
	} {
		c := cluster()
		c.Spec.Version = tc.version
		if got := flagsOf(t, c, tc.pod); !slices.Equal(got, tc.want) {
			t.Errorf("%s: command\n %q\nwant\n %q", tc.name, got, tc.want)
		}
	}

	// The user's own certificates (spec.tls.*SecretName) are trusted by their CA alone.
	own := cluster()
	own.Spec.TLS.ServerSecretName, own.Spec.TLS.PeerSecretName, own.Spec.TLS.ClientSecretName = "my-server", "my-peer", "my-client"
	if got, want := flagsOf(t, own, MemberPod{Member: "demo-1", InitialCluster: ic, ClusterID: "abc"}),
		withTLS(launcher("demo-1", "abc", "false"), withoutPeerPin(etcd("demo-1", "existing", true, true))); !slices.Equal(got, want) {
		t.Errorf("the user's own certificates: command\n %q\nwant\n %q", got, want)
	}

	c.Spec.TLS.Enabled = ptr.To(false)
	plain := flagsOf(t, c, MemberPod{Member: "demo-0", InitialCluster: InitialCluster(c, []string{"demo-0"})})
	for _, f := range plain {
		if strings.Contains(f, "https://") || strings.Contains(f, "cert") || strings.Contains(f, "tls") {
			t.Errorf("a plaintext cluster got TLS flag %s", f)
		}
	}
}

func TestPodShape(t *testing.T) {
	c := cluster()
	c.Spec.PodTemplate = &v1alpha1.PodTemplate{Labels: map[string]v1alpha1.LabelValue{"team": "a", names.LabelMember: "spoof"}}
	pod, err := Pod(c, MemberPod{Member: "demo-2"}, images)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[names.LabelMember] != "demo-2" || pod.Labels["team"] != "a" {
		t.Errorf("labels = %v: operator labels must win over template labels", pod.Labels)
	}
	if pod.Spec.Hostname != "demo-2" || pod.Spec.Subdomain != "demo-peer" {
		t.Errorf("DNS identity = %s.%s", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "demo-2" {
		t.Errorf("data volume claims %s", pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	}
	if len(pod.OwnerReferences) != 1 || !*pod.OwnerReferences[0].Controller || pod.OwnerReferences[0].Kind != "EtcdCluster" {
		t.Errorf("owner references = %+v", pod.OwnerReferences)
	}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.PodAntiAffinity == nil {
		t.Error("default soft anti-affinity missing")
	}
	if pod.Spec.SecurityContext.RunAsNonRoot == nil || !*pod.Spec.SecurityContext.RunAsNonRoot {
		t.Error("members must not run as root")
	}
	if pod.Annotations[names.AnnotationSpecHash] != MemberSpecHash(c, images) {
		t.Error("pod does not carry the member spec hash")
	}
}

func TestPDBKeepsQuorumOfTheCurrentVoters(t *testing.T) {
	for _, tc := range []struct{ voters, learners, want int32 }{
		{1, 0, 0}, // no redundancy to keep: a drain may evict the only member
		{1, 1, 0}, // scaling up from one: still a single voter
		{2, 0, 2}, // two voters: losing either loses quorum
		{3, 0, 2}, {3, 1, 3}, {4, 0, 3}, {5, 0, 3}, {5, 1, 4}, {9, 0, 5},
	} {
		pdb := PDB(cluster(), Voters{Members: tc.voters, Learners: tc.learners})
		if got := pdb.Spec.MinAvailable.IntVal; got != tc.want {
			t.Errorf("%d voters, %d learners: minAvailable %d, want %d", tc.voters, tc.learners, got, tc.want)
		}
	}
}

// While a join runs the budget keeps a quorum of the combined cluster: the healthy external
// voters count towards it, the operator's pods cover the rest; and never less than a quorum
// of the operator's own members, so one external failure after an eviction loses nothing.
func TestPDBCountsExternalVoters(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    Voters
		want int32
	}{
		{"3+3, all healthy: quorum 4, external cover 3, but a quorum of ours stays", Voters{Members: 3, External: 3, ExternalHealthy: 3}, 2},
		{"3+3, one external down", Voters{Members: 3, External: 3, ExternalHealthy: 2}, 2},
		{"3+3, two external down", Voters{Members: 3, External: 3, ExternalHealthy: 1}, 3},
		{"3+3, external unknown (member list unread)", Voters{Members: 3, External: 3}, 3},
		{"1+3, one external down: the single member of ours is needed", Voters{Members: 1, External: 3, ExternalHealthy: 2}, 1},
		{"1+3, all healthy: the single member of ours stays during the join", Voters{Members: 1, External: 3, ExternalHealthy: 3}, 1},
		{"2+3 and a learner", Voters{Members: 2, Learners: 1, External: 3, ExternalHealthy: 3}, 3},
		{"3+1 while the last external member is removed", Voters{Members: 3, External: 1, ExternalHealthy: 1}, 2},
		{"no member of ours votes yet", Voters{Learners: 1, External: 3, ExternalHealthy: 3}, 1},
	} {
		if got := PDB(cluster(), tc.v).Spec.MinAvailable.IntVal; got != tc.want {
			t.Errorf("%s: minAvailable %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPVCRetention(t *testing.T) {
	c := cluster()
	retain := PVC(c, "demo-0", 3)
	if len(retain.OwnerReferences) != 0 || retain.Labels[names.LabelRetention] != "Retain" || !Retained(c, retain) {
		t.Errorf("Retain: owners %v, labels %v, owned %v", retain.OwnerReferences, retain.Labels, Retained(c, retain))
	}
	if SetRetention(c, retain) {
		t.Error("SetRetention changed a PVC that follows the policy")
	}
	c.Spec.VolumeRetention = v1alpha1.VolumeDelete
	if !SetRetention(c, retain) || len(retain.OwnerReferences) != 1 || retain.Labels[names.LabelRetention] != "Delete" {
		t.Errorf("Delete: owners %v, labels %v", retain.OwnerReferences, retain.Labels)
	}
	c.Spec.VolumeRetention = v1alpha1.VolumeRetain
	if !SetRetention(c, retain) || len(retain.OwnerReferences) != 0 {
		t.Errorf("back to Retain: owners %v", retain.OwnerReferences)
	}
	other := cluster()
	other.UID = "uid-2"
	if Retained(other, retain) {
		t.Error("a PVC retained from another EtcdCluster of the same name counts as its own")
	}
}

func TestServicesPublishMembers(t *testing.T) {
	c := cluster()
	peer, client := PeerService(c), ClientService(c)
	if peer.Spec.ClusterIP != "None" || !peer.Spec.PublishNotReadyAddresses {
		t.Error("the peer service must be headless and publish members before they are ready")
	}
	if client.Spec.PublishNotReadyAddresses {
		t.Error("the client service must route to ready members only")
	}
	if peer.Annotations[names.AnnotationObjectHash] == "" || peer.Annotations[names.AnnotationObjectHash] == client.Annotations[names.AnnotationObjectHash] {
		t.Error("services must carry distinct content hashes")
	}
}

// A member is never BestEffort: without requests in the template it gets the defaults; a
// template's own requests or limits are kept as they are.
func TestMemberResources(t *testing.T) {
	for _, tc := range []struct {
		name string
		tmpl *v1alpha1.PodTemplate
		want corev1.ResourceRequirements
	}{
		{"no template", nil, corev1.ResourceRequirements{Requests: DefaultRequests()}},
		{"requests of its own", &v1alpha1.PodTemplate{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
			corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
		{"limits only (Kubernetes takes them as requests)", &v1alpha1.PodTemplate{Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
			corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
	} {
		c := cluster()
		c.Spec.PodTemplate = tc.tmpl
		pod, err := Pod(c, MemberPod{Member: "demo-0"}, images)
		if err != nil {
			t.Fatal(err)
		}
		if got := pod.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("%s: resources %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A version's pinned image (RELATED_IMAGE_ETCD_<version>, by digest) wins over the
// repository; spec.image wins over both.
func TestEtcdImagePinned(t *testing.T) {
	im := Images{EtcdRepository: "registry.local/etcd", EtcdPinned: PinnedFromEnv([]string{
		"PATH=/bin", RelatedImageEnv("3.6.16") + "=registry.local/etcd@sha256:abc", "RELATED_IMAGE_ETCD_3_5_35="})}
	c := cluster()
	c.Spec.Version = "3.6.16"
	if got := im.EtcdImage(c); got != "registry.local/etcd@sha256:abc" {
		t.Errorf("pinned version: %s", got)
	}
	c.Spec.Version = "3.5.35"
	if got := im.EtcdImage(c); got != "registry.local/etcd:v3.5.35" {
		t.Errorf("unpinned version: %s", got)
	}
	c.Spec.Image = "mine/etcd:v3.5.35"
	if got := im.EtcdImage(c); got != "mine/etcd:v3.5.35" {
		t.Errorf("spec.image: %s", got)
	}
}

// The cache keeps a pod's metadata (managedFields apart), status (of its conditions Ready and
// PodScheduled), node and --force-new-cluster, so what the operator reads of a pod reads the
// same from the cache.
func TestPodForCache(t *testing.T) {
	c := cluster()
	for _, force := range []bool{false, true} {
		pod, err := Pod(c, MemberPod{Member: "demo-1", InitialCluster: "demo-1=https://demo-1.demo-peer.ns.svc:2380", ForceNewCluster: force}, images)
		if err != nil {
			t.Fatal(err)
		}
		pod.Spec.NodeName = "node-a"
		pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "quorate-operator", Operation: metav1.ManagedFieldsOperationApply}}
		started := metav1.Now()
		kept := corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r", Message: "m", PodIP: "10.0.0.7",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "fetch", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: EtcdContainer, Ready: true, RestartCount: 2, Started: ptr.To(true),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "refused"}}}}}
		pod.Status = *kept.DeepCopy()
		pod.Status.Conditions = append([]corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}}, pod.Status.Conditions...)
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
		pod.Status.HostIP, pod.Status.PodIPs, pod.Status.QOSClass, pod.Status.StartTime = "192.168.0.2", []corev1.PodIP{{IP: "10.0.0.7"}}, corev1.PodQOSBurstable, &started
		for _, cs := range []*corev1.ContainerStatus{&pod.Status.InitContainerStatuses[0], &pod.Status.ContainerStatuses[0]} {
			cs.Image, cs.ImageID, cs.ContainerID = "etcd:3.6.16", "sha256:1", "containerd://2"
			cs.VolumeMounts = []corev1.VolumeMountStatus{{Name: "data", MountPath: "/var/lib/etcd"}}
		}
		want := &corev1.Pod{ObjectMeta: *pod.ObjectMeta.DeepCopy(), Status: kept, Spec: corev1.PodSpec{NodeName: "node-a"}}
		want.ManagedFields = nil
		want.Spec.Containers = []corev1.Container{{Name: EtcdContainer, Command: []string{"--fence-poll=1s"}}}
		if force {
			want.Spec.Containers[0].Command = []string{"--force-new-cluster", "--fence-poll=1s"}
		}
		got, err := PodForCache(pod.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("force-new-cluster %v: PodForCache =\n%+v\nwant\n%+v", force, got, want)
		}
		if gotForce := ForcesNewCluster(got.(*corev1.Pod)); gotForce != force || ForcesNewCluster(pod) != force {
			t.Errorf("ForcesNewCluster: %v on the cached pod, %v on the built pod; want %v", gotForce, ForcesNewCluster(pod), force)
		}
		if !LauncherFences(got.(*corev1.Pod)) || !LauncherFences(pod) {
			t.Errorf("LauncherFences: %v on the cached pod, %v on the built pod; want true", LauncherFences(got.(*corev1.Pod)), LauncherFences(pod))
		}
	}
	// The members of a cluster carry one spec hash: their cached pods share one map of it.
	var cached []map[string]string
	for _, m := range []string{"demo-0", "demo-1"} {
		pod, err := Pod(c, MemberPod{Member: m, InitialCluster: "demo-0=https://demo-0.demo-peer.ns.svc:2380"}, images)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PodForCache(pod)
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, got.(*corev1.Pod).Annotations)
	}
	if len(cached[0]) == 0 || reflect.ValueOf(cached[0]).UnsafePointer() != reflect.ValueOf(cached[1]).UnsafePointer() {
		t.Errorf("the cached pods of two members hold two maps of annotations %v and %v, not one", cached[0], cached[1])
	}
	tombstone := "not a pod"
	if got, err := PodForCache(tombstone); err != nil || got != tombstone {
		t.Errorf("PodForCache(%q) = %v, %v; want it unchanged", tombstone, got, err)
	}
}

// Every container of a member pod, the init containers of a restoring one too, requests CPU
// and memory: a namespace whose ResourceQuota limits requests refuses a pod with a container
// that has none.
func TestEveryContainerRequests(t *testing.T) {
	pod, err := Pod(cluster(), MemberPod{Member: "demo-0", Bootstrap: true, Restore: &Restore{Bucket: "s3://b", Key: "k.db"}}, images)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, ctr := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
			missing = append(missing, ctr.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("containers without CPU and memory requests: %v", missing)
	}
	// The launcher's init container has etcd's own resources, limits too, so that a LimitRange
	// or a quota on limits admits it as it admits etcd.
	c := cluster()
	c.Spec.PodTemplate = &v1alpha1.PodTemplate{Resources: &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}
	pod, err = Pod(c, MemberPod{Member: "demo-0"}, images)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pod.Spec.InitContainers[0].Resources, pod.Spec.Containers[0].Resources; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s resources %+v, etcd's %+v", pod.Spec.InitContainers[0].Name, got, want)
	}
}
