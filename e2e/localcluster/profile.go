package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"text/template"
)

// Profiles a local cluster can run with (--profile). The empty profile admits what upstream
// Kubernetes admits by default.
const (
	ProfileDefault = ""
	// ProfileOpenShiftLike enforces Pod Security Admission "restricted" on every namespace but
	// the cluster's own, and, with admission policies (profiles/openshift-like.yaml), gives
	// every new namespace a UID range and assigns pods their user and fsGroup from it and
	// rejects any other, as OpenShift's restricted-v2 SCC does.
	ProfileOpenShiftLike = "openshift-like"
	// ProfileForeign is a cluster unlike the one the suite was written on, wherever customers'
	// clusters differ (issue 42): everything openshift-like admits and refuses; storage
	// through a CSI driver only, under a StorageClass name the suite does not know
	// (ForeignStorageClass, hack/csi.sh; no local-path); NetworkPolicy enforced
	// (kube-network-policies, hack/netpol.sh); at least three nodes, every node but
	// node 1 tainted ForeignTaint (an etcd pool that admits only what tolerates it); and the
	// local registry under another host name only (ForeignRegistry): an image named
	// localhost:5000/... does not pull.
	ProfileForeign = "foreign"
)

// Profiles are the values --profile accepts.
var Profiles = []string{ProfileDefault, ProfileOpenShiftLike, ProfileForeign}

// The foreign profile's names.
const (
	// ForeignRegistry is the only name the foreign profile's nodes pull the local registry's
	// images by: the registry of a customer's own, under a host name the suite does not know.
	ForeignRegistry = "registry.foreign.internal"
	// ForeignStorageClass is the foreign profile's only StorageClass, and its default: the CSI
	// driver's (hack/csi.sh), under a name like a cloud's.
	ForeignStorageClass = "standard-rwo"
	// ForeignTaint is the taint of the foreign profile's etcd pool, every node but node 1
	// (KEY=VALUE:EFFECT). Members land there only with a toleration and node selector:
	// quorate-conformance --member-tolerations=node.quorate.dev/pool=etcd:NoSchedule
	// --member-node-selector=node.quorate.dev/pool=etcd.
	ForeignTaint = PoolLabel + "=" + PoolEtcd + ":NoSchedule"
	// ForeignNodes is how many nodes the foreign profile has at least.
	ForeignNodes = 3
)

// admits says whether the profile enforces the openshift-like admission rules.
func (c Config) admits() bool {
	return c.Profile == ProfileOpenShiftLike || c.Profile == ProfileForeign
}

// Image is ref as the cluster's nodes pull it: under the foreign profile a local-registry
// image is named by ForeignRegistry, its only name there.
func (c Config) Image(ref string) string {
	if c.Profile != ProfileForeign {
		return ref
	}
	if rest, ok := strings.CutPrefix(ref, c.Registry+"/"); ok {
		return ForeignRegistry + "/" + rest
	}
	return ref
}

// taints are the taints node n registers with.
func (c Config) taints(n nodeSpec) []string {
	if c.Profile == ProfileForeign && n.pool() == PoolEtcd {
		return []string{ForeignTaint}
	}
	return nil
}

// profileExempt are the namespaces the openshift-like profile leaves alone: the cluster's own
// (the privileged SCC's on OpenShift), and the S3 store and the emulated cloud stores of the
// backup scenarios, test infrastructure that runs as 65532.
var profileExempt = []string{"kube-system", "kube-public", "kube-node-lease", "default", "local-path-storage", "chaos-mesh", "quorate-s3", "quorate-stores"}

// psaExempt are the namespaces Pod Security Admission does not enforce "restricted" in: the
// volume provisioner's helper pods mount host paths, Chaos Mesh's daemon is privileged.
var psaExempt = []string{"kube-system", "local-path-storage", "chaos-mesh"}

// CheckProfile says whether profile is known.
func CheckProfile(profile string) error {
	for _, p := range Profiles {
		if p == profile {
			return nil
		}
	}
	return fmt.Errorf("unknown profile %q: want one of %q", profile, Profiles)
}

func (c Config) admissionConfigPath() string { return c.path("admission.yaml") }

// mapVersion is the API version of MutatingAdmissionPolicy the cluster serves: alpha in 1.32
// and 1.33, beta (off by default) from 1.34.
func (c Config) mapVersion() string {
	if c.K8sVersion < "v1.34" {
		return "v1alpha1"
	}
	return "v1beta1"
}

// profileAPIServerArgs are the kube-apiserver's flags the profile adds.
func (c Config) profileAPIServerArgs() []string {
	if !c.admits() {
		return nil
	}
	return []string{
		"--admission-control-config-file=" + c.admissionConfigPath(),
		"--feature-gates=MutatingAdmissionPolicy=true",
		"--runtime-config=admissionregistration.k8s.io/" + c.mapVersion() + "=true",
	}
}

// writeProfile writes the API server's admission configuration of the profile.
func (c *Cluster) writeProfile() error {
	if !c.cfg.admits() {
		return nil
	}
	cfg := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: restricted
      enforce-version: latest
      warn: restricted
      warn-version: latest
    exemptions:
      namespaces: [%s]
`, strings.Join(psaExempt, ", "))
	return os.WriteFile(c.cfg.admissionConfigPath(), []byte(cfg), 0o644)
}

// applyProfile installs the profile's admission policies, after the add-ons (whose namespaces
// it exempts anyway), and waits until they bite.
func (c *Cluster) applyProfile(ctx context.Context) error {
	if !c.cfg.admits() {
		return nil
	}
	manifest, err := c.cfg.profileManifest()
	if err != nil {
		return err
	}
	if err := c.kubectl(ctx, manifest, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		return fmt.Errorf("applying the openshift-like profile's policies: %w", err)
	}
	c.logf("profile %s: Pod Security Admission restricted on every namespace but %v; UID ranges assigned and enforced by admission policies", c.cfg.Profile, psaExempt)
	if c.cfg.Profile == ProfileForeign {
		c.logf("profile foreign: images only as %s/..., StorageClass %s (CSI) alone, NetworkPolicy enforced (kube-network-policies), nodes 2 to %d tainted %s", ForeignRegistry, ForeignStorageClass, c.cfg.Nodes, ForeignTaint)
	}
	return nil
}

// profileManifest is the openshift-like profile's admission policies for the cluster's version.
func (c Config) profileManifest() (string, error) {
	t, err := template.ParseFS(addonFS, "profiles/openshift-like.yaml")
	if err != nil {
		return "", err
	}
	quoted := make([]string, len(profileExempt))
	for i, n := range profileExempt {
		quoted[i] = "'" + n + "'"
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, map[string]string{"MAPVersion": c.mapVersion(), "Exempt": "[" + strings.Join(quoted, ", ") + "]"}); err != nil {
		return "", err
	}
	return buf.String(), nil
}
