package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// trustRoots sets the authorities the store's certificate is verified against; it runs once,
// before the first connection. The image is FROM scratch, with no CA roots: where the system
// offers none, the tool trusts the public roots it carries (Mozilla's, from
// golang.org/x/crypto/x509roots, with their distrust dates). With caBundle (storage.caBundle,
// a private CA) it trusts those roots and the bundle's authorities, whatever the system
// offers: the pod talks to one store, and its etcd connections name their own CA.
func trustRoots(caBundle string) error {
	pool := x509.NewCertPool()
	for r := range bundle.Roots() {
		c, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			return fmt.Errorf("parsing the roots the tool carries: %w", err)
		}
		if r.Constraint != nil {
			pool.AddCertWithConstraint(c, r.Constraint)
		} else {
			pool.AddCert(c)
		}
	}
	if caBundle != "" {
		pem, err := os.ReadFile(caBundle) //nolint:gosec // the mounted storage.caBundle
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the store's CA bundle (storage.caBundle) is not at %s: the ConfigMap or Secret it names, or its key, does not exist in the namespace", caBundle)
		}
		if err != nil {
			return fmt.Errorf("reading the store's CA bundle (storage.caBundle): %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("the store's CA bundle (storage.caBundle, mounted at %s) holds no PEM certificate: put the CA's certificate, -----BEGIN CERTIFICATE-----, under the key it names", caBundle)
		}
		if err := mergeAWSCABundle(pool); err != nil {
			return err
		}
		// The roots given to SetFallbackRoots are used even where the system has its own.
		if err := os.Setenv("GODEBUG", joinGODEBUG(os.Getenv("GODEBUG"), "x509usefallbackroots=1")); err != nil {
			return err
		}
	}
	x509.SetFallbackRoots(pool)
	return nil
}

func joinGODEBUG(current, setting string) string {
	if current == "" {
		return setting
	}
	return current + "," + setting
}

// envAWSCABundle, set (from a credentials Secret, say), makes the AWS SDK trust that file's
// authorities alone, and storage.caBundle and the carried roots would be silently ignored.
const envAWSCABundle = "AWS_CA_BUNDLE"

// mergeAWSCABundle adds the authorities of AWS_CA_BUNDLE to pool and unsets it, so that the
// store is verified against both the bundle the storage names and the one the environment does.
func mergeAWSCABundle(pool *x509.CertPool) error {
	path := os.Getenv(envAWSCABundle)
	if path == "" {
		return nil
	}
	pem, err := os.ReadFile(path) //nolint:gosec // a path the pod's environment names
	if err != nil {
		return fmt.Errorf("%s names %s, which cannot be read (%w): remove it from the credentials Secret, or trust the store through storage.caBundle alone", envAWSCABundle, path, err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s names %s, which holds no PEM certificate: remove it from the credentials Secret, or trust the store through storage.caBundle alone", envAWSCABundle, path)
	}
	log.Printf("trusting the authorities of %s (%s) beside storage.caBundle's", envAWSCABundle, path)
	return os.Unsetenv(envAWSCABundle)
}
