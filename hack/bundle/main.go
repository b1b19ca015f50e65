// Command bundle turns the output of `kustomize build config/manifests` (read from stdin) into
// an OLM bundle directory: the ClusterServiceVersion completed from its base (install strategy
// with the deployment and permissions, alm-examples from the samples, related images, version,
// upgrade edge, createdAt), the CRDs and other supported objects as separate manifests,
// metadata/annotations.yaml and tests/scorecard/config.yaml.
//
//	kustomize build config/manifests | go run ./hack/bundle --version 0.2.0 --replaces 0.1.0 \
//	  --image IMG --etcd-repository REPO --etcd-versions 3.5.35,3.6.16 --out bundle
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	opversion "github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/internal/resources"
)

const (
	packageName    = "quorate"
	defaultChannel = "candidate"
)

type options struct {
	version, replaces, image, conformanceImage, workloadImage, etcdRepo, etcdVersions, etcdImages, out, channels, createdAt string
}

func main() {
	var o options
	flag.StringVar(&o.version, "version", "", "bundle (operator) version, e.g. 0.2.0")
	flag.StringVar(&o.replaces, "replaces", "", "version this bundle upgrades from (empty for the first)")
	flag.StringVar(&o.image, "image", "", "operator image")
	flag.StringVar(&o.conformanceImage, "conformance-image", "", "image of quorate-conformance, the suite customers run (listed as a related image)")
	flag.StringVar(&o.workloadImage, "workload-image", "", "image of the conformance workload the suite starts (listed as a related image)")
	flag.StringVar(&o.etcdRepo, "etcd-repository", "", "etcd image repository the operator uses")
	flag.StringVar(&o.etcdVersions, "etcd-versions", "3.5.35,3.6.16", "etcd versions whose images the bundle lists as related images (repository:v<version>), unless --etcd-images names them")
	flag.StringVar(&o.etcdImages, "etcd-images", "", "VERSION=IMAGE,...: the etcd image of each version by digest, pinned in the deployment (RELATED_IMAGE_ETCD_<version>) and listed as related images")
	flag.StringVar(&o.channels, "channels", defaultChannel, "channels of the bundle")
	flag.StringVar(&o.createdAt, "created-at", "", "createdAt (RFC 3339); default: the time of the last commit, so the bundle is reproducible")
	flag.StringVar(&o.out, "out", "bundle", "bundle directory to write")
	flag.Parse()
	if err := run(o, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(o options, in io.Reader) error {
	if o.version == "" || o.image == "" || o.etcdRepo == "" {
		return errors.New("--version, --image and --etcd-repository are required")
	}
	objs, err := decode(in)
	if err != nil {
		return err
	}
	p := &bundleParts{
		roles:        map[string][]rbacv1.PolicyRule{},
		clusterRoles: map[string][]rbacv1.PolicyRule{},
		bound:        map[string]string{},
		clusterBound: map[string]string{},
	}
	for _, u := range objs {
		if u.GetKind() == "Configuration" {
			if err := conformanceTestImage(u, o.conformanceImage); err != nil {
				return err
			}
		}
		if err := p.add(u); err != nil {
			return err
		}
	}
	if p.csv == nil || p.deployment == nil {
		return errors.New("the input must hold the base ClusterServiceVersion and the operator Deployment")
	}
	namespacedScope(p.clusterRoles, p.clusterBound, p.roles, p.bound)
	if err := complete(o, p.csv, p.deployment, p.samples, p.roles, p.clusterRoles, p.bound, p.clusterBound); err != nil {
		return err
	}
	return write(o, p.csv, p.manifests, p.scorecard)
}

// ConformanceEntrypoint is the command of the scorecard config's own test, the shipped suite.
const ConformanceEntrypoint = "quorate-conformance"

// conformanceTestImage names, in the scorecard config, the conformance image the CSV lists
// among its related images (by digest when the bundle is built with digests): the config
// ships in the bundle, and a customer running scorecard pulls what it names.
func conformanceTestImage(u *unstructured.Unstructured, image string) error {
	if image == "" {
		return nil
	}
	stages, _, err := unstructured.NestedSlice(u.Object, "stages")
	if err != nil {
		return fmt.Errorf("scorecard config: %w", err)
	}
	found := false
	for _, st := range stages {
		stage, _ := st.(map[string]any)
		tests, _ := stage["tests"].([]any)
		for _, t := range tests {
			test, _ := t.(map[string]any)
			entry, _ := test["entrypoint"].([]any)
			if len(entry) > 0 && entry[0] == ConformanceEntrypoint {
				test["image"] = image
				found = true
			}
		}
	}
	if !found {
		return fmt.Errorf("the scorecard config has no %s test", ConformanceEntrypoint)
	}
	return unstructured.SetNestedSlice(u.Object, stages, "stages")
}

// bundleParts are the input's objects, sorted by what the bundle makes of them.
type bundleParts struct {
	csv          *operatorsv1alpha1.ClusterServiceVersion
	manifests    []*unstructured.Unstructured
	samples      []map[string]any
	scorecard    []byte
	roles        map[string][]rbacv1.PolicyRule
	clusterRoles map[string][]rbacv1.PolicyRule
	bound        map[string]string // role name -> service account (for permissions)
	clusterBound map[string]string
	deployment   *appsv1.Deployment
}

// add sorts one input object into p, or says why it cannot be part of a bundle.
func (p *bundleParts) add(u *unstructured.Unstructured) error {
	switch u.GetKind() {
	case "ClusterServiceVersion":
		p.csv = &operatorsv1alpha1.ClusterServiceVersion{}
		if err := convert(u, p.csv); err != nil {
			return err
		}
	case "CustomResourceDefinition", "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap", "PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler", "ConsoleYAMLSample":
		p.manifests = append(p.manifests, u)
	case "Deployment":
		p.deployment = &appsv1.Deployment{}
		if err := convert(u, p.deployment); err != nil {
			return err
		}
	case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
		return p.addRBAC(u)
	case "ServiceAccount", "Namespace":
		// OLM creates the service accounts of the install strategy and the namespace.
	case "Configuration":
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		p.scorecard = b
	default:
		if strings.HasSuffix(u.GetAPIVersion(), "quorate.dev/v1alpha1") {
			p.samples = append(p.samples, u.Object)
			return nil
		}
		return fmt.Errorf("%s %s cannot be part of a bundle", u.GetKind(), u.GetName())
	}
	return nil
}

// addRBAC records a Role's or ClusterRole's rules, or the service account a RoleBinding or
// ClusterRoleBinding binds its role to.
func (p *bundleParts) addRBAC(u *unstructured.Unstructured) error {
	switch u.GetKind() {
	case "Role":
		var r rbacv1.Role
		if err := convert(u, &r); err != nil {
			return err
		}
		p.roles[r.Name] = r.Rules
	case "ClusterRole":
		var r rbacv1.ClusterRole
		if err := convert(u, &r); err != nil {
			return err
		}
		p.clusterRoles[r.Name] = r.Rules
	case "RoleBinding":
		var b rbacv1.RoleBinding
		if err := convert(u, &b); err != nil {
			return err
		}
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" {
				p.bound[b.RoleRef.Name] = s.Name
			}
		}
	case "ClusterRoleBinding":
		var b rbacv1.ClusterRoleBinding
		if err := convert(u, &b); err != nil {
			return err
		}
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" {
				p.clusterBound[b.RoleRef.Name] = s.Name
			}
		}
	}
	return nil
}

