package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
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
