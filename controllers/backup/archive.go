package backup

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/hash"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/resources"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;create;update;delete

// archiveEvery is how often a schedule with an archive is looked at again: its archiver's
// report is read into status at this pace.
const archiveEvery = 15 * time.Second

// archiveMargin is how much longer than maxLag a change may wait unstored before the archive
// counts as behind (the probe's period, a slow segment write).
const archiveMargin = 10 * time.Second

// ReadArchive reads the report of the archiver at addr (host:port); the default reaches the
// pod over HTTP, with no proxy.
type ReadArchive func(ctx context.Context, addr string) (archive.Report, error)

var reportClient = &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}, Timeout: 3 * time.Second}

func readArchiveHTTP(ctx context.Context, addr string) (archive.Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+archive.ReportPath, nil)
	if err != nil {
		return archive.Report{}, err
	}
	resp, err := reportClient.Do(req)
	if err != nil {
		return archive.Report{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return archive.Report{}, err
	}
	switch rep, err := archive.DecodeReport(body); {
	case resp.StatusCode == http.StatusOK:
		return rep, err
	case resp.StatusCode == http.StatusServiceUnavailable && err == nil && rep.Starting != "":
		// An archiver that has not begun says why.
		return rep, nil
	}
	return archive.Report{}, fmt.Errorf("%s answered %s", archive.ReportPath, resp.Status)
}

// archive runs the schedule's archiver while spec.archive is enabled (and removes it once not),
// and reads its report into status.archive, the Archiving condition and the archive gauges. It
// returns how soon to look again: wait, or sooner while the archive runs.
func (r *ScheduleReconciler) archive(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, wait time.Duration) (time.Duration, error) {
	next, err := r.archiveStep(ctx, s)
	if next > 0 {
		wait = min(wait, next)
	}
	return wait, err
}

// archiveStep is archive's work; it returns how soon to look again (0: no need).
func (r *ScheduleReconciler) archiveStep(ctx context.Context, s *v1alpha1.EtcdBackupSchedule) (time.Duration, error) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: resources.ArchiverName(s.Name)}
	if s.Spec.Archive == nil || !s.Spec.Archive.Enabled {
		meta.RemoveStatusCondition(&s.Status.Conditions, v1alpha1.ConditionArchiving)
		metrics.ForgetArchive(s.Namespace, s.Name)
		// status.archive stays: it says what the archive holds, which a restore can use.
		return 0, r.deleteArchiver(ctx, s, key)
	}
	// Deployments are not cached (the operator watches none): read this one.
	current := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, key, current); apierrors.IsNotFound(err) {
		current = nil
	} else if err != nil {
		return 0, err
	}
	if current != nil && !metav1.IsControlledBy(current, s) {
		r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonArchiveWaiting,
			fmt.Sprintf("a Deployment %s that this schedule does not own is in the way of its archiver: rename or delete it", key.Name))
		return archiveEvery, nil
	}
	t, why, err := backupTarget(ctx, r.Client, r.APIReader, r.Ownership, s.Namespace, s.Spec.ClusterName)
	if err != nil {
		return 0, err
	}
	if why == "" {
		if err := r.applyArchiver(ctx, s, t, current); err != nil {
			return 0, err
		}
	} else if current == nil {
		r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonArchiveWaiting, why+"; the archive starts once it is")
		return archiveEvery, nil
	}
	// An archiver that runs goes on while the cluster is not Available: it retries by itself.
	r.readArchive(ctx, s)
	return archiveEvery, nil
}

// archiveNotAllowed stops the archiver of a schedule whose storage the policy refuses (why).
func (r *ScheduleReconciler) archiveNotAllowed(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, why error) error {
	if s.Spec.Archive != nil && s.Spec.Archive.Enabled {
		r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonStorageNotAllowed, why.Error()+"; nothing is archived meanwhile")
	}
	return r.deleteArchiver(ctx, s, types.NamespacedName{Namespace: s.Namespace, Name: resources.ArchiverName(s.Name)})
}