func decode(in io.Reader) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func convert(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

func complete(o options, csv *operatorsv1alpha1.ClusterServiceVersion, d *appsv1.Deployment, samples []map[string]any,
	roles, clusterRoles map[string][]rbacv1.PolicyRule, bound, clusterBound map[string]string) error {
	v, err := parseVersion(o.version)
	if err != nil {
		return err
	}
	csv.Name = packageName + ".v" + o.version
	csv.Namespace = ""
	csv.Spec.Version = v
	if o.replaces != "" {
		csv.Spec.Replaces = packageName + ".v" + o.replaces
		// Every earlier release upgrades straight to this one.
		csv.Annotations["olm.skipRange"] = fmt.Sprintf(">=0.0.1 <%s", o.version)
	}
	created := o.createdAt
	if created == "" {
		created = lastCommitTime()
	}
	csv.Annotations["createdAt"] = created
	csv.Annotations["containerImage"] = o.image
	csv.Annotations["operators.operatorframework.io/suggested-namespace"] = "quorate-system"
	ex, err := json.MarshalIndent(samples, "", "  ")
	if err != nil {
		return err
	}
	csv.Annotations["alm-examples"] = string(ex)

	// The operator as config/default deploys it, with OLM's target namespaces as its watch set.
	d.Spec.Template.Spec.Containers[0].Image = o.image
	for i, c := range d.Spec.Template.Spec.Containers {
		for j, e := range c.Env {
			switch e.Name {
			case "OPERATOR_IMAGE":
				d.Spec.Template.Spec.Containers[i].Env[j].Value = o.image
			case "ETCD_IMAGE_REPOSITORY":
				d.Spec.Template.Spec.Containers[i].Env[j].Value = o.etcdRepo
			case "WATCH_NAMESPACE":
				d.Spec.Template.Spec.Containers[i].Env[j] = corev1.EnvVar{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}}
			}
		}
	}
	related := []operatorsv1alpha1.RelatedImage{{Name: "quorate-operator", Image: o.image}}
	if o.etcdImages != "" {
		for _, pair := range strings.Split(o.etcdImages, ",") {
			ev, img, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok || img == "" {
				return fmt.Errorf("--etcd-images: %q is not VERSION=IMAGE", pair)
			}
			ev = strings.TrimPrefix(ev, "v")
			related = append(related, operatorsv1alpha1.RelatedImage{Name: "etcd-" + strings.ReplaceAll(ev, ".", "-"), Image: img})
			c := &d.Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: resources.RelatedImageEnv(ev), Value: img})
		}
	} else {
		for _, ev := range strings.Split(o.etcdVersions, ",") {
			ev = strings.TrimPrefix(strings.TrimSpace(ev), "v")
			related = append(related, operatorsv1alpha1.RelatedImage{Name: "etcd-" + strings.ReplaceAll(ev, ".", "-"), Image: o.etcdRepo + ":v" + ev})
		}
	}
	if o.conformanceImage != "" {
		related = append(related, operatorsv1alpha1.RelatedImage{Name: "quorate-conformance", Image: o.conformanceImage})
	}
	if o.workloadImage != "" {
		related = append(related, operatorsv1alpha1.RelatedImage{Name: "quorate-workload", Image: o.workloadImage})
	}
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{StrategyName: "deployment", StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
		DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: d.Name, Label: d.Labels, Spec: d.Spec}},
		Permissions:     permissions(roles, bound),
		// ClusterRoles that nothing binds (editor/viewer aggregation roles) are not the operator's.
		ClusterPermissions: permissions(clusterRoles, clusterBound),
	}}
	csv.Spec.RelatedImages = related
	return nil
}

