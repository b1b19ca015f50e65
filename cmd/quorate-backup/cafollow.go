package main

import (
	"bytes"
	"context"
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
// started again. A bundle that cannot be read (gone: a container started again could not
// read it either, and would stop the archive) changes nothing: the archiver goes on.
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
		case !bytes.Equal(now, was):
			log.Printf("%v: restarting to trust the authorities it names now", errCABundleChanged)
			changed()
			return
		}
	}
}
