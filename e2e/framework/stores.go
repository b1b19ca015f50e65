package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// StoresNamespace is where hack/stores.sh (--install-stores) runs the emulated cloud stores.
const StoresNamespace = "quorate-stores"

// CloudStore is a cloud object store the suite emulates: how a user names its buckets, the
// Secret of credentials they give a backup (in StoresNamespace, copied into the run's
// namespace under the same name), and credentials the store refuses (nil: the store checks
// none).
type CloudStore struct {
	Name        string
	Credentials string
	bucketURL   func(bucket string) string
	WrongKeys   map[string]string
}

// BucketURL is the gocloud.dev/blob URL of one of the store's buckets.
func (s CloudStore) BucketURL(bucket string) string { return s.bucketURL(bucket) }

// Storage is a backup storage of one of the store's buckets, with the copied credentials.
func (s CloudStore) Storage(bucket string) v1alpha1.BackupStorage {
	return v1alpha1.BackupStorage{BucketURL: s.BucketURL(bucket), CredentialsSecret: s.Credentials}
}

// GCS is Google Cloud Storage, as fake-gcs-server serves it: the SDK reaches the emulator
// through STORAGE_EMULATOR_HOST, a key of the credentials Secret, and sends no credentials.
var GCS = CloudStore{Name: "Google Cloud Storage", Credentials: "gcs-credentials",
	bucketURL: func(bucket string) string { return "gs://" + bucket }}

// Azure is Azure Blob, as Azurite serves it for account quorate (its shared key in the
// Secret): the account is named in the path (localemu), over plain HTTP.
var Azure = CloudStore{Name: "Azure Blob", Credentials: "azure-credentials", //nolint:gosec // G101: a Secret's name and a key the store refuses
	bucketURL: func(bucket string) string {
		return "azblob://" + bucket + "?domain=azurite." + StoresNamespace + ".svc:10000&localemu=true&protocol=http"
	},
	// A key of the right form (base64) that is not the account's.
	WrongKeys: map[string]string{"AZURE_STORAGE_ACCOUNT": "quorate", "AZURE_STORAGE_KEY": "bm90LXRoZS1hY2NvdW50cy1rZXktbm90LXRoZS1hY2NvdW50cy1rZXk="}}

// UseStore copies the store's credentials Secret into the run's namespace, the way a user
// gives a cluster's backups their bucket credentials.
func (r *Run) UseStore(ctx context.Context, s CloudStore) error {
	return r.copySecret(ctx, types.NamespacedName{Namespace: StoresNamespace, Name: s.Credentials}, s.Credentials,
		"the "+s.Name+" emulator's credentials (install it with --install-stores)")
}

// CloudStores: the scenario backs up to the emulated cloud stores the suite installs
// (--install-stores, in namespace StoresNamespace) and copies their credentials from there.
var CloudStores = Prerequisite{Name: "cloud stores", Missing: func(ctx context.Context, r *Run) (string, error) {
	for _, s := range []CloudStore{GCS, Azure} {
		err := r.Suite.Client.Get(ctx, types.NamespacedName{Namespace: StoresNamespace, Name: s.Credentials}, &corev1.Secret{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Sprintf("the suite's %s emulator is not installed (no Secret %s/%s): install it with --install-stores (hack/stores.sh)", s.Name, StoresNamespace, s.Credentials), nil
		case apierrors.IsForbidden(err):
			return fmt.Sprintf("the suite may not read the %s emulator's credentials (Secret %s/%s): run it with credentials that may (make e2e-backup)", s.Name, StoresNamespace, s.Credentials), nil
		case err != nil:
			return "", fmt.Errorf("looking for the %s emulator: %w", s.Name, err)
		}
	}
	return "", nil
}}
