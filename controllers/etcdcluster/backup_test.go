package etcdcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/testsupport/backupfixture"
)

func getBackup(t *testing.T, ns, name string) *v1alpha1.EtcdBackup {
	t.Helper()
	b := &v1alpha1.EtcdBackup{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func waitJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	eventually(t, timeout, "Job "+name, func() error {
		return k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, j)
	})
	return j
}

// finishJob plays the Job controller and the kubelet: the Job's pod ends with the result as
// its termination message, and the Job completes (or fails).
func finishJob(t *testing.T, j *batchv1.Job, res backup.Result, failed bool) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-x1", Namespace: j.Namespace, Labels: map[string]string{batchv1.JobNameLabel: j.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: *j.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	code := int32(0)
	if failed {
		code = 1
	}
	// The kubelet helper gives pods without an IP one: this pod has one already, so that it
	// leaves it alone.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase, pod.Status.PodIP = corev1.PodSucceeded, "10.9.9.9"
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "quorate-backup", Image: j.Spec.Template.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: res.Encode(), Reason: "Completed"}}}}
		return k8s.Status().Update(ctx, pod)
	}); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	kind := batchv1.JobComplete
	if failed {
		kind = batchv1.JobFailed
	}
	j.Status.StartTime, j.Status.CompletionTime = &now, &now
	if failed {
		j.Status.CompletionTime = nil
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now})
	} else {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: kind, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now})
	if failed {
		j.Status.Failed = 1
	} else {
		j.Status.Succeeded = 1
	}
	if err := k8s.Status().Update(ctx, j); err != nil {
		t.Fatal(err)
	}
}

