// Command olmv1 turns OLM v1's own manifests (operator-controller's config/overlays/cert-manager,
// rendered by kustomize) into manifests that install on the local cluster:
//
//		kustomize build $CONFIG/overlays/cert-manager | go run ./hack/olmv1 \
//		  --image IMAGE --pki-dir DIR --registry-mirror localhost:5000=10.87.0.1:5001 >olmv1.yaml
//
//	  - cert-manager cannot be built here (its binaries live in modules under cmd/ that the module
//	    proxy does not serve), so this command does what cert-manager would do for these
//	    manifests: it issues every Certificate's Secret (tls.crt, tls.key and ca.crt, from one CA
//	    kept in --pki-dir so that re-running changes nothing) and injects the CA into the webhook
//	    configurations annotated for it; the cert-manager.io objects themselves are dropped.
//	  - Every upstream image becomes --image (one image holds both binaries).
//	  - With --registry-mirror, a registries.conf that sends the local registry's name to an
//	    address pods can reach, over plain HTTP, is mounted at /etc/containers in both
//	    Deployments: catalogd and operator-controller pull catalog and bundle images themselves,
//	    from inside their pods, where the node's localhost:5000 is not reachable.
//
// It fails when an upstream image reference or a cert-manager object would be left.
package main

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/quorate-dev/quorate/internal/pki"
)

const (
	injectAnnotation   = "cert-manager.io/inject-ca-from-secret"
	injectAnnotation2  = "cert-manager.io/inject-ca-from"
	registriesConfName = "olmv1-registries-conf"
)

type obj = map[string]any

func main() {
	image := flag.String("image", "", "the image holding catalogd and operator-controller")
	pkiDir := flag.String("pki-dir", "", "where the CA and issued certificates are kept")
	mirror := flag.String("registry-mirror", "", "NAME=LOCATION: pull images named NAME/... from LOCATION over plain HTTP")
	flag.Parse()
	if *image == "" || *pkiDir == "" {
		fail(errors.New("--image and --pki-dir are required"))
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	out, err := transform(in, *image, *pkiDir, *mirror, time.Now())
	if err != nil {
		fail(err)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "olmv1:", err)
	os.Exit(1)
}

func transform(in []byte, image, pkiDir, mirror string, now time.Time) ([]byte, error) {
	docs, err := split(in)
	if err != nil {
		return nil, err
	}
	ca, err := loadOrCreateCA(pkiDir, now)
	if err != nil {
		return nil, err
	}
	kept, secrets, namespace, err := replaceCertificates(docs, ca, pkiDir, now)
	if err != nil {
		return nil, err
	}
	if namespace == "" {
		return nil, errors.New("no Namespace in the manifests: render config/overlays/cert-manager")
	}
	if err := patchKept(kept, base64.StdEncoding.EncodeToString(ca.CertPEM), mirror); err != nil {
		return nil, err
	}
	if mirror != "" {
		cm, err := registriesConf(namespace, mirror)
		if err != nil {
			return nil, err
		}
		kept = append(kept, cm)
	}
	return render(append(kept, secrets...), image)
}

// replaceCertificates drops the cert-manager objects from docs, issuing the Secret of each
// Certificate that is not a CA's with ca instead, and returns the objects kept, those Secrets
// and the name of the Namespace in docs (the last one's, "" when there is none).
func replaceCertificates(docs []obj, ca *pki.CA, pkiDir string, now time.Time) (kept, secrets []obj, namespace string, err error) {
	for _, o := range docs {
		apiVersion, _ := o["apiVersion"].(string)
		kind, _ := o["kind"].(string)
		if kind == "Namespace" {
			namespace = nestedString(o, "metadata", "name")
		}
		if strings.HasPrefix(apiVersion, "cert-manager.io/") {
			if kind == "Certificate" && !nestedBool(o, "spec", "isCA") {
				s, err := issue(ca, pkiDir, o, now)
				if err != nil {
					return nil, nil, "", err
				}
				secrets = append(secrets, s)
			}
			continue
		}
		kept = append(kept, o)
	}
	return kept, secrets, namespace, nil
}

// patchKept puts caBundle into the webhook configurations cert-manager was to inject it into
// (and drops the injection annotations), and with a mirror mounts its registries.conf into the
// Deployments.
func patchKept(kept []obj, caBundle, mirror string) error {
	for _, o := range kept {
		switch o["kind"] {
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			md := o["metadata"].(obj)
			ann, _ := md["annotations"].(obj)
			if ann[injectAnnotation] == nil && ann[injectAnnotation2] == nil {
				continue
			}
			delete(ann, injectAnnotation)
			delete(ann, injectAnnotation2)
			hooks, _ := o["webhooks"].([]any)
			for _, h := range hooks {
				cc, _ := h.(obj)["clientConfig"].(obj)
				if cc == nil {
					return fmt.Errorf("webhook in %s has no clientConfig", nestedString(o, "metadata", "name"))
				}
				cc["caBundle"] = caBundle
			}
		case "Deployment":
			if mirror != "" {
				mountRegistriesConf(o)
			}
		}
	}
	return nil
}

// render writes objs as one YAML stream with the upstream images replaced by image, and checks
// that no upstream image and no cert-manager reference is left.
func render(objs []obj, image string) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	out := upstreamImage.ReplaceAll(b.Bytes(), []byte(image))
	if left := regexp.MustCompile(`(?m)image: .*quay\.io.*`).Find(out); left != nil {
		return nil, fmt.Errorf("an upstream image is left: %s", left)
	}
	if bytes.Contains(out, []byte("cert-manager.io/")) {
		return nil, errors.New("a cert-manager reference is left in the manifests")
	}
	return out, nil
}

