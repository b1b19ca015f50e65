package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/internal/diskcheck"
	"github.com/quorate-dev/quorate/internal/names"
)

// DiskCheckOptions: the StorageClass to measure, the image holding /quorate-backup (the
// operator's, by default), and the volume's size.
type DiskCheckOptions struct {
	StorageClass, Image, Size, OperatorNamespace string
	Timeout                                      time.Duration
}

// LabelDiskCheck marks the disk-check pods, so that one left behind (the plugin killed
// mid-check) can be found and deleted: kubectl delete pod -l quorate.dev/disk-check. Its value
// is the StorageClass measured, empty for the default one (a label value may not be "-").
const LabelDiskCheck = "quorate.dev/disk-check"

// diskCheckPod is a pod that measures a fresh volume of the class: a generic ephemeral volume,
// which the pod owns, so that deleting the pod deletes the volume.
func diskCheckPod(namespace string, o DiskCheckOptions) (*corev1.Pod, error) {
	size, err := resource.ParseQuantity(o.Size)
	if err != nil {
		return nil, fmt.Errorf("--size %q: %w", o.Size, err)
	}
	var class *string
	if o.StorageClass != "" {
		class = ptr.To(o.StorageClass)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "quorate-disk-check-", Labels: map[string]string{LabelDiskCheck: o.StorageClass}},
		Spec: corev1.PodSpec{
			RestartPolicy:         corev1.RestartPolicyNever,
			ActiveDeadlineSeconds: ptr.To(int64(o.Timeout.Seconds()) + 60),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), FSGroup: ptr.To(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "disk-check", Image: o.Image, Command: []string{"/quorate-backup", "disk-check", "--dir=/data"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
				}},
			}}}},
		},
	}, nil
}

// podState says whether the pod ended, and what it waits for meanwhile.
func podState(p *corev1.Pod) (done bool, progress string, err error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true, "measured", nil
	case corev1.PodFailed:
		msg := p.Status.Message
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				msg = strings.TrimSpace(t.Reason + " " + t.Message)
			}
		}
		return true, "", fmt.Errorf("the disk-check pod %s failed: %s", p.Name, orNothing(msg))
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return false, fmt.Sprintf("waiting for a node and the volume: %s", c.Message), nil
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return false, fmt.Sprintf("container waiting: %s %s", w.Reason, w.Message), nil
		}
		if cs.State.Running != nil {
			return false, "measuring (about a minute)", nil
		}
	}
	return false, "waiting for the pod to start", nil
}

// operatorImage is the image of the operator's pods, which holds /quorate-backup.
func (e *Env) operatorImage(ctx context.Context, ns string) (string, error) {
	var pl corev1.PodList
	if err := e.Client.List(ctx, &pl, client.InNamespace(ns), client.MatchingLabels(OperatorSelector)); err != nil {
		return "", fmt.Errorf("finding the operator's image in %s (or give one with --image): %w", ns, err)
	}
	for _, p := range pl.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == names.OperatorContainer {
				return c.Image, nil
			}
		}
	}
	return "", fmt.Errorf("no operator pod in %s to take the image from: give the operator's image with --image, or its namespace with --operator-namespace", ns)
}

// DiskCheck measures a volume of a StorageClass in a short pod and says whether it meets
// etcd's guidance; the pod and its volume are deleted afterwards.
func (e *Env) DiskCheck(ctx context.Context, o DiskCheckOptions) error {
	if o.Size == "" {
		o.Size = "1Gi"
	}
	if o.Image == "" {
		img, err := e.operatorImage(ctx, o.OperatorNamespace)
		if err != nil {
			return err
		}
		o.Image = img
	}
	p, err := diskCheckPod(e.Namespace, o)
	if err != nil {
		return err
	}
	if err := e.Client.Create(ctx, p); err != nil {
		return fmt.Errorf("creating the disk-check pod in %s: %w", e.Namespace, err)
	}
	fmt.Fprintf(e.Err, "pod %s/%s measures a %s volume of StorageClass %s\n", e.Namespace, p.Name, o.Size, orDash(o.StorageClass))
	defer func() {
		// Its own pod, by UID: a pod of the same name made since is left alone. The volume goes
		// with the pod.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := e.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(e.Err, "deleting the disk-check pod %s: %v; delete it with kubectl delete pod -n %s %s\n", p.Name, err, e.Namespace, p.Name)
		}
	}()
	err = e.waitFor(ctx, o.Timeout, "disk check", func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, "", err
		}
		return podState(p)
	})
	if err != nil {
		return err
	}
	log, err := e.podLog(ctx, p.Namespace, p.Name, "disk-check")
	if err != nil {
		return fmt.Errorf("reading the disk-check pod's log: %w", err)
	}
	r, err := diskcheck.Parse(log)
	if err != nil {
		return err
	}
	v := diskcheck.Judge(r)
	fmt.Fprintf(e.Out, "StorageClass %s: %d writes of %d bytes, each made durable with fdatasync\n", orDash(o.StorageClass), r.Syncs, r.BlockSize)
	for _, l := range v.Lines {
		fmt.Fprintf(e.Out, "  %s\n", l)
	}
	if !v.Met {
		return errors.New("the StorageClass does not meet etcd's disk guidance")
	}
	fmt.Fprintln(e.Out, "the StorageClass meets etcd's disk guidance")
	return nil
}

// podLog reads a container's log (PodLogs in tests).
func (e *Env) podLog(ctx context.Context, ns, pod, container string) ([]byte, error) {
	if e.PodLogs != nil {
		return e.PodLogs(ctx, ns, pod, container)
	}
	if e.Kube == nil {
		return nil, errors.New("no API server connection for logs")
	}
	return e.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
}