// applyArchiver creates the archiver's Deployment, or updates it when what the operator would
// apply changed (its hash annotation): a new cluster ID, storage, maxLag, image or the data of
// a Secret of its storage. A Secret whose metadata alone changed updates only the Deployment's
// record of the versions read (names.AnnotationStoreSecretVersions), which restarts nothing.
func (r *ScheduleReconciler) applyArchiver(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, t resources.JobTarget, current *appsv1.Deployment) error {
	im := r.Images
	var err error
	if im.UIDs, err = r.UIDs.Choice(ctx, s.Namespace); err != nil {
		return err
	}
	secrets, err := r.storeSecrets(ctx, s, current)
	if err != nil {
		return err
	}
	want := resources.ArchiverDeployment(s, t, im, secrets.hashes)
	if secrets.versions != "" {
		want.Annotations[names.AnnotationStoreSecretVersions] = secrets.versions
	}
	if current == nil {
		err = r.Create(ctx, want)
		if err == nil {
			r.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.EventArchiverStarted, "archiving cluster %s (ID %s) into %s", t.Cluster.Name, t.ClusterID, archiveLocation(s))
		}
		return client.IgnoreAlreadyExists(err)
	}
	if current.Annotations[names.AnnotationObjectHash] == want.Annotations[names.AnnotationObjectHash] {
		if current.Annotations[names.AnnotationStoreSecretVersions] == want.Annotations[names.AnnotationStoreSecretVersions] {
			return nil
		}
		// Only the record of the versions read: a patch of that annotation alone, which
		// leaves the rest of the Deployment (a rollout restart's annotation, a scale) as it is.
		patch := client.MergeFrom(current.DeepCopy())
		if current.Annotations == nil {
			current.Annotations = map[string]string{}
		}
		current.Annotations[names.AnnotationStoreSecretVersions] = want.Annotations[names.AnnotationStoreSecretVersions]
		return r.Patch(ctx, current, patch)
	}
	want.ResourceVersion = current.ResourceVersion
	return r.Update(ctx, want)
}

// appliedSecrets is what an archiver was given of its storage's Secrets: a hash of each one's
// data (names.AnnotationStoreSecrets, on its pod template) and the resourceVersion that data
// was read at (names.AnnotationStoreSecretVersions, on the Deployment), both as
// <name>=<value>,...
type appliedSecrets struct{ hashes, versions string }

// storeSecrets are the hashes of what the archiver reads of the Secrets of s's storage once,
// when it starts: the credentials Secret's data, and the CA bundle's key of its Secret (the
// whole data when both are one Secret). Each hash is keyed with its Secret's UID, which those
// who may read Deployments and not Secrets do not see, so that it cannot confirm a guessed
// credential; a Secret deleted and created again is hashed anew. The versions are the
// resourceVersions the hashes were taken at. The manager's cache holds every Secret's
// metadata, not its data: a Secret whose resourceVersion is the one recorded keeps its hash;
// any other is read from the API server and hashed, so that an edit of its labels or
// annotations restarts nothing and an edit of what the archiver reads rolls it. A CA bundle in
// a ConfigMap is not followed (the archiver reloads the mounted file itself). A Secret that is
// missing keeps what the current archiver has: the one that runs is not restarted for it.
func (r *ScheduleReconciler) storeSecrets(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, current *appsv1.Deployment) (appliedSecrets, error) {
	st := s.Spec.Storage
	type read struct{ name, key string } // key "": the whole data
	var secrets []read
	if st.CredentialsSecret != "" {
		secrets = append(secrets, read{name: st.CredentialsSecret})
	}
	if st.CABundle != nil && st.CABundle.SecretKeyRef != nil && st.CABundle.SecretKeyRef.Name != st.CredentialsSecret {
		secrets = append(secrets, read{name: st.CABundle.SecretKeyRef.Name, key: st.CABundle.SecretKeyRef.Key})
	}
	var appliedHash, appliedVersion map[string]string
	if current != nil {
		appliedHash = parseSecretList(current.Spec.Template.Annotations[names.AnnotationStoreSecrets])
		appliedVersion = parseSecretList(current.Annotations[names.AnnotationStoreSecretVersions])
	}
	var hashes, versions []string
	for _, sec := range secrets {
		key := types.NamespacedName{Namespace: s.Namespace, Name: sec.name}
		h, v := appliedHash[sec.name], appliedVersion[sec.name]
		version, err := managercache.SecretVersion(ctx, r.Client, key)
		missing := apierrors.IsNotFound(err)
		if err != nil && !missing {
			return appliedSecrets{}, fmt.Errorf("reading Secret %s of the schedule's storage: %w", sec.name, err)
		}
		// Read when the cache shows another version than the one hashed, or when nothing was
		// hashed yet (the cache may not have a Secret created with the schedule).
		if !missing && version != v || h == "" {
			secret := &corev1.Secret{}
			switch err := r.APIReader.Get(ctx, key, secret); {
			case apierrors.IsNotFound(err):
			case err != nil:
				return appliedSecrets{}, fmt.Errorf("reading Secret %s of the schedule's storage: %w", sec.name, err)
			default:
				h, v = secretHash(secret, sec.key), secret.ResourceVersion
			}
		}
		hashes = append(hashes, sec.name+"="+h)
		versions = append(versions, sec.name+"="+v)
	}
	return appliedSecrets{hashes: strings.Join(hashes, ","), versions: strings.Join(versions, ",")}, nil
}