// clusterScopedResources are the cluster-scoped resources an operator's rules may name.
var clusterScopedResources = []string{"storageclasses", "tokenreviews", "subjectaccessreviews", "selfsubjectaccessreviews",
	"namespaces", "nodes", "persistentvolumes", "customresourcedefinitions", "clusterroles", "clusterrolebindings"}

// namespacedScope moves the rules of the bound ClusterRoles that name only namespaced
// resources into permissions. OLM grants permissions as Roles in the target namespaces
// (OwnNamespace, SingleNamespace, MultiNamespace) and cluster-wide only for AllNamespaces, so a
// namespaced install cannot read Secrets or create Pods anywhere else; only the rules on
// cluster-scoped resources stay in clusterPermissions.
func namespacedScope(clusterRoles map[string][]rbacv1.PolicyRule, clusterBound map[string]string, roles map[string][]rbacv1.PolicyRule, bound map[string]string) {
	for _, role := range slices.Sorted(maps.Keys(clusterBound)) {
		var keep, move []rbacv1.PolicyRule
		for _, r := range clusterRoles[role] {
			clusterWide := len(r.NonResourceURLs) > 0 || slices.ContainsFunc(r.Resources, func(res string) bool {
				return slices.Contains(clusterScopedResources, strings.Split(res, "/")[0])
			})
			if clusterWide {
				keep = append(keep, r)
			} else {
				move = append(move, r)
			}
		}
		clusterRoles[role] = keep
		if len(move) > 0 {
			roles[role+"-namespaced"] = move
			bound[role+"-namespaced"] = clusterBound[role]
		}
	}
}

