package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestPausedClusterIsLeftAlone(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	c := newCluster(ns, "p", 3)
	c.Spec.Paused = true
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "p", "Progressing=False/Paused", func(c *v1alpha1.EtcdCluster) error {
		if p := condition(c, v1alpha1.ConditionProgressing); p.Status != metav1.ConditionFalse || p.Reason != v1alpha1.ReasonPaused {
			return fmt.Errorf("Progressing=%s/%s", p.Status, p.Reason)
		}
		return nil
	})
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("a paused cluster got pods %v", pods)
	}
	var secrets corev1.SecretList
	if err := k8s.List(context.Background(), &secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Fatalf("a paused cluster got secrets")
	}
}

func TestMissingUserSecretIsReported(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	c := newCluster(ns, "usr", 3)
	c.Spec.TLS = v1alpha1.TLSSpec{ServerSecretName: "mine-server", PeerSecretName: "mine-peer", ClientSecretName: "mine-client"}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	c = waitFor(t, ns, "usr", "Degraded TLSNotReady", func(c *v1alpha1.EtcdCluster) error {
		if d := condition(c, v1alpha1.ConditionDegraded); d.Reason != v1alpha1.ReasonTLSNotReady {
			return fmt.Errorf("Degraded=%s/%s", d.Status, d.Reason)
		}
		return nil
	})
	if msg := condition(c, v1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "mine-server") || !strings.Contains(msg, "spec.tls") {
		t.Errorf("message does not name the missing secret: %q", msg)
	}
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("members started without their certificates: %v", pods)
	}
}

// The defaults live in the CRD schema (what the API server applies) and in Default() (what the
// operator applies to objects stored before a default existed); they must agree.
func TestSchemaDefaultsMatchDefault(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	minimal := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec:       v1alpha1.EtcdClusterSpec{Version: "3.6.16", Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
	}
	want := minimal.DeepCopy()
	want.Default()
	// The quota is the one default the schema does not hold: left out, it follows the volume.
	want.Spec.Etcd.QuotaBackendBytes = 0
	if err := k8s.Create(context.Background(), minimal); err != nil {
		t.Fatal(err)
	}
	got := getCluster(t, ns, "defaults")
	if !equality.Semantic.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("the API server defaulted the spec to\n %+v\nDefault() gives\n %+v", got.Spec, want.Spec)
	}
	defaulted := got.DeepCopy()
	defaulted.Default()
	if q := defaulted.Spec.Etcd.QuotaBackendBytes; q != v1alpha1.QuotaFor(got.Spec.Storage.Size) {
		t.Errorf("Default() gives a quota of %d for a 1Gi volume, want %d", q, v1alpha1.QuotaFor(got.Spec.Storage.Size))
	}
	defaulted.Spec.Etcd.QuotaBackendBytes = 0
	if !equality.Semantic.DeepEqual(defaulted.Spec, got.Spec) {
		t.Errorf("Default() changes a spec the API server defaulted:\n %+v\n %+v", got.Spec, defaulted.Spec)
	}
}

// What the schema cannot check within its cost budget (label keys) stops the operator before
// any member is built from the spec, with the condition InvalidSpec.
func TestInvalidLabelKeyIsRefused(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	c := newCluster(ns, "keys", 3)
	c.Spec.PodTemplate = &v1alpha1.PodTemplate{Labels: map[string]v1alpha1.LabelValue{"team name": "storage"}}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("spec.podTemplate.labels key %q: %s; correct the spec: no member is created or changed until then",
		"team name", strings.Join(validation.IsQualifiedName("team name"), "; "))
	wantCondition(t, ns, "keys", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec, want))
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods %v were built from an invalid spec", pods)
	}
}

// The administrator's image policy: a spec.image from another registry stops the cluster
// before any member exists, with ImageNotAllowed naming the image and the policy; an image
// within it lets the members start. An annotation that would weaken the members' pod security
// is refused as InvalidSpec.
func TestImagePolicyAndWeakeningAnnotations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	startWith(t, ns, etcd.NewFake("3.6.16"), "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) {
		r.Images.Policy = resources.ImagePolicy{AllowedRegistries: []string{"registry.example.com", "docker.io/quorate/"}}
	})
	c := newCluster(ns, "img", 3)
	c.Spec.Image = "quay.io/someone/etcd:v3.6.16"
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "img", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonImageNotAllowed,
		"image quay.io/someone/etcd:v3.6.16 is from none of the registries this operator may run images from (--allowed-image-registries: registry.example.com, docker.io/quorate/): use an image from one of them, or ask the operator's administrator; no member is started or changed until then (the certificates are still renewed)"))
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods %v run an image outside the policy", pods)
	}
	// The policy holds the members back, not the certificates (a running cluster on an image
	// outside a policy set later keeps them renewed).
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.ServerSecret("img")}, &corev1.Secret{}); err != nil {
		t.Errorf("the certificates were not made under ImageNotAllowed: %v", err)
	}
	patchCluster(t, ns, "img", func(c *v1alpha1.EtcdCluster) { c.Spec.Image = "registry.example.com/etcd:v3.6.16" })
	eventually(t, timeout, "the members created", func() error {
		if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 3 {
			return fmt.Errorf("pods %v", pods)
		}
		return nil
	})

	w := newCluster(ns, "weak", 3)
	w.Spec.Image = "registry.example.com/etcd:v3.6.16"
	w.Spec.PodTemplate = &v1alpha1.PodTemplate{Annotations: map[string]string{
		"container.apparmor.security.beta.kubernetes.io/etcd":             "unconfined",
		"container.apparmor.security.beta.kubernetes.io/install-launcher": "runtime/default", // hardening: allowed
	}}
	if err := k8s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "weak", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec,
		`spec.podTemplate.annotations container.apparmor.security.beta.kubernetes.io/etcd=unconfined: annotations under container.apparmor.security.beta.kubernetes.io/ may only ask for the runtime's default profile (runtime/default, docker/default): members run with the cluster's keys, so a profile other than the default (unconfined, localhost/...) or a request to the container runtime is refused; remove it; correct the spec: no member is created or changed until then`))
}

