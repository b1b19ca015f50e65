// Command certs keeps the private certificate authority of the local S3 store (hack/s3.sh) and
// the store's server certificate in a directory: ca.crt and ca.key, made once, and tls.crt and
// tls.key for the given DNS names, signed by that CA. A certificate that still covers the names
// and stays valid for the renewal margin is kept; otherwise it is signed again (a CA near its
// end is made again first). It prints "kept" or "renewed".
//
// Usage: go run ./hack/s3/certs --dir DIR --names a,b,c
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/internal/pki"
)

// renewBefore: a certificate or CA that ends within this margin is made again, so that a
// cached one never expires during a run.
const renewBefore = 30 * 24 * time.Hour

// caName is the common name of the store's CA.
const caName = "quorate-s3-ca"

func main() {
	dir := flag.String("dir", "", "directory holding ca.crt, ca.key, tls.crt and tls.key")
	namesFlag := flag.String("names", "", "comma-separated DNS names of the store's server certificate")
	flag.Parse()
	names := strings.Split(*namesFlag, ",")
	if *dir == "" || *namesFlag == "" {
		fmt.Fprintln(os.Stderr, "usage: certs --dir DIR --names a,b,c")
		os.Exit(64)
	}
	renewed, err := ensure(*dir, names, time.Now())
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	if renewed {
		fmt.Println("renewed")
	} else {
		fmt.Println("kept")
	}
}

// ensure leaves in dir a CA and a server certificate for names that it signed, valid from now
// for at least renewBefore; it reports whether the server certificate was made again.
func ensure(dir string, names []string, now time.Time) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	ca, err := ensureCA(dir, now)
	if err != nil {
		return false, err
	}
	crt, crtErr := os.ReadFile(filepath.Join(dir, pki.KeyCert))
	key, keyErr := os.ReadFile(filepath.Join(dir, pki.KeyKey))
	if crtErr == nil && keyErr == nil &&
		pki.CheckLeaf(crt, key, ca.CertPEM, pki.Check{Usage: pki.ServerAndClient, Hosts: names, Now: now.Add(renewBefore)}) == nil {
		return false, nil
	}
	for _, e := range []error{crtErr, keyErr} {
		if e != nil && !errors.Is(e, fs.ErrNotExist) {
			return false, e
		}
	}
	pair, err := ca.Sign(pki.Request{CommonName: names[0], DNSNames: names, Usage: pki.ServerAndClient}, now)
	if err != nil {
		return false, err
	}
	if err := write(dir, pki.KeyKey, pair.KeyPEM, 0o600); err != nil {
		return false, err
	}
	return true, write(dir, pki.KeyCert, pair.CertPEM, 0o644)
}

// ensureCA loads the CA of dir, or makes one when there is none or it ends within the margin.
func ensureCA(dir string, now time.Time) (*pki.CA, error) {
	crt, crtErr := os.ReadFile(filepath.Join(dir, pki.KeyCACert))
	key, keyErr := os.ReadFile(filepath.Join(dir, pki.KeyCAKey))
	if crtErr == nil && keyErr == nil {
		ca, err := pki.LoadCA(crt, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (remove the directory to make a new CA)", dir, err)
		}
		if now.Add(renewBefore).Before(ca.Cert.NotAfter) {
			return ca, nil
		}
	} else {
		for _, e := range []error{crtErr, keyErr} {
			if e != nil && !errors.Is(e, fs.ErrNotExist) {
				return nil, e
			}
		}
	}
	ca, err := pki.NewCA(caName, now)
	if err != nil {
		return nil, err
	}
	if err := write(dir, pki.KeyCAKey, ca.KeyPEM, 0o600); err != nil {
		return nil, err
	}
	return ca, write(dir, pki.KeyCACert, ca.CertPEM, 0o644)
}

// write replaces dir/name with data: a reader never sees half a file.
func write(dir, name string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}
