package etcdcluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
)

// defrags lists the members the operator defragmented, in order.
func defrags(f *etcd.Fake) []string {
	var out []string
	for _, c := range f.Calls() {
		if m, ok := strings.CutPrefix(c, "Defragment "); ok {
			out = append(out, m)
		}
	}
	return out
}

// spec.maintenance.defrag: over the threshold, the fragmented followers are defragmented one
// at a time, then the leader after leadership moved to a defragmented follower; a scheduled
// round takes every member over the minimum and records when it finished.
func TestDefragMaintenance(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	op := startOperator(t, ns, fake)
	bootstrap(t, ns, "demo", 3, fake)
	const mib = 1 << 20
	for _, m := range []string{"demo-0", "demo-1", "demo-2"} {
		fake.SetFragmented(m, 100*mib, 30*mib) // 70% free pages
	}
	leader := getCluster(t, ns, "demo").Status.Leader
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{ThresholdPercent: ptr.To[int32](50)}
	})
	eventually(t, timeout, "every member defragmented", func() error {
		if d := defrags(fake); len(d) != 3 {
			return fmt.Errorf("defragmented %v", d)
		}
		return nil
	})
	d := defrags(fake)
	if d[2] != leader || slices.Contains(d[:2], leader) {
		t.Fatalf("defragmented %v; the leader %s must be last", d, leader)
	}
	if moved := slices.ContainsFunc(fake.Calls(), func(c string) bool { return strings.HasPrefix(c, "MoveLeader") }); !moved {
		t.Fatalf("leadership did not move before the leader was defragmented: %v", fake.Calls())
	}
	assertEvent(t, ns, v1alpha1.EventDefragmented, "defragmenting "+leader+": 73400320 of its 104857600 bytes are free pages")
	waitFor(t, ns, "demo", "the cluster settled", settled(3))
	assertNoWrites(t, op)

	// A scheduled round (due at once: every minute) takes members over the minimum, even under
	// the threshold, and records its end.
	fake.SetFragmented("demo-1", 100*mib, 80*mib)
	patchCluster(t, ns, "demo", func(c *v1alpha1.EtcdCluster) {
		c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{Schedule: "@every 1s", MinFreeBytes: ptr.To[int64](8 * mib)}
	})
	waitFor(t, ns, "demo", "the scheduled round to end", func(c *v1alpha1.EtcdCluster) error {
		if c.Status.LastDefragTime == nil {
			return fmt.Errorf("no lastDefragTime")
		}
		return nil
	})
	if d := defrags(fake); len(d) != 4 || d[3] != "demo-1" {
		t.Fatalf("defragmented %v; the round should have taken demo-1 alone", d)
	}
}

// A defragmentation schedule that matches no date (accepted before the schedule parser refused
// such schedules) does not stop the cluster's passes, and is never due.
func TestDefragScheduleThatNeverRuns(t *testing.T) {
	c := newCluster("ns", "never", 3)
	c.Spec.Maintenance.Defrag = &v1alpha1.DefragSpec{Schedule: "0 3 30 2 *"}
	if err := validateSpec(c, false); err != nil {
		t.Fatalf("validateSpec = %v, want none", err)
	}
	if p := defragPolicy(c, time.Now()); p.Due {
		t.Fatalf("a schedule that matches no date is due: %+v", p)
	}
}
