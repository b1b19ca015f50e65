package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/e2e/label"
	"github.com/quorate-dev/quorate/internal/backup"
)

// The object store hack/s3.sh installs (--install-s3).
const (
	S3Namespace = "quorate-s3"
	S3Endpoint  = "http://versitygw.quorate-s3.svc:7070"
	// S3TLSEndpoint serves the same buckets over TLS, with a certificate a private CA signs.
	S3TLSEndpoint = "https://versitygw-tls.quorate-s3.svc"
	// S3Credentials is the Secret the backup scenarios copy the store's keys into.
	S3Credentials = "s3-credentials"
	// S3CA is the ConfigMap holding the certificate of the TLS endpoint's CA (key S3CAKey), in
	// the store's namespace and, copied by UseS3CA, in the run's.
	S3CA    = "s3-ca"
	S3CAKey = "ca.crt"
)

// BucketURL is the gocloud.dev/blob URL of a bucket of the store.
func BucketURL(bucket string) string {
	return bucketURL(S3Endpoint, bucket)
}

// TLSBucketURL is the gocloud.dev/blob URL of a bucket of the store over TLS.
func TLSBucketURL(bucket string) string {
	return bucketURL(S3TLSEndpoint, bucket)
}

func bucketURL(endpoint, bucket string) string {
	return fmt.Sprintf("s3://%s?endpoint=%s&region=us-east-1&use_path_style=true", bucket, endpoint)
}

// UseS3 copies the store's root keys into the run's namespace as Secret s3-credentials, the
// way a user gives a cluster's backups their bucket credentials.
// With --s3-over-tls it copies the store's CA too (UseS3CA).
func (r *Run) UseS3(ctx context.Context) error {
	if err := r.copySecret(ctx, types.NamespacedName{Namespace: S3Namespace, Name: "s3-root"}, S3Credentials, "the S3 store's keys (install it with --install-s3)"); err != nil {
		return err
	}
	if r.Suite.Opts.S3OverTLS {
		return r.UseS3CA(ctx)
	}
	return nil
}

// S3Storage is the backup storage of a bucket of the store as the run reaches it: over TLS,
// trusting the copied CA, with --s3-over-tls (TLSStorage); over plain HTTP otherwise (Storage).
func (r *Run) S3Storage(bucket string) v1alpha1.BackupStorage {
	if r.Suite.Opts.S3OverTLS {
		return TLSStorage(bucket)
	}
	return Storage(bucket)
}

// RunS3Tool runs quorate-backup with args against a bucket of the store as the run reaches it
// (bucket: its name), with the copied credentials; over TLS, the copied CA is mounted and
// given as --ca-bundle. The bucket's URL is the last argument, as --bucket.
func (r *Run) RunS3Tool(ctx context.Context, name string, args []string, bucket string) (*backup.Result, error) {
	if !r.Suite.Opts.S3OverTLS {
		return r.RunTool(ctx, name, append(args, "--bucket="+BucketURL(bucket)), S3Credentials, nil, nil)
	}
	return r.RunTool(ctx, name, append(args, "--bucket="+TLSBucketURL(bucket), "--ca-bundle=/s3-ca/"+S3CAKey), S3Credentials,
		[]corev1.Volume{{Name: "s3-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: S3CA}}}}},
		[]corev1.VolumeMount{{Name: "s3-ca", MountPath: "/s3-ca", ReadOnly: true}})
}

// copySecret copies the data of Secret from into the run's namespace as Secret name (kept if
// it is there already); what names the Secret in the error when it cannot be read.
func (r *Run) copySecret(ctx context.Context, from types.NamespacedName, name, what string) error {
	src := &corev1.Secret{}
	if err := r.Suite.Client.Get(ctx, from, src); err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace}, Data: src.Data}
	if err := r.Suite.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// UseS3CA copies the certificate of the store's CA into the run's namespace as ConfigMap s3-ca,
// the way a user gives a cluster's backups the authority of a store behind a private CA.
func (r *Run) UseS3CA(ctx context.Context) error {
	ca := &corev1.ConfigMap{}
	if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: S3Namespace, Name: S3CA}, ca); err != nil {
		return fmt.Errorf("reading the S3 store's CA, which backup-restore-tls, archive-ca-rotation and any run with --s3-over-tls need (install the store with --install-s3, hack/s3.sh): %w", err)
	}
	if ca.Data[S3CAKey] == "" {
		return fmt.Errorf("ConfigMap %s/%s has no %s", S3Namespace, S3CA, S3CAKey)
	}
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: S3CA, Namespace: r.Namespace}, Data: map[string]string{S3CAKey: ca.Data[S3CAKey]}}
	if err := r.Suite.Client.Create(ctx, c); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// Storage is the backup storage of a bucket of the store, with the copied credentials.
