package resources

import (
	"slices"
	"strings"
	"testing"

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
			c.Spec.PodTemplate = &v1alpha1.PodTemplate{Labels: map[string]string{"team": "a"}}
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
	boot := flagsOf(t, c, MemberPod{Member: "demo-0", Bootstrap: true, InitialCluster: ic})
	join := flagsOf(t, c, MemberPod{Member: "demo-1", InitialCluster: ic, RequireData: true, ClusterID: "abc"})
	for _, want := range []string{"--initial-cluster-state=new", "--initial-cluster-token=uid-1", "--name=demo-0",
		"--peer-skip-client-san-verification=true", "--client-cert-auth=true", "--require-data=false", "--expected-cluster-id="} {
		if !slices.Contains(boot, want) {
			t.Errorf("bootstrap pod lacks %s: %v", want, boot)
		}
	}
	for _, want := range []string{"--initial-cluster-state=existing", "--require-data=true", "--expected-cluster-id=abc"} {
		if !slices.Contains(join, want) {
			t.Errorf("joining pod lacks %s: %v", want, join)
		}
	}
	if i := slices.Index(join, "--"); i < 0 || join[i+1] != EtcdBinary {
		t.Errorf("the launcher must exec %s after --: %v", EtcdBinary, join)
	}

	c.Spec.Version = "3.5.35"
	old := flagsOf(t, c, MemberPod{Member: "demo-0", InitialCluster: ic})
	if !slices.Contains(old, "--experimental-peer-skip-client-san-verification=true") || !slices.Contains(old, "--experimental-initial-corrupt-check=true") {
		t.Errorf("3.5 members need the experimental flag names: %v", old)
	}

	c.Spec.TLS.Enabled = ptr.To(false)
	plain := flagsOf(t, c, MemberPod{Member: "demo-0", InitialCluster: InitialCluster(c, []string{"demo-0"})})
	for _, f := range plain {
		if strings.Contains(f, "https://") || strings.Contains(f, "cert") {
			t.Errorf("a plaintext cluster got TLS flag %s", f)
		}
	}
}

func TestPodShape(t *testing.T) {
	c := cluster()
	c.Spec.PodTemplate = &v1alpha1.PodTemplate{Labels: map[string]string{"team": "a", names.LabelMember: "spoof"}}
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

func TestPDBKeepsQuorum(t *testing.T) {
	for replicas, want := range map[int32]int32{1: 1, 3: 2, 4: 3, 5: 3, 9: 5} {
		c := cluster()
		c.Spec.Replicas = replicas
		if got := PDB(c).Spec.MinAvailable.IntVal; got != want {
			t.Errorf("replicas %d: minAvailable %d, want %d", replicas, got, want)
		}
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
