package linearizability

import (
	"os"
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
		got = append(got, o.Input.(history.Op).Value+"/"+string(o.Input.(history.Op).Status))
	}
	want := []string{"a/ok", "seen-by-get/unknown", "seen-by-cas/unknown", "/ok", "b/ok"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("operations searched: %v, want %v", got, want)
	}
	if v := Check(h, 10*time.Second, ""); !v.Passed() {
		t.Fatalf("verdict %v", v)
	}
}
