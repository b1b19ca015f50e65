package settle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// namespaceTerminating is the error the API server's admission returns for a create in a
// namespace being deleted.
func namespaceTerminating() error {
	err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "etcd-0",
		errors.New("unable to create new content in namespace qc because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace qc is being terminated", Field: "metadata.namespace"})
	return err
}

// A pass whose view went out of date ends without an error (no stack trace, no backoff): a
// conflict is read again in staleRetry, a create in a namespace being deleted is not retried.
// Every other error, and every result without one, goes through unchanged.
func TestSettle(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "etcd.quorate.dev", Resource: "etcdclusters"}, "etcd",
		errors.New("the object has been modified"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "etcd-0", errors.New("denied by a policy"))
	unhealthy := errors.New("etcd did not answer")
	type outcome struct {
		res  ctrl.Result
		err  error
		logs []string
	}
	for _, tc := range []struct {
		name string
		res  ctrl.Result
		err  error
		want outcome
	}{
		{"no error", ctrl.Result{RequeueAfter: 5 * time.Second}, nil, outcome{ctrl.Result{RequeueAfter: 5 * time.Second}, nil, nil}},
		{"a status write refused for a conflict", ctrl.Result{}, fmt.Errorf("writing status: %w", conflict),
			outcome{ctrl.Result{RequeueAfter: staleRetry}, nil, []string{msgConflict}}},
		{"a step's error and a conflicting status write", ctrl.Result{}, errors.Join(unhealthy, conflict),
			outcome{ctrl.Result{RequeueAfter: staleRetry}, nil, []string{msgConflict}}},
		{"a pod created in a namespace being deleted", ctrl.Result{}, fmt.Errorf("creating *v1.Pod etcd-0: %w", namespaceTerminating()),
			outcome{ctrl.Result{}, nil, []string{msgNamespaceTerminated}}},
		{"forbidden for another cause", ctrl.Result{}, forbidden, outcome{ctrl.Result{}, forbidden, nil}},
		{"not an API error", ctrl.Result{RequeueAfter: time.Second}, unhealthy, outcome{ctrl.Result{RequeueAfter: time.Second}, unhealthy, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got outcome
			log := logr.New(messageSink{&got.logs})
			got.res, got.err = Result(logf.IntoContext(context.Background(), log), tc.res, tc.err)
			if got.res != tc.want.res || got.err != tc.want.err || fmt.Sprint(got.logs) != fmt.Sprint(tc.want.logs) {
				t.Errorf("settle = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// messageSink records the message of each log line, an error's prefixed with "error: ".
type messageSink struct{ msgs *[]string }

func (messageSink) Init(logr.RuntimeInfo)                 {}
func (messageSink) Enabled(int) bool                      { return true }
func (s messageSink) Info(_ int, msg string, _ ...any)    { *s.msgs = append(*s.msgs, msg) }
func (s messageSink) Error(_ error, msg string, _ ...any) { *s.msgs = append(*s.msgs, "error: "+msg) }
func (s messageSink) WithValues(...any) logr.LogSink      { return s }
func (s messageSink) WithName(string) logr.LogSink        { return s }

// A status write for an object deleted since the pass read it has nothing left to write to.
func TestPatchStatusOfDeletedObject(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme()).WithStatusSubresource(&v1alpha1.EtcdBackup{}).Build()
	original := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", ResourceVersion: "7"}}
	updated := original.DeepCopy()
	updated.Status.Phase = v1alpha1.BackupRunning
	gone, err := PatchStatus(ctx, c, updated, original)
	if !gone || err != nil {
		t.Fatalf("PatchStatus = %v, %v; want true, nil", gone, err)
	}
}

// testScheme knows the API's kinds.
func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}
