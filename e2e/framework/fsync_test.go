package framework

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/e2e/report"
	"github.com/quorate-dev/quorate/internal/diskcheck"
)

// TestProbeFsync: on a platform that refuses a chosen fsGroup (OpenShift's restricted-v2),
// the probe pod is created again without one; its termination message becomes the report's
// fsync row, and its namespace is deleted afterwards.
func TestProbeFsync(t *testing.T) {
	var created []*corev1.Pod
	var deleted []string
	c := fake.NewClientBuilder().WithScheme(Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if p, ok := o.(*corev1.Pod); ok {
				created = append(created, p.DeepCopy())
				if p.Spec.SecurityContext.FSGroup != nil {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name, nil)
				}
				p.Spec.NodeName = "worker-2"
				p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "probe",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						Message: diskcheck.Result{Syncs: 1000, BlockSize: 2300, P50: 1200 * time.Microsecond, P99: 8300 * time.Microsecond, Max: 15 * time.Millisecond,
							SyncsPerSec: 700, ThroughputBytesPerSec: 100 << 20}.Encode()}}}}}
			}
			return c.Create(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if ns, ok := o.(*corev1.Namespace); ok {
				deleted = append(deleted, ns.Name)
			}
			return c.Delete(ctx, o, opts...)
		},
	}).Build()
	o := &Options{WorkloadImage: "workload:1", NamespacePrefix: "qc-", StorageClass: "csi-hostpath", MemberNodeSelector: "pool=etcd", MemberTolerations: "etcd:NoSchedule"}
	if err := o.checkShape(); err != nil {
		t.Fatal(err)
	}
	s := &Suite{Opts: o, Client: c}
	got, err := s.probeFsync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &report.EnvFsync{StorageClass: "csi-hostpath", Node: "worker-2", Samples: 1000, BlockSize: 2300, P50: 1200 * time.Microsecond, P99: 8300 * time.Microsecond, Max: 15 * time.Millisecond,
		Judgement: []string{"ok: fdatasync p99 8.3ms (p50 1.2ms, max 15ms) is within etcd's 10ms", "ok: 700 durable writes a second, enough for a heavily loaded cluster (500)", "sequential write throughput 100.0 MiB/s (snapshots and defragmentation copy the database at this rate)"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fsync %+v, want %+v", got, want)
	}
	if len(created) != 2 || *created[0].Spec.SecurityContext.FSGroup != probeUID || created[1].Spec.SecurityContext.FSGroup != nil {
		t.Fatalf("created %d probe pods; want one with fsGroup %d, then one without", len(created), probeUID)
	}
	p := created[1]
	if ns := p.Namespace; !strings.HasPrefix(ns, "qc-fsync-probe-") || !reflect.DeepEqual(deleted, []string{ns}) {
		t.Errorf("probe in namespace %s, deleted %v", ns, deleted)
	}
	if got := p.Spec.NodeSelector; !reflect.DeepEqual(got, map[string]string{"pool": "etcd"}) {
		t.Errorf("node selector %v", got)
	}
	if got := p.Spec.Tolerations; len(got) != 1 || got[0].Key != "etcd" {
		t.Errorf("tolerations %v", got)
	}
	if sc := p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName; sc == nil || *sc != "csi-hostpath" {
		t.Errorf("volume's StorageClass %v", sc)
	}
}

func TestFsyncOfAFailedProbe(t *testing.T) {
	o := &Options{}
	p := (&Suite{Opts: o}).fsyncProbePod("ns", nil)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "fsync probe: open /data/x: permission denied"}}}}
	_, err := fsyncOf(p)
	if err == nil || err.Error() != "the probe failed (exit 1): fsync probe: open /data/x: permission denied" {
		t.Errorf("error %v", err)
	}
}
