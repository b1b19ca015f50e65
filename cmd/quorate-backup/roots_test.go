package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/backup/blobstore"
)

// The public authorities of the object stores the backup tool reaches: AWS S3, Google Cloud
// Storage, Azure Blob, and an S3-compatible store behind Let's Encrypt.
var storeRoots = []string{"Amazon Root CA 1", "GTS Root R1", "DigiCert Global Root G2", "ISRG Root X1"}

// The environment of a child process of these tests: which test it is (trustRoots may run once
// per process), the CA bundle it is given, and the store it lists.
const (
	envChild    = "QUORATE_TEST_ROOTS_CHILD"
	envCABundle = "QUORATE_TEST_CA_BUNDLE"
	envBucket   = "QUORATE_TEST_BUCKET"
)

// child runs test again in a process of its own, with env, and fails t if it fails.
func child(t *testing.T, test string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	// Without AWS_CA_BUNDLE, which the AWS SDK would trust alone (this machine sets it).
	cmd.Env = append(append(slices.DeleteFunc(os.Environ(), func(v string) bool { return strings.HasPrefix(v, "AWS_CA_BUNDLE=") }), envChild+"="+test), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s with %v: %v\n%s", test, env, err, out)
	}
}

// In an image with no CA roots (the operator image is FROM scratch), the backup tool still
// trusts the public authorities of the stores: it carries its own (x509roots/fallback). The
// test runs itself again with the system's roots pointed at an empty file and directory, as in
// the image; without the carried roots the child finds none.
func TestTrustsPublicRootsWithoutSystemRoots(t *testing.T) {
	if os.Getenv(envChild) == t.Name() {
		if err := trustRoots(""); err != nil {
			t.Fatal(err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			t.Fatalf("no roots: %v", err)
		}
		subjects := pool.Subjects() //nolint:staticcheck // SA1019: this pool is not the platform verifier's (Linux), so its subjects are all there
		for _, want := range storeRoots {
			found := false
			for _, s := range subjects {
				found = found || bytes.Contains(s, []byte(want))
			}
			if !found {
				t.Errorf("the roots the backup tool trusts without system roots (%d) lack %q", len(subjects), want)
			}
		}
		return
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	child(t, t.Name(), "SSL_CERT_FILE="+empty, "SSL_CERT_DIR="+dir)
}

// A store whose certificate a private CA signs: without the CA's bundle the tool refuses it
// (the authority is unknown); given the bundle (--ca-bundle, storage.caBundle) it lists the
// bucket. The store is an S3 endpoint over TLS whose CA is in no root store.
func TestTrustsTheStoresCABundle(t *testing.T) {
	if os.Getenv(envChild) == t.Name() {
		if err := trustRoots(os.Getenv(envCABundle)); err != nil {
			t.Fatal(err)
		}
		got, err := blobstore.List(context.Background(), os.Getenv(envBucket), "")
		var unknown x509.UnknownAuthorityError
		switch {
		case os.Getenv(envCABundle) == "" && !errors.As(err, &unknown):
			t.Fatalf("without the CA bundle: listed %v, err %v; want x509.UnknownAuthorityError", got, err)
		case os.Getenv(envCABundle) != "" && err != nil:
			t.Fatalf("with the CA bundle: %v", err)
		case os.Getenv(envCABundle) != "" && !reflect.DeepEqual(keys(got), []string{"ns/demo/b1.db"}):
			t.Fatalf("with the CA bundle: listed %v", got)
		}
		return
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/b" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>` +
			`<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
			`<Contents><Key>ns/demo/b1.db</Key><LastModified>2026-11-28T10:00:00.000Z</LastModified><Size>3</Size></Contents></ListBucketResult>`))
	}))
	defer srv.Close()
	bundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{envBucket + "=s3://b?endpoint=" + srv.URL + "&region=us-east-1&use_path_style=true",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	child(t, t.Name(), env...)
	child(t, t.Name(), append(env, envCABundle+"="+bundle)...)
	// AWS_CA_BUNDLE naming another authority (set by a credentials Secret) would make the SDK
	// trust that one alone: both are trusted.
	other := filepath.Join(t.TempDir(), "other.crt")
	if err := os.WriteFile(other, otherCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	child(t, t.Name(), append(env, envCABundle+"="+bundle, "AWS_CA_BUNDLE="+other)...)
}

// otherCA is the PEM certificate of a new self-signed authority.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A CA bundle that holds no certificate, or none at all, is refused, naming the field, before
// any connection (and before the process's roots are set, so this runs in the test's own
// process).
func TestRefusesABundleWithoutCertificates(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(bundle, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := trustRoots(bundle)
	want := "the store's CA bundle (storage.caBundle, mounted at " + bundle + ") holds no PEM certificate: put the CA's certificate, -----BEGIN CERTIFICATE-----, under the key it names"
	if err == nil || err.Error() != want {
		t.Fatalf("trustRoots of a bundle without certificates: %v\nwant %s", err, want)
	}
	// No file: the optional volume's ConfigMap, Secret or key is missing.
	missing := filepath.Join(t.TempDir(), "ca.crt")
	err = trustRoots(missing)
	want = "the store's CA bundle (storage.caBundle) is not at " + missing + ": the ConfigMap or Secret it names, or its key, does not exist in the namespace"
	if err == nil || err.Error() != want {
		t.Fatalf("trustRoots of no bundle: %v\nwant %s", err, want)
	}
}
