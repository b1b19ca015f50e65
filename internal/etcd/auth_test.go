package etcd

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// authEtcd starts a real etcd (KUBEBUILDER_ASSETS) that authenticates clients by their
// certificate, as members do, and returns a client factory for a common name, and the URL of
// its metrics and health port.
func authEtcd(t *testing.T) (func(cn string) *clientv3.Client, string) {
	t.Helper()
	now := time.Now()
	ca, err := pki.NewCA("auth-test-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	server, err := ca.Issue("server", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, pki.ServerAndClient, now)
	if err != nil {
		t.Fatal(err)
	}
	e := testsupport.StartEtcd(t, "auth", true, "--client-cert-auth=true", "--trusted-ca-file="+write("ca.crt", ca.CertPEM),
		"--cert-file="+write("server.crt", server.CertPEM), "--key-file="+write("server.key", server.KeyPEM))
	clientURL, metricsURL := e.ClientURL, e.MetricsURL
	var clients []*clientv3.Client
	t.Cleanup(func() {
		for _, c := range clients {
			_ = c.Close()
		}
	})
	as := func(cn string) *clientv3.Client {
		pair, err := ca.Issue(cn, nil, nil, pki.ClientOnly, now)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := pki.ClientTLS(pair.CertPEM, pair.KeyPEM, ca.CertPEM, "localhost")
		if err != nil {
			t.Fatal(err)
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, TLS: cfg, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		return c
	}
	return as, metricsURL
}

func put(c *clientv3.Client, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Put(ctx, key, "v")
	return err
}

func get(c *clientv3.Client, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Get(ctx, key)
	return err
}

// Users limited to prefixes cannot read or write outside them, on a real etcd, and the members'
// health endpoints keep answering while authentication is on.
func TestApplyAuth(t *testing.T) {
	as, metricsURL := authEtcd(t)
	ctx := context.Background()
	operator := as("quorate-operator")
	deadline := time.Now().Add(time.Minute)
	for put(operator, "/warm") != nil {
		if time.Now().After(deadline) {
			t.Fatal("etcd did not start")
		}
		time.Sleep(200 * time.Millisecond)
	}
	spec := AuthSpec{Enabled: true, Admins: []string{"quorate-operator"}, Users: []User{
		{Name: "orders", ReadWrite: []string{"/orders/"}},
		{Name: "reporting", ReadOnly: []string{"/orders/", "/reports/"}},
	}}
	changes, err := ApplyAuth(ctx, operator, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"user root added", "user root granted role root",
		"user quorate-operator added", "user quorate-operator granted role root",
		"role quorate-user-orders added", `role quorate-user-orders: granted readwrite "/orders/"`,
		"user orders added", "user orders granted role quorate-user-orders",
		"role quorate-user-reporting added", `role quorate-user-reporting: granted read "/orders/"`, `role quorate-user-reporting: granted read "/reports/"`,
		"user reporting added", "user reporting granted role quorate-user-reporting",
		"authentication enabled",
	}
	if !slices.Equal(changes, want) {
		t.Fatalf("changes\n %q\nwant\n %q", changes, want)
	}
	if changes, err := ApplyAuth(ctx, operator, spec); err != nil || len(changes) != 0 {
		t.Fatalf("applying the same spec again changed %q (%v)", changes, err)
	}

	orders, reporting, shared := as("orders"), as("reporting"), as("quorate-client")
	denied := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Errorf("%s: %v, want permission denied", what, err)
		}
	}
	if err := put(orders, "/orders/1"); err != nil {
		t.Errorf("orders writing /orders/1: %v", err)
	}
	denied("orders writing /billing/1", put(orders, "/billing/1"))
	denied("orders reading /reports/1", get(orders, "/reports/1"))
	if err := get(reporting, "/orders/1"); err != nil {
		t.Errorf("reporting reading /orders/1: %v", err)
	}
	denied("reporting writing /orders/2", put(reporting, "/orders/2"))
	if err := put(shared, "/orders/3"); err == nil {
		t.Error("the shared client certificate, which names no user, could still write")
	}
	for _, path := range []string{"/health", "/livez", "/readyz"} {
		resp, err := http.Get(metricsURL + path) //nolint:noctx // a local etcd started by the test
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answers %s while authentication is on", path, resp.Status)
		}
	}

	// A user taken out of the spec goes with its role; the others keep their access.
	spec.Users = spec.Users[:1]
	changes, err = ApplyAuth(ctx, operator, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user reporting deleted", "role quorate-user-reporting deleted"}; !slices.Equal(changes, want) {
		t.Errorf("removing reporting: %q, want %q", changes, want)
	}
	if err := get(reporting, "/orders/1"); err == nil {
		t.Error("a deleted user could still read")
	}
	if err := put(orders, "/orders/4"); err != nil {
		t.Errorf("orders after reporting went: %v", err)
	}

	// No users, authentication kept on (as the operator keeps it): the removed user's
	// certificate stays refused, and the shared client certificate becomes an admin.
	noUsers := AuthSpec{Enabled: true, Admins: append(slices.Clone(spec.Admins), "quorate-client")}
	changes, err = ApplyAuth(ctx, operator, noUsers)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user quorate-client added", "user quorate-client granted role root", "user orders deleted", "role quorate-user-orders deleted"}; !slices.Equal(changes, want) {
		t.Errorf("removing the last user: %q, want %q", changes, want)
	}
	denied("orders, removed, writing /orders/5", put(orders, "/orders/5"))
	if err := put(shared, "/anything"); err != nil {
		t.Errorf("with no users, the shared certificate cannot write: %v", err)
	}
	// Users declared again: the shared client's user goes after theirs are made.
	again := AuthSpec{Enabled: true, Admins: spec.Admins, Users: spec.Users, Retired: []string{"quorate-client"}}
	changes, err = ApplyAuth(ctx, operator, again)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"role quorate-user-orders added", `role quorate-user-orders: granted readwrite "/orders/"`, "user orders added", "user orders granted role quorate-user-orders", "user quorate-client deleted"}; !slices.Equal(changes, want) {
		t.Errorf("declaring users again: %q, want %q", changes, want)
	}
	if err := put(shared, "/orders/6"); err == nil {
		t.Error("with users declared again, the shared client certificate could still write")
	}

	// Authentication off (ApplyAuth can; the operator no longer asks it): it goes off first,
	// then the managed users and roles.
	changes, err = ApplyAuth(ctx, operator, AuthSpec{Admins: spec.Admins})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"authentication disabled", "user orders deleted", "role quorate-user-orders deleted"}; !slices.Equal(changes, want) {
		t.Errorf("disabling: %q, want %q", changes, want)
	}
	if err := put(shared, "/anything"); err != nil {
		t.Errorf("with authentication off, the shared certificate cannot write: %v", err)
	}
}
