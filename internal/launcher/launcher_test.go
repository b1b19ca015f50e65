package launcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/quorate-dev/quorate/internal/etcd"
)

func volume(t *testing.T, withData bool, marker *Marker) Volume {
	t.Helper()
	dir := t.TempDir()
	v := Volume{DataDir: filepath.Join(dir, "data"), MarkerPath: filepath.Join(dir, "quorate-member.json"), Member: "demo-1"}
	if withData {
		if err := os.MkdirAll(filepath.Join(v.DataDir, "member", "wal"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if marker != nil {
		if err := WriteMarker(v.MarkerPath, *marker); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

func TestVolumeCheck(t *testing.T) {
	ours := &Marker{ClusterID: "abc", MemberID: "12", Member: "demo-1"}
	for _, tc := range []struct {
		name     string
		data     bool
		marker   *Marker
		expected string
		require  bool
		refusal  RefusalKind
	}{
		{name: "fresh volume of a new member starts", data: false},
		{name: "volume with data and matching marker starts", data: true, marker: ours, expected: "abc", require: true},
		{name: "data without marker starts (marker written after start)", data: true, require: true},
		{name: "marker without data is lost data", data: false, marker: ours, refusal: RefusalDataLost},
		{name: "required data missing", data: false, require: true, refusal: RefusalDataLost},
		{name: "marker of another cluster", data: true, marker: ours, expected: "def", refusal: RefusalClusterIDMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := volume(t, tc.data, tc.marker)
			v.ExpectedClusterID, v.RequireData = tc.expected, tc.require
			_, err := v.Check()
			var r *Refusal
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("unexpected refusal: %v", err)
			case tc.refusal != "" && (!errors.As(err, &r) || r.Kind != tc.refusal):
				t.Fatalf("got %v, want a %s refusal", err, tc.refusal)
			}
		})
	}
}

func TestPeerClientURLs(t *testing.T) {
	got := PeerClientURLs("demo-0=https://demo-0.demo-peer.ns.svc:2380,demo-1=https://demo-1.demo-peer.ns.svc:2380,demo-2=https://demo-2.demo-peer.ns.svc:2380", "demo-1")
	want := []string{"demo-0.demo-peer.ns.svc:2379", "demo-2.demo-peer.ns.svc:2379"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PeerClientURLs = %v, want %v", got, want)
	}
}

func TestCheckNotBootstrappedBefore(t *testing.T) {
	f := etcd.NewFake("3.6.16")
	peers := []string{"demo-0", "demo-2"}
	// Nobody answers: a genuine first bootstrap.
	if err := CheckNotBootstrappedBefore(context.Background(), f.Factory(), nil, "demo-1", peers); err != nil {
		t.Fatalf("first bootstrap refused: %v", err)
	}
	f.Bootstrap(0xc1, []string{"demo-0", "demo-1", "demo-2"}, []string{"u0", "u1", "u2"})
	err := CheckNotBootstrappedBefore(context.Background(), f.Factory(), nil, "demo-1", peers)
	var r *Refusal
	if !errors.As(err, &r) || r.Kind != RefusalDataLost || !strings.Contains(r.Message, "second time") {
		t.Fatalf("a member that already ran was allowed to bootstrap again: %v", err)
	}
}

func TestLaunchPassesExitCodeAndRecordsRefusals(t *testing.T) {
	v := volume(t, false, nil)
	term := filepath.Join(t.TempDir(), "termination-log")
	o := Options{Volume: v, TerminationLogPath: term, Command: []string{"/bin/sh", "-c", "exit 7"}, TLSDir: "/nonexistent"}
	var logs bytes.Buffer
	if code := Launch(context.Background(), o, &logs); code != 7 {
		t.Fatalf("exit code = %d, want etcd's 7 (logs: %s)", code, logs.String())
	}
	o.RequireData = true
	if code := Launch(context.Background(), o, &logs); code != 2 {
		t.Fatalf("exit code = %d, want 2 for a refusal", code)
	}
	msg, _ := os.ReadFile(term)
	if r := ParseTermination(string(msg)); r == nil || r.Kind != RefusalDataLost {
		t.Fatalf("termination message = %q, want a DataLost refusal", msg)
	}
}

// The termination message is the contract between the launcher and the operator: every kind
// must come back whole from what the launcher writes.
func TestTerminationRoundTrip(t *testing.T) {
	for _, k := range RefusalKinds {
		want := &Refusal{Kind: k, Message: "the volume's marker says: it held member demo-1 (a: b)"}
		path := filepath.Join(t.TempDir(), "termination-log")
		if err := WriteTerminationMessage(path, want); err != nil {
			t.Fatal(err)
		}
		msg, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := ParseTermination(string(msg)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ParseTermination(%q) = %+v, want %+v", k, msg, got, want)
		}
	}
	for _, other := range []string{"", "exit status 1", "DataLostish: x", "datalost: x", "panic: runtime error"} {
		if got := ParseTermination(other); got != nil {
			t.Errorf("ParseTermination(%q) = %+v, want nil", other, got)
		}
	}
}

func TestPodAnnotations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "annotations")
	// As the kubelet writes them: sorted, values quoted.
	content := "etcd.quorate.dev/cluster-id=\"c1a55\"\netcd.quorate.dev/require-data=\"true\"\nnote=\"a \\\"quoted\\\" word\\nand a line\"\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ann, err := ReadPodAnnotations(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"etcd.quorate.dev/cluster-id": "c1a55", "etcd.quorate.dev/require-data": "true", "note": "a \"quoted\" word\nand a line"}
	if !reflect.DeepEqual(ann, want) {
		t.Errorf("ReadPodAnnotations = %q, want %q", ann, want)
	}
	if got, err := ReadPodAnnotations(filepath.Join(t.TempDir(), "missing")); err != nil || len(got) != 0 {
		t.Errorf("a missing file gives %v, %v; want no annotations", got, err)
	}
	v := Volume{Member: "demo-0"}.FromAnnotations(ann)
	if !v.RequireData || v.ExpectedClusterID != "c1a55" {
		t.Errorf("FromAnnotations = %+v: the member must require its data and its cluster ID", v)
	}
	v = Volume{Member: "demo-0", ExpectedClusterID: "abc"}.FromAnnotations(map[string]string{})
	if v.RequireData || v.ExpectedClusterID != "abc" {
		t.Errorf("FromAnnotations without annotations changed the volume: %+v", v)
	}
}

