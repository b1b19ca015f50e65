package resources

import (
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/names"
)

// Where a bucket's credentials Secret appears in the pods that read and write the bucket:
// its keys as environment variables (what the S3 and Azure SDKs read), and as files (the GCS
// SDK reads a service account key file named by GOOGLE_APPLICATION_CREDENTIALS).
const (
	credentialsVolume = "bucket-credentials"              //nolint:gosec // G101: a volume's name, not a credential
	credentialsDir    = "/var/run/secrets/quorate/bucket" //nolint:gosec // G101: where the Secret is mounted, not a credential
	// GCSKeyFile is the key of the Secret that holds a GCS service account's JSON key.
	GCSKeyFile = "service-account.json"
)

// CredentialEnv gives a container the bucket's credentials as its environment; optional, a
// missing Secret leaves it without them (see storeAccess).
func CredentialEnv(ctr *corev1.Container, bucket, secret string, optional bool) {
	if secret == "" {
		return
	}
	ref := &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}
	if optional {
		ref.Optional = ptr.To(true)
	}
	ctr.EnvFrom = append(ctr.EnvFrom, corev1.EnvFromSource{SecretRef: ref})
	if strings.HasPrefix(bucket, "gs://") {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: "GOOGLE_APPLICATION_CREDENTIALS", Value: credentialsDir + "/" + GCSKeyFile})
	}
}

// CredentialVolumes is the credentials Secret as a volume (none without a Secret).
func CredentialVolumes(secret string, optional bool) []corev1.Volume {
	if secret == "" {
		return nil
	}
	src := &corev1.SecretVolumeSource{SecretName: secret, DefaultMode: ptr.To[int32](0o440)}
	if optional {
		src.Optional = ptr.To(true)
	}
	return []corev1.Volume{{Name: credentialsVolume, VolumeSource: corev1.VolumeSource{Secret: src}}}
}

// CredentialMounts mounts the credentials volume (none without a Secret).
func CredentialMounts(secret string) []corev1.VolumeMount {
	if secret == "" {
		return nil
	}
	return []corev1.VolumeMount{{Name: credentialsVolume, MountPath: credentialsDir, ReadOnly: true}}
}

// Where a storage's CA bundle (storage.caBundle) appears in the pods that read and write the
// bucket: its one key, read-only, at CABundleFile, which quorate-backup's --ca-bundle names.
const (
	caBundleVolume = "store-ca"
	caBundleDir    = "/etc/quorate/store-ca"
	// CABundleFile is where the pods find the storage's CA bundle.
	CABundleFile = caBundleDir + "/ca.crt"
)

// CABundleVolumes is the ConfigMap or Secret key of a storage's CA bundle as a volume (none
// without a bundle). It is optional: a missing ConfigMap, Secret or key leaves no file, and
// quorate-backup fails at once saying so, where a required volume would hold the pod in
// ContainerCreating until the Job's deadline.
func CABundleVolumes(ca *v1alpha1.CABundleSource) []corev1.Volume {
	var src corev1.VolumeSource
	switch {
	case ca == nil:
		return nil
	case ca.ConfigMapKeyRef != nil:
		src.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMapKeyRef.Name},
			Items: []corev1.KeyToPath{{Key: ca.ConfigMapKeyRef.Key, Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o444), Optional: ptr.To(true)}
	case ca.SecretKeyRef != nil:
		src.Secret = &corev1.SecretVolumeSource{SecretName: ca.SecretKeyRef.Name,
			Items: []corev1.KeyToPath{{Key: ca.SecretKeyRef.Key, Path: "ca.crt"}}, DefaultMode: ptr.To[int32](0o440), Optional: ptr.To(true)}
	default:
		return nil
	}
	return []corev1.Volume{{Name: caBundleVolume, VolumeSource: src}}
}

// CABundleMounts mounts the CA bundle's volume (none without a bundle).
func CABundleMounts(ca *v1alpha1.CABundleSource) []corev1.VolumeMount {
	if len(CABundleVolumes(ca)) == 0 {
		return nil
	}
	return []corev1.VolumeMount{{Name: caBundleVolume, MountPath: caBundleDir, ReadOnly: true}}
}

// CABundleArgs are quorate-backup's flags for the CA bundle (none without a bundle).
func CABundleArgs(ca *v1alpha1.CABundleSource) []string {
	if len(CABundleVolumes(ca)) == 0 {
		return nil
	}
	return []string{"--ca-bundle=" + CABundleFile}
}

