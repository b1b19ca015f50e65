package main

import (
	"bytes"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The public authorities of the object stores the backup tool reaches: AWS S3, Google Cloud
// Storage, Azure Blob, and an S3-compatible store behind Let's Encrypt.
var storeRoots = []string{"Amazon Root CA 1", "GTS Root R1", "DigiCert Global Root G2", "ISRG Root X1"}

// envNoSystemRoots marks the child process of TestTrustsPublicRootsWithoutSystemRoots.
const envNoSystemRoots = "QUORATE_TEST_NO_SYSTEM_ROOTS"

// In an image with no CA roots (the operator image is FROM scratch), the backup tool still
// trusts the public authorities of the stores: it carries its own (x509roots/fallback). The
// test runs itself again with the system's roots pointed at an empty file and directory, as in
// the image; without the fallback roots the child finds none.
func TestTrustsPublicRootsWithoutSystemRoots(t *testing.T) {
	if os.Getenv(envNoSystemRoots) == "1" {
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrustsPublicRootsWithoutSystemRoots$", "-test.count=1") //nolint:gosec // the test binary itself
	cmd.Env = append(os.Environ(), envNoSystemRoots+"=1", "SSL_CERT_FILE="+empty, "SSL_CERT_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("without system roots: %v\n%s", err, out)
	}
}
