package resources

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/testsupport"
)

// The PDB counts learners on top of a quorum of voters so that no eviction takes a voter while
// a learner stands in for it. With the etcd this operator ships (3.6, and 3.5 from 3.5.19),
// the member's readiness probe (/readyz) fails on a learner by itself (etcd's non_learner
// check): a learner's pod is never a healthy pod of the budget, and the margin matters only
// on older 3.5 releases. If etcd changes that, the budget's reasoning must be looked at again.
func TestLearnerIsNotReady(t *testing.T) {
	voter := testsupport.StartEtcd(t, "voter", false)
	peer := "http://127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := voter.Client(t).MemberAddAsLearner(ctx, []string{peer}); err != nil {
		t.Fatal(err)
	}
	learner := testsupport.StartEtcdWith(t, "learner", testsupport.EtcdOptions{PeerURL: peer,
		InitialCluster: "voter=" + voter.PeerURL + ",learner=" + peer, Args: []string{"--initial-cluster-state=existing"}})
	readyz := func(e *testsupport.Etcd) (int, string) {
		t.Helper()
		resp, err := http.Get(e.MetricsURL + "/readyz?verbose")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(voter); code != http.StatusOK {
		t.Fatalf("the voter's /readyz: %d %s", code, body)
	}
	code, body := readyz(learner)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]non_learner failed") {
		t.Fatalf("the learner's /readyz: %d %s; want 503 with the non_learner check failed", code, body)
	}
}