var upstreamImage = regexp.MustCompile(`quay\.io/operator-framework/(catalogd|operator-controller)(:[\w.-]+|@sha256:[0-9a-f]+)`)

// split decodes a multi-document YAML stream, skipping empty documents.
func split(in []byte) ([]obj, error) {
	var docs []obj
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(in), -1) {
		if strings.TrimSpace(d) == "" {
			continue
		}
		var o obj
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			return nil, err
		}
		if o != nil {
			docs = append(docs, o)
		}
	}
	return docs, nil
}

func loadOrCreateCA(dir string, now time.Time) (*pki.CA, error) {
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if c, err := os.ReadFile(certFile); err == nil {
		k, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, err
		}
		return pki.LoadCA(c, k)
	}
	ca, err := pki.NewCA("olmv1-ca", now)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, ca.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	return ca, os.WriteFile(certFile, ca.CertPEM, 0o644)
}

// issue returns the Secret cert-manager would have written for the Certificate c, reusing the
// pair kept in dir from an earlier run.
func issue(ca *pki.CA, dir string, c obj, now time.Time) (obj, error) {
	ns, secret := nestedString(c, "metadata", "namespace"), nestedString(c, "spec", "secretName")
	if ns == "" || secret == "" {
		return nil, fmt.Errorf("cert-manager Certificate %s has no namespace or secretName", nestedString(c, "metadata", "name"))
	}
	dns, _, _ := unstructured.NestedStringSlice(c, "spec", "dnsNames")
	base := filepath.Join(dir, ns+"-"+secret)
	certPEM, errC := os.ReadFile(base + ".crt")
	keyPEM, errK := os.ReadFile(base + ".key")
	if errC != nil || errK != nil || !sameNames(certPEM, dns) {
		cn := nestedString(c, "spec", "commonName")
		if cn == "" && len(dns) > 0 {
			cn = dns[0]
		}
		// Kept across runs on this machine: long-lived, unlike the operator's own.
		p, err := ca.Sign(pki.Request{CommonName: cn, DNSNames: dns, Usage: pki.ServerAndClient, Validity: 5 * 365 * 24 * time.Hour}, now)
		if err != nil {
			return nil, err
		}
		certPEM, keyPEM = p.CertPEM, p.KeyPEM
		if err := os.WriteFile(base+".key", keyPEM, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(base+".crt", certPEM, 0o644); err != nil {
			return nil, err
		}
	}
	return obj{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": obj{"name": secret, "namespace": ns, "labels": obj{"app.kubernetes.io/managed-by": "quorate-hack-olmv1"}},
		"data": obj{
			pki.KeyCert:   base64.StdEncoding.EncodeToString(certPEM),
			pki.KeyKey:    base64.StdEncoding.EncodeToString(keyPEM),
			pki.KeyCACert: base64.StdEncoding.EncodeToString(ca.CertPEM),
		},
	}, nil
}

// sameNames reports whether the kept certificate was issued for exactly these DNS names.
func sameNames(certPEM []byte, dns []string) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || len(cert.DNSNames) != len(dns) {
		return false
	}
	names := cert.DNSNames
	for i := range dns {
		if names[i] != dns[i] {
			return false
		}
	}
	return true
}

func registriesConf(namespace, mirror string) (obj, error) {
	name, location, ok := strings.Cut(mirror, "=")
	if !ok || name == "" || location == "" {
		return nil, fmt.Errorf("--registry-mirror %q: want NAME=LOCATION, e.g. localhost:5000=10.87.0.1:5001", mirror)
	}
	conf := fmt.Sprintf("[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n", name, location)
	return obj{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": obj{"name": registriesConfName, "namespace": namespace},
		"data":     obj{"registries.conf": conf},
	}, nil
}

func mountRegistriesConf(d obj) {
	spec := d["spec"].(obj)["template"].(obj)["spec"].(obj)
	volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
	spec["volumes"] = append(volumes, obj{"name": registriesConfName, "configMap": obj{"name": registriesConfName}})
	containers, _, _ := unstructured.NestedSlice(spec, "containers")
	for _, c := range containers {
		c := c.(obj)
		mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
		c["volumeMounts"] = append(mounts, obj{"name": registriesConfName, "mountPath": "/etc/containers"})
	}
	spec["containers"] = containers
}

// nestedString and nestedBool read a field of a decoded manifest ("" and false when absent).
func nestedString(o obj, path ...string) string {
	s, _, _ := unstructured.NestedString(o, path...)
	return s
}

func nestedBool(o obj, path ...string) bool {
	b, _, _ := unstructured.NestedBool(o, path...)
	return b
}