// A bootstrap pod allows an empty volume by its flags; once the operator has marked the member
// as having run, a container restart on an emptied volume is refused instead of forming a
// second cluster with the same IDs.
func TestLaunchRefusesAnEmptiedVolumeOfAMemberThatRan(t *testing.T) {
	v := volume(t, false, nil)
	dir := t.TempDir()
	annotations := filepath.Join(dir, "annotations")
	if err := os.WriteFile(annotations, []byte("etcd.quorate.dev/cluster-id=\"c1a55\"\netcd.quorate.dev/require-data=\"true\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	term := filepath.Join(dir, "termination-log")
	o := Options{Volume: v, TerminationLogPath: term, PodAnnotationsPath: annotations, TLSDir: "/nonexistent",
		Command: []string{"/bin/sh", "-c", "exit 0", "--initial-cluster-state=new"}}
	var logs bytes.Buffer
	if code := Launch(context.Background(), o, &logs); code != 2 {
		t.Fatalf("exit code = %d, want 2 for a refusal (logs: %s)", code, logs.String())
	}
	msg, _ := os.ReadFile(term)
	if r := ParseTermination(string(msg)); r == nil || r.Kind != RefusalDataLost || !strings.Contains(r.Message, "refusing to rejoin with an empty log") {
		t.Fatalf("termination message = %q, want a DataLost refusal", msg)
	}
}

func TestHandOver(t *testing.T) {
	f := etcd.NewFake("3.6.16")
	f.Bootstrap(0xc1, []string{"demo-0", "demo-1", "demo-2"}, []string{"https://demo-0.p:2380", "https://demo-1.p:2380", "https://demo-2.p:2380"})
	var logs bytes.Buffer
	logger := log.New(&logs, "", 0)
	// A follower has nothing to hand over.
	HandOver(context.Background(), f.Factory(), "demo-2", nil, logger)
	if calls := f.Calls(); len(calls) != 0 {
		t.Fatalf("a follower moved leadership: %v", calls)
	}
	// The leader hands over to another voter before it stops.
	HandOver(context.Background(), f.Factory(), "demo-0", nil, logger)
	if calls := f.Calls(); !reflect.DeepEqual(calls, []string{"MoveLeader demo-1"}) {
		t.Fatalf("calls %v, want the leadership moved to demo-1 (logs: %s)", calls, logs.String())
	}
	if !strings.Contains(logs.String(), "handed leadership to demo-1") {
		t.Errorf("logs: %s", logs.String())
	}
	// A single member has nobody to hand over to.
	single := etcd.NewFake("3.6.16")
	single.Bootstrap(0xc2, []string{"one-0"}, []string{"https://one-0.p:2380"})
	HandOver(context.Background(), single.Factory(), "one-0", nil, logger)
	if calls := single.Calls(); len(calls) != 0 {
		t.Fatalf("a single member moved leadership: %v", calls)
	}
}

// A survivor forced for a recovery is forced once: a later start of a pod that still carries
// --force-new-cluster for the same token (the operator lost the recovery's record, or was down
// when the container restarted) starts etcd without it, instead of making a one-member cluster
// again beside the members that rejoined. Another token, or a member not yet forced, forces.
func TestForceOnce(t *testing.T) {
	etcdCmd := []string{"/usr/local/bin/etcd", "--name=demo-1", flagForceNewCluster}
	var logs bytes.Buffer
	logger := log.New(&logs, "", 0)
	for _, tc := range []struct {
		name        string
		token       string
		marker      *Marker
		wantForcing bool
		wantCommand []string
	}{
		{"forced before for this token", "incident-1", &Marker{Member: "demo-1", ForcedToken: "incident-1"}, false, []string{"/usr/local/bin/etcd", "--name=demo-1"}},
		{"not forced yet", "incident-1", &Marker{Member: "demo-1"}, true, etcdCmd},
		{"forced for an earlier recovery", "incident-2", &Marker{Member: "demo-1", ForcedToken: "incident-1"}, true, etcdCmd},
		{"a pod from before tokens", "", &Marker{Member: "demo-1", ForcedToken: "incident-1"}, true, etcdCmd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{Volume: Volume{Member: "demo-1"}, ForceToken: tc.token, Command: slices.Clone(etcdCmd)}
			got, forcing := o.forceOnce(tc.marker, logger)
			if forcing != tc.wantForcing || !slices.Equal(got.Command, tc.wantCommand) {
				t.Fatalf("forceOnce = %v, %q; want %v, %q", forcing, got.Command, tc.wantForcing, tc.wantCommand)
			}
		})
	}
	if want := "member demo-1 was forced for recovery \"incident-1\" before: starting it without --force-new-cluster\n"; logs.String() != want {
		t.Errorf("log %q, want %q", logs.String(), want)
	}
	// Not forcing, the command is left as it is.
	o := Options{Command: []string{"/usr/local/bin/etcd"}}
	if _, forcing := o.forceOnce(&Marker{}, logger); forcing {
		t.Error("a start without the flag was taken for a forced one")
	}
}

// The stop sequence: leadership leaves, etcd serves through the delay, leadership leaves again
// if it came back, then etcd gets the signal; a second signal ends the delay early and follows
// the first.
func TestStopSequence(t *testing.T) {
	const delay = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		second bool
		want   []string
	}{
		{"one signal: the whole delay", false, []string{"hand-over", "hand-over", "forward terminated"}},
		{"a second signal ends the delay", true, []string{"hand-over", "hand-over", "forward terminated", "forward interrupt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			var mu sync.Mutex
			var steps []string
			var forwardedAt time.Time
			step := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				steps = append(steps, s)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				stopSequence(context.Background(), sigs, delay, func() { step("hand-over") }, func(s os.Signal) {
					if s == syscall.SIGTERM {
						forwardedAt = time.Now()
					}
					step("forward " + s.String())
				}, log.New(io.Discard, "", 0))
			}()
			start := time.Now()
			sigs <- syscall.SIGTERM
			if tc.second {
				sigs <- syscall.SIGINT
			}
			close(sigs)
			<-done
			if d := cmp.Diff(tc.want, steps); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
			if waited := forwardedAt.Sub(start); !tc.second && waited < delay {
				t.Errorf("etcd was told to stop %s after the signal, before the %s delay", waited, delay)
			}
		})
	}
}