// secretHash is the hash of what the archiver reads of secret (its key, or its whole data when
// key is ""), keyed with the Secret's UID.
func secretHash(secret *corev1.Secret, key string) string {
	read := any(secret.Data)
	if key != "" {
		read = secret.Data[key]
	}
	return hash.Of(struct {
		UID  types.UID
		Read any
	}{secret.UID, read})
}

// parseSecretList reads a <name>=<value>,... annotation.
func parseSecretList(annotation string) map[string]string {
	out := map[string]string{}
	for _, entry := range strings.Split(annotation, ",") {
		if name, value, ok := strings.Cut(entry, "="); ok {
			out[name] = value
		}
	}
	return out
}

// deleteArchiver deletes the archiver's Deployment if the schedule owns it.
func (r *ScheduleReconciler) deleteArchiver(ctx context.Context, s *v1alpha1.EtcdBackupSchedule, key types.NamespacedName) error {
	d := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, key, d); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(d, s) || !d.DeletionTimestamp.IsZero() {
		return nil
	}
	uid := d.UID
	return client.IgnoreNotFound(r.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid}))
}

func archiveLocation(s *v1alpha1.EtcdBackupSchedule) string {
	return backup.Location{Bucket: s.Spec.Storage.BucketURL, Key: resources.ArchivePrefix(s)}.String()
}

// readArchive reads the report of the archiver's running pod into status.
func (r *ScheduleReconciler) readArchive(ctx context.Context, s *v1alpha1.EtcdBackupSchedule) {
	now := r.now()
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabels(resources.ArchiverLabels(s.Spec.ClusterName, s.Name))); err != nil {
		r.archiveNotReporting(s, fmt.Sprintf("listing the archiver's pods: %v", err))
		return
	}
	var problems []string
	for i := range pods.Items {
		p := &pods.Items[i]
		// Only the Deployment's pods: another pod with the labels is not read.
		if owner := metav1.GetControllerOf(p); !p.DeletionTimestamp.IsZero() || owner == nil || owner.Kind != "ReplicaSet" || !strings.HasPrefix(owner.Name, resources.ArchiverName(s.Name)+"-") {
			continue
		}
		if why := resources.PodProblem(p, now, time.Minute); why != "" {
			problems = append(problems, fmt.Sprintf("the archiver's pod %s does not run: %s", p.Name, why))
			continue
		}
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			problems = append(problems, fmt.Sprintf("the archiver's pod %s is %s", p.Name, p.Status.Phase))
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		rep, err := r.readArchiveFunc()(rctx, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(archive.ReportPort)))
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("the archiver's pod %s does not answer on port %d (%v): a NetworkPolicy of the namespace may keep the operator out", p.Name, archive.ReportPort, err))
			continue
		}
		if rep.Starting != "" {
			// Nothing of the archive yet: status.archive stays as it was.
			problems = append(problems, fmt.Sprintf("the archiver's pod %s has not begun archiving: %s", p.Name, rep.Starting))
			continue
		}
		r.archiveReported(s, rep, now)
		return
	}
	if len(problems) == 0 {
		problems = []string{"the archiver's pod does not exist yet"}
	}
	r.archiveNotReporting(s, problems[0])
}

