package etcdcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
)

// Two installs that both see a cluster whose claim Lease is deleted again and again while it
// scales (as a GitOps prune or a namespace clean-up would) never act in overlapping windows:
// whenever the install that writes to the cluster changes, the other one's last write came at
// least the claims' margin before, and no membership change is made twice.
func TestDeletedClaimNeverLetsTwoInstallsAct(t *testing.T) {
	// Not parallel: it measures the gap between two installs' writes against the claim's
	// margin, which other tests' load would blur.
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	kubelet(t, ns)
	ops := map[string]*operator{
		"first":  startInstall(t, ns, fake, "first"),
		"second": startInstall(t, ns, fake, "second"),
	}
	bootstrap(t, ns, "dl", 3, fake)

	// prune deletes the claim's Lease every 700 ms until n deletions found it.
	prune := func(n int32) {
		t.Helper()
		var deleted atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(700 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				err := k8s.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dl-operator"}})
				if err == nil {
					deleted.Add(1)
				}
			}
		}()
		defer func() { cancel(); <-done }()
		eventually(t, timeout, fmt.Sprintf("%d deletions of the claim's Lease", n), func() error {
			if got := deleted.Load(); got < n {
				return fmt.Errorf("%d deletions", got)
			}
			return nil
		})
	}
	patchReplicas(t, ns, "dl", 5)
	prune(12)
	waitFor(t, ns, "dl", "5 members", settled(5))
	patchReplicas(t, ns, "dl", 3)
	prune(12)
	waitFor(t, ns, "dl", "3 members", settled(3))

	u := "https://dl-%d.dl-peer." + ns + ".svc:2380"
	want := []string{fmt.Sprintf("AddLearner "+u, 3), "Promote dl-3", fmt.Sprintf("AddLearner "+u, 4), "Promote dl-4", "Remove dl-4", "Remove dl-3"}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Errorf("membership changes with the claim deleted again and again:\n got %q\nwant %q", got, want)
	}

	// Every write to the cluster (the claims' own Lease and Events aside), by install and time.
	type write struct {
		stampedWrite
		by string
	}
	var writes []write
	for id, op := range ops {
		for _, w := range op.writes.history() {
			if strings.Contains(w.write, "*v1.Lease") || strings.Contains(w.write, "Event/Ownership") || strings.Contains(w.write, "Event/"+v1alpha1.EventOwnedElsewhere) {
				continue
			}
			writes = append(writes, write{w, id})
		}
	}
	slices.SortFunc(writes, func(a, b write) int { return a.at.Compare(b.at) })
	margin := ownershipTerm / 4
	handovers := 0
	for i := 1; i < len(writes); i++ {
		prev, cur := writes[i-1], writes[i]
		if prev.by == cur.by {
			continue
		}
		handovers++
		if gap := cur.at.Sub(prev.at); gap < margin {
			t.Errorf("%s wrote %q %s after %s wrote %q: both acted within the claims' margin (%s)", cur.by, cur.write, gap, prev.by, prev.write, margin)
		}
	}
	t.Logf("%d writes, %d handovers between the installs", len(writes), handovers)
	assertEvent(t, ns, v1alpha1.EventOwnershipLost, "lost this cluster's claim: its Lease dl-operator was deleted")
}
