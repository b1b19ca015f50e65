package linearizability

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/e2e/history"
)

// op builds an operation; times are small integers for readability.
func op(client int, typ history.OpType, key string, call, ret int64, st history.Status, f func(*history.Op)) history.Op {
	o := history.Op{Client: client, Type: typ, Key: key, Call: call, Return: ret, Status: st}
	if f != nil {
		f(&o)
	}
	return o
}

func put(v string) func(*history.Op)  { return func(o *history.Op) { o.Value = v } }
func read(v string) func(*history.Op) { return func(o *history.Op) { o.Found, o.Output = true, v } }
func absent() func(*history.Op)       { return func(o *history.Op) { o.Found = false } }
func cas(exp, v string, ok bool, saw string) func(*history.Op) {
	return func(o *history.Op) {
		o.Expect, o.Value, o.Succeeded = exp, v, ok
		if !ok && saw != "" {
			o.Found, o.Output = true, saw
		}
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []history.Op
		pass bool
	}{
		{"sequential put then get", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(1, history.Get, "k", 3, 4, history.OK, read("a")),
		}, true},
		{"stale read after an acknowledged write", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(0, history.Put, "k", 3, 4, history.OK, put("b")),
			op(1, history.Get, "k", 5, 6, history.OK, read("a")),
		}, false},
		{"read of a value never written", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(1, history.Get, "k", 3, 4, history.OK, read("zzz")),
		}, false},
		{"concurrent put may be seen or not", []history.Op{
			op(0, history.Put, "k", 1, 10, history.OK, put("a")),
			op(1, history.Get, "k", 2, 3, history.OK, absent()),
			op(2, history.Get, "k", 4, 5, history.OK, read("a")),
		}, true},
		{"value flips back: a read cannot go back in time", []history.Op{
			op(0, history.Put, "k", 1, 10, history.OK, put("a")),
			op(1, history.Get, "k", 2, 3, history.OK, read("a")),
			op(2, history.Get, "k", 4, 5, history.OK, absent()),
		}, false},
		{"unknown write that took effect", []history.Op{
			op(0, history.Put, "k", 1, 0, history.Unknown, put("a")),
			op(1, history.Get, "k", 5, 6, history.OK, read("a")),
		}, true},
		{"unknown write that never took effect", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(0, history.Put, "k", 3, 0, history.Unknown, put("b")),
			op(1, history.Get, "k", 5, 6, history.OK, read("a")),
			op(1, history.Get, "k", 7, 8, history.OK, read("a")),
		}, true},
		{"unknown write cannot take effect twice", []history.Op{
			op(0, history.Put, "k", 1, 0, history.Unknown, put("a")),
			op(1, history.Put, "k", 2, 3, history.OK, put("b")),
			op(1, history.Get, "k", 4, 5, history.OK, read("a")),
			op(1, history.Get, "k", 6, 7, history.OK, read("b")),
		}, false},
		{"failed read is ignored", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(1, history.Get, "k", 3, 4, history.Fail, nil),
		}, true},
		{"compare-and-set that swapped", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(1, history.CAS, "k", 3, 4, history.OK, cas("a", "b", true, "")),
			op(2, history.Get, "k", 5, 6, history.OK, read("b")),
		}, true},
		{"compare-and-set that swapped a value it could not have seen", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(1, history.CAS, "k", 3, 4, history.OK, cas("x", "b", true, "")),
		}, false},
		{"compare-and-set that failed against the current value", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, put("a")),
			op(1, history.CAS, "k", 3, 4, history.OK, cas("a", "b", false, "a")),
		}, false},
		{"keys are independent", []history.Op{
			op(0, history.Put, "k1", 1, 2, history.OK, put("a")),
			op(1, history.Get, "k2", 3, 4, history.OK, absent()),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history.History{Scenario: tc.name, Ops: tc.ops, End: 100}
			dir := t.TempDir()
			v := Check(h, 10*time.Second, dir)
			want := history.Expectation{Status: history.VerdictPass, Code: CodeLinearizable}
			if !tc.pass {
				want = history.ExpectFail(CodeNotLinearizable)
			}
			if v.Status != want.Status || v.Code != want.Code {
				t.Fatalf("verdict %v, want %v", v, want)
			}
			if !tc.pass {
				path := v.Artifacts["visualization"]
				b, err := os.ReadFile(path)
				if err != nil || !strings.Contains(string(b), "<html") {
					t.Errorf("no visualization written for a violation: %v", err)
				}
			}
		})
	}
}