func (r *ScheduleReconciler) readArchiveFunc() ReadArchive {
	if r.ReadArchive != nil {
		return r.ReadArchive
	}
	return readArchiveHTTP
}

func (r *ScheduleReconciler) archiveNotReporting(s *v1alpha1.EtcdBackupSchedule, why string) {
	metrics.RecordArchive(s.Namespace, s.Name, s.Spec.ClusterName, false, 0, 0)
	r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonArchiveStarting, why)
}

// archiveReported writes an archiver's report into status, the condition and the gauges.
func (r *ScheduleReconciler) archiveReported(s *v1alpha1.EtcdBackupSchedule, rep archive.Report, now time.Time) {
	st := &v1alpha1.ArchiveStatus{Location: archiveLocation(s), ClusterID: rep.ClusterID, LastRevision: rep.LastRevision,
		Lag: &metav1.Duration{Duration: rep.Lag.Round(time.Millisecond)}, Ranges: archive.FormatRanges(rep.Ranges), ObservedTime: &metav1.Time{Time: now}}
	if !rep.LastTime.IsZero() {
		st.LastTime = &metav1.Time{Time: rep.LastTime}
	}
	// An idle archive is not written every pass: the observed time moves on only with the
	// rest, or once a minute.
	if old := s.Status.Archive; old != nil && old.ObservedTime != nil && now.Sub(old.ObservedTime.Time) < time.Minute {
		cmp := *st
		cmp.ObservedTime, cmp.Lag = old.ObservedTime, old.Lag
		if equality.Semantic.DeepEqual(&cmp, old) && (rep.Lag < time.Second) == (old.Lag == nil || old.Lag.Duration < time.Second) {
			st = old
		}
	}
	s.Status.Archive = st
	// An archiver that cannot reach the cluster cannot tell how far behind it is: at least
	// that long.
	metrics.RecordArchive(s.Namespace, s.Name, s.Spec.ClusterName, true, max(rep.Lag, rep.Unreached), rep.LastRevision)
	bound := resources.ArchiveMaxLag(s) + archiveMargin
	switch {
	case rep.Unreached > bound:
		why := fmt.Sprintf("the archiver has not reached the cluster for %s: %s", rep.Unreached.Round(time.Second), rep.Unreachable)
		if rep.Error != "" {
			why += "; its last stopped run: " + rep.Error
		}
		r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonArchiveBehind, why)
	case rep.Failing > bound:
		r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonArchiveBehind,
			fmt.Sprintf("the archiver's runs have been stopping for %s, the last with: %s", rep.Failing.Round(time.Second), rep.Error))
	case rep.Lag > bound:
		why := fmt.Sprintf("changes of the cluster have waited %s unstored (bound %s)", rep.Lag.Round(time.Second), bound)
		if rep.Error != "" {
			why += "; the archiver's last error: " + rep.Error
		}
		r.condition(s, v1alpha1.ConditionArchiving, false, v1alpha1.ReasonArchiveBehind, why)
	case rep.LastRevision == 0:
		r.condition(s, v1alpha1.ConditionArchiving, true, v1alpha1.ReasonArchiveCurrent, "the archiver runs; the cluster has not changed since it started")
	default:
		r.condition(s, v1alpha1.ConditionArchiving, true, v1alpha1.ReasonArchiveCurrent, fmt.Sprintf("every change older than %s is stored (status.archive has the newest revision)", bound))
	}
}
