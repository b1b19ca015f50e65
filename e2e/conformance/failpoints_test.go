//go:build !e2e

package conformance

import (
	"reflect"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
)

// Every failpoint scenario runs the failpoint image without the NetworkPolicy (the suite
// reaches port 22381), needs it, and names its failpoint and operation; a roll has 5 members;
// the compaction one compacts every minute and ends with 5 members.
func TestFailpointScenarios(t *testing.T) {
	opts := campaignOptions()
	opts.FailpointImage = "localhost:5000/quorate/etcd:v3.6.16-failpoints"
	opts.FailpointUpgradeFromImage = "localhost:5000/quorate/etcd:v3.5.35-failpoints"
	opts.UpgradeFrom = "3.5.35"
	var got []string
	for _, sc := range FailpointScenarios(opts) {
		got = append(got, sc.Name+" "+sc.Labels["failpoint"]+" "+sc.Labels["operation"])
		replicas, steps, wantNeeds := int32(3), 2, []string{framework.FailpointImage.Name}
		image, version := opts.FailpointImage, ""
		switch {
		case sc.Name == "failpoint-slow-voters-scale-down":
			// Targets chosen, the scale-down that waits, the 4 members settled.
			replicas, steps = 5, 3
		case sc.Labels["operation"] == "roll":
			replicas = 5
		case sc.Labels["operation"] == "upgrade":
			// An upgrade starts from the older failpoint build, with five members.
			replicas, image, version = 5, opts.FailpointUpgradeFromImage, opts.UpgradeFrom
			wantNeeds = append(wantNeeds, framework.FailpointUpgradeImages.Name)
		}
		if sc.Labels["suite"] != "failpoints" || sc.Replicas != replicas || len(sc.Steps) != steps || !reflect.DeepEqual(needs(sc), wantNeeds) {
			t.Errorf("%s: labels %v replicas %d steps %d needs %v", sc.Name, sc.Labels, sc.Replicas, len(sc.Steps), needs(sc))
		}
		var spec v1alpha1.EtcdClusterSpec
		sc.Spec(&spec)
		if spec.Image != image || spec.Version != version || spec.NetworkPolicy.Enabled == nil || *spec.NetworkPolicy.Enabled {
			t.Errorf("%s: image %q version %q, network policy %v", sc.Name, spec.Image, spec.Version, spec.NetworkPolicy.Enabled)
		}
		if sc.Name == "failpoint-follower-panics-compacting" && (spec.Etcd.AutoCompactionMode != "periodic" || spec.Etcd.AutoCompactionRetention != "1m" || sc.Steps[1].Name != "wait for 5 members settled") {
			t.Errorf("%s: compaction %q %q, last step %q", sc.Name, spec.Etcd.AutoCompactionMode, spec.Etcd.AutoCompactionRetention, sc.Steps[1].Name)
		}
	}
	want := []string{
		"failpoint-leader-panics-before-save raftBeforeSave scale",
		"failpoint-follower-panics-after-save raftAfterSave scale",
		"failpoint-follower-panics-before-commit beforeCommit roll",
		"failpoint-leader-panics-after-commit afterCommit roll",
		"failpoint-follower-panics-saving-snapshot raftBeforeWALSaveSnaphot scale",
		"failpoint-defrag-panics-before-rename defragBeforeRename defrag",
		"failpoint-leader-slow-wal-sync walBeforeSync scale",
		"failpoint-leader-slow-to-send raftBeforeLeaderSend roll",
		"failpoint-follower-panics-compacting compactBeforeCommitScheduledCompact scale",
		"failpoint-upgraded-follower-panics-before-commit beforeCommit upgrade",
		"failpoint-leader-panics-before-save-in-upgrade raftBeforeSave upgrade",
		"failpoint-slow-voters-scale-down raftBeforeSave scale",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scenarios\n %q\nwant\n %q", got, want)
	}
}