// Unknown writes nobody read are left out of the search (they could always be ordered last);
// one whose value was read, or expected by a swap that succeeded, stays; failed operations and
// unknown reads are left out as before.
func TestOperationsLeaveOutUnseenUnknownWrites(t *testing.T) {
	h := &history.History{End: 100, Ops: []history.Op{
		op(0, history.Put, "k", 1, 2, history.OK, put("a")),
		op(1, history.Put, "k", 3, 0, history.Unknown, put("seen-by-get")),
		op(2, history.Put, "k", 3, 0, history.Unknown, put("never-seen")),
		op(3, history.CAS, "k", 3, 0, history.Unknown, cas("seen-by-get", "seen-by-cas", false, "")),
		op(4, history.CAS, "k", 3, 0, history.Unknown, cas("a", "cas-never-seen", false, "")),
		op(5, history.Get, "k", 10, 11, history.OK, read("seen-by-get")),
		op(6, history.CAS, "k", 12, 13, history.OK, cas("seen-by-cas", "b", true, "")),
		op(7, history.Get, "k", 14, 15, history.Unknown, nil),
		op(8, history.Put, "k", 14, 15, history.Fail, put("failed")),
	}}
	var got []string
	for _, o := range Operations(h) {
		got = append(got, o.Input.(input).Value+"/"+string(o.Input.(input).Status))
	}
	want := []string{"a/ok", "seen-by-get/unknown", "seen-by-cas/unknown", "/ok", "b/ok"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("operations searched: %v, want %v", got, want)
	}
	if v := Check(h, 10*time.Second, ""); !v.Passed() {
		t.Fatalf("verdict %v", v)
	}
}

const ms = int64(time.Millisecond)

// at gives an operation the revision etcd reported for it.
func at(rev int64, f func(*history.Op)) func(*history.Op) {
	return func(o *history.Op) {
		o.Revision = rev
		if f != nil {
			f(o)
		}
	}
}

// Keys whose operations all carry revisions are checked in etcd's revision order, without a
// search; the verdict names the operations that break it. A key with a write of unknown
// outcome that a read saw goes to the search.
func TestRevisionOrder(t *testing.T) {
	pass := func(n, ordered int) history.Verdict {
		return history.Verdict{Checker: "linearizability", Status: history.VerdictPass, Code: CodeLinearizable,
			Reason: fmt.Sprintf("%d operations are linearizable (%d in etcd's revision order, %d by search)", n, ordered, n-ordered)}
	}
	fail := func(why string) history.Verdict {
		return history.Verdict{Checker: "linearizability", Status: history.VerdictFail, Code: CodeNotLinearizable,
			Reason: "not linearizable: " + why, Details: []string{why}}
	}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want history.Verdict
	}{
		{"writes in revision order, reads between them", []history.Op{
			op(0, history.Put, "k", 1, 10, history.OK, at(2, put("a"))),
			op(1, history.Get, "k", 2, 3, history.OK, at(1, absent())),
			op(2, history.Get, "k", 4, 5, history.OK, at(2, read("a"))),
			op(3, history.Put, "k", 11, 12, history.OK, at(4, put("b"))),
			op(4, history.Put, "other", 11, 12, history.OK, at(3, put("x"))),
			op(1, history.Get, "k", 13, 14, history.OK, at(4, read("b"))),
			op(2, history.CAS, "k", 15, 16, history.OK, at(5, cas("b", "c", true, ""))),
			op(3, history.CAS, "k", 17, 18, history.OK, at(5, cas("b", "d", false, "c"))),
		}, pass(8, 8)},
		{"a stale read, at its stale revision", []history.Op{
			op(0, history.Put, "k", 1*ms, 2*ms, history.OK, at(2, put("a"))),
			op(0, history.Put, "k", 3*ms, 4*ms, history.OK, at(3, put("b"))),
			op(1, history.Get, "k", 5*ms, 6*ms, history.OK, at(2, read("a"))),
		}, fail("get(k) -> a @2, called at +5ms, comes before put(k, b) -> ok @3 by their revisions, though that one had returned at +4ms")},
		{"a read whose value its revision contradicts", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, at(2, put("a"))),
			op(0, history.Put, "k", 3, 4, history.OK, at(3, put("b"))),
			op(1, history.Get, "k", 5, 6, history.OK, at(3, read("a"))),
		}, fail("get(k) -> a @3, but the newest write at or below revision 3 was b at revision 3")},
		{"writes whose revisions go back in time", []history.Op{
			op(0, history.Put, "k", 1*ms, 2*ms, history.OK, at(3, put("a"))),
			op(1, history.Put, "k", 3*ms, 4*ms, history.OK, at(2, put("b"))),
		}, fail("put(k, b) -> ok @2, called at +3ms, comes before put(k, a) -> ok @3 by their revisions, though that one had returned at +2ms")},
		{"two writes at one revision", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, at(2, put("a"))),
			op(1, history.Put, "k", 1, 2, history.OK, at(2, put("b"))),
		}, fail("put(k, a) -> ok @2 and put(k, b) -> ok @2 were both acknowledged at revision 2")},
		{"a swap of a value the write before it did not leave", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, at(2, put("a"))),
			op(1, history.CAS, "k", 3, 4, history.OK, at(3, cas("x", "b", true, ""))),
		}, fail("cas(k, x -> b) -> swapped @3 swapped, but the write before it was a at revision 2")},
		{"a write of unknown outcome that a read saw: searched", []history.Op{
			op(0, history.Put, "k", 1, 2, history.OK, at(2, put("a"))),
			op(1, history.Put, "k", 3, 0, history.Unknown, put("b")),
			op(2, history.Get, "k", 5, 6, history.OK, at(9, read("b"))),
			op(3, history.Get, "other", 5, 6, history.OK, at(9, absent())),
		}, pass(4, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(&history.History{Scenario: tc.name, Ops: tc.ops, End: 100}, 10*time.Second, "")
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("verdict\n %#v\nwant\n %#v", got, tc.want)
			}
		})
	}
}

