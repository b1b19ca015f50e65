package launcher

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/internal/pki"
)

// PeerTLSFunc gives the client TLS configuration for a peer's host name (nil: plaintext).
type PeerTLSFunc func(host string) (*tls.Config, error)

// PeerTLS reads the member's peer certificate from dir (tls.crt, tls.key, ca.crt): the launcher
// connects to peers as etcd itself will, verifying each peer's certificate for the host of its
// URL. An empty dir is plaintext.
func PeerTLS(dir string) (PeerTLSFunc, error) {
	if dir == "" {
		return func(string) (*tls.Config, error) { return nil, nil }, nil
	}
	f, err := pki.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if _, err := pki.ClientTLS(f.Cert, f.Key, f.CA, ""); err != nil {
		return nil, err
	}
	return func(host string) (*tls.Config, error) { return pki.ClientTLS(f.Cert, f.Key, f.CA, host) }, nil
}

// peerVersion is what etcd's peer listener answers at /version.
type peerVersion struct {
	Server  string `json:"etcdserver"`
	Cluster string `json:"etcdcluster"`
}

// probePeer asks the etcd peer at peerURL for its version over the peer listener, with the
// member's peer certificate: the same connection etcd makes, so a peer that rejects this
// member's certificate or address rejects the probe too.
func probePeer(ctx context.Context, peerURL string, tlsFor PeerTLSFunc) error {
	u, err := url.Parse(peerURL)
	if err != nil {
		return err
	}
	cfg, err := tlsFor(u.Hostname())
	if err != nil {
		return err
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(peerURL, "/")+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return err
	}
	var v peerVersion
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &v) != nil || v.Server == "" {
		return fmt.Errorf("answered %s, not as an etcd peer listener", resp.Status)
	}
	return nil
}

// CheckPeersReachable waits until every peer URL answers as an etcd peer, for at most limit,
// trying again every interval. A member joining a cluster it cannot reach would only fail
// inside etcd ("cannot fetch cluster info from peer urls"); this names each peer that did not
// answer and why, as a PeersUnreachable refusal.
func CheckPeersReachable(ctx context.Context, peers []string, tlsFor PeerTLSFunc, limit, interval time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		failed := map[string]string{}
		for _, p := range peers {
			if err := probePeer(ctx, p, tlsFor); err != nil {
				failed[p] = err.Error()
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if !time.Now().Add(interval).Before(deadline) || ctx.Err() != nil {
			return &Refusal{Kind: RefusalPeersUnreachable, Message: unreachableMessage(failed, limit)}
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

func unreachableMessage(failed map[string]string, limit time.Duration) string {
	urls := make([]string, 0, len(failed))
	for u := range failed {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	parts := make([]string, 0, len(urls))
	for _, u := range urls {
		parts = append(parts, u+" ("+failed[u]+")")
	}
	return fmt.Sprintf("this member cannot reach the etcd peer listener of %s for %s; "+
		"etcd is not started. Make these addresses reachable from the pod network, and make sure each peer "+
		"accepts this member's peer certificate from the address it connects from",
		strings.Join(parts, ", "), limit)
}
