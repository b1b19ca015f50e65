//go:build !e2e

package conformance

import (
	"reflect"
	"testing"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/framework"
)

// Every failpoint scenario runs the failpoint image, needs it, and names its failpoint and
// operation; the compaction one starts on the storage move's first class with a compaction a
// minute.
func TestFailpointScenarios(t *testing.T) {
	opts := campaignOptions()
	opts.FailpointImage = "localhost:5000/quorate/etcd:v3.6.16-failpoints"
	var got []string
	for _, sc := range FailpointScenarios(opts) {
		got = append(got, sc.Name+" "+sc.Labels["failpoint"]+" "+sc.Labels["operation"])
		if sc.Labels["suite"] != "failpoints" || sc.Replicas != 3 || len(sc.Steps) != 2 || needs(sc)[0] != framework.FailpointImage.Name {
			t.Errorf("%s: labels %v replicas %d steps %d needs %v", sc.Name, sc.Labels, sc.Replicas, len(sc.Steps), needs(sc))
		}
		var spec v1alpha1.EtcdClusterSpec
		sc.Spec(&spec)
		if spec.Image != opts.FailpointImage {
			t.Errorf("%s: image %q", sc.Name, spec.Image)
		}
		if sc.Name == "failpoint-leader-panics-compacting" && (*spec.Storage.StorageClassName != "local-path" || spec.Etcd.AutoCompactionRetention != "1m" ||
			!reflect.DeepEqual(needs(sc), []string{framework.FailpointImage.Name, framework.StorageClasses("local-path", "local-path-b").Name})) {
			t.Errorf("%s: storage class %v, retention %q, needs %v", sc.Name, spec.Storage.StorageClassName, spec.Etcd.AutoCompactionRetention, needs(sc))
		}
	}
	want := []string{
		"failpoint-leader-panics-before-save raftBeforeSave scale",
		"failpoint-follower-panics-after-save raftAfterSave scale",
		"failpoint-follower-panics-before-commit beforeCommit roll",
		"failpoint-leader-panics-after-commit afterCommit roll",
		"failpoint-follower-panics-saving-snapshot raftBeforeSaveSnap scale",
		"failpoint-defrag-panics-before-rename defragBeforeRename defrag",
		"failpoint-leader-slow-wal-sync walBeforeSync scale",
		"failpoint-leader-slow-to-send raftBeforeLeaderSend roll",
		"failpoint-leader-panics-compacting compactBeforeCommitScheduledCompact storage-move",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scenarios\n %q\nwant\n %q", got, want)
	}
}
