package ownership

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
)

// A claim held with more than half its term left is not read again; one due for renewal is
// read and renewed; one another install holds is never assumed.
func TestClaimReadsTheLeaseOnlyWhenDue(t *testing.T) {
	ctx := context.Background()
	store := fake.NewClientBuilder().Build()
	reads := 0
	live := interceptor.NewClient(store, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		reads++
		return c.Get(ctx, k, obj, opts...)
	}})
	o := &Ownership{Identity: "ns-a/quorate-operator", Term: time.Minute}
	recorder := record.NewFakeRecorder(10)
	c := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo"}}
	cluster := types.NamespacedName{Namespace: "ns", Name: "demo"}
	claim := func(step string, wantAct bool, wantReads int) {
		t.Helper()
		act, _, err := o.Claim(ctx, store, live, recorder, c)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if act != wantAct || reads != wantReads {
			t.Fatalf("%s: act %v after %d Lease reads, want %v after %d", step, act, reads, wantAct, wantReads)
		}
	}
	claim("created", true, 1)
	claim("held", true, 1)
	claim("still held", true, 1)

	// Due for renewal: read and renewed.
	o.record(cluster, time.Now().Add(20*time.Second))
	claim("due", true, 2)
	lease := &coordinationv1.Lease{}
	if err := store.Get(ctx, types.NamespacedName{Namespace: "ns", Name: names.OwnerLease("demo")}, lease); err != nil {
		t.Fatal(err)
	}
	if time.Since(lease.Spec.RenewTime.Time) > 5*time.Second {
		t.Fatalf("the claim was not renewed: renewed at %s", lease.Spec.RenewTime.Time)
	}
	claim("renewed", true, 2)

	// Another install holds it (the Lease changed hands after it expired): once this install's
	// remembered term runs low it reads the Lease and stands back.
	lease.Spec.HolderIdentity = ptr.To("ns-b/quorate-operator")
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if err := store.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	o.record(cluster, time.Now().Add(10*time.Second))
	claim("held elsewhere", false, 3)
	claim("held elsewhere, read again", false, 4)

	o.Forget(cluster)
	if o.holding(cluster, time.Now()) {
		t.Fatal("a forgotten cluster is still held")
	}
}
