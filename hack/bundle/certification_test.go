package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"sigs.k8s.io/yaml"
)

// The offline checks of a Red Hat certification run (preflight's operator and container
// policies) that can be made without a registry or an OpenShift cluster. What they cannot see
// here (the image is not based on UBI, the scorecard run, deployment by OLM on OpenShift) is
// listed in docs/olm.md.

// featureAnnotations are the infrastructure features OperatorHub filters on; each must be
// stated "true" or "false" (docs/olm.md gives the reason for each value).
var featureAnnotations = []string{"disconnected", "fips-compliant", "proxy-aware", "tls-profiles",
	"token-auth-aws", "token-auth-azure", "token-auth-gcp", "cnf", "cni", "csi"}

func TestCSVStatesEveryInfrastructureFeature(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range featureAnnotations {
		key := "features.operators.openshift.io/" + f
		if v, ok := b.CSV.Annotations[key]; !ok || (v != "true" && v != "false") {
			t.Errorf("CSV annotation %s = %q (set %t), want \"true\" or \"false\"", key, v, ok)
		}
	}
	// An operator that grants itself an SCC is rejected: its pods must run under restricted-v2.
	for _, p := range append(b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions, b.CSV.Spec.InstallStrategy.StrategySpec.Permissions...) {
		for _, r := range p.Rules {
			if slices.Contains(r.Resources, "securitycontextconstraints") || slices.Contains(r.Resources, "*") {
				t.Errorf("the CSV grants %s %v on %v: certification refuses operators that ask for SCCs", p.ServiceAccountName, r.Verbs, r.Resources)
			}
		}
	}
}

// com.redhat.openshift.versions names the OpenShift releases the bundle is published for, in
// the form certification accepts ("v4.20", "v4.20-v4.22" or "=v4.20"), and none whose
// Kubernetes is older than the CSV's minKubeVersion (OpenShift 4.N runs Kubernetes 1.(N+13)).
func TestOpenShiftVersionsAnnotation(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "bundle", "metadata", "annotations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(b, &ann); err != nil {
		t.Fatal(err)
	}
	v := ann.Annotations["com.redhat.openshift.versions"]
	m := regexp.MustCompile(`^=?v4\.(\d+)(-v4\.\d+)?$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("com.redhat.openshift.versions = %q, want v4.N, v4.N-v4.M or =v4.N", v)
	}
	bundle, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	minor, _ := strconv.Atoi(m[1])
	kube := strings.Split(bundle.CSV.Spec.MinKubeVersion, ".")
	if len(kube) < 2 {
		t.Fatalf("minKubeVersion %q", bundle.CSV.Spec.MinKubeVersion)
	}
	if kubeMinor, _ := strconv.Atoi(kube[1]); minor+13 < kubeMinor {
		t.Errorf("com.redhat.openshift.versions %s starts at OpenShift 4.%d (Kubernetes 1.%d), below minKubeVersion %s", v, minor, minor+13, bundle.CSV.Spec.MinKubeVersion)
	}
}

// The images the CSV ships (operator, conformance suite, workload) run as a numeric non-root
// user (restricted-v2 replaces it with the namespace's; elsewhere runAsNonRoot needs a number),
// carry the license under /licenses and the labels certification requires.
func TestShippedImagesPassTheContainerChecks(t *testing.T) {
	required := []string{"name", "vendor", "version", "release", "summary", "description"}
	for _, file := range []string{"Dockerfile", "hack/images/conformance/Dockerfile", "hack/images/workload/Dockerfile"} {
		b, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		var user string
		labels := map[string]bool{}
		license := false
		// Instructions, with their continuation lines joined.
		for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			switch strings.ToUpper(fields[0]) {
			case "USER":
				user = fields[1]
			case "LABEL":
				for _, kv := range fields[1:] {
					if k, _, ok := strings.Cut(kv, "="); ok {
						labels[k] = true
					}
				}
			case "COPY":
				if strings.HasPrefix(fields[len(fields)-1], "/licenses/") {
					license = true
				}
			}
		}
		uid, _, _ := strings.Cut(user, ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			t.Errorf("%s: USER %q, want a numeric user other than 0", file, user)
		}
		if !license {
			t.Errorf("%s: no license copied under /licenses/", file)
		}
		for _, l := range required {
			if !labels[l] {
				t.Errorf("%s: no LABEL %s", file, l)
			}
		}
	}
}
