package plugin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// Credentials are the client certificate the plugin uses for a cluster, PEM encoded; empty
// for a plaintext cluster.
type Credentials struct {
	// From is the Secret the certificate was read from.
	From               string
	CertPEM, KeyPEM    []byte
	CAPEM              []byte
	ServerName         string
	PlaintextNoSecrets bool
}

// MemberConn is a connection to one member.
type MemberConn interface {
	// Endpoint is the member's client URL as the plugin reaches it (a local port).
	Endpoint() string
	Credentials() Credentials
	Status(ctx context.Context) (etcd.Status, error)
	MemberList(ctx context.Context) (clusterID uint64, members []etcd.Member, err error)
	Alarms(ctx context.Context) ([]etcd.Alarm, error)
	// HashKV is the member's hash of its keyspace at its current revision.
	HashKV(ctx context.Context) (hash uint32, revision int64, err error)
	Close() error
}

// EtcdOpener connects to one member of a cluster.
type EtcdOpener interface {
	Open(ctx context.Context, c *v1alpha1.EtcdCluster, member string) (MemberConn, error)
}

// clientCredentials reads the client certificate the operator itself uses: its own
// (<cluster>-operator-tls, an etcd administrator when authentication is on), the shared one
// of clusters made before it existed, or the user's with tls.clientSecretName.
func clientCredentials(ctx context.Context, cl client.Client, c *v1alpha1.EtcdCluster) (Credentials, error) {
	if !c.Spec.TLS.IsEnabled() {
		return Credentials{PlaintextNoSecrets: true}, nil
	}
	candidates := []string{names.OperatorSecret(c.Name), names.ClientSecret(c.Name)}
	if c.Spec.TLS.UserProvided() {
		candidates = []string{c.Spec.TLS.ClientSecretName}
	}
	var lastErr error
	for _, n := range candidates {
		s := &corev1.Secret{}
		err := cl.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: n}, s)
		if apierrors.IsNotFound(err) {
			lastErr = err
			continue
		}
		if err != nil {
			return Credentials{}, fmt.Errorf("reading the client certificate Secret %s (the plugin needs get on secrets in %s): %w", n, c.Namespace, err)
		}
		return Credentials{From: n, CertPEM: s.Data[pki.KeyCert], KeyPEM: s.Data[pki.KeyKey], CAPEM: s.Data[pki.KeyCACert],
			ServerName: names.ClientHost(c.Name, c.Namespace)}, nil
	}
	return Credentials{}, fmt.Errorf("no client certificate Secret of cluster %s (looked for %v): %w", c.Name, candidates, lastErr)
}

// TLS is the client configuration for the credentials (nil for plaintext).
func (cr Credentials) TLS() (*tls.Config, error) {
	if cr.PlaintextNoSecrets {
		return nil, nil
	}
	return pki.ClientTLS(cr.CertPEM, cr.KeyPEM, cr.CAPEM, cr.ServerName)
}

// portForwardOpener reaches a member through a port-forward to its pod, with the API
// server's pods/portforward (websocket, falling back to SPDY).
type portForwardOpener struct{ env *Env }

func (o *portForwardOpener) Open(ctx context.Context, c *v1alpha1.EtcdCluster, member string) (MemberConn, error) {
	creds, err := clientCredentials(ctx, o.env.Client, c)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := creds.TLS()
	if err != nil {
		return nil, fmt.Errorf("client certificate %s: %w", creds.From, err)
	}
	port, stop, err := o.forward(ctx, c.Namespace, member, names.ClientPort)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	ep := scheme + "://127.0.0.1:" + strconv.Itoa(port)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, TLS: tlsCfg, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		close(stop)
		return nil, fmt.Errorf("connecting to %s through a port-forward: %w", member, err)
	}
	return &pfConn{ep: ep, creds: creds, c: cli, stop: stop}, nil
}

// forward opens a port-forward to the pod's port on a free local port of 127.0.0.1.
func (o *portForwardOpener) forward(ctx context.Context, namespace, pod string, port int) (int, chan struct{}, error) {
	if o.env.Kube == nil || o.env.REST == nil {
		return 0, nil, errors.New("no API server connection for a port-forward")
	}
	u := o.env.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(o.env.REST)
	if err != nil {
		return 0, nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, o.env.REST); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return 0, nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return 0, nil, fmt.Errorf("port-forward to pod %s/%s (needs create on pods/portforward): %w", namespace, pod, err)
	case <-ctx.Done():
		close(stop)
		return 0, nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return 0, nil, fmt.Errorf("port-forward to pod %s/%s: no local port: %v", namespace, pod, err)
	}
	return int(ports[0].Local), stop, nil
}

type pfConn struct {
	ep    string
	creds Credentials
	c     *clientv3.Client
	stop  chan struct{}
}

func (p *pfConn) Endpoint() string         { return p.ep }
func (p *pfConn) Credentials() Credentials { return p.creds }

func (p *pfConn) Status(ctx context.Context) (etcd.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := p.c.Status(ctx, p.ep)
	if err != nil {
		return etcd.Status{}, err
	}
	return etcd.Status{ClusterID: r.Header.ClusterId, MemberID: r.Header.MemberId, Leader: r.Leader, RaftTerm: r.RaftTerm,
		Revision: r.Header.Revision, Version: r.Version, DBSize: r.DbSize, DBSizeInUse: r.DbSizeInUse, IsLearner: r.IsLearner, Errors: r.Errors}, nil
}

func (p *pfConn) MemberList(ctx context.Context) (uint64, []etcd.Member, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := p.c.MemberList(ctx)
	if err != nil {
		return 0, nil, err
	}
	out := make([]etcd.Member, len(r.Members))
	for i, m := range r.Members {
		out[i] = etcd.Member{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner}
	}
	return r.Header.ClusterId, out, nil
}

func (p *pfConn) Alarms(ctx context.Context) ([]etcd.Alarm, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := p.c.AlarmList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]etcd.Alarm, 0, len(r.Alarms))
	for _, a := range r.Alarms {
		out = append(out, etcd.Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}
	return out, nil
}

func (p *pfConn) HashKV(ctx context.Context) (uint32, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := p.c.HashKV(ctx, p.ep, 0)
	if err != nil {
		return 0, 0, err
	}
	return r.Hash, r.Header.Revision, nil
}

func (p *pfConn) Close() error {
	err := p.c.Close()
	close(p.stop)
	return err
}
