//go:build mutants

package resources

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
)

// pdb-counts-learners: with a learner up, the budget lets one voter more go.
func TestPDBCountsLearnersMutant(t *testing.T) {
	v := Voters{Members: 3, Learners: 1}
	if got := PDB(cluster(), v).Spec.MinAvailable.IntVal; got != 3 {
		t.Fatalf("without the mutant: minAvailable %d, want 3", got)
	}
	defer mutant.Set("pdb-counts-learners")()
	if got := PDB(cluster(), v).Spec.MinAvailable.IntVal; got != 2 {
		t.Fatalf("with pdb-counts-learners: minAvailable %d, want 2", got)
	}
}

// ready-before-answers: the member is Ready once its client port accepts connections; and every
// container of a member pod is told the active mutant (the launcher's and the restore's act
// there), while a pod built with none active has no such variable.
func TestReadyBeforeAnswersMutant(t *testing.T) {
	build := func() *corev1.Pod {
		t.Helper()
		pod, err := Pod(cluster(), MemberPod{Member: "demo-0", Bootstrap: true, Restore: &Restore{Bucket: "s3://b", Key: "k.db"}}, images)
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	pod := build()
	want := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(names.MetricsPort), Scheme: corev1.URISchemeHTTP}},
		PeriodSeconds: 5, TimeoutSeconds: 5, FailureThreshold: 3}
	if got := pod.Spec.Containers[0].ReadinessProbe; !reflect.DeepEqual(got, want) {
		t.Fatalf("without the mutant: readiness %+v, want %+v", got, want)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		for _, e := range c.Env {
			if e.Name == mutant.EnvVar {
				t.Fatalf("no mutant active, but container %s has %s=%s", c.Name, e.Name, e.Value)
			}
		}
	}

	defer mutant.Set("ready-before-answers")()
	pod = build()
	want = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(names.ClientPort)}},
		PeriodSeconds: 5, TimeoutSeconds: 5, FailureThreshold: 3}
	if got := pod.Spec.Containers[0].ReadinessProbe; !reflect.DeepEqual(got, want) {
		t.Fatalf("with ready-before-answers: readiness %+v, want %+v", got, want)
	}
	containers := append(pod.Spec.InitContainers, pod.Spec.Containers...)
	if len(containers) < 3 {
		t.Fatalf("a restoring bootstrap pod has %d containers, want the launcher's, the restore's and etcd", len(containers))
	}
	for _, c := range containers {
		if !slices.Contains(c.Env, corev1.EnvVar{Name: mutant.EnvVar, Value: "ready-before-answers"}) {
			t.Errorf("container %s is not told the active mutant: %v", c.Name, c.Env)
		}
	}
}