// An EtcdBackup waits for its cluster, then runs a Job that takes the snapshot from the
// members (the Job's arguments compared whole, the credentials only by the Secret's name);
// the Job's result becomes the backup's status. A failed Job fails the backup with its error.
func TestBackup(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	ctx := context.Background()

	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: backupfixture.S3}}
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "the backup waiting for its cluster", func() error {
		got := getBackup(t, ns, "b1")
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionBackupComplete)
		if got.Status.Phase != v1alpha1.BackupPending || c == nil || c.Reason != v1alpha1.ReasonWaitingForCluster || c.Message != "EtcdCluster demo does not exist in "+ns {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})

	bootstrap(t, ns, "demo", 3, fake)
	j := waitJob(t, ns, "b1-backup")
	ctr := j.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"/quorate-backup", "save",
		"--endpoints=demo-0=https://demo-0.demo-peer." + ns + ".svc:2379,demo-1=https://demo-1.demo-peer." + ns + ".svc:2379,demo-2=https://demo-2.demo-peer." + ns + ".svc:2379",
		"--cluster-id=c1a55", "--bucket=" + backupfixture.S3.BucketURL, "--key=etcd/" + ns + "/demo/b1.db", "--work-dir=/work",
		"--tls-dir=/etc/quorate/tls", "--server-name=demo-client." + ns + ".svc"}
	if !slices.Equal(ctr.Command, wantArgs) {
		t.Fatalf("Job command\n %q\nwant\n %q", ctr.Command, wantArgs)
	}
	if len(ctr.EnvFrom) != 1 || ctr.EnvFrom[0].SecretRef.Name != "s3-keys" || ctr.Image != images.Launcher {
		t.Fatalf("Job container env %+v image %s", ctr.EnvFrom, ctr.Image)
	}
	if refs := j.OwnerReferences; len(refs) != 1 || refs[0].Name != "b1" || refs[0].Kind != "EtcdBackup" {
		t.Fatalf("Job owners %+v", refs)
	}
	eventually(t, timeout, "the backup Running", func() error {
		if got := getBackup(t, ns, "b1"); got.Status.Phase != v1alpha1.BackupRunning || got.Status.StartTime == nil {
			return fmt.Errorf("backup while its Job runs: %+v", got.Status)
		}
		return nil
	})

	finishJob(t, j, backupfixture.Stored("demo-1", "etcd/"+ns+"/demo/b1.db", 1234), false)
	eventually(t, timeout, "the backup completed", func() error {
		got := getBackup(t, ns, "b1")
		st := got.Status
		st.Conditions, st.StartTime, st.CompletionTime = nil, nil, nil
		want := v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, Member: "demo-1", Location: "s3://backups/etcd/" + ns + "/demo/b1.db",
			Key: "etcd/" + ns + "/demo/b1.db", Revision: 1234, Keys: 42, KeyspaceSHA256: "feed", Size: 8224, SHA256: strings.Repeat("ab", 32),
			EtcdVersion: "3.6.16", ClusterID: "c1a55"}
		if fmt.Sprint(st) != fmt.Sprint(want) || got.Status.CompletionTime == nil {
			return fmt.Errorf("status\n %+v\nwant\n %+v", st, want)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionBackupComplete)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonBackupStored {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventBackupCompleted, "stored s3://backups/etcd/"+ns+"/demo/b1.db (8224 bytes, revision 1234, 42 keys) from demo-1 and verified it")

	// A failed Job: the backup fails with the Job's error, and stays failed.
	b2 := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b2", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "demo", Storage: backupfixture.S3}}
	if err := k8s.Create(ctx, b2); err != nil {
		t.Fatal(err)
	}
	why := "writing s3://backups/etcd/x.db: the storage refused the credentials: check the keys in the credentials Secret and the bucket's permissions (AccessDenied)"
	finishJob(t, waitJob(t, ns, "b2-backup"), backup.Result{Kind: backup.ResultFailed, Error: why}, true)
	eventually(t, timeout, "the backup failed", func() error {
		got := getBackup(t, ns, "b2")
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionBackupComplete)
		if got.Status.Phase != v1alpha1.BackupFailed || c == nil || c.Reason != v1alpha1.ReasonBackupFailed || c.Message != why {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventBackupFailed, "the storage refused the credentials")
}

// A cluster created from a backup waits, Degraded, until the backup has completed; then each
// bootstrap member fetches the snapshot (checked against the backup's SHA-256, with the
// bucket's credentials) and restores it with etcdutl before etcd starts. Members added later
// restore nothing.
func TestRestoreFromBackup(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	fake := etcd.NewFake("3.6.16")
	startOperator(t, ns, fake)
	ctx := context.Background()

	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: ns}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "gone", Storage: backupfixture.S3}}
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	c := newCluster(ns, "restored", 3)
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "b1"}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "restored", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRestoreSourceNotReady,
		Message: "EtcdBackup b1 is Pending, not Completed; the cluster starts once it has completed"})
	if pods := objectNames(t, ns, &corev1.PodList{}); len(pods) != 0 {
		t.Fatalf("pods created before the backup completed: %v", pods)
	}

	// The backup completes (its cluster is gone, so its status is written here). The backup
	// controller may write its Pending status meanwhile: on a conflict, read it again.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := getBackup(t, ns, "b1")
		got.Status = v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, Key: "etcd/" + ns + "/gone/b1.db", SHA256: strings.Repeat("cd", 32), Revision: 7}
		return k8s.Status().Update(ctx, got)
	}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	eventually(t, timeout, "the first bootstrap pod", func() error {
		pod = &corev1.Pod{}
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "restored-0"}, pod)
	})
	var initNames []string
	for _, ic := range pod.Spec.InitContainers {
		initNames = append(initNames, ic.Name)
	}
	if !slices.Equal(initNames, []string{resources.LauncherContainer, resources.FetchContainer, resources.RestoreContainer}) {
		t.Fatalf("init containers %v", initNames)
	}
	fetch, restore := pod.Spec.InitContainers[1], pod.Spec.InitContainers[2]
	wantFetch := []string{"/quorate-backup", "fetch", "--bucket=" + backupfixture.S3.BucketURL, "--key=etcd/" + ns + "/gone/b1.db", "--sha256=" + strings.Repeat("cd", 32),
		"--out=/var/lib/etcd/restore/snapshot.db", "--data-dir=/var/lib/etcd/data", "--marker=/var/lib/etcd/quorate-member.json", "--pod-annotations=/etc/quorate/podinfo/annotations",
		"--credentials-secret=s3-keys", "--credentials-dir=/var/run/secrets/quorate/bucket"}
	// The credentials Secret is optional: a restored member starts for life without it.
	wantEnv := []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s3-keys"}, Optional: ptr.To(true)}}}
	if !slices.Equal(fetch.Command, wantFetch) || !equality.Semantic.DeepEqual(fetch.EnvFrom, wantEnv) || fetch.Image != images.Launcher {
		t.Fatalf("fetch container %q, env %+v", fetch.Command, fetch.EnvFrom)
	}
	wantVolume := corev1.Volume{Name: "bucket-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s3-keys", DefaultMode: ptr.To[int32](0o440), Optional: ptr.To(true)}}}
	if i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == wantVolume.Name }); i < 0 || !equality.Semantic.DeepEqual(pod.Spec.Volumes[i], wantVolume) {
		t.Fatalf("the credentials volume of a restoring member: %+v, want %+v", pod.Spec.Volumes, wantVolume)
	}
	ic := resources.InitialCluster(c, []string{"restored-0", "restored-1", "restored-2"})
	wantRestore := []string{"/quorate/bin/quorate-launcher", "restore", "--data-dir=/var/lib/etcd/data", "--marker=/var/lib/etcd/quorate-member.json",
		"--snapshot=/var/lib/etcd/restore/snapshot.db", "--pod-annotations=/etc/quorate/podinfo/annotations", "--host=restored-0.restored-peer." + ns + ".svc",
		"--tls-dir=/etc/etcd/tls/server", "--", "/usr/local/bin/etcdutl", "snapshot", "restore", "/var/lib/etcd/restore/snapshot.db",
		"--name=restored-0", "--initial-cluster=" + ic, "--initial-cluster-token=" + string(getCluster(t, ns, "restored").UID),
		"--initial-advertise-peer-urls=https://restored-0.restored-peer." + ns + ".svc:2380"}
	if !slices.Equal(restore.Command, wantRestore) || restore.Image != "registry.local/etcd:v3.6.16" {
		t.Fatalf("restore container\n %q\nwant\n %q (image %s)", restore.Command, wantRestore, restore.Image)
	}
	assertEvent(t, ns, v1alpha1.EventRestoring, "the 3 bootstrap members restore s3://backups/etcd/"+ns+"/gone/b1.db")
	// A restoring member's launch requires data: its restore either wrote it or declined
	// because the member has run.
	if args := podArgs(t, ns, "restored-0"); !slices.Contains(args, "--require-data=true") || !slices.Contains(args, "--initial-cluster-state=new") {
		t.Fatalf("a restoring bootstrap member does not require its data: %q", args)
	}

	// The members form the restored cluster; a member added later joins it, restoring nothing.
	var members, urls []string
	for i := range 3 {
		m := names.Member("restored", i)
		members, urls = append(members, m), append(urls, names.PeerURL("restored", ns, m, true))
	}
	eventually(t, timeout, "three bootstrap pods", func() error {
		if n := len(objectNames(t, ns, &corev1.PodList{})); n != 3 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
	fake.Bootstrap(0xbac, members, urls)
	waitFor(t, ns, "restored", "the restored cluster to settle", settled(3))
	patchReplicas(t, ns, "restored", 4)
	waitFor(t, ns, "restored", "four members", settled(4))
	added := &corev1.Pod{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "restored-3"}, added); err != nil {
		t.Fatal(err)
	}
	if len(added.Spec.InitContainers) != 1 {
		t.Fatalf("a member added after the restore has init containers %d", len(added.Spec.InitContainers))
	}
}

