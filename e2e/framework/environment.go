package framework

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/e2e/report"
)

// cniDaemonSets are the DaemonSets (by name prefix) of the common CNI plugins.
var cniDaemonSets = []struct{ prefix, name string }{
	{"calico-node", "Calico"}, {"cilium", "Cilium"}, {"kube-flannel", "Flannel"}, {"flannel", "Flannel"},
	{"kindnet", "kindnet"}, {"weave-net", "Weave Net"}, {"ovnkube-node", "OVN-Kubernetes"}, {"aws-node", "Amazon VPC CNI"},
	{"antrea-agent", "Antrea"}, {"kube-router", "kube-router"}, {"canal", "Canal"}, {"azure-cns", "Azure CNI"},
	{"anetd", "GKE Dataplane V2 (Cilium)"},
}

// environment records what the run runs against (report.Environment). What it cannot read
// (the Job may lack the rights to list nodes, say) it names in Problems; it fails only when
// the API server does not answer at all.
func (s *Suite) environment(ctx context.Context, disc discovery.DiscoveryInterface) (*report.Environment, error) {
	e := &report.Environment{Provider: s.Opts.Provider, Etcd: s.Opts.EtcdVersion}
	if s.Opts.EtcdImage != "" {
		e.Etcd += " (image " + s.Opts.EtcdImage + ")"
	}
	problem := func(what string, err error) {
		if apierrors.IsForbidden(err) {
			e.Problems = append(e.Problems, what+": the suite may not read them")
			return
		}
		e.Problems = append(e.Problems, fmt.Sprintf("%s: %v", what, err))
	}

	var served, providers []string
	if v, err := disc.ServerVersion(); err != nil {
		problem("the API server's version", err)
	} else {
		e.Kubernetes, e.Platform = v.GitVersion, v.Platform
	}
	if groups, err := disc.ServerGroups(); err != nil {
		problem("the API server's groups", err)
	} else {
		for _, g := range groups.Groups {
			served = append(served, g.Name)
		}
	}
	var nodes corev1.NodeList
	if err := s.Client.List(ctx, &nodes); err != nil {
		problem("nodes", err)
	}
	for _, n := range nodes.Items {
		e.Nodes = append(e.Nodes, envNode(n))
		providers = append(providers, n.Spec.ProviderID)
	}
	e.Distribution = distribution(s.Opts.Provider, e.Kubernetes, served, providers)

	e.CNI = s.cni(ctx, problem)

	var classes storagev1.StorageClassList
	if err := s.Client.List(ctx, &classes); err != nil {
		problem("StorageClasses", err)
	}
	for _, c := range classes.Items {
		ec := report.EnvClass{Name: c.Name, Provisioner: c.Provisioner,
			Default:   c.Annotations["storageclass.kubernetes.io/is-default-class"] == "true",
			Expansion: c.AllowVolumeExpansion != nil && *c.AllowVolumeExpansion}
		if c.VolumeBindingMode != nil {
			ec.Binding = string(*c.VolumeBindingMode)
		}
		e.Storage = append(e.Storage, ec)
	}

	if s.Opts.FsyncProbe {
		fmt.Fprintf(os.Stderr, "measuring fsync on the scenarios' storage (a probe pod; --fsync-probe=false leaves it out)\n")
		if f, err := s.probeFsync(ctx); err != nil {
			e.Problems = append(e.Problems, "fsync of the scenarios' storage: "+err.Error())
		} else {
			e.Fsync = f
		}
	}
	if op, err := s.operatorAsItRuns(ctx); err != nil {
		problem("the operator in "+s.Opts.OperatorNS, err)
	} else {
		e.Operator = op
	}
	return e, nil
}

