package resources

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/names"
)

// ArchiverName is the Deployment of a schedule's archiver.
func ArchiverName(schedule string) string { return schedule + "-archiver" }

// ArchiverContainer is the name of the archiver pod's container.
const ArchiverContainer = "archiver"

// ArchivePrefix is where a schedule's archive goes in its bucket:
// PREFIX<namespace>/<cluster>/archive/<schedule>; each cluster ID's segments go under
// <prefix>/<cluster ID>/segments/. No backup's key starts with it (a backup's key ends in .db
// at the cluster's level).
func ArchivePrefix(s *v1alpha1.EtcdBackupSchedule) string {
	return ArchivePrefixOf(s.Spec.Storage.Prefix, s.Namespace, s.Spec.ClusterName, s.Name)
}

// ArchivePrefixOf is ArchivePrefix of the schedule named so, whose storage has that prefix.
func ArchivePrefixOf(storagePrefix, namespace, cluster, schedule string) string {
	return fmt.Sprintf("%s%s/%s/archive/%s", storagePrefix, namespace, cluster, schedule)
}

// ArchiveMaxLag is the schedule's archive.maxLag, or its default.
func ArchiveMaxLag(s *v1alpha1.EtcdBackupSchedule) time.Duration {
	if a := s.Spec.Archive; a != nil && a.MaxLag != nil {
		return a.MaxLag.Duration
	}
	return 500 * time.Millisecond
}

// ArchiverLabels select a schedule's archiver pod.
func ArchiverLabels(cluster, schedule string) map[string]string {
	l := names.ClusterLabels(cluster)
	l[names.LabelArchive] = schedule
	return l
}

// ArchiverDeployment runs `quorate-backup archive` for a schedule: one pod that watches the
// cluster through its client Service (so that scaling and replacing members never restart
// it) and writes segments under ArchivePrefix. Recreate: one archiver at a time (two would
// write overlapping segments, which is harmless but wasteful). storeSecrets are the hashes
// of what it reads of its storage's Secrets (names.AnnotationStoreSecrets; "" without any).
func ArchiverDeployment(s *v1alpha1.EtcdBackupSchedule, t JobTarget, im Images, storeSecrets string) *appsv1.Deployment {
	scheme := "http"
	if t.Cluster.Spec.TLS.IsEnabled() {
		scheme = "https"
	}
	st := &s.Spec.Storage
	args := []string{"archive", fmt.Sprintf("--endpoints=client=%s://%s:%d", scheme, names.ClientHost(t.Cluster.Name, t.Cluster.Namespace), names.ClientPort),
		"--cluster-id=" + t.ClusterID, "--bucket=" + st.BucketURL, "--prefix=" + ArchivePrefix(s), "--max-lag=" + ArchiveMaxLag(s).String(),
		fmt.Sprintf("--listen=:%d", archive.ReportPort)}
	args = append(args, CABundleArgs(st.CABundle)...)
	pod := jobPod(t, im, args, resource.NewQuantity(64<<20, resource.BinarySI))
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	ctr := &pod.Spec.Containers[0]
	ctr.Name = ArchiverContainer
	ctr.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	ctr.Ports = []corev1.ContainerPort{{Name: "archive", ContainerPort: archive.ReportPort, Protocol: corev1.ProtocolTCP}}
	ctr.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: archive.ReportPath, Port: intstr.FromInt32(archive.ReportPort)}},
		PeriodSeconds: 10, TimeoutSeconds: 5}
	reachStore(ctr, st.BucketURL, st.CredentialsSecret, st.CABundle, im, everyRun)
	pod.Spec.Volumes = append(pod.Spec.Volumes, storeVolumes(st.CredentialsSecret, st.CABundle, everyRun)...)
	pod.Labels = ArchiverLabels(t.Cluster.Name, s.Name)
	// The pod reaches the members' client port as the backup Jobs do.
	pod.Labels[names.LabelBackup] = ArchiverName(s.Name)
	WithIdentity(&pod.ObjectMeta, &pod.Spec, st.Identity)
	if storeSecrets != "" {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[names.AnnotationStoreSecrets] = storeSecrets
	}
	passMutant(&pod.Spec)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: ArchiverName(s.Name), Namespace: s.Namespace, Labels: ArchiverLabels(t.Cluster.Name, s.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, v1alpha1.GroupVersion.WithKind("EtcdBackupSchedule"))}},
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To[int32](1),
			Selector:             &metav1.LabelSelector{MatchLabels: ArchiverLabels(t.Cluster.Name, s.Name)},
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			RevisionHistoryLimit: ptr.To[int32](2),
			Template:             pod,
		},
	}
	withHash(&d.ObjectMeta, d.Spec)
	return d
}