// reachStore gives a container that reads or writes a bucket the operator's proxy variables,
// the bucket's credentials, and the mounts of the credentials and the CA bundle (storeVolumes
// are the pod's volumes for them).
func reachStore(ctr *corev1.Container, bucket, credentials string, ca *v1alpha1.CABundleSource, im Images, a storeAccess) {
	ctr.Env = append(ctr.Env, im.ProxyEnv...)
	CredentialEnv(ctr, bucket, credentials, a == fetchOnce)
	if im.StoreEnvLocked {
		ctr.Env = append(ctr.Env, LockedStoreEnv(im.ProxyEnv)...)
	}
	ctr.VolumeMounts = append(append(ctr.VolumeMounts, CredentialMounts(credentials)...), CABundleMounts(ca)...)
}

// redirecting are the variables, besides the bucket URL's own options, by which the SDKs the
// backup tool uses would reach another endpoint or run something: the AWS SDK's endpoint and
// configuration files (endpoint_url, credential_process), GCS's emulator host, Azure's domain
// and emulator, and the proxies.
var redirecting = []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "STORAGE_EMULATOR_HOST", "AZURE_STORAGE_DOMAIN", "AZURE_STORAGE_PROTOCOL",
	"AZURE_STORAGE_IS_LOCAL_EMULATOR", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy", "no_proxy"}

// LockedStoreEnv are explicit values, which win over a credentials Secret's keys (envFrom),
// for every variable that could send a store's pod elsewhere than its allowed bucket URL says:
// empty (unset for the SDKs), the operator's own proxy settings, and configuration files that
// are empty.
func LockedStoreEnv(proxy []corev1.EnvVar) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, name := range redirecting {
		if !slices.ContainsFunc(proxy, func(e corev1.EnvVar) bool { return e.Name == name }) {
			env = append(env, corev1.EnvVar{Name: name, Value: ""})
		}
	}
	return append(env, corev1.EnvVar{Name: "AWS_CONFIG_FILE", Value: "/dev/null"}, corev1.EnvVar{Name: "AWS_SHARED_CREDENTIALS_FILE", Value: "/dev/null"})
}

// storeVolumes are the volumes of the mounts reachStore gives.
func storeVolumes(credentials string, ca *v1alpha1.CABundleSource, a storeAccess) []corev1.Volume {
	return append(CredentialVolumes(credentials, a == fetchOnce), CABundleVolumes(ca)...)
}

// storeAccess is how a pod needs its store: a backup Job at every run (its credentials Secret
// is required: a missing one holds the pod, which the Job's deadline ends), or a restoring
// member once, before it ever ran (fetchOnce: the Secret is optional, so the member still
// starts, for life, once the Secret is gone; the fetch checks it is there before fetching).
type storeAccess int

const (
	everyRun storeAccess = iota
	fetchOnce
)

// CredentialsArgs are quorate-backup fetch's flags that name the credentials Secret and where
// it is mounted (none without a Secret), so that a missing Secret fails the fetch naming it.
func CredentialsArgs(secret string) []string {
	if secret == "" {
		return nil
	}
	return []string{"--credentials-secret=" + secret, "--credentials-dir=" + credentialsDir}
}

// WithIdentity runs a pod that reaches a bucket as the storage's identity: its service
// account, and its labels and annotations under those already set (the operator's win). The
// API token stays unmounted: the platforms give the cloud identity through their own webhooks
// (a projected token) or metadata servers.
func WithIdentity(meta *metav1.ObjectMeta, spec *corev1.PodSpec, id *v1alpha1.StorageIdentity) {
	if id == nil {
		return
	}
	if id.ServiceAccountName != "" {
		spec.ServiceAccountName = id.ServiceAccountName
	}
	for k, v := range id.Labels {
		if _, taken := meta.Labels[k]; !taken {
			if meta.Labels == nil {
				meta.Labels = map[string]string{}
			}
			meta.Labels[k] = string(v)
		}
	}
	for k, v := range id.Annotations {
		if _, taken := meta.Annotations[k]; !taken {
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[k] = v
		}
	}
}