func permissions(rules map[string][]rbacv1.PolicyRule, bound map[string]string) []operatorsv1alpha1.StrategyDeploymentPermissions {
	// Roles in name order, so that the same input always gives the same CSV.
	bySA := map[string][]rbacv1.PolicyRule{}
	for _, role := range slices.Sorted(maps.Keys(bound)) {
		sa := bound[role]
		for _, r := range rules[role] {
			if !slices.ContainsFunc(bySA[sa], func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
				bySA[sa] = append(bySA[sa], r)
			}
		}
	}
	var out []operatorsv1alpha1.StrategyDeploymentPermissions
	for sa, r := range bySA {
		if len(r) > 0 {
			out = append(out, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: r})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ServiceAccountName < out[j].ServiceAccountName })
	return out
}

func lastCommitTime() string {
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err == nil {
		if s, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
			return time.Unix(s, 0).UTC().Format(time.RFC3339)
		}
	}
	return time.Now().UTC().Format(time.RFC3339)
}

func write(o options, csv *operatorsv1alpha1.ClusterServiceVersion, manifests []*unstructured.Unstructured, scorecard []byte) error {
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	dir := filepath.Join(o.out, "manifests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	csv.APIVersion, csv.Kind = "operators.coreos.com/v1alpha1", "ClusterServiceVersion"
	if err := writeYAML(filepath.Join(dir, packageName+".clusterserviceversion.yaml"), csv); err != nil {
		return err
	}
	for _, m := range manifests {
		name := m.GetName()
		if m.GetKind() == "CustomResourceDefinition" {
			group, _, _ := unstructured.NestedString(m.Object, "spec", "group")
			plural, _, _ := unstructured.NestedString(m.Object, "spec", "names", "plural")
			name = group + "_" + plural
		} else {
			name = name + "_" + strings.ToLower(m.GroupVersionKind().Version) + "_" + strings.ToLower(m.GetKind())
			m.SetNamespace("")
		}
		if err := writeYAML(filepath.Join(dir, name+".yaml"), m.Object); err != nil {
			return err
		}
	}
	meta := filepath.Join(o.out, "metadata")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString("annotations:\n")
	for _, kv := range Annotations(o.channels) {
		fmt.Fprintf(&buf, "  %s: %s\n", kv[0], kv[1])
	}
	if err := os.WriteFile(filepath.Join(meta, "annotations.yaml"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	if scorecard != nil {
		sc := filepath.Join(o.out, "tests", "scorecard")
		if err := os.MkdirAll(sc, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sc, "config.yaml"), scorecard, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// OpenShiftVersions are the OpenShift releases the bundle is for (com.redhat.openshift.versions).
const OpenShiftVersions = "v4.20"

// Annotations of the bundle, in the order bundle.Dockerfile carries them as labels.
func Annotations(channels string) [][2]string {
	return [][2]string{
		{"operators.operatorframework.io.bundle.mediatype.v1", "registry+v1"},
		{"operators.operatorframework.io.bundle.manifests.v1", "manifests/"},
		{"operators.operatorframework.io.bundle.metadata.v1", "metadata/"},
		{"operators.operatorframework.io.bundle.package.v1", packageName},
		{"operators.operatorframework.io.bundle.channels.v1", channels},
		{"operators.operatorframework.io.bundle.channel.default.v1", defaultChannel},
		{"operators.operatorframework.io.test.mediatype.v1", "scorecard+v1"},
		{"operators.operatorframework.io.test.config.v1", "tests/scorecard/"},
		// OpenShift 4.20 is the first on Kubernetes 1.33, the CSV's minKubeVersion; "v4.20"
		// lists it and every later release (docs/olm.md).
		{"com.redhat.openshift.versions", OpenShiftVersions},
	}
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func parseVersion(s string) (opversion.OperatorVersion, error) {
	var v opversion.OperatorVersion
	if err := v.UnmarshalJSON([]byte(strconv.Quote(s))); err != nil {
		return v, fmt.Errorf("--version %q is not semver: %w", s, err)
	}
	return v, nil
}
