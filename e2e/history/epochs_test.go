package history

import (
	"reflect"
	"testing"
)

// A recovery from revision 5 at time 100 splits the operations; each case is one operation of
// the epoch before and what the two epochs hold of it.
func TestEpochs(t *testing.T) {
	rec := Event{Time: 100, Kind: EventRecovery, Name: "restored", Revision: 5}
	put := func(call, ret int64, st Status, rev int64) Op {
		return Op{Type: Put, Key: "k", Value: "v", Call: call, Return: ret, Status: st, Revision: rev}
	}
	get := func(call, ret int64) Op {
		return Op{Type: Get, Key: "k", Call: call, Return: ret, Status: OK, Found: true, Output: "v", Revision: 5}
	}
	unknown := func(o Op) Op { o.Status, o.Revision = Unknown, 0; return o }
	notSwapped := func(call, ret int64) Op {
		return Op{Type: CAS, Key: "k", Expect: "x", Value: "y", Call: call, Return: ret, Status: OK, Found: true, Output: "v", Revision: 5}
	}
	for _, tc := range []struct {
		name          string
		op            Op
		before, after []Op
	}{
		{"a write acknowledged at the revision, before", put(10, 20, OK, 5), []Op{put(10, 20, OK, 5)}, []Op{put(10, 20, OK, 5)}},
		{"a write acknowledged above it, before: it may or may not have reached the restarted cluster", put(10, 20, OK, 6), []Op{put(10, 20, OK, 6)}, []Op{unknown(put(10, 20, OK, 6))}},
		{"a write of unknown outcome", put(10, 0, Unknown, 0), []Op{put(10, 0, Unknown, 0)}, []Op{put(10, 0, Unknown, 0)}},
		{"a failed write", put(10, 20, Fail, 0), []Op{put(10, 20, Fail, 0)}, nil},
		{"a read before", get(10, 20), []Op{get(10, 20)}, nil},
		{"a read across the recovery: the epoch after only", get(90, 110), nil, []Op{get(90, 110)}},
		{"a write across the recovery at the revision", put(90, 110, OK, 5), []Op{unknown(put(90, 110, OK, 5))}, []Op{put(90, 110, OK, 5)}},
		{"a write across the recovery above it", put(90, 110, OK, 9), []Op{unknown(put(90, 110, OK, 9))}, []Op{unknown(put(90, 110, OK, 9))}},
		{"a read after", get(100, 120), nil, []Op{get(100, 120)}},
		{"a compare-and-set that did not swap, across the recovery: a read", notSwapped(90, 110), nil, []Op{notSwapped(90, 110)}},
		{"a compare-and-set that did not swap, before", notSwapped(10, 20), []Op{notSwapped(10, 20)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Ops: []Op{tc.op}, Events: []Event{rec}, Samples: []Sample{{Time: 50}, {Time: 150}}}
			es := Epochs(h)
			if len(es) != 2 {
				t.Fatalf("%d epochs, want 2", len(es))
			}
			if !reflect.DeepEqual(es[0].Ops, tc.before) || !reflect.DeepEqual(es[1].Ops, tc.after) {
				t.Fatalf("epochs hold %+v and %+v, want %+v and %+v", es[0].Ops, es[1].Ops, tc.before, tc.after)
			}
			if len(es[0].Samples) != 2 || len(es[1].Samples) != 2 {
				t.Fatalf("samples %+v and %+v: each epoch keeps them all", es[0].Samples, es[1].Samples)
			}
		})
	}
	if es := Epochs(&History{Ops: []Op{put(10, 20, OK, 6)}}); len(es) != 1 || len(es[0].Ops) != 1 {
		t.Fatalf("without a recovery: %d epochs", len(es))
	}
}