// BackupKey is the object key of a backup's snapshot: PREFIX<namespace>/<cluster>/<backup>.db.
func BackupKey(b *v1alpha1.EtcdBackup) string {
	return fmt.Sprintf("%s%s/%s/%s.db", b.Spec.Storage.Prefix, b.Namespace, b.Spec.ClusterName, b.Name)
}

// ScheduleKeyPrefix is the key prefix of a schedule's snapshots, which its retention applies to.
func ScheduleKeyPrefix(s *v1alpha1.EtcdBackupSchedule) string {
	return fmt.Sprintf("%s%s/%s/%s-", s.Spec.Storage.Prefix, s.Namespace, s.Spec.ClusterName, s.Name)
}

// JobTTLSeconds is how long a finished backup, drill or verify Job is kept.
const JobTTLSeconds = 24 * 60 * 60

// BackupJobName is the name of an EtcdBackup's Job.
func BackupJobName(backup string) string { return backup + "-backup" }

// Retain is the retention a schedule's backup Job applies to the schedule's objects (under
// Prefix), and, for a schedule with an archive, to the archive's segments (under Archive).
type Retain struct {
	Prefix    string
	Retention backup.Retention
	Archive   string
	// Keep is, per cluster ID (hex), the oldest revision of the cluster's completed backups made
	// by hand in the same bucket (under any prefix) and, while one made by hand still runs, the
	// current cluster ID at 0: restores to a point of those the archive's segments serve.
	Keep map[string]int64
}

// RetainOf is schedule s's retention.
func RetainOf(s *v1alpha1.EtcdBackupSchedule) *Retain {
	r := s.Spec.Retention
	ret := &Retain{Prefix: ScheduleKeyPrefix(s), Retention: backup.Retention{Count: int(r.MaxCount), Hourly: int(r.Hourly), Daily: int(r.Daily), Weekly: int(r.Weekly)}}
	if r.MaxAge != nil {
		ret.Retention.MaxAge = r.MaxAge.Duration
	}
	if s.Spec.Archive != nil && s.Spec.Archive.Enabled {
		ret.Archive = ArchivePrefix(s)
	}
	return ret
}

// args are the backup Job's flags of the retention of schedule.
func (retain *Retain) args(schedule string) []string {
	r := retain.Retention
	args := []string{"--retain-prefix=" + retain.Prefix, fmt.Sprintf("--retain-count=%d", r.Count), "--retain-max-age=" + r.MaxAge.String(), "--schedule=" + schedule}
	// Only when set: the Jobs of schedules without them keep their arguments.
	for _, f := range []struct {
		name string
		n    int
	}{{"hourly", r.Hourly}, {"daily", r.Daily}, {"weekly", r.Weekly}} {
		if f.n > 0 {
			args = append(args, fmt.Sprintf("--retain-%s=%d", f.name, f.n))
		}
	}
	if retain.Archive != "" {
		args = append(args, "--retain-archive="+retain.Archive)
	}
	if len(retain.Keep) > 0 {
		var keep []string
		for id, rev := range retain.Keep {
			keep = append(keep, fmt.Sprintf("%s:%d", id, rev))
		}
		slices.Sort(keep)
		args = append(args, "--retain-archive-keep="+strings.Join(keep, ","))
	}
	return args
}

// JobTarget is the cluster a Job works on: its members' client URLs, its cluster ID, and the
// Secret with the operator's client certificate ("" without TLS).
type JobTarget struct {
	Cluster   *v1alpha1.EtcdCluster
	Members   []string
	ClusterID string
	TLSSecret string
}

func (t JobTarget) endpoints() string {
	parts := make([]string, len(t.Members))
	for i, m := range t.Members {
		parts[i] = m + "=" + names.ClientURL(t.Cluster.Name, t.Cluster.Namespace, m, t.Cluster.Spec.TLS.IsEnabled())
	}
	return strings.Join(parts, ",")
}

// jobTLSDir is where a Job mounts the operator's client certificate.
const jobTLSDir = "/etc/quorate/tls"

