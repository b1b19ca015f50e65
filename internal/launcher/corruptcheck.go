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
	startCheckOver  = [][]byte{[]byte(`"msg":"initial corruption checking passed`), []byte(`"msg":"ready to serve client requests"`)}
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
			if id, err := strconv.ParseUint(string(m[1]), 16, 64); err == nil && !slices.Contains(w.mismatched, id) {
				w.mismatched = append(w.mismatched, id)
			}
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
	ids := make([]string, len(w.mismatched))
	for i, id := range w.mismatched {
		ids[i] = fmt.Sprintf("%x", id)
	}
	return &Refusal{Kind: RefusalCorruptAtStart, Message: corruptPeersPrefix + strings.Join(ids, ",") + corruptPeersSuffix}
}

// The CorruptAtStart message names the peers whose data differed, which the operator reads
// back with CorruptPeers: a member is the one to replace only when it differs from a majority
// of the others, not when one peer is the bad one.
const (
	corruptPeersPrefix = "etcd's initial corruption check found this member's data differ, at the same revision, from its peers "
	corruptPeersSuffix = "; etcd will not start with them"
)

// CorruptPeers reads the IDs of the peers a CorruptAtStart refusal names.
func CorruptPeers(r *Refusal) []uint64 {
	if r == nil || r.Kind != RefusalCorruptAtStart {
		return nil
	}
	list, ok := strings.CutPrefix(r.Message, corruptPeersPrefix)
	if !ok {
		return nil
	}
	list, _, _ = strings.Cut(list, ";")
	var ids []uint64
	for _, s := range strings.Split(list, ",") {
		if id, err := strconv.ParseUint(strings.TrimSpace(s), 16, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
