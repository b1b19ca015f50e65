package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/pki"
)

// upstream is the shape of operator-controller's overlays/cert-manager, cut down.
const upstream = `apiVersion: v1
kind: Namespace
metadata:
  name: olmv1-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: catalogd-controller-manager
  namespace: olmv1-system
spec:
  template:
    spec:
      containers:
      - name: manager
        image: quay.io/operator-framework/catalogd:devel
        volumeMounts:
        - {name: cache, mountPath: /var/cache/}
      volumes:
      - {name: cache, emptyDir: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: olmv1-ca
  namespace: cert-manager
spec:
  isCA: true
  secretName: olmv1-ca
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: catalogd-service-cert
  namespace: olmv1-system
spec:
  dnsNames:
  - localhost
  - catalogd-service.olmv1-system.svc
  secretName: catalogd-service-cert-git-version
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: olmv1-ca
spec:
  ca:
    secretName: olmv1-ca
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: catalogd-mutating-webhook-configuration
  annotations:
    cert-manager.io/inject-ca-from-secret: cert-manager/olmv1-ca
webhooks:
- name: inject-metadata-name.olm.operatorframework.io
  clientConfig:
    service: {name: catalogd-service, namespace: olmv1-system, port: 9443}
`

func TestTransform(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	out, err := transform([]byte(upstream), "localhost:5000/quorate/olmv1:x", dir, "localhost:5000=10.87.0.1:5001", now)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := split(out)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]obj{}
	for _, o := range docs {
		if strings.HasPrefix(o["apiVersion"].(string), "cert-manager.io") {
			t.Errorf("a cert-manager object is left: %v", o["kind"])
		}
		byKind[o["kind"].(string)] = o
	}
	if docs[0]["kind"] != "Namespace" {
		t.Errorf("the Namespace must come first (the Secrets live in it), got %v", docs[0]["kind"])
	}
	secret := byKind["Secret"]
	if secret == nil || nestedString(secret, "metadata", "name") != "catalogd-service-cert-git-version" || nestedString(secret, "metadata", "namespace") != "olmv1-system" {
		t.Fatalf("no Secret for the Certificate: %v", secret)
	}
	data := secret["data"].(obj)
	ca := decode(t, data["ca.crt"])
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	leaf := decode(t, data["tls.crt"])
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "catalogd-service.olmv1-system.svc", Roots: roots}); err != nil {
		t.Errorf("the serving certificate does not verify for the Service name: %v", err)
	}
	hook := byKind["MutatingWebhookConfiguration"]
	cc := hook["webhooks"].([]any)[0].(obj)["clientConfig"].(obj)
	if cc["caBundle"] != data["ca.crt"] {
		t.Errorf("the webhook's caBundle is not the CA of the Secret")
	}
	if strings.Contains(string(out), "inject-ca-from") {
		t.Errorf("the injection annotation is left")
	}
	if !bytes.Contains(out, []byte("image: localhost:5000/quorate/olmv1:x")) || bytes.Contains(out, []byte("quay.io")) {
		t.Errorf("images not replaced:\n%s", out)
	}
	cm := byKind["ConfigMap"]
	if conf := nestedString(cm, "data", "registries.conf"); !strings.Contains(conf, `prefix = "localhost:5000"`) || !strings.Contains(conf, `location = "10.87.0.1:5001"`) || !strings.Contains(conf, "insecure = true") {
		t.Errorf("registries.conf = %q", conf)
	}
	c := byKind["Deployment"]["spec"].(obj)["template"].(obj)["spec"].(obj)["containers"].([]any)[0].(obj)
	if mounts := c["volumeMounts"].([]any); len(mounts) != 2 || mounts[1].(obj)["mountPath"] != "/etc/containers" {
		t.Errorf("registries.conf not mounted: %v", mounts)
	}

	// A second run reuses the CA and the certificates: applying it again changes nothing.
	again, err := transform([]byte(upstream), "localhost:5000/quorate/olmv1:x", dir, "localhost:5000=10.87.0.1:5001", now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, again) {
		t.Error("a second run issued new certificates")
	}
}

func TestTransformRefuses(t *testing.T) {
	dir := t.TempDir()
	other := strings.Replace(upstream, "quay.io/operator-framework/catalogd:devel", "quay.io/other/thing:v1", 1)
	if _, err := transform([]byte(other), "img", dir, "", time.Now()); err == nil || !strings.Contains(err.Error(), "upstream image is left") {
		t.Errorf("an unknown upstream image passed: %v", err)
	}
	noNS := strings.Replace(upstream, "kind: Namespace", "kind: ConfigMap", 1)
	if _, err := transform([]byte(noNS), "img", dir, "", time.Now()); err == nil || !strings.Contains(err.Error(), "no Namespace") {
		t.Errorf("manifests without a Namespace passed: %v", err)
	}
	if _, err := transform([]byte(upstream), "img", dir, "localhost:5000", time.Now()); err == nil || !strings.Contains(err.Error(), "NAME=LOCATION") {
		t.Errorf("a bad --registry-mirror passed: %v", err)
	}
}

func decode(t *testing.T, v any) *x509.Certificate {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(v.(string))
	if err != nil {
		t.Fatal(err)
	}
	c, err := pki.ParseCert(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
