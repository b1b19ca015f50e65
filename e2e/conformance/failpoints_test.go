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
	var got []string
	for _, sc := range FailpointScenarios(opts) {
		got = append(got, sc.Name+" "+sc.Labels["failpoint"]+" "+sc.Labels["operation"])
		replicas := int32(3)
		if sc.Labels["operation"] == "roll" {
			replicas = 5
		}
		if sc.Labels["suite"] != "failpoints" || sc.Replicas != replicas || len(sc.Steps) != 2 || !reflect.DeepEqual(needs(sc), []string{framework.FailpointImage.Name}) {
			t.Errorf("%s: labels %v replicas %d steps %d needs %v", sc.Name, sc.Labels, sc.Replicas, len(sc.Steps), needs(sc))
		}
		var spec v1alpha1.EtcdClusterSpec
		sc.Spec(&spec)
		if spec.Image != opts.FailpointImage || spec.NetworkPolicy.Enabled == nil || *spec.NetworkPolicy.Enabled {
			t.Errorf("%s: image %q, network policy %v", sc.Name, spec.Image, spec.NetworkPolicy.Enabled)
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
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scenarios\n %q\nwant\n %q", got, want)
	}
}
