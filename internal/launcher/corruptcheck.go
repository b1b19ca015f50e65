package launcher

import (
	"bytes"
	"sync"
)

// corruptAtStart is the error etcd's initial corruption check ends a start with when the
// member's data differ from a peer's at the same revision (etcd 3.5 and 3.6, server/etcdserver
// corrupt.go: "<member ID> found data inconsistency with peers"). etcd then exits, and exits
// again at every restart: its data are worth nothing, and only a replacement from the
// majority brings the member back.
var corruptAtStart = []byte("found data inconsistency with peers")

// startCheckWatch passes etcd's output on and remembers whether etcd's initial corruption
// check failed. Output comes in chunks of any size, so the end of each chunk is kept to find
// the phrase across two.
type startCheckWatch struct {
	mu   sync.Mutex
	tail []byte
	seen bool
}

func (w *startCheckWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		buf := append(w.tail, p...) //nolint:gocritic // a new slice of the kept tail and the chunk
		w.seen = bytes.Contains(buf, corruptAtStart)
		w.tail = append(w.tail[:0], buf[max(0, len(buf)-len(corruptAtStart)+1):]...)
	}
	return len(p), nil
}

// failed says whether etcd's initial corruption check failed, as a refusal for the operator.
func (w *startCheckWatch) failed() *Refusal {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		return nil
	}
	return &Refusal{Kind: RefusalCorruptAtStart, Message: "etcd's initial corruption check found this member's data differ from its peers' at the same revision, and etcd will not start with them; " +
		"the operator replaces the member from the majority's data once the other voters keep quorum"}
}
