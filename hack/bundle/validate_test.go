package main

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/internal/version"
)

// supportedK8s are the Kubernetes versions of the matrix: no API the bundle uses may be
// removed in any of them.
var supportedK8s = []string{"1.33", "1.34", "1.35", "1.36"}

// validateBundle runs what `operator-sdk bundle validate --select-optional
// suite=operatorframework` runs: the default bundle validators, OperatorHub v2, standard
// capabilities and categories, deprecated APIs for a Kubernetes version, good practices.
func validateBundle(t *testing.T, dir, k8s string) (errs, warns []string) {
	t.Helper()
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": k8s})
	vals := interfaces.Validators{}
	vals = append(vals, validation.DefaultBundleValidators...)
	vals = append(vals, validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator, validation.AlphaDeprecatedAPIsValidator, validation.GoodPracticesValidator)
	for _, r := range vals.Validate(objs...) {
		for _, e := range r.Errors {
			errs = append(errs, describe(r, e))
		}
		for _, w := range r.Warnings {
			warns = append(warns, describe(r, w))
		}
	}
	return errs, warns
}

func describe(r errors.ManifestResult, e errors.Error) string {
	return r.Name + ": " + e.Error()
}

func TestBundleValidates(t *testing.T) {
	dir := filepath.Join("..", "..", "bundle")
	for _, k8s := range supportedK8s {
		errs, warns := validateBundle(t, dir, k8s)
		for _, w := range warns {
			t.Logf("warning (Kubernetes %s): %s", k8s, w)
		}
		for _, e := range errs {
			t.Errorf("error (Kubernetes %s): %s", k8s, e)
		}
	}
}

// TestValidatorsCatchBadBundles proves the validation can fail: a copy of the bundle with a
// broken CSV must be rejected.
func TestValidatorsCatchBadBundles(t *testing.T) {
	src := filepath.Join("..", "..", "bundle")
	cases := map[string]struct {
		edit func(csv map[string]any)
		want string
	}{
		"icon without media type": {func(c map[string]any) {
			spec(c)["icon"] = []any{map[string]any{"base64data": "PHN2Zy8+"}}
		}, "csv.Spec.Icon elements should contain both data and mediatype"},
		"maintainer without email": {func(c map[string]any) {
			spec(c)["maintainers"] = []any{map[string]any{"name": "someone"}}
		}, "csv.Spec.Maintainers elements should contain both name and email"},
		"unknown capability": {func(c map[string]any) {
			c["metadata"].(map[string]any)["annotations"].(map[string]any)["capabilities"] = "Magic"
		}, "capabilities"},
		"unknown category": {func(c map[string]any) {
			c["metadata"].(map[string]any)["annotations"].(map[string]any)["categories"] = "Toys"
		}, "categories"},
		"CRD not owned": {func(c map[string]any) { delete(spec(c), "customresourcedefinitions") }, "is present in bundle \"quorate.v0.2.0\" but not defined in CSV"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyBundle(t, src, dir)
			csvPath := filepath.Join(dir, "manifests", "quorate.clusterserviceversion.yaml")
			b, err := os.ReadFile(csvPath)
			if err != nil {
				t.Fatal(err)
			}
			var csv map[string]any
			if err := yaml.Unmarshal(b, &csv); err != nil {
				t.Fatal(err)
			}
			tc.edit(csv)
			out, _ := yaml.Marshal(csv)
			if err := os.WriteFile(csvPath, out, 0o644); err != nil {
				t.Fatal(err)
			}
			errs, _ := validateBundle(t, dir, "1.35")
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Fatalf("no error mentioning %q; errors: %v", tc.want, errs)
			}
		})
	}
}

func spec(c map[string]any) map[string]any { return c["spec"].(map[string]any) }

