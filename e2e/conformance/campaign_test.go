//go:build !e2e

package conformance

import (
	"reflect"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
)

func campaignOptions() *framework.Options {
	return &framework.Options{OperatorNS: "quorate-system", EtcdVersion: "3.6.6", UpgradeFrom: "3.5.21", StorageClasses: "local-path,local-path-b"}
}

// A run's plan is a function of the seed and the index: the draw must stay what it was, or the
// seeds a campaign recorded no longer replay its runs.
func TestPlanCampaignRunIsStable(t *testing.T) {
	ops := []string{"scale", "roll", "upgrade", "storage-move", "backup", "restore"}
	faults := []string{"pod-kill-leader", "pod-kill-follower", "container-kill", "pod-failure", "partition-leader", "partition-minority", "delay", "loss", "clock-skew", "operator-kill", "node-loss"}
	var got []CampaignPlan
	for i := range 4 {
		got = append(got, PlanCampaignRun(20261128, i, ops, faults))
	}
	want := []CampaignPlan{
		{Seed: 20261128, Index: 0, Operation: "upgrade", Fault: "container-kill", Moment: 10500 * time.Millisecond},
		{Seed: 20261128, Index: 1, Operation: "backup", Fault: "delay", Moment: 14 * time.Second},
		{Seed: 20261128, Index: 2, Operation: "upgrade", Fault: "container-kill", Moment: 14500 * time.Millisecond},
		{Seed: 20261128, Index: 3, Operation: "backup", Fault: "clock-skew", Moment: 5500 * time.Millisecond},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plans:\n got %+v\nwant %+v", got, want)
	}
}

// Every operation, fault and moment is drawn; nothing outside them.
func TestPlanCampaignRunCoversEveryChoice(t *testing.T) {
	ops, faults := []string{"a", "b", "c"}, []string{"x", "y"}
	seen := map[string]int{}
	moments := map[time.Duration]bool{}
	for i := range 2000 {
		p := PlanCampaignRun(7, i, ops, faults)
		seen[p.Operation]++
		seen[p.Fault]++
		moments[p.Moment] = true
		if p.Moment < 0 || p.Moment > 15*time.Second || p.Moment%campaignMomentStep != 0 {
			t.Fatalf("run %d: moment %s is not a multiple of %s within 0-15 s", i, p.Moment, campaignMomentStep)
		}
	}
	for _, n := range append(ops, faults...) {
		if seen[n] == 0 {
			t.Errorf("%s never drawn in 2000 runs: %v", n, seen)
		}
	}
	if len(moments) != campaignMoments {
		t.Errorf("%d distinct moments drawn, want %d", len(moments), campaignMoments)
	}
}

