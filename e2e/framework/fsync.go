package framework

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/e2e/workloadapi"
	"github.com/quorate-dev/quorate/internal/diskcheck"
)

// probeDeadline bounds the probe pod's life (seconds): provisioning the volume, pulling the
// image, 1000 syncs and a 16 MiB write.
const probeDeadline int64 = 150

// probeStuck are the reasons a container waits that do not pass by themselves.
var probeStuck = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError"}

// probeUID is the fsGroup the probe asks for first (the workload image's user), so that it
// may write to a volume whose root only root owns; a platform that assigns users itself
// (OpenShift's restricted-v2) refuses it, and the probe is created again without.
const probeUID int64 = 65532

// fsyncProbePod is the pod that measures fsync on a fresh volume of the StorageClass the
// scenarios use (--storage-class, or the cluster's default), on a node their members may run
// on (--member-node-selector, --member-tolerations).
func (s *Suite) fsyncProbePod(ns string, fsGroup *int64) *corev1.Pod {
	var class *string
	if s.Opts.Shape.StorageClass != "" {
		class = ptr.To(s.Opts.Shape.StorageClass)
	}
	var tolerations []corev1.Toleration
	tolerations = append(tolerations, s.Opts.Shape.Tolerations...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fsync-probe", Namespace: ns, Labels: map[string]string{"app": "quorate-fsync-probe"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			// Whatever holds it up, the probe ends: it delays the first scenario.
			ActiveDeadlineSeconds: ptr.To(probeDeadline),
			Containers: []corev1.Container{{
				Name: "probe", Image: s.Opts.WorkloadImage, Args: []string{"--" + workloadapi.FsyncProbeFlag + "=/data"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				// A failed probe says why in its last log lines.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsNonRoot: ptr.To(true)},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}}}}}}}},
			NodeSelector: v1alpha1.LabelMap(s.Opts.Shape.NodeSelector),
			Tolerations:  tolerations,
			SecurityContext: &corev1.PodSecurityContext{FSGroup: fsGroup,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}
}

// probeFsync measures fsync on the scenarios' storage in a namespace of its own (deleted
// afterwards), for the report's environment: a slow disk makes etcd miss heartbeats, and a
// failure on it is the environment's, not the operator's.
func (s *Suite) probeFsync(ctx context.Context) (*report.EnvFsync, error) {
	ns := fmt.Sprintf("%sfsync-probe-%04d", s.Opts.NamespacePrefix, rand.Intn(10000))
	r := &Run{Suite: s, Scenario: Scenario{Name: "fsync-probe"}, Namespace: ns}
	if err := r.CreateNamespace(ctx, ns); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	defer func() {
		s.deleteNamespace(context.WithoutCancel(ctx), ns)
	}()
	pod := s.fsyncProbePod(ns, ptr.To(probeUID))
	err := s.Client.Create(ctx, pod)
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
		// The platform assigns the group itself.
		pod = s.fsyncProbePod(ns, nil)
		err = s.Client.Create(ctx, pod)
	}
	if err != nil {
		return nil, fmt.Errorf("creating the probe pod: %w", err)
	}
	var done *corev1.Pod
	err = r.WaitFor(ctx, "the fsync probe to finish", time.Duration(probeDeadline+30)*time.Second, func() error {
		p := &corev1.Pod{}
		if err := s.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.Name}, p); err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			done = p
			return nil
		}
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && slices.Contains(probeStuck, w.Reason) {
				return fmt.Errorf("%w: the probe pod cannot start: %s: %s", ErrStop, w.Reason, w.Message)
			}
		}
		return fmt.Errorf("the probe pod is %s%s%s", p.Status.Phase, waitingReason(p), unscheduled(p))
	})
	if err != nil {
		return nil, err
	}
	return fsyncOf(done)
}

// unscheduled says why the scheduler has not placed the pod, if it has not.
func unscheduled(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf(" (not scheduled: %s)", c.Message)
		}
	}
	return ""
}

// fsyncOf reads the finished probe pod's result from its termination message.
func fsyncOf(p *corev1.Pod) (*report.EnvFsync, error) {
	if p.Status.Reason != "" && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Terminated == nil {
		// Ended before its container did (DeadlineExceeded, say).
		return nil, fmt.Errorf("the probe pod ended %s: %s", p.Status.Reason, p.Status.Message)
	}
	if p.Status.Reason != "" && len(p.Status.ContainerStatuses) == 0 {
		return nil, fmt.Errorf("the probe pod ended %s: %s", p.Status.Reason, p.Status.Message)
	}
	var msg string
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			msg = t.Message
			if t.ExitCode != 0 {
				return nil, fmt.Errorf("the probe failed (exit %d): %s", t.ExitCode, msg)
			}
		}
	}
	res, err := diskcheck.Parse([]byte(msg))
	if err != nil {
		return nil, fmt.Errorf("reading the probe's result %q: %w", msg, err)
	}
	class := "the cluster's default"
	if sc := p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName; sc != nil {
		class = *sc
	}
	return &report.EnvFsync{StorageClass: class, Node: p.Spec.NodeName, Samples: res.Syncs, BlockSize: res.BlockSize, P50: res.P50, P99: res.P99, Max: res.Max,
		Judgement: diskcheck.Judge(res).Lines}, nil
}
