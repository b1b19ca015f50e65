package workload

import (
	"context"
	"errors"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/quorate-dev/quorate/e2e/history"
)

// watchers keep watches open on the workload's keys and record every event they receive, and
// the points where a watch started, broke or met a compaction. Each watch is restarted now and
// then, as a client whose connection drops would, from the revision after the last event it
// received: the watch checker holds etcd to delivering exactly what was missed.
type watchers struct {
	r    *Runner
	mu   sync.Mutex
	evs  []history.WatchEvent
	mks  []history.WatchMark
	last map[int]int64 // last revision each watcher received
	done sync.WaitGroup
}

func (r *Runner) watchPrefix() string { return r.cfg.Prefix + "k" }

func (w *watchers) mark(m history.WatchMark) {
	m.Time = time.Now().UnixNano()
	w.mu.Lock()
	w.mks = append(w.mks, m)
	w.mu.Unlock()
}

// run starts a watcher on each client from revision from; each closes its client when it ends.
func (w *watchers) run(ctx context.Context, clients []*clientv3.Client, from int64) {
	w.last = map[int]int64{}
	for i, c := range clients {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			defer c.Close()
			w.watch(ctx, c, i, from)
		}()
	}
}

func (w *watchers) watch(ctx context.Context, c *clientv3.Client, id int, next int64) {
	for ctx.Err() == nil {
		w.mark(history.WatchMark{Watcher: id, Kind: history.WatchStart, Revision: next})
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		restart := time.AfterFunc(max(w.r.cfg.WatchRestart, 0), cancel)
		if w.r.cfg.WatchRestart <= 0 {
			restart.Stop()
		}
		next = w.receive(wctx, c, id, next)
		restart.Stop()
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// receive records the events of one watch until it ends, and returns the revision to resume
// from.
func (w *watchers) receive(ctx context.Context, c *clientv3.Client, id int, next int64) int64 {
	for resp := range c.Watch(ctx, w.r.watchPrefix(), clientv3.WithPrefix(), clientv3.WithRev(next)) {
		if resp.CompactRevision != 0 {
			w.mark(history.WatchMark{Watcher: id, Kind: history.WatchCompacted, Revision: resp.CompactRevision})
			return resp.CompactRevision
		}
		if err := resp.Err(); err != nil {
			if !errors.Is(ctx.Err(), context.Canceled) {
				w.mark(history.WatchMark{Watcher: id, Kind: history.WatchBroken, Error: err.Error()})
			}
			return next
		}
		now := time.Now().UnixNano()
		w.mu.Lock()
		for _, ev := range resp.Events {
			w.evs = append(w.evs, history.WatchEvent{Watcher: id, Time: now, Revision: ev.Kv.ModRevision,
				Key: string(ev.Kv.Key), Value: string(ev.Kv.Value), Delete: ev.Type == clientv3.EventTypeDelete})
			next = ev.Kv.ModRevision + 1
			w.last[id] = ev.Kv.ModRevision
		}
		w.mu.Unlock()
	}
	if ctx.Err() == nil {
		w.mark(history.WatchMark{Watcher: id, Kind: history.WatchBroken, Error: "the watch channel closed"})
	}
	return next
}

// caughtUp reports whether every watcher has received revision rev.
func (w *watchers) caughtUp(rev int64, n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 0; i < n; i++ {
		if w.last[i] < rev {
			return false
		}
	}
	return true
}

func (w *watchers) record() ([]history.WatchEvent, []history.WatchMark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]history.WatchEvent(nil), w.evs...), append([]history.WatchMark(nil), w.mks...)
}
