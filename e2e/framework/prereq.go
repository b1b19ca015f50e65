package framework

import (
	"context"
	"fmt"
	"strings"

	cm "github.com/chaos-mesh/chaos-mesh/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/e2e/localcluster"
)

// Prerequisite is something a scenario needs of the cluster beyond what every Kubernetes
// cluster has (Chaos Mesh, an object store, node access, several nodes, a second
// StorageClass). The suite looks for each before the scenario creates anything; a scenario
// whose prerequisite is missing is reported skipped, naming it (report.Scenario.Skipped),
// which never counts as a pass.
type Prerequisite struct {
	// Name is what is needed, as the report names it.
	Name string
	// Missing says why the cluster lacks it and how to provide it; "" when it is there. An
	// error is a failure to look (the API server did not answer), not a missing prerequisite.
	Missing func(ctx context.Context, r *Run) (string, error)
}

// MissingPrerequisites names what to do when a scenario's prerequisite is missing
// (--missing-prerequisites).
const (
	// SkipMissing reports the scenario skipped, naming what is missing: a customer's cluster
	// need not have Chaos Mesh or spare nodes.
	SkipMissing = "skip"
	// FailMissing fails the scenario: on a cluster meant to have every prerequisite (this
	// project's CI), a missing one is a broken environment, not a reason to run less.
	FailMissing = "fail"
)

// NodeAccess: the scenario acts on the node's containers and volumes (kills containers,
// rewrites files, powers nodes off), which only the local provider's nodes allow.
var NodeAccess = Prerequisite{Name: "node access", Missing: func(_ context.Context, r *Run) (string, error) {
	if r.Suite.Node != nil {
		return "", nil
	}
	return "it acts on the node's containers and volumes, which only a cluster the suite starts (--provider=local) lets it reach", nil
}}

// ChaosMesh: the scenario injects its faults through Chaos Mesh.
var ChaosMesh = Prerequisite{Name: "Chaos Mesh", Missing: func(ctx context.Context, r *Run) (string, error) {
	// Discovery alone (no rights on the chaos objects needed): the suite's Job may only act in
	// the namespaces it creates.
	_, err := r.Suite.Client.RESTMapper().RESTMapping(cm.SchemeGroupVersion.WithKind("PodChaos").GroupKind(), cm.SchemeGroupVersion.Version)
	if err == nil {
		return "", nil
	}
	if meta.IsNoMatchError(err) {
		return "Chaos Mesh is not installed (no chaos-mesh.org API): install it (make chaos-mesh, or --install-chaos-mesh on a cluster the suite starts)", nil
	}
	return "", fmt.Errorf("looking for Chaos Mesh: %w", err)
}}

// ObjectStore: the scenario backs up to the S3 store the suite installs (--install-s3, in
// namespace S3Namespace) and reads its keys from there.
var ObjectStore = Prerequisite{Name: "object store", Missing: func(ctx context.Context, r *Run) (string, error) {
	err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: S3Namespace, Name: "s3-root"}, &corev1.Secret{})
	if err == nil {
		return "", nil
	}
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("the suite's S3 store is not installed (no Secret %s/s3-root): install it with --install-s3 (hack/s3.sh)", S3Namespace), nil
	}
	if apierrors.IsForbidden(err) {
		// The Job reads no Secret: the scenario could not copy the store's keys either.
		return fmt.Sprintf("the suite may not read the S3 store's keys (Secret %s/s3-root), which the backup scenarios copy: run them with credentials that may (make e2e-backup)", S3Namespace), nil
	}
	return "", fmt.Errorf("looking for the S3 store: %w", err)
}}

// StorageClasses: the scenario uses each of these StorageClasses.
func StorageClasses(names ...string) Prerequisite {
	return Prerequisite{Name: "StorageClasses " + strings.Join(names, ", "), Missing: func(ctx context.Context, r *Run) (string, error) {
		var absent []string
		for _, n := range names {
			err := r.Suite.Client.Get(ctx, types.NamespacedName{Name: n}, &storagev1.StorageClass{})
			switch {
			case apierrors.IsNotFound(err):
				absent = append(absent, n)
			case err != nil:
				return "", fmt.Errorf("looking for StorageClass %s: %w", n, err)
			}
		}
		if len(absent) == 0 {
			return "", nil
		}
		return fmt.Sprintf("the cluster has no StorageClass %s: name two it has with --storage-classes=FROM,TO", strings.Join(absent, ", ")), nil
	}}
}

// ExpandableStorageClass: the cluster has StorageClass name, and it expands volumes.
func ExpandableStorageClass(name string) Prerequisite {
	return Prerequisite{Name: "StorageClass " + name + " expanding volumes", Missing: func(ctx context.Context, r *Run) (string, error) {
		sc := &storagev1.StorageClass{}
		err := r.Suite.Client.Get(ctx, types.NamespacedName{Name: name}, sc)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("the cluster has no StorageClass %s: name one that expands volumes with --expansion-storage-class", name), nil
		case err != nil:
			return "", fmt.Errorf("looking for StorageClass %s: %w", name, err)
		case sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion:
			return fmt.Sprintf("StorageClass %s does not expand volumes (allowVolumeExpansion is not true): name one that does with --expansion-storage-class", name), nil
		}
		return "", nil
	}}
}

// PoolNodes: the scenario's members run on n nodes of the local cluster's etcd pool, besides
// node 1 (checkNodes waits for them to be Ready).
func PoolNodes(n int) Prerequisite {
	return Prerequisite{Name: fmt.Sprintf("%d nodes for members", n), Missing: func(ctx context.Context, r *Run) (string, error) {
		var nodes corev1.NodeList
		if err := r.Suite.Client.List(ctx, &nodes, client.MatchingLabels{localcluster.PoolLabel: localcluster.PoolEtcd}); err != nil {
			return "", fmt.Errorf("listing the nodes: %w", err)
		}
		if len(nodes.Items) >= n {
			return "", nil
		}
		return fmt.Sprintf("the cluster has %d nodes labelled %s=%s and the scenario needs %d besides node 1: start the local cluster with --nodes=%d",
			len(nodes.Items), localcluster.PoolLabel, localcluster.PoolEtcd, n, n+1), nil
	}}
}

// prerequisites are every prerequisite of the scenario: those it lists, and those its
// NeedsNode and Nodes imply.
func (sc Scenario) prerequisites() []Prerequisite {
	var out []Prerequisite
	if sc.NeedsNode || sc.Nodes > 1 {
		out = append(out, NodeAccess)
	}
	if sc.Nodes > 1 {
		out = append(out, PoolNodes(sc.Nodes))
	}
	return append(out, sc.Needs...)
}

// missingPrerequisites says, one line each, which of the scenario's prerequisites the cluster
// lacks ("Chaos Mesh: ..."); none when it has them all.
func (r *Run) missingPrerequisites(ctx context.Context) ([]string, error) {
	var missing []string
	for _, p := range r.Scenario.prerequisites() {
		why, err := p.Missing(ctx, r)
		if err != nil {
			return nil, err
		}
		if why != "" {
			missing = append(missing, p.Name+": "+why)
		}
	}
	return missing, nil
}
