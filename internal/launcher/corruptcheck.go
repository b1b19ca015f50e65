package launcher

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// What etcd (3.5 and 3.6, JSON logs, server/etcdserver/corrupt.go and embed/etcd.go) writes
// when its initial corruption check, made before it serves anyone, ends its start: a warning
// per peer whose hash differs at the same revision and compaction, then the error. The
// messages are etcd's fixed texts: JSON escapes the quotes of any field, so no client's key
// can forge a "msg" (and no client is served before the check is over anyway). The watch
// stops at the first sign that the check passed or that etcd serves.
var (
	msgPeerMismatch = []byte(`"msg":"found different hash values from remote peer"`)
	msgCheckFailed  = []byte(`"msg":"checkInitialHashKV failed"`)
	errCheckFailed  = regexp.MustCompile(`"error":"[0-9a-f]{1,16} found data inconsistency with peers"`)
	remotePeerID    = regexp.MustCompile(`"remote-peer-id":"([0-9a-f]{1,16})"`)
	// etcd 3.6 (seen with 3.6.16) logs the peer's ID as "0"; the peer's URLs name it.
	remotePeerURL  = regexp.MustCompile(`"remote-peer-endpoints":\["([a-z]+://[^",; ]+)"`)
	startCheckOver = [][]byte{[]byte(`"msg":"initial corruption checking passed`), []byte(`"msg":"ready to serve client requests"`)}
)

// maxLine bounds a line the watch keeps whole; longer ones are not etcd's check's.
const maxLine = 64 << 10

// startCheckWatch passes etcd's output on and reads, line by line, whether etcd's initial
// corruption check failed and which peers' hashes differed from this member's.
type startCheckWatch struct {
	mu         sync.Mutex
	line       []byte
	done       bool
	failed     bool
	mismatched []uint64
	// mismatchedURLs are the peers etcd named by their peer URL alone (ID 0).
	mismatchedURLs []string
}

func (w *startCheckWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rest := p
	for !w.done && len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(w.line)+len(rest) <= maxLine {
				w.line = append(w.line, rest...)
			}
			break
		}
		if len(w.line)+i <= maxLine {
			w.judge(append(w.line, rest[:i]...))
		}
		w.line, rest = w.line[:0], rest[i+1:]
	}
	return len(p), nil
}

func (w *startCheckWatch) judge(line []byte) {
	switch {
	case bytes.Contains(line, msgPeerMismatch):
		if m := remotePeerID.FindSubmatch(line); m != nil {
			if id, err := strconv.ParseUint(string(m[1]), 16, 64); err == nil && id != 0 {
				if !slices.Contains(w.mismatched, id) {
					w.mismatched = append(w.mismatched, id)
				}
				return
			}
		}
		if m := remotePeerURL.FindSubmatch(line); m != nil && !slices.Contains(w.mismatchedURLs, string(m[1])) {
			w.mismatchedURLs = append(w.mismatchedURLs, string(m[1]))
		}
	case bytes.Contains(line, msgCheckFailed) && errCheckFailed.Match(line):
		w.failed, w.done = true, true
	default:
		for _, over := range startCheckOver {
			if bytes.Contains(line, over) {
				w.done = true
			}
		}
	}
}

// refusal is the failed check as a refusal for the operator (nil when it did not fail).
func (w *startCheckWatch) refusal() *Refusal {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.failed {
		return nil
	}
	ids := make([]string, 0, len(w.mismatched)+len(w.mismatchedURLs))
	for _, id := range w.mismatched {
		ids = append(ids, fmt.Sprintf("%x", id))
	}
	ids = append(ids, w.mismatchedURLs...)
	return &Refusal{Kind: RefusalCorruptAtStart, Message: corruptPeersPrefix + strings.Join(ids, ",") + corruptPeersSuffix}
}

// The CorruptAtStart message names the peers whose data differed, by etcd ID in hex or, when
// etcd gave none (3.6), by peer URL, which the operator reads back with CorruptPeers and
// CorruptPeerURLs: a member is the one to replace only when it differs from a majority
// of the others, not when one peer is the bad one.
const (
	corruptPeersPrefix = "etcd's initial corruption check found this member's data differ, at the same revision, from its peers "
	corruptPeersSuffix = "; etcd will not start with them"
)

// CorruptPeers reads the IDs of the peers a CorruptAtStart refusal names by ID.
func CorruptPeers(r *Refusal) []uint64 {
	var ids []uint64
	for _, s := range corruptPeerList(r) {
		if id, err := strconv.ParseUint(s, 16, 64); err == nil && id != 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// CorruptPeerURLs reads the peer URLs of the peers a CorruptAtStart refusal names by URL.
func CorruptPeerURLs(r *Refusal) []string {
	var urls []string
	for _, s := range corruptPeerList(r) {
		if strings.Contains(s, "://") {
			urls = append(urls, s)
		}
	}
	return urls
}

func corruptPeerList(r *Refusal) []string {
	if r == nil || r.Kind != RefusalCorruptAtStart {
		return nil
	}
	list, ok := strings.CutPrefix(r.Message, corruptPeersPrefix)
	if !ok {
		return nil
	}
	list, _, _ = strings.Cut(list, ";")
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
