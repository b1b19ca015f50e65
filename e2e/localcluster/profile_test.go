package localcluster

import (
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The openshift-like profile's policies render for every version of the matrix, with the
// MutatingAdmissionPolicy version that version serves and the API server flags that turn it
// on; the default profile changes no flag.
func TestProfileManifests(t *testing.T) {
	if got := DefaultConfig("t", "v1.35.4").profileAPIServerArgs(); got != nil {
		t.Errorf("default profile adds API server flags %q", got)
	}
	kinds := []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
		"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
	for _, v := range Versions {
		cfg := DefaultConfig("t", v)
		cfg.Profile = ProfileOpenShiftLike
		want := "v1beta1"
		if v < "v1.34" {
			want = "v1alpha1"
		}
		args := cfg.profileAPIServerArgs()
		if !slices.Contains(args, "--runtime-config=admissionregistration.k8s.io/"+want+"=true") || !slices.Contains(args, "--feature-gates=MutatingAdmissionPolicy=true") ||
			!slices.Contains(args, "--admission-control-config-file="+cfg.admissionConfigPath()) {
			t.Errorf("%s: API server flags %q", v, args)
		}
		m, err := cfg.profileManifest()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, doc := range strings.Split(m, "\n---\n") {
			var obj struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			got = append(got, obj.Kind)
			if strings.HasPrefix(obj.Kind, "Mutating") && obj.APIVersion != "admissionregistration.k8s.io/"+want {
				t.Errorf("%s: %s is %s, want %s", v, obj.Kind, obj.APIVersion, want)
			}
		}
		if !slices.Equal(got, kinds) {
			t.Errorf("%s: kinds %q, want %q", v, got, kinds)
		}
		if !strings.Contains(m, "!(object.metadata.name in ['kube-system', 'kube-public', 'kube-node-lease', 'default', 'local-path-storage', 'chaos-mesh', 'quorate-s3', 'quorate-stores'])") {
			t.Errorf("%s: the namespace policy does not exempt the cluster's own namespaces and the object stores", v)
		}
	}
}

// The foreign profile: node 1 untainted, every further node tainted into the etcd pool; the
// nodes' containerd reaches the local registry by ForeignRegistry alone (its own name leads
// nowhere), and the cluster's own images are named that way; the default profile keeps
// CRI's mirrors of both names and taints nothing.
func TestForeignProfile(t *testing.T) {
	for _, profile := range []string{ProfileDefault, ProfileForeign} {
		cfg := DefaultConfig("q", "v1.35.4")
		cfg.StateDir, cfg.Nodes, cfg.Profile = t.TempDir(), 3, profile
		c := New(cfg, io.Discard)
		n1, n2 := cfg.node(1), cfg.node(2)
		if d := c.kubeletDaemon(n1); slices.ContainsFunc(d.args, func(a string) bool { return strings.HasPrefix(a, "--register-with-taints") }) {
			t.Errorf("%q: node 1 is tainted: %q", profile, d.args)
		}
		tainted := slices.Contains(c.kubeletDaemon(n2).args, "--register-with-taints=node.quorate.dev/pool=etcd:NoSchedule")
		cd := c.containerdConfig(n2)
		hosts := c.registryHosts(n2)
		if profile == ProfileDefault {
			want := `    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."localhost:5000"]
      endpoint = ["http://localhost:5000"]
    [plugins."io.containerd.grpc.v1.cri".registry.mirrors."registry.quorate.local"]
      endpoint = ["http://localhost:5000"]
`
			if tainted || !strings.Contains(cd, want) || hosts != nil || cfg.Image(PauseImage) != PauseImage || !strings.Contains(cd, `sandbox_image = "`+PauseImage+`"`) {
				t.Errorf("default profile: tainted %v, hosts %v, containerd:\n%s", tainted, hosts, cd)
			}
			continue
		}
		if !tainted {
			t.Errorf("foreign profile: node 2 is not tainted: %q", c.kubeletDaemon(n2).args)
		}
		if got := cfg.Image(PauseImage); got != "registry.foreign.internal/quorate/pause:3.10" {
			t.Errorf("foreign profile: pause image %s", got)
		}
		if cfg.Image("docker.io/library/busybox:1.37") != "docker.io/library/busybox:1.37" {
			t.Error("foreign profile renames an image of another registry")
		}
		if !strings.Contains(cd, "config_path = \""+n2.path("containerd", "certs.d")+"\"\n") || strings.Contains(cd, "mirrors") ||
			!strings.Contains(cd, `sandbox_image = "registry.foreign.internal/quorate/pause:3.10"`) {
			t.Errorf("foreign profile: containerd:\n%s", cd)
		}
		want := map[string]string{
			n2.path("containerd", "certs.d", "registry.foreign.internal", "hosts.toml"): "server = \"http://localhost:5000\"\n",
			n2.path("containerd", "certs.d", "localhost:5000", "hosts.toml"):            "# The foreign profile: this name does not pull here.\nserver = \"http://127.0.0.1:1\"\n",
		}
		if !maps.Equal(hosts, want) {
			t.Errorf("foreign profile: hosts files %q, want %q", hosts, want)
		}
		c.cfg.Nodes = 2
		if err := c.preflight(); os.Geteuid() == 0 && (err == nil || !strings.Contains(err.Error(), "--nodes 3 or more, not 2")) {
			t.Errorf("foreign profile on 2 nodes: %v", err)
		}
	}
}
