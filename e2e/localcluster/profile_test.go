package localcluster

import (
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