// A run given alone (--campaign-from=I --campaign-runs=1) is the run I of the whole campaign.
func TestCampaignRunReplaysAlone(t *testing.T) {
	all, err := CampaignScenarios(campaignOptions(), 424242, 0, 12, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range all {
		one, err := CampaignScenarios(campaignOptions(), 424242, i, 1, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if len(one) != 1 || one[0].Name != want.Name || !reflect.DeepEqual(one[0].Labels, want.Labels) || one[0].Labels["draw-faults"] == "" {
			t.Errorf("run %d alone: %s %v, in the campaign: %s %v", i, one[0].Name, one[0].Labels, want.Name, want.Labels)
		}
	}
}

// What each operation and fault makes of the scenario: its start, its needs, its budget class.
func TestCampaignScenarioShape(t *testing.T) {
	opts := campaignOptions()
	find := func(op, fault string) framework.Scenario {
		t.Helper()
		runs, err := CampaignScenarios(opts, 99, 0, 1, op, fault)
		if err != nil {
			t.Fatal(err)
		}
		return runs[0]
	}
	sc := find("upgrade", "node-loss")
	want := map[string]string{"suite": "campaign", "seed": "99", "run": "0", "operation": "upgrade", "fault": "node-loss", "moment": sc.Labels["moment"],
		"draw-operations": "upgrade", "draw-faults": "node-loss"}
	if !reflect.DeepEqual(sc.Labels, want) || sc.Name != "campaign-99-0" {
		t.Errorf("%s labels %v, want %v", sc.Name, sc.Labels, want)
	}
	// An upgrade stops members one at a time: 5 of them, so that the fault leaves a quorum.
	if sc.Version != "3.5.21" || sc.Class != framework.Partition || sc.Nodes != 3 || !sc.NeedsNode || sc.Replicas != 5 || len(sc.Steps) != 2 || len(sc.Needs) != 0 {
		t.Errorf("upgrade under node-loss: version %q class %v nodes %d needs node %v replicas %d steps %d", sc.Version, sc.Class, sc.Nodes, sc.NeedsNode, sc.Replicas, len(sc.Steps))
	}
	sc = find("storage-move", "delay")
	if sc.Labels["needs"] != "netem" || sc.Class != framework.Partition || sc.Nodes != 0 || sc.Version != "" || sc.Spec == nil ||
		!reflect.DeepEqual(needs(sc), []string{framework.StorageClasses("local-path", "local-path-b").Name, framework.ChaosMesh.Name}) || sc.Replicas != 3 {
		t.Errorf("storage-move under delay: labels %v class %v nodes %d version %q needs %v", sc.Labels, sc.Class, sc.Nodes, sc.Version, needs(sc))
	}
	// A failpoint fault runs etcd built with its failpoints, reachable on their port; an
	// upgrade starts from that build of the older version.
	opts.FailpointImage, opts.FailpointUpgradeFromImage = "etcd:3.6.6-failpoints", "etcd:3.5.21-failpoints"
	sc = find("upgrade", "failpoint-leader-panic")
	spec := v1alpha1.EtcdClusterSpec{Version: sc.Version}
	sc.Spec(&spec)
	if spec.Image != "etcd:3.5.21-failpoints" || spec.NetworkPolicy.Enabled == nil || *spec.NetworkPolicy.Enabled || sc.Class != framework.Fault ||
		!reflect.DeepEqual(needs(sc), []string{framework.FailpointImage.Name, framework.FailpointUpgradeImages.Name}) {
		t.Errorf("upgrade under failpoint-leader-panic: image %q network policy %v class %v needs %v", spec.Image, spec.NetworkPolicy.Enabled, sc.Class, needs(sc))
	}
	sc = find("storage-move", "failpoint-follower-panic")
	spec = v1alpha1.EtcdClusterSpec{Version: opts.EtcdVersion}
	sc.Spec(&spec)
	if spec.Image != "etcd:3.6.6-failpoints" || spec.Storage.StorageClassName == nil || *spec.Storage.StorageClassName != "local-path" ||
		!reflect.DeepEqual(needs(sc), []string{framework.StorageClasses("local-path", "local-path-b").Name, framework.FailpointImage.Name}) {
		t.Errorf("storage-move under failpoint-follower-panic: image %q storage class %v needs %v", spec.Image, spec.Storage.StorageClassName, needs(sc))
	}
	sc = find("restore", "pod-kill-leader")
	if sc.Class != framework.Fault || !reflect.DeepEqual(needs(sc), []string{framework.ObjectStore.Name, framework.ChaosMesh.Name}) || sc.Labels["needs"] != "" {
		t.Errorf("restore under pod-kill-leader: class %v needs %v labels %v", sc.Class, needs(sc), sc.Labels)
	}
}

// The operations depend on the suite's options; faults that lose quorum are never drawn.
func TestCampaignChoices(t *testing.T) {
	opts := campaignOptions()
	if got, want := namesOf(campaignOps(opts), func(o campaignOp) string { return o.name }), []string{"scale", "roll", "upgrade", "storage-move", "backup", "restore"}; !reflect.DeepEqual(got, want) {
		t.Errorf("operations %v, want %v", got, want)
	}
	opts.StorageClasses, opts.UpgradeFrom = "", opts.EtcdVersion
	if got, want := namesOf(campaignOps(opts), func(o campaignOp) string { return o.name }), []string{"scale", "roll", "backup", "restore"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without storage classes or an older version: operations %v, want %v", got, want)
	}
	want := []string{"pod-kill-leader", "pod-kill-follower", "container-kill", "pod-failure", "partition-leader", "partition-minority", "delay", "loss", "clock-skew", "operator-kill", "node-loss",
		"failpoint-leader-panic", "failpoint-follower-panic", "failpoint-leader-slow"}
	if got := namesOf(campaignFaults(opts), func(f campaignFault) string { return f.name }); !reflect.DeepEqual(got, want) {
		t.Errorf("faults %v, want %v", got, want)
	}
}

func TestCampaignRefusals(t *testing.T) {
	for _, c := range []struct {
		seed              uint64
		from, runs        int
		operations, fault string
		err               string
	}{
		{seed: 0, runs: 1, err: "--campaign-seed=0: give a seed from 1 to 999999999"},
		{seed: 1_000_000_000, runs: 1, err: "--campaign-seed=1000000000: give a seed from 1 to 999999999"},
		{seed: 1, from: -1, runs: 1, err: "--campaign-from=-1 --campaign-runs=1: neither may be negative"},
		{seed: 1, runs: 1, operations: "scale,defrag", err: `--campaign-operations: "defrag" is not one of scale,roll,upgrade,storage-move,backup,restore`},
		{seed: 1, runs: 1, fault: "partition-majority", err: `--campaign-faults: "partition-majority" is not one of pod-kill-leader,pod-kill-follower,container-kill,pod-failure,partition-leader,partition-minority,delay,loss,clock-skew,operator-kill,node-loss,failpoint-leader-panic,failpoint-follower-panic,failpoint-leader-slow`},
	} {
		_, err := CampaignScenarios(campaignOptions(), c.seed, c.from, c.runs, c.operations, c.fault)
		if err == nil || err.Error() != c.err {
			t.Errorf("%+v: error %v, want %s", c, err, c.err)
		}
	}
}

// Narrowing keeps the draw's order, so the same narrowed list replays the same runs.
func TestCampaignNarrowed(t *testing.T) {
	runs, err := CampaignScenarios(campaignOptions(), 5, 0, 40, "restore, scale", "pod-kill-leader")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sc := range runs {
		seen[sc.Labels["operation"]+"/"+sc.Labels["fault"]] = true
	}
	if !reflect.DeepEqual(seen, map[string]bool{"scale/pod-kill-leader": true, "restore/pod-kill-leader": true}) {
		t.Errorf("drawn %v", seen)
	}
}

// needs names a scenario's prerequisites (a Prerequisite holds a function, which no two
// values share).
func needs(sc framework.Scenario) []string {
	return namesOf(sc.Needs, func(p framework.Prerequisite) string { return p.Name })
}