// routeFakes sends each cluster's clients to its own fake etcd (members are named
// <cluster>-<index>).
func routeFakes(fakes map[string]*etcd.Fake) etcd.Factory {
	return func(ctx context.Context, cfg etcd.Config) (etcd.Client, error) {
		if len(cfg.Endpoints) == 0 {
			return nil, etcd.ErrNoEndpoints
		}
		m := cfg.Endpoints[0].Member
		cluster := m[:strings.LastIndex(m, "-")]
		f, ok := fakes[cluster]
		if !ok {
			return nil, fmt.Errorf("no fake etcd for cluster %s", cluster)
		}
		return f.Factory()(ctx, cfg)
	}
}

// A schedule takes a backup at each run (one at a time), deletes the backups its retention
// lets go, and restores the newest into a scratch cluster whose keyspace a Job compares with
// the backup's record: a match passes the drill, the scratch cluster is removed.
func TestScheduleRetentionAndDrill(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	src, scratch := etcd.NewFake("3.6.16"), etcd.NewFake("3.6.16")
	route := routeFakes(map[string]*etcd.Fake{"demo": src, "nightly-drill": scratch})
	startWith(t, ns, src, "test/"+ns, planner.DefaultDeadlines, func(r *Reconciler) { r.EtcdFactory = route })
	ctx := context.Background()
	bootstrap(t, ns, "demo", 3, src)

	s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "demo", Schedule: "@every 1s", Storage: backupfixture.S3,
			Retention: v1alpha1.BackupRetention{MaxCount: 2}}}
	if err := k8s.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// Play the backup Jobs: each completes with a stored snapshot, until four have.
	done := map[string]bool{}
	eventually(t, timeout, "four scheduled backups completed", func() error {
		var jobs batchv1.JobList
		if err := k8s.List(ctx, &jobs, client.InNamespace(ns), client.HasLabels{names.LabelBackup}); err != nil {
			return err
		}
		for i := range jobs.Items {
			j := &jobs.Items[i]
			b := j.Labels[names.LabelBackup]
			if done[b] || len(done) >= 4 {
				continue
			}
			if !slices.Contains(j.Spec.Template.Spec.Containers[0].Command, "--retain-prefix=etcd/"+ns+"/demo/nightly-") ||
				!slices.Contains(j.Spec.Template.Spec.Containers[0].Command, "--retain-count=2") ||
				!slices.Contains(j.Spec.Template.Spec.Containers[0].Command, "--schedule=nightly") {
				return fmt.Errorf("Job %s does not apply the retention: %q", j.Name, j.Spec.Template.Spec.Containers[0].Command)
			}
			finishJob(t, j, backupfixture.Stored("demo-1", "etcd/"+ns+"/demo/"+b+".db", int64(100+len(done))), false)
			done[b] = true
		}
		if len(done) < 4 {
			return fmt.Errorf("%d backups completed", len(done))
		}
		return nil
	})
	// Retention keeps the two newest completed backups (a drill may hold an older one a moment).
	eventually(t, timeout, "retention to keep two backups", func() error {
		var list v1alpha1.EtcdBackupList
		if err := k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{names.LabelSchedule: "nightly"}); err != nil {
			return err
		}
		var completed []string
		for _, b := range list.Items {
			if b.Status.Phase == v1alpha1.BackupCompleted && b.DeletionTimestamp.IsZero() {
				completed = append(completed, b.Name)
			}
		}
		if len(completed) != 2 {
			return fmt.Errorf("completed backups kept: %v", completed)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventBackupsExpired, "retention (maxCount 2) deleted EtcdBackups")

	// The drill restores the backup the schedule last saw completed: the newest, once the
	// schedule has seen it (else a drill of an older one passes and the newest's follows).
	newest := slices.Max(slices.Collect(maps.Keys(done)))
	eventually(t, timeout, "the schedule to see "+newest+" completed", func() error {
		got := &v1alpha1.EtcdBackupSchedule{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly"}, got); err != nil {
			return err
		}
		if got.Status.LastCompletedBackup != newest {
			return fmt.Errorf("last completed backup %q", got.Status.LastCompletedBackup)
		}
		return nil
	})

	// The drill, turned on now: the scratch cluster restores the newest backup, its member
	// forms it, the verify Job compares, and the drill passes.
	patchSchedule(t, ns, "nightly", func(s *v1alpha1.EtcdBackupSchedule) { s.Spec.Drill.Enabled = true })
	var drilled string
	eventually(t, timeout, "the drill's cluster", func() error {
		dc := &v1alpha1.EtcdCluster{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly-drill"}, dc); err != nil {
			return err
		}
		drilled = dc.Spec.Bootstrap.FromBackup.BackupName
		if drilled != newest || dc.Spec.Replicas != 1 || dc.Spec.VolumeRetention != "Delete" || dc.Spec.Version != "3.6.16" {
			return fmt.Errorf("drill cluster spec %+v, want a restore of %s", dc.Spec, newest)
		}
		return nil
	})
	eventually(t, timeout, "the drill's pod", func() error {
		return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly-drill-0"}, &corev1.Pod{})
	})
	scratch.Bootstrap(0xd7111, []string{"nightly-drill-0"}, []string{names.PeerURL("nightly-drill", ns, "nightly-drill-0", true)})
	vj := waitJob(t, ns, "nightly-drill-verify")
	db := getBackup(t, ns, drilled)
	wantVerify := []string{"/quorate-backup", "verify", "--endpoint=https://nightly-drill-0.nightly-drill-peer." + ns + ".svc:2379",
		fmt.Sprintf("--revision=%d", db.Status.Revision), "--keys=42", "--keyspace-sha256=feed", "--tls-dir=/etc/quorate/tls", "--server-name=nightly-drill-client." + ns + ".svc"}
	if got := vj.Spec.Template.Spec.Containers[0].Command; !slices.Equal(got, wantVerify) {
		t.Fatalf("verify Job\n %q\nwant\n %q", got, wantVerify)
	}
	msg := fmt.Sprintf("the restored cluster holds the 42 keys of the backup at revision %d, keyspace SHA-256 feed", db.Status.Revision)
	finishJob(t, vj, backup.Result{Kind: backup.ResultVerified, Matches: true, Message: msg}, false)
	eventually(t, timeout, "the drill to pass and its cluster to go", func() error {
		got := &v1alpha1.EtcdBackupSchedule{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly"}, got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRestoreVerified)
		if got.Status.LastDrill == nil || got.Status.LastDrill.Backup != drilled || !got.Status.LastDrill.Passed || got.Status.LastDrill.Message != msg ||
			c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonDrillPassed || c.Message != "EtcdBackup "+drilled+" restored: "+msg {
			return fmt.Errorf("status %+v", got.Status)
		}
		err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly-drill"}, &v1alpha1.EtcdCluster{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the drill's cluster is still there (%v)", err)
		}
		return nil
	})
	assertEvent(t, ns, v1alpha1.EventDrillPassed, "EtcdBackup "+drilled+" restored")
}