// etcd ending its start on its initial corruption check is reported to the operator with the
// peers whose data differed (lines split across writes); the phrase anywhere else (a client's
// key in a slow-request warning, a line after etcd serves) changes nothing, nor does another
// failure.
func TestLaunchReportsAFailedInitialCorruptionCheck(t *testing.T) {
	mismatch := func(peer string) string {
		return `{"level":"warn","msg":"found different hash values from remote peer","local-member-id":"8e9e05c52164694d","remote-peer-id":"` + peer + `","remote-peer-hash":1}`
	}
	failed := `{"level":"error","msg":"checkInitialHashKV failed","error":"8e9e05c52164694d found data inconsistency with peers"}`
	say := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(`printf '%s\n' '` + l + `' >&2; `)
		}
		return b.String()
	}
	// etcd 3.6.16, as it wrote it on the local cluster: the peer's ID is "0", its URL names it.
	mismatch36 := func(url string) string {
		return `{"level":"warn","ts":"2026-11-28T17:15:41.109223Z","caller":"etcdserver/corrupt.go:120","msg":"found different hash values from remote peer","local-member-id":"66f475b0e2244df4","local-member-revision":4015,"local-member-compact-revision":-1,"local-member-hash":1244180995,"remote-peer-id":"0","remote-peer-endpoints":["` + url + `"],"remote-peer-revision":7897,"remote-peer-compact-revision":-1,"remote-peer-hash":4220755007}`
	}
	const url1, url2 = "https://etcd-1.etcd-peer.ns.svc:2380", "https://etcd-2.etcd-peer.ns.svc:2380"
	corrupt := &Refusal{Kind: RefusalCorruptAtStart, Message: "etcd's initial corruption check found this member's data differ, at the same revision, from its peers 91bc3c398fb3c146,fd422379fda50e48; etcd will not start with them"}
	corrupt36 := &Refusal{Kind: RefusalCorruptAtStart, Message: "etcd's initial corruption check found this member's data differ, at the same revision, from its peers " + url1 + "," + url2 + "; etcd will not start with them"}
	for _, tc := range []struct {
		name     string
		script   string
		wantCode int
		want     *Refusal
		wantIDs  []uint64
		wantURLs []string
	}{
		{"check failed", say(mismatch("91bc3c398fb3c146"), mismatch("fd422379fda50e48")) + `printf '%s' '` + failed[:50] + `' >&2; printf '%s\n' '` + failed[50:] + `' >&2; exit 1`, 2, corrupt,
			[]uint64{0x91bc3c398fb3c146, 0xfd422379fda50e48}, nil},
		{"check failed, etcd 3.6 (peers by URL)", say(mismatch36(url1), mismatch36(url2), failed) + `exit 1`, 2, corrupt36, nil, []string{url1, url2}},
		{"another failure", `echo 'listener failed' >&2; exit 1`, 1, nil, nil, nil},
		{"a key in a warning, then killed", say(`{"level":"warn","msg":"apply request took too long","request":"key:\"/x/8e9e05c52164694d found data inconsistency with peers\""}`) + `kill -KILL $$`, -1, nil, nil, nil},
		{"after serving, then killed", say(`{"level":"info","msg":"ready to serve client requests"}`, failed) + `kill -KILL $$`, -1, nil, nil, nil},
	} {
		term := filepath.Join(t.TempDir(), "termination-log")
		o := Options{Volume: volume(t, false, nil), TerminationLogPath: term, Command: []string{"/bin/sh", "-c", tc.script}, TLSDir: "/nonexistent"}
		code := Launch(context.Background(), o, io.Discard)
		msg, _ := os.ReadFile(term)
		got := ParseTermination(string(msg))
		if code != tc.wantCode || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: exit code %d, termination %+v; want %d, %+v", tc.name, code, got, tc.wantCode, tc.want)
		}
		if ids := CorruptPeers(got); !reflect.DeepEqual(ids, tc.wantIDs) {
			t.Errorf("%s: CorruptPeers = %x, want %x", tc.name, ids, tc.wantIDs)
		}
		if urls := CorruptPeerURLs(got); !reflect.DeepEqual(urls, tc.wantURLs) {
			t.Errorf("%s: CorruptPeerURLs = %q, want %q", tc.name, urls, tc.wantURLs)
		}
	}
}