// jobPod is the pod of a backup or drill Job: quorate-backup with args, the operator's client
// certificate of the target, a work directory, restricted, never restarted.
func jobPod(t JobTarget, im Images, args []string, workSize *resource.Quantity) corev1.PodTemplateSpec {
	ctr := corev1.Container{
		Name:                     "quorate-backup",
		Image:                    im.Launcher,
		ImagePullPolicy:          im.PullPolicy,
		Command:                  append([]string{BackupBinary}, args...),
		Env:                      []corev1.EnvVar{{Name: "TMPDIR", Value: "/work"}},
		VolumeMounts:             []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
		Resources:                corev1.ResourceRequirements{Requests: DefaultRequests()},
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext:          restricted(),
	}
	work := &corev1.EmptyDirVolumeSource{SizeLimit: workSize}
	volumes := []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: work}}}
	if t.TLSSecret != "" {
		ctr.Command = append(ctr.Command, "--tls-dir="+jobTLSDir, "--server-name="+names.ClientHost(t.Cluster.Name, t.Cluster.Namespace))
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: jobTLSDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: t.TLSSecret, DefaultMode: ptr.To[int32](0o440)}}})
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: names.ClusterLabels(t.Cluster.Name)},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext:              podSecurityContext(im.UIDs),
			Containers:                   []corev1.Container{ctr},
			Volumes:                      volumes,
		},
	}
}

func job(name, namespace string, owner metav1.OwnerReference, labels map[string]string, pod corev1.PodTemplateSpec) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: batchv1.JobSpec{
			// One attempt: a failed backup is reported as failed, and a schedule tries again
			// at its next time.
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](3600),
			// A finished Job and its pod go a day after it ended: the operator reads the
			// result as soon as the Job finishes, and a backup that has its result never reads
			// its Job again. Should the operator be down all that day, the backup is taken
			// again by a new Job.
			TTLSecondsAfterFinished: ptr.To[int32](JobTTLSeconds),
			Template:                pod,
		},
	}
}

// BackupJob takes an EtcdBackup's snapshot: from a healthy follower of the target, stored at
// BackupKey, read back and verified, then the retention applied (for a schedule's backup).
func BackupJob(b *v1alpha1.EtcdBackup, t JobTarget, retain *Retain, im Images) *batchv1.Job {
	args := []string{"save", "--endpoints=" + t.endpoints(), "--cluster-id=" + t.ClusterID,
		"--bucket=" + b.Spec.Storage.BucketURL, "--key=" + BackupKey(b), "--work-dir=/work"}
	if retain != nil {
		args = append(args, retain.args(b.Labels[names.LabelSchedule])...)
	}
	// Room for the snapshot and the copy its check opens: twice the quota, and a margin.
	quota := t.Cluster.Spec.Etcd.QuotaBackendBytes
	if quota == 0 {
		quota = v1alpha1.QuotaFor(t.Cluster.Spec.Storage.Size)
	}
	work := resource.NewQuantity(2*quota+64<<20, resource.BinarySI)
	st := &b.Spec.Storage
	args = append(args, CABundleArgs(st.CABundle)...)
	pod := jobPod(t, im, args, work)
	reachStore(&pod.Spec.Containers[0], st.BucketURL, st.CredentialsSecret, st.CABundle, im, everyRun)
	pod.Spec.Volumes = append(pod.Spec.Volumes, storeVolumes(st.CredentialsSecret, st.CABundle, everyRun)...)
	pod.Labels[names.LabelBackup] = b.Name
	WithIdentity(&pod.ObjectMeta, &pod.Spec, st.Identity)
	passMutant(&pod.Spec)
	labels := names.ClusterLabels(t.Cluster.Name)
	labels[names.LabelBackup] = b.Name
	return job(BackupJobName(b.Name), b.Namespace, *metav1.NewControllerRef(b, v1alpha1.GroupVersion.WithKind("EtcdBackup")), labels, pod)
}

// VerifyJob compares a restore drill's cluster with the keyspace its backup recorded.
func VerifyJob(name string, owner metav1.OwnerReference, t JobTarget, revision, keys int64, keyspaceHash string, im Images) *batchv1.Job {
	args := []string{"verify", "--endpoint=" + names.ClientURL(t.Cluster.Name, t.Cluster.Namespace, t.Members[0], t.Cluster.Spec.TLS.IsEnabled()),
		fmt.Sprintf("--revision=%d", revision), fmt.Sprintf("--keys=%d", keys), "--keyspace-sha256=" + keyspaceHash}
	pod := jobPod(t, im, args, resource.NewQuantity(64<<20, resource.BinarySI))
	return job(name, t.Cluster.Namespace, owner, names.ClusterLabels(t.Cluster.Name), pod)
}
