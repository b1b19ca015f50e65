package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"log"
	"os"
	"time"
)

// errCABundleChanged ends the archiver when the store's CA bundle changed under it.
var errCABundleChanged = errors.New("the store's CA bundle (storage.caBundle) changed")

// caBundlePoll is how often the archiver reads its CA bundle again. The kubelet updates a
// mounted ConfigMap or Secret within about a minute of its change; this adds at most as much.
const caBundlePoll = 10 * time.Second

// followCABundle calls changed once the file at path holds other bytes than was (its content
// when the process trusted it), and returns; it returns when ctx ends. The
// process trusts its roots once (x509.SetFallbackRoots cannot be called again), so the
// archiver restarts to trust a new bundle: the kubelet updates a CA bundle mounted from a
// ConfigMap or a Secret in place (the volume is not a subPath), and the pod's container is
// started again. A bundle that cannot be read (gone) or holds no certificate changes nothing:
// a container started again would refuse it, and the archive would stop.
func followCABundle(ctx context.Context, path string, was []byte, every time.Duration, changed func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := os.ReadFile(path) //nolint:gosec // the mounted storage.caBundle
		switch {
		case err != nil:
			log.Printf("reading the store's CA bundle again: %v (the archiver goes on trusting the bundle it read at start; trying again in %s)", err, every)
		case bytes.Equal(now, was):
		case !x509.NewCertPool().AppendCertsFromPEM(now):
			log.Printf("the store's CA bundle (storage.caBundle) at %s changed and holds no PEM certificate now: the archiver goes on trusting the bundle it read at start (put the CA's certificate, -----BEGIN CERTIFICATE-----, under the key it names)", path)
		default:
			log.Printf("%v: restarting to trust the authorities it names now", errCABundleChanged)
			changed()
			return
		}
	}
}
