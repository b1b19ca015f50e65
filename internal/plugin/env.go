// Package plugin is the kubectl-quorate plugin: commands that read and change EtcdClusters
// with the user's kubeconfig and RBAC. Every change goes through the CRDs, as the fields the
// operator already acts on (spec.paused, token fields, EtcdBackup objects, bootstrap of a new
// EtcdCluster); the plugin never changes etcd behind the operator's back. It reads etcd only
// (status, report, etcdctl) through a port-forward to a member pod with the cluster's client
// certificate.
package plugin

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// Scheme knows the core types and Quorate's.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(Scheme))
}

// Env is what every command works with: API clients with the user's credentials, the
// namespace, the output streams and the clock.
type Env struct {
	Client client.Client
	// Kube and REST are nil in unit tests; commands that need them (logs, port-forwards)
	// then record that they could not reach them.
	Kube      kubernetes.Interface
	REST      *rest.Config
	Namespace string
	Out, Err  io.Writer
	Now       func() time.Time
	// Poll is the interval at which commands look at the object they wait for.
	Poll time.Duration
	// Etcd opens an etcd session with a cluster (port-forward and client certificate); a
	// fake in unit tests.
	Etcd EtcdOpener
	// PodLogs reads a container's log; nil: through Kube.
	PodLogs func(ctx context.Context, namespace, pod, container string) ([]byte, error)
}

// KubeFlags are kubectl's connection flags.
type KubeFlags struct {
	Kubeconfig, Context, Namespace string
}

// NewEnv builds an Env from the user's kubeconfig, as kubectl does: --kubeconfig, then
// $KUBECONFIG, then ~/.kube/config; the namespace from -n or the context.
func NewEnv(f KubeFlags, out, errOut io.Writer) (*Env, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.Context}
	if f.Namespace != "" {
		overrides.Context.Namespace = f.Namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace of the kubeconfig's context: %w", err)
	}
	return EnvFor(cfg, ns, out, errOut)
}

// EnvFor builds an Env for a REST config.
func EnvFor(cfg *rest.Config, namespace string, out, errOut io.Writer) (*Env, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-quorate"
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	e := &Env{Client: c, Kube: kube, REST: cfg, Namespace: namespace, Out: out, Err: errOut, Now: time.Now, Poll: 2 * time.Second}
	e.Etcd = &portForwardOpener{env: e}
	return e, nil
}

func (e *Env) cluster(ctx context.Context, name string) (*v1alpha1.EtcdCluster, error) {
	c := &v1alpha1.EtcdCluster{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, c); err != nil {
		return nil, fmt.Errorf("reading EtcdCluster %s/%s: %w", e.Namespace, name, err)
	}
	return c, nil
}