// A restore of a lost cluster to revision 2 at time 10: the write acknowledged at revision 3
// is declared lost, and the restored cluster writes revision 3 again. Judged as one cluster
// that is a read going back in time; judged epoch by epoch it is linearizable, unless the
// restored cluster loses a write at or below its revision, or shows what no write left.
func TestCheckAcrossARestore(t *testing.T) {
	rev := func(r int64, f func(*history.Op)) func(*history.Op) {
		return func(o *history.Op) {
			o.Revision = r
			if f != nil {
				f(o)
			}
		}
	}
	before := []history.Op{
		op(0, history.Put, "k", 1, 2, history.OK, rev(2, put("a"))),
		op(0, history.Put, "k", 3, 4, history.OK, rev(3, put("b"))),
		op(1, history.Get, "k", 5, 6, history.OK, rev(3, read("b"))),
		// Answered by the restored cluster after it started: it may have applied it.
		op(2, history.Put, "j", 7, 11, history.OK, rev(4, put("x"))),
	}
	restore := history.Event{Time: 10, Kind: history.EventRecovery, Name: "restored", Revision: 2}
	for _, tc := range []struct {
		name   string
		after  []history.Op
		events []history.Event
		want   history.Expectation
	}{
		{"without the restore declared, the restored cluster reads back in time", []history.Op{
			op(1, history.Get, "k", 12, 13, history.OK, rev(2, read("a"))),
		}, nil, history.ExpectFail(CodeNotLinearizable)},
		{"the restored cluster at revision 2, writing revision 3 again", []history.Op{
			op(1, history.Get, "k", 12, 13, history.OK, rev(2, read("a"))),
			op(0, history.Put, "k", 14, 15, history.OK, rev(3, put("c"))),
			op(1, history.Get, "k", 16, 17, history.OK, rev(3, read("c"))),
			op(1, history.Get, "j", 18, 19, history.OK, rev(4, read("x"))),
		}, []history.Event{restore}, history.Expectation{Status: history.VerdictPass, Code: CodeLinearizable}},
		{"the restored cluster shows a write above its revision (it may have reached it)", []history.Op{
			op(1, history.Get, "k", 12, 13, history.OK, rev(3, read("b"))),
		}, []history.Event{restore}, history.Expectation{Status: history.VerdictPass, Code: CodeLinearizable}},
		{"operations across the restore, answered by the restored cluster", []history.Op{
			op(3, history.Put, "k", 9, 12, history.OK, rev(3, put("d"))),
			op(4, history.Get, "k", 9, 13, history.OK, rev(3, read("d"))),
			op(1, history.Get, "k", 14, 15, history.OK, rev(3, read("d"))),
		}, []history.Event{restore}, history.Expectation{Status: history.VerdictPass, Code: CodeLinearizable}},
		{"a read across the restore that fits neither cluster", []history.Op{
			op(4, history.Get, "k", 9, 13, history.OK, rev(3, read("zzz"))),
		}, []history.Event{restore}, history.ExpectFail(CodeNotLinearizable)},
		{"the restored cluster goes back after showing a later value", []history.Op{
			op(0, history.Put, "k", 12, 13, history.OK, rev(3, put("c"))),
			op(1, history.Get, "k", 14, 15, history.OK, rev(3, read("c"))),
			op(1, history.Get, "k", 16, 17, history.OK, rev(2, read("a"))),
		}, []history.Event{restore}, history.ExpectFail(CodeNotLinearizable)},
		{"the restored cluster lost a write at or below its revision", []history.Op{
			op(1, history.Get, "k", 12, 13, history.OK, absent()),
		}, []history.Event{restore}, history.ExpectFail(CodeNotLinearizable)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &history.History{Scenario: tc.name, Ops: append(append([]history.Op(nil), before...), tc.after...), Events: tc.events, End: 100}
			v := Check(h, 10*time.Second, t.TempDir())
			if !tc.want.Met(v) {
				t.Fatalf("verdict %v, want %v", v, tc.want)
			}
		})
	}
}
