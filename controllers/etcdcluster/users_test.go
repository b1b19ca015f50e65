package etcdcluster

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// Declared users get a Secret in the servicebinding.io layout before etcd authentication goes
// on; the operator and the members stay admins; a user taken out loses its Secret; with no
// users left authentication stays on (removed users' certificates stay refused) and the shared
// client certificate is an admin, until users are declared again.
func TestUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	kubelet(t, ns)
	c := newCluster(ns, "app", 3)
	c.Spec.Users = []v1alpha1.UserSpec{{Name: "orders", ReadWrite: []string{"/orders/"}}, {Name: "reporting", ReadOnly: []string{"/orders/"}}}
	bootstrapCluster(t, c, fake)

	waitFor(t, ns, "app", "authentication on for both users", func(c *v1alpha1.EtcdCluster) error {
		if !c.Status.AuthEnabled || !slices.Equal(c.Status.Users, []string{"orders", "reporting"}) {
			return fmt.Errorf("status authEnabled=%v users=%v", c.Status.AuthEnabled, c.Status.Users)
		}
		return nil
	})
	want := etcd.AuthSpec{Enabled: true, Admins: []string{"quorate-operator", "app-server"}, Users: []etcd.User{
		{Name: "orders", ReadWrite: []string{"/orders/"}}, {Name: "reporting", ReadOnly: []string{"/orders/"}}},
		Retired: []string{"quorate-client"}}
	if got := fake.Auth(); !reflect.DeepEqual(got, want) {
		t.Errorf("etcd auth\n %+v\nwant\n %+v", got, want)
	}
	s := &corev1.Secret{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-user-orders"}, s); err != nil {
		t.Fatal(err)
	}
	plain := map[string]string{}
	for k, v := range s.Data {
		if k != pki.KeyCert && k != pki.KeyKey && k != pki.KeyCACert {
			plain[k] = string(v)
		}
	}
	host := "app-client." + ns + ".svc"
	if wantPlain := map[string]string{"type": "etcd", "provider": "quorate", "host": host, "port": "2379",
		"endpoints": "https://" + host + ":2379", "username": "orders"}; !reflect.DeepEqual(plain, wantPlain) || s.Type != "servicebinding.io/etcd" {
		t.Errorf("secret app-user-orders: type %s, data %v; want servicebinding.io/etcd, %v", s.Type, plain, wantPlain)
	}
	ca := &corev1.Secret{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.CASecretsOf("app").Cluster}, ca); err != nil {
		t.Fatal(err)
	}
	if err := pki.CheckLeaf(s.Data[pki.KeyCert], s.Data[pki.KeyKey], ca.Data[pki.KeyCACert], pki.Check{Usage: pki.ClientOnly, Now: time.Now()}); err != nil {
		t.Errorf("the user's certificate: %v", err)
	}
	if cn := parseCert(t, s.Data[pki.KeyCert]).Subject.CommonName; cn != "orders" {
		t.Errorf("the user's certificate names %q, want orders (etcd takes the user from it)", cn)
	}

	// reporting goes: its Secret too.
	patchCluster(t, ns, "app", func(c *v1alpha1.EtcdCluster) { c.Spec.Users = c.Spec.Users[:1] })
	eventually(t, timeout, "the Secret of reporting to go", func() error {
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-user-reporting"}, &corev1.Secret{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	assertEvent(t, ns, v1alpha1.EventUsersChanged, "deleted Secret app-user-reporting: user reporting is no longer in spec.users")

	// No users: authentication stays on, the shared client is an admin.
	patchCluster(t, ns, "app", func(c *v1alpha1.EtcdCluster) { c.Spec.Users = nil })
	waitFor(t, ns, "app", "no users, authentication on", func(c *v1alpha1.EtcdCluster) error {
		if !c.Status.AuthEnabled || len(c.Status.Users) != 0 {
			return fmt.Errorf("status authEnabled=%v users=%v", c.Status.AuthEnabled, c.Status.Users)
		}
		return nil
	})
	eventually(t, timeout, "etcd's authentication with no users", func() error {
		want := etcd.AuthSpec{Enabled: true, Admins: []string{"quorate-operator", "app-server", "quorate-client"}}
		if got := fake.Auth(); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("etcd auth\n %+v\nwant\n %+v", got, want)
		}
		return nil
	})
}

// A cluster whose etcd has authentication on although its status says off (status lost, or the
// cluster adopted or restored from one that had users) keeps it on: the earlier spec's managed
// users go, the shared client is an admin, and status says authentication is on.
func TestAuthOnInEtcdStaysOn(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	fake.SetAuth(etcd.AuthSpec{Enabled: true, Admins: []string{"quorate-operator", "app-server"}, Users: []etcd.User{{Name: "orders", ReadWrite: []string{"/orders/"}}}})
	startOperator(t, ns, fake)
	kubelet(t, ns)
	bootstrapCluster(t, newCluster(ns, "app", 3), fake)
	waitFor(t, ns, "app", "authentication on in status", func(c *v1alpha1.EtcdCluster) error {
		if !c.Status.AuthEnabled || len(c.Status.Users) != 0 {
			return fmt.Errorf("status authEnabled=%v users=%v", c.Status.AuthEnabled, c.Status.Users)
		}
		return nil
	})
	want := etcd.AuthSpec{Enabled: true, Admins: []string{"quorate-operator", "app-server", "quorate-client"}}
	if got := fake.Auth(); !reflect.DeepEqual(got, want) {
		t.Errorf("etcd auth\n %+v\nwant\n %+v", got, want)
	}
}
