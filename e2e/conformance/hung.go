package conformance

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/e2e/framework"
	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/internal/names"
)

// FollowerHung stops (SIGSTOP) a follower's etcd, as a VM or a node that hangs does: its
// sockets stay open, the kernel still completes TCP handshakes on its ports, and nothing
// answers. Its pod must go NotReady and leave the client Service's endpoints, so that a client
// that knows only the Service is no longer sent to it (a readiness that only connects to the
// port would keep it there); resumed, it must come back. A quorum stays throughout: clients
// whose requests were in flight to it wait out their request timeout, as for a partitioned
// member, and every checker passes.
func FollowerHung() framework.Scenario {
	var follower string
	var paused []localcluster.Paused
	return framework.Scenario{Name: "follower-hung", Labels: safety, Replicas: 3, Class: framework.Partition, NeedsNode: true,
		Steps: []framework.Step{
			{Name: "find a follower", Do: func(ctx context.Context, r *framework.Run) (err error) {
				follower, err = r.Follower(ctx)
				return err
			}},
			{Name: "hang the follower's etcd (SIGSTOP)", Do: func(ctx context.Context, r *framework.Run) (err error) {
				paused, err = r.PauseEtcd(ctx, []string{follower})
				return err
			}},
			// Readiness fails after 3 probes 5 s apart (each allowed 5 s), then the kubelet's
			// status and the EndpointSlice follow: 25-35 s. Liveness would restart the
			// container only after 8 failures 10 s apart (80-90 s), so the pod is still the
			// hung one when this gives up.
			{Name: "the follower's pod goes NotReady and leaves the client Service", Do: func(ctx context.Context, r *framework.Run) error {
				return r.WaitFor(ctx, follower+" to leave the client Service", time.Minute, func() error {
					return inClientService(ctx, r, follower, false)
				})
			}},
			{Name: "resume the follower: it answers and comes back into the client Service", Do: func(ctx context.Context, r *framework.Run) error {
				resumed, err := localcluster.ResumeContainers(paused)
				if err != nil {
					return err
				}
				if len(resumed) != len(paused) {
					return fmt.Errorf("resumed %d of the %d processes paused: the container was restarted while hung", len(resumed), len(paused))
				}
				r.Event("fault", "resumed", "resumed the etcd of "+follower)
				return r.WaitFor(ctx, follower+" back in the client Service", 2*time.Minute, func() error {
					return inClientService(ctx, r, follower, true)
				})
			}},
			waitSettled(3),
		}}
}

// inClientService is nil when member's pod is Ready and a ready endpoint of the cluster's
// client Service (want), or neither (!want).
func inClientService(ctx context.Context, r *framework.Run, member string, want bool) error {
	pod := &corev1.Pod{}
	if err := r.Suite.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: member}, pod); err != nil {
		return err
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	var slices discoveryv1.EndpointSliceList
	if err := r.Suite.Client.List(ctx, &slices, client.InNamespace(r.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: names.ClientService(r.Cluster)}); err != nil {
		return err
	}
	served := false
	for _, es := range slices.Items {
		for _, ep := range es.Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" && ep.TargetRef.Name == member && ep.TargetRef.UID == pod.UID {
				served = served || ptr.Deref(ep.Conditions.Ready, false)
			}
		}
	}
	if ready != want || served != want {
		return fmt.Errorf("pod %s Ready %v, a ready endpoint of the client Service %v; want both %v", member, ready, served, want)
	}
	return nil
}