// A plaintext cluster is refused unless the operator was started to allow it.
func TestPlaintextNeedsTheOperatorsConsent(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	c := newCluster(ns, "plain", 3)
	c.Spec.TLS.Enabled = ptr.To(false)
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "plain", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonInvalidSpec,
		"spec.tls.enabled is false, but this operator does not run plaintext clusters: anyone who reaches the members could read and write them; remove tls.enabled, or start the operator with --allow-plaintext"))
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("a plaintext cluster got pods %v", pods)
	}
}

// Certificates a user supplies are checked before any member uses them: one that does not
// cover the members' names stops the cluster with a message naming the Secret, the field and
// the names it holds; replacing it lets the members start.
func TestUserCertificatesAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	now := time.Now()
	ca, err := pki.NewCA("users-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(name string, usage pki.Usage, dns ...string) *corev1.Secret {
		p, err := ca.Sign(pki.Request{CommonName: name, DNSNames: dns, Usage: usage}, now)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{pki.KeyCert: p.CertPEM, pki.KeyKey: p.KeyPEM, pki.KeyCACert: ca.CertPEM}}
	}
	peerNames := "*.usr2-peer." + ns + ".svc"
	wrong := secret("mine-server", pki.ServerAndClient, "*.wrong-peer."+ns+".svc")
	for _, s := range []*corev1.Secret{wrong, secret("mine-peer", pki.ServerAndClient, peerNames), secret("mine-client", pki.ClientOnly)} {
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	c := newCluster(ns, "usr2", 3)
	c.Spec.TLS = v1alpha1.TLSSpec{ServerSecretName: "mine-server", PeerSecretName: "mine-peer", ClientSecretName: "mine-client"}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`TLS secret mine-server (spec.tls.serverSecretName): the certificate "mine-server" does not cover usr2-0.usr2-peer.%s.svc (its DNS names: [*.wrong-peer.%s.svc]); replace its certificate`, ns, ns)
	wantCondition(t, ns, "usr2", cnd(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonTLSNotReady, want))
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("members started with a certificate that does not cover them: %v", pods)
	}

	good := secret("mine-server", pki.ServerAndClient, peerNames, "usr2-client."+ns+".svc")
	wrong.Data = good.Data
	if err := k8s.Update(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "member pods once the certificate is replaced", func() error {
		if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) == 0 {
			return fmt.Errorf("no pods; Degraded: %+v", condition(getCluster(t, ns, "usr2"), v1alpha1.ConditionDegraded))
		}
		return nil
	})
}

// A cluster stored before CEL refused the operator's own identities as user names (an
// upgrade) stops with InvalidSpec naming the user (prepare, after the certificates are
// renewed), before any user's certificate is issued or etcd's users change; other users are
// not refused.
func TestStoredReservedUserIsRefused(t *testing.T) {
	for _, name := range []string{"root", "quorate-operator", "quorate-client", "demo-server", "demo-peer"} {
		c := newCluster("ns", "demo", 3)
		c.Spec.Users = []v1alpha1.UserSpec{{Name: "app"}, {Name: name, ReadWrite: []string{"/app/"}}}
		want := "spec.users names " + name + ", one of the operator's own identities (root, quorate-operator, quorate-client, demo-server, demo-peer), whose certificate is an etcd administrator: remove or rename the user (a Secret issued for it by an earlier operator holds an administrator's certificate until it expires: rotate the CA with spec.tls.rotateCA); no user and no member is changed until then (the certificates are still renewed)"
		if err := checkUsers(c); err == nil || err.Error() != want {
			t.Errorf("user %s: checkUsers = %v, want %q", name, err, want)
		}
	}
	c := newCluster("ns", "demo", 3)
	c.Spec.Users = []v1alpha1.UserSpec{{Name: "app"}, {Name: "other-server"}, {Name: "demo-server-2"}}
	if err := checkUsers(c); err != nil {
		t.Errorf("users of other names: checkUsers = %v, want none", err)
	}
}
