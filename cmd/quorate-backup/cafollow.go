package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log"
	"os"
	"slices"
	"strings"
	"time"
)

// errCABundleChanged ends the archiver's process when the store's CA bundle names other
// authorities than when it started.
var errCABundleChanged = errors.New("the store's CA bundle (storage.caBundle) changed")

// caBundlePoll is how often the archiver reads its CA bundle again. The kubelet updates a
// mounted ConfigMap or Secret within about a minute of its change; this adds at most as much.
const caBundlePoll = 10 * time.Second

// followCABundle calls changed once the file at path names other certificates than was (its
// content when the process trusted it), and returns; it returns when ctx ends. The process
// trusts its roots once (x509.SetFallbackRoots cannot be called again), so the archiver
// starts again to trust a new bundle: the kubelet updates a CA bundle mounted from a ConfigMap
// or a Secret in place (the volume is not a subPath). The same certificates written otherwise
// (another order, other text around them) change nothing; nor does a bundle that cannot be
// read (gone) or holds no certificate: the process started again would refuse it, and the
// archive would stop. The bundle AWS_CA_BUNDLE names (from the credentials Secret) is not
// followed: a change of that Secret replaces the archiver's pod.
func followCABundle(ctx context.Context, path string, was []byte, every time.Duration, changed func()) {
	trusted, _ := certificateSet(was)
	var reported string
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := os.ReadFile(path) //nolint:gosec // the mounted storage.caBundle
		var why string
		switch set, ok := certificateSet(now); {
		case err != nil:
			why = "reading the store's CA bundle again: " + err.Error()
		case set == trusted:
		case !ok:
			why = "the store's CA bundle (storage.caBundle) at " + path + " changed and holds no PEM certificate now (put the CA's certificate, -----BEGIN CERTIFICATE-----, under the key it names)"
		default:
			changed()
			return
		}
		if why != reported {
			// Once per state, not every poll.
			if why != "" {
				log.Printf("%s: the archiver goes on trusting the bundle it read when it started", why)
			}
			reported = why
		}
	}
}

// certificateSet is the set of certificates in data's PEM blocks, as one comparable value,
// and whether there is any.
func certificateSet(data []byte) (string, bool) {
	var ders []string
	for len(data) > 0 {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			continue // as x509.CertPool.AppendCertsFromPEM, which trusts the bundle
		}
		if _, err := x509.ParseCertificate(b.Bytes); err == nil {
			ders = append(ders, string(b.Bytes))
		}
	}
	slices.Sort(ders)
	ders = slices.Compact(ders)
	return strings.Join(ders, "\x00"), len(ders) > 0
}