func copyBundle(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDockerfileLabelsMatchAnnotations: bundle.Dockerfile's labels are the annotations of
// bundle/metadata/annotations.yaml, one for one.
func TestDockerfileLabelsMatchAnnotations(t *testing.T) {
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
	f, err := os.Open(filepath.Join("..", "..", "bundle.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	labels := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "LABEL "), "="); ok && strings.HasPrefix(line, "LABEL ") {
			labels[k] = v
		}
	}
	for k, v := range ann.Annotations {
		if labels[k] != v {
			t.Errorf("annotation %s=%s, but bundle.Dockerfile labels it %q", k, v, labels[k])
		}
	}
	if len(labels) != len(ann.Annotations) {
		t.Errorf("bundle.Dockerfile has %d labels, annotations.yaml %d", len(labels), len(ann.Annotations))
	}
}

// The CSV claims disconnected installs (features.operators.openshift.io/disconnected), which
// needs every image it names by digest: the operator (deployment, OPERATOR_IMAGE,
// containerImage), etcd for every release the operator runs (RELATED_IMAGE_ETCD_<version>),
// the conformance suite and its workload; and each listed among relatedImages.
func TestBundleImagesByDigest(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	csv := b.CSV
	if csv.Annotations["features.operators.openshift.io/disconnected"] != "true" {
		// Quorate's CSV claims disconnected installs (issue 16): the claim and the digests below
		// stand or fall together, so a CSV that dropped the claim fails rather than skips.
		t.Fatal("the CSV does not claim disconnected installs (features.operators.openshift.io/disconnected)")
	}
	byDigest := func(what, ref string) {
		if !strings.Contains(ref, "@sha256:") || len(ref[strings.Index(ref, "@sha256:")+8:]) != 64 {
			t.Errorf("%s is %q, not an image by digest", what, ref)
		}
	}
	byDigest("annotation containerImage", csv.Annotations["containerImage"])
	related := map[string]string{}
	for _, r := range csv.Spec.RelatedImages {
		byDigest("related image "+r.Name, r.Image)
		related[r.Name] = r.Image
	}
	want := []string{"quorate-operator", "quorate-conformance", "quorate-workload"}
	for _, r := range version.Releases {
		want = append(want, "etcd-"+strings.ReplaceAll(r.String(), ".", "-"))
	}
	for _, name := range want {
		if related[name] == "" {
			t.Errorf("relatedImages has no %s", name)
		}
	}
	pinned := 0
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			byDigest("container "+c.Name, c.Image)
			for _, e := range c.Env {
				switch {
				case e.Name == "OPERATOR_IMAGE":
					byDigest("env OPERATOR_IMAGE", e.Value)
				case strings.HasPrefix(e.Name, "RELATED_IMAGE_ETCD_"):
					byDigest("env "+e.Name, e.Value)
					if !slices.Contains(slices.Collect(maps.Values(related)), e.Value) {
						t.Errorf("env %s=%s is not among relatedImages", e.Name, e.Value)
					}
					pinned++
				}
			}
		}
	}
	if pinned != len(version.Releases) {
		t.Errorf("%d etcd images pinned in the deployment, want one per release the operator runs (%v)", pinned, version.Releases)
	}
	// The scorecard config ships in the bundle: its own test runs the conformance image the
	// CSV lists, not a development registry's tag.
	var sc struct {
		Stages []struct {
			Tests []struct {
				Entrypoint []string `json:"entrypoint"`
				Image      string   `json:"image"`
			} `json:"tests"`
		} `json:"stages"`
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "bundle", "tests", "scorecard", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, st := range sc.Stages {
		for _, test := range st.Tests {
			if len(test.Entrypoint) > 0 && test.Entrypoint[0] == ConformanceEntrypoint {
				images = append(images, test.Image)
			}
		}
	}
	if want := []string{related["quorate-conformance"]}; !slices.Equal(images, want) {
		t.Errorf("the scorecard config's %s tests run %q, want %q (the CSV's related image)", ConformanceEntrypoint, images, want)
	}
}

// The CSV offers exactly the install modes the OLM scenarios install and check with
// SubjectAccessReviews (e2e/olm checkScope: olm-install AllNamespaces, olm-upgrade and
// olm-scope-migration OwnNamespace). SingleNamespace and MultiNamespace grant the operator's
// rules in its own namespace besides the targets (docs/olm.md#install-modes): offering one
// again needs its scenario first.
func TestInstallModesOffered(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, m := range b.CSV.Spec.InstallModes {
		if m.Supported {
			offered = append(offered, string(m.Type))
		}
	}
	slices.Sort(offered)
	if want := []string{"AllNamespaces", "OwnNamespace"}; !slices.Equal(offered, want) {
		t.Errorf("the CSV offers install modes %v, want %v (each with its OLM scenario)", offered, want)
	}
}

// The conformance Job (config/conformance) runs the images the CSV lists, by digest: the
// suite's in kustomization.yaml, the workload's in settings.env. A release that rebuilt them
// fails here until both are updated (docs/conformance.md).
func TestConformanceJobImagesByDigest(t *testing.T) {
	want := suiteImages(t)
	dir := filepath.Join("..", "..", "config", "conformance")
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
			Digest  string `json:"digest"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, i := range k.Images {
		ref := i.NewName
		if i.NewTag != "" {
			ref += ":" + i.NewTag
		}
		if i.Digest != "" {
			ref += "@" + i.Digest
		}
		got[i.Name] = ref
	}
	env, err := os.ReadFile(filepath.Join(dir, "settings.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "QUORATE_WORKLOAD_IMAGE="); ok {
			got["quorate-workload"] = v
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("config/conformance runs %v, want the CSV's related images %v", got, want)
	}
}

// Every rule the manager's ClusterRole (config/rbac/role.yaml, from the kubebuilder markers)
// grants reaches the CSV, as permissions or clusterPermissions of the operator's service
// account: an OLM install must be able to do what the operator's code asks for (a rule added to
// a marker without `make bundle` would be refused on OperatorHub installs alone).
func TestCSVGrantsEveryRuleOfTheManagerRole(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	granted := map[string]bool{}
	for _, ps := range append(spec.Permissions, spec.ClusterPermissions...) {
		if ps.ServiceAccountName != "quorate-controller-manager" {
			continue
		}
		for _, r := range ps.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						granted[g+"/"+res+"/"+v] = true
					}
				}
			}
		}
	}
	var missing []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if !granted[g+"/"+res+"/"+v] {
						missing = append(missing, g+"/"+res+"/"+v)
					}
				}
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("the CSV does not grant the operator %v, which config/rbac/role.yaml does: run make bundle", missing)
	}
}

// suiteImages are the suite's and the workload's images as the CSV's relatedImages list them
// (name -> image by digest).
func suiteImages(t *testing.T) map[string]string {
	t.Helper()
	b, err := manifests.GetBundleFromDir(filepath.Join("..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, r := range b.CSV.Spec.RelatedImages {
		if r.Name == "quorate-conformance" || r.Name == "quorate-workload" {
			want[r.Name] = r.Image
		}
	}
	return want
}