func Storage(bucket string) v1alpha1.BackupStorage {
	return v1alpha1.BackupStorage{BucketURL: BucketURL(bucket), CredentialsSecret: S3Credentials}
}

// TLSStorage is the backup storage of a bucket of the store over TLS, with the copied
// credentials, trusting the copied CA (storage.caBundle).
func TLSStorage(bucket string) v1alpha1.BackupStorage {
	return v1alpha1.BackupStorage{BucketURL: TLSBucketURL(bucket), CredentialsSecret: S3Credentials,
		CABundle: &v1alpha1.CABundleSource{ConfigMapKeyRef: &v1alpha1.KeyRef{Name: S3CA, Key: S3CAKey}}}
}

// Backup creates an EtcdBackup of the run's cluster and waits until it has finished; it returns
// the backup, whichever way it ended.
func (r *Run) Backup(ctx context.Context, name string, storage v1alpha1.BackupStorage) (*v1alpha1.EtcdBackup, error) {
	b := &v1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace},
		Spec: v1alpha1.EtcdBackupSpec{ClusterName: r.Cluster, Storage: storage}}
	r.Event("action", "backup", fmt.Sprintf("EtcdBackup %s to %s", name, storage.BucketURL))
	if err := r.Suite.Client.Create(ctx, b); err != nil {
		return nil, err
	}
	return r.WaitBackup(ctx, name)
}

// WaitBackup waits until an EtcdBackup has finished, and returns it.
func (r *Run) WaitBackup(ctx context.Context, name string) (*v1alpha1.EtcdBackup, error) {
	b := &v1alpha1.EtcdBackup{}
	err := r.WaitFor(ctx, "EtcdBackup "+name+" to finish", 5*time.Minute, func() error {
		if err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, b); err != nil {
			return err
		}
		if b.Status.Phase != v1alpha1.BackupCompleted && b.Status.Phase != v1alpha1.BackupFailed {
			return fmt.Errorf("phase %q", b.Status.Phase)
		}
		return nil
	})
	if err == nil {
		msg := ""
		if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionBackupComplete); c != nil {
			msg = c.Message
		}
		r.Event("note", "backup-"+b.Status.Phase, fmt.Sprintf("EtcdBackup %s %s: %s", name, b.Status.Phase, msg))
	}
	return b, err
}

// ToolImage is the image holding quorate-backup: the operator's.
func (s *Suite) ToolImage(ctx context.Context) (string, error) {
	if s.Opts.OperatorImage != "" {
		return s.Opts.OperatorImage, nil
	}
	var list appsv1.DeploymentList
	if err := s.Client.List(ctx, &list, client.InNamespace(s.Opts.OperatorNS), client.MatchingLabels(label.OperatorLabels())); err != nil {
		return "", err
	}
	for _, d := range list.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("no operator Deployment in %s to take the quorate-backup image from: set --operator-image", s.Opts.OperatorNS)
}

// RunTool runs quorate-backup with args in a Job of the run's namespace (with the bucket's
// credentials, and the given extra volumes), waits for it, and returns its result.
func (r *Run) RunTool(ctx context.Context, name string, args []string, credentials string, volumes []corev1.Volume, mounts []corev1.VolumeMount) (*backup.Result, error) {
	image, err := r.Suite.ToolImage(ctx)
	if err != nil {
		return nil, err
	}
	ctr := corev1.Container{Name: "tool", Image: image, Command: append([]string{"/quorate-backup"}, args...), VolumeMounts: mounts,
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsNonRoot: ptr.To(true)}}
	if credentials != "" {
		ctr.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: credentials}}}}
	}
	// A name of its own each time: a check that polls runs the same tool again, and a second
	// Job of one name would be refused (AlreadyExists) or read the first one's pod.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: r.Namespace},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{ctr}, Volumes: volumes,
			// Restricted as Pod Security Admission's "restricted" asks; no user: the image's
			// USER, or the platform's choice (PROFILE=openshift-like assigns one from a range).
			SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}}}},
	}
	if err := r.Suite.Client.Create(ctx, job); err != nil {
		return nil, err
	}
	var res *backup.Result
	err = r.WaitFor(ctx, "Job "+job.Name, 5*time.Minute, func() error {
		var pods corev1.PodList
		if err := r.Suite.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; t != nil {
					var perr error
					res, perr = backup.ParseResult(t.Message)
					if perr != nil {
						return fmt.Errorf("%w (exit %d: %s)", ErrStop, t.ExitCode, t.Message)
					}
					return nil
				}
			}
		}
		return errors.New("not finished")
	})
	return res, err
}

// ErrStop, wrapped by a WaitFor condition's error, ends the wait at once: what it waits for
// will not happen.
var ErrStop = errors.New("giving up")