func patchSchedule(t *testing.T, ns, name string, change func(*v1alpha1.EtcdBackupSchedule)) {
	t.Helper()
	s := &v1alpha1.EtcdBackupSchedule{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(s.DeepCopy())
	change(s)
	if err := k8s.Patch(context.Background(), s, patch); err != nil {
		t.Fatal(err)
	}
}

// A restore to a point: the fetch container gets the archive and the target, the restore
// container the plan's directory. A backup a schedule took replays that schedule's archive; a
// backup taken by hand, the one schedule archiving its cluster to its bucket; with two such
// schedules the restore waits, Degraded, naming them. Two targets at once are refused by the
// API.
func TestRestoreToAPoint(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kubelet(t, ns)
	startOperator(t, ns, etcd.NewFake("3.6.16"))
	ctx := context.Background()
	const at = "2026-11-29T11:00:00.5+01:00"

	completed := func(name string, labels map[string]string) {
		t.Helper()
		b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Spec: v1alpha1.EtcdBackupSpec{ClusterName: "gone", Storage: backupfixture.S3}}
		if err := k8s.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := getBackup(t, ns, name)
			got.Status = v1alpha1.EtcdBackupStatus{Phase: v1alpha1.BackupCompleted, Key: "etcd/" + ns + "/gone/" + name + ".db", SHA256: strings.Repeat("cd", 32), Revision: 7}
			return k8s.Status().Update(ctx, got)
		}); err != nil {
			t.Fatal(err)
		}
	}
	completed("scheduled", map[string]string{names.LabelSchedule: "nightly"})
	completed("by-hand", nil)

	bad := newCluster(ns, "two-targets", 1)
	bad.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "scheduled", PointInTime: &v1alpha1.PointInTime{Revision: 9, Time: at}}}
	if err := k8s.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "pointInTime takes exactly one of revision and time") {
		t.Fatalf("a pointInTime with a revision and a time: %v", err)
	}

	c := newCluster(ns, "at-time", 1)
	c.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "scheduled", PointInTime: &v1alpha1.PointInTime{Time: at}}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	eventually(t, timeout, "the bootstrap pod", func() error { return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "at-time-0"}, pod) })
	fetch, restore := pod.Spec.InitContainers[1], pod.Spec.InitContainers[2]
	wantTail := []string{"--credentials-secret=s3-keys", "--credentials-dir=/var/run/secrets/quorate/bucket",
		"--archive-prefix=etcd/" + ns + "/gone/archive/nightly", "--to-time=2026-11-29T10:00:00.5Z"}
	if got := fetch.Command[len(fetch.Command)-len(wantTail):]; !slices.Equal(got, wantTail) {
		t.Fatalf("fetch container ends with %q, want %q", got, wantTail)
	}
	if i := slices.Index(restore.Command, "--"); i < 0 || restore.Command[i-1] != "--archive-dir=/var/lib/etcd/restore/archive" {
		t.Fatalf("restore container %q: want --archive-dir before --", restore.Command)
	}

	// Taken by hand: the one schedule archiving the cluster's bucket is meant; two are not told apart.
	schedule := func(name string) {
		t.Helper()
		s := &v1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.EtcdBackupScheduleSpec{ClusterName: "gone", Schedule: "@daily", Storage: backupfixture.S3, Archive: &v1alpha1.ArchiveSpec{Enabled: true}}}
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	schedule("hourly")
	rev := newCluster(ns, "at-rev", 1)
	rev.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "by-hand", PointInTime: &v1alpha1.PointInTime{Revision: 42}, BumpRevision: 1000000}}
	if err := k8s.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	eventually(t, timeout, "the bootstrap pod", func() error { return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "at-rev-0"}, pod) })
	wantTail = []string{"--archive-prefix=etcd/" + ns + "/gone/archive/hourly", "--to-revision=42"}
	if got := pod.Spec.InitContainers[1].Command; !slices.Equal(got[len(got)-2:], wantTail) {
		t.Fatalf("fetch container %q, want it to end with %q", got, wantTail)
	}
	// bumpRevision reaches etcdutl, after the flags that were there before.
	wantTail = []string{"--initial-cluster-token=" + string(rev.UID), "--initial-advertise-peer-urls=" + names.PeerURL("at-rev", ns, "at-rev-0", true), "--bump-revision=1000000", "--mark-compacted"}
	if got := pod.Spec.InitContainers[2].Command; !slices.Equal(got[len(got)-4:], wantTail) {
		t.Fatalf("restore container %q, want it to end with %q", got, wantTail)
	}
	// An etcd whose etcdutl has no --bump-revision is refused before anything starts.
	old := newCluster(ns, "old-bump", 1)
	old.Spec.Version = "3.5.9"
	old.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "scheduled", BumpRevision: 1000000}}
	if err := k8s.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "old-bump", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRestoreSourceNotReady,
		Message: "spec.bootstrap.fromBackup.bumpRevision needs etcd 3.5.10 or later (its etcdutl's --bump-revision), and spec.version is 3.5.9: nothing is started; delete this EtcdCluster and create it at a later version, or without bumpRevision"})
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "old-bump-0"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused restore created pod old-bump-0: %v", err)
	}
	schedule("weekly")
	two := newCluster(ns, "ambiguous", 1)
	two.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: &v1alpha1.RestoreSource{BackupName: "by-hand", PointInTime: &v1alpha1.PointInTime{Revision: 42}}}
	if err := k8s.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, ns, "ambiguous", metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRestoreSourceNotReady,
		Message: "EtcdBackup by-hand was taken by hand, and EtcdBackupSchedules hourly, weekly all archive cluster gone: nothing is started; delete this EtcdCluster and create it naming the archive (pointInTime.archivePrefix)"})
}
