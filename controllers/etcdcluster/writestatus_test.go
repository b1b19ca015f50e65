package etcdcluster

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/internal/expectations"
)

// A status write the API server finds to change nothing (the status differs from the cached
// one only in a time's nanoseconds, which JSON drops) keeps the resourceVersion; the pass must
// not then wait for a newer copy of the cluster, which would never come. A write that changes
// something must still be waited for.
func TestWriteStatusExpectsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := k8s.Create(ctx, newCluster(ns, "ws", 1)); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: k8s, Recorder: record.NewFakeRecorder(10), Expectations: expectations.New(time.Hour)}
	key := client.ObjectKey{Namespace: ns, Name: "ws"}
	at := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)

	original := getCluster(t, ns, "ws")
	st := *original.Status.DeepCopy()
	st.LastDefragTime = &metav1.Time{Time: at}
	if err := r.writeStatus(ctx, original, st); err != nil {
		t.Fatal(err)
	}
	if r.Expectations.OwnerCurrent(key, original.ResourceVersion) {
		t.Fatal("after a status write that changed the cluster, its old copy counts as current")
	}

	written := getCluster(t, ns, "ws")
	if written.ResourceVersion == original.ResourceVersion {
		t.Fatal("the first status write did not change the resourceVersion")
	}
	st = *written.Status.DeepCopy()
	st.LastDefragTime = &metav1.Time{Time: at.Add(300 * time.Nanosecond)}
	if err := r.writeStatus(ctx, written, st); err != nil {
		t.Fatal(err)
	}
	if now := getCluster(t, ns, "ws"); now.ResourceVersion != written.ResourceVersion {
		t.Fatalf("a write of the same status in JSON changed the resourceVersion %s to %s: the test no longer tests a no-op write", written.ResourceVersion, now.ResourceVersion)
	}
	if !r.Expectations.OwnerCurrent(key, written.ResourceVersion) {
		t.Fatal("after a status write the API server found to change nothing, the cluster's current copy is held as stale (a pass would wait the expectations' TTL)")
	}
}