// distribution reads what built the cluster: the suite's own provider, else the API groups,
// the version string and the nodes' provider IDs.
func distribution(provider, version string, groups, providerIDs []string) string {
	switch {
	case provider == "local":
		return "Quorate's local cluster (built from source, --provider=local)"
	case provider == "kind":
		return "kind (--provider=kind)"
	case slices.Contains(groups, "config.openshift.io"):
		return "OpenShift (config.openshift.io served)"
	}
	for _, d := range []struct{ mark, name string }{
		{"-eks-", "EKS"}, {"-gke.", "GKE"}, {"+k3s", "k3s"}, {"+rke2", "RKE2"}, {"+vmware", "Tanzu"},
	} {
		if strings.Contains(version, d.mark) {
			return fmt.Sprintf("%s (%s in the version)", d.name, d.mark)
		}
	}
	for _, d := range []struct{ prefix, name string }{
		{"azure://", "Azure (AKS or another)"}, {"aws://", "AWS (EKS or another)"}, {"gce://", "Google Cloud (GKE or another)"},
	} {
		for _, id := range providerIDs {
			if strings.HasPrefix(id, d.prefix) {
				return fmt.Sprintf("%s (node providerID %s...)", d.name, d.prefix)
			}
		}
	}
	return "not recognised (an upstream version string, no known node provider)"
}

// envNode is what the report records of a node.
func envNode(n corev1.Node) report.EnvNode {
	i := n.Status.NodeInfo
	en := report.EnvNode{Name: n.Name, Kernel: i.KernelVersion, OS: i.OSImage, ContainerRuntime: i.ContainerRuntimeVersion,
		Kubelet: i.KubeletVersion, CPU: n.Status.Capacity.Cpu().String(), Memory: n.Status.Capacity.Memory().String()}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			en.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return en
}

// cni names the cluster's CNI plugin from kube-system's DaemonSets; a cluster the suite
// started has its own (bridge, host-local and portmap, from containernetworking-plugins).
func (s *Suite) cni(ctx context.Context, problem func(string, error)) string {
	if s.Node != nil {
		return "bridge (containernetworking-plugins; Quorate's local cluster)"
	}
	// Every namespace's DaemonSets (OpenShift's and the Calico operator's are not in
	// kube-system); kube-system's alone where the suite may not list them all.
	var ds appsv1.DaemonSetList
	if err := s.Client.List(ctx, &ds); err != nil {
		if err := s.Client.List(ctx, &ds, client.InNamespace("kube-system")); err != nil {
			problem("DaemonSets (to name the CNI)", err)
			return ""
		}
	}
	var found []string
	for _, d := range ds.Items {
		for _, c := range cniDaemonSets {
			if strings.HasPrefix(d.Name, c.prefix) && !slices.Contains(found, c.name) {
				found = append(found, c.name)
			}
		}
	}
	if len(found) == 0 {
		return "not recognised (no known CNI DaemonSet)"
	}
	sort.Strings(found)
	return strings.Join(found, ", ")
}

// operatorAsItRuns reads the operator's pods in --operator-namespace (by the operator's
// labels: a namespace such as openshift-operators holds other operators too): the images they
// run, by the digests the kubelet pulled, and the manager's arguments.
func (s *Suite) operatorAsItRuns(ctx context.Context) (*report.EnvOperator, error) {
	ns := s.Opts.OperatorNS
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(label.OperatorLabels())); err != nil {
		return nil, err
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("no pod labelled %v in namespace %s (--operator-namespace)", label.OperatorLabels(), ns)
	}
	op := &report.EnvOperator{Namespace: ns}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == label.OperatorContainer && op.Args == nil {
				op.Args = slices.Clone(c.Args)
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			img := c.Image
			if c.ImageID != "" && !strings.Contains(img, "@") {
				if _, digest, ok := strings.Cut(c.ImageID, "@"); ok {
					img += "@" + digest
				}
			}
			if !slices.Contains(op.Images, img) {
				op.Images = append(op.Images, img)
			}
		}
	}
	sort.Strings(op.Images)
	return op, nil
}

// recordEnvironment records the environment in the report before the first scenario.
func (s *Suite) recordEnvironment(ctx context.Context) error {
	e, err := s.environment(ctx, s.Clientset.Discovery())
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.Report.Environment = e
	s.mu.Unlock()
	return nil
}
