package blobstore

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob:// URLs
	_ "gocloud.dev/blob/fileblob"  // file:// URLs
	_ "gocloud.dev/blob/gcsblob"   // gs:// URLs
	_ "gocloud.dev/blob/s3blob"    // s3:// URLs
	"gocloud.dev/gcerrors"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
)

// What to do about each failure at a store, by its reason (a condition reason of
// api/v1alpha1): the one place these messages are written.
var hints = map[string]string{
	v1alpha1.ReasonStoreCertificateUntrusted: "the store's certificate is signed by an authority the pod does not trust: name its CA in storage.caBundle",
	v1alpha1.ReasonStoreCertificateInvalid:   "the store's certificate is not valid for its endpoint (another host name, or expired): check the endpoint in the URL and the store's certificate",
	v1alpha1.ReasonStoreCredentialsRefused:   "the storage refused the credentials: check the keys in the credentials Secret and the bucket's permissions",
	v1alpha1.ReasonStoreBucketNotFound:       "the bucket does not exist: create the bucket, or correct the URL",
	v1alpha1.ReasonStoreObjectNotFound:       "the object does not exist: check the key, and that the backup's bucket and prefix are the ones it was stored under",
	v1alpha1.ReasonStoreOutOfSpace:           "the storage is out of space or over its quota: free space in the bucket or raise its quota",
	v1alpha1.ReasonStoreUnreachable:          "the storage's endpoint does not answer: check the endpoint in the URL and that it is reachable from the namespace",
	v1alpha1.ReasonStoreTransferCutOff:       "the transfer was cut off before the object's end (a dropped connection, or an object shorter than the length it is stored with): the restore tries again; if it fails the same way each time, the object is damaged: restore another backup",
	v1alpha1.ReasonStoreRequestRefused:       "the storage refused the request: check the URL's parameters (region, endpoint, path style)",
	"":                                       "check the URL, that the storage is reachable from the namespace, and the credentials",
}

// Error is a failure at a store: what was done, where, why (Reason, "" when none of the known
// causes), and the error the SDK gave.
type Error struct {
	Op     string
	Loc    backup.Location
	Reason string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %s (%v)", e.Op, e.Loc, hints[e.Reason], e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Reason is the cause of a failure at a store, one of v1alpha1.StoreReasons, or "" for
// another failure.
func Reason(err error) string {
	var se *Error
	switch {
	case errors.Is(err, ErrDamaged):
		return v1alpha1.ReasonSnapshotDamaged
	case errors.As(err, new(*LocalError)):
		if errors.Is(err, syscall.ENOSPC) {
			return v1alpha1.ReasonDiskFull
		}
		return ""
	case errors.As(err, &se):
		return se.Reason
	}
	return ""
}

// describe tells the cause of a storage error; the credentials' Secret is named by the hint,
// never their values. S3-compatible stores answer many refusals with codes that gocloud.dev
// does not map (SignatureDoesNotMatch, InsufficientStorage): their names are matched too.
func describe(op string, loc backup.Location, err error) error {
	if err == nil {
		return nil
	}
	reason := classify(err)
	if reason == v1alpha1.ReasonStoreObjectNotFound && slices.Contains(bucketOps, op) {
		reason = v1alpha1.ReasonStoreBucketNotFound // nothing is found when the bucket is not
	}
	return &Error{Op: op, Loc: loc, Reason: reason, Err: err}
}

// The operations on the bucket itself, not on an object. OpReach, the first request to the
// store (before a backup stores or a restore fetches anything), is where an untrusted
// certificate or refused credentials fail.
const (
	opOpen  = "opening bucket of"
	OpReach = "reaching the bucket of"
	OpList  = "listing"
)

var bucketOps = []string{opOpen, OpReach, OpList}

func classify(err error) string {
	msg := err.Error()
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(msg, w) {
				return true
			}
		}
		return false
	}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch code := gcerrors.Code(err); {
	case errors.As(err, &unknownCA):
		return v1alpha1.ReasonStoreCertificateUntrusted
	case errors.As(err, &hostname) || errors.As(err, &invalid):
		return v1alpha1.ReasonStoreCertificateInvalid
	// Credentials before a missing bucket: some stores answer an unknown key with 404
	// (versitygw's XAdminUserNotFound).
	case code == gcerrors.PermissionDenied || has("SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "StatusCode: 403", "AuthenticationFailed", "AuthorizationFailure",
		"XAdminUserNotFound", "No user exists with the provided access key"):
		return v1alpha1.ReasonStoreCredentialsRefused
	case has("NoSuchBucket", "ContainerNotFound", "The specified bucket does not exist"):
		return v1alpha1.ReasonStoreBucketNotFound
	case code == gcerrors.NotFound || errors.Is(err, fs.ErrNotExist):
		return v1alpha1.ReasonStoreObjectNotFound
	case code == gcerrors.ResourceExhausted || has("InsufficientStorage", "no space left", "No space left", "QuotaExceeded", "StatusCode: 507"):
		return v1alpha1.ReasonStoreOutOfSpace
	case code == gcerrors.DeadlineExceeded || has("no such host", "connection refused", "i/o timeout", "network is unreachable", "dial tcp"):
		return v1alpha1.ReasonStoreUnreachable
	case errors.Is(err, io.ErrUnexpectedEOF):
		return v1alpha1.ReasonStoreTransferCutOff
	case code == gcerrors.InvalidArgument:
		return v1alpha1.ReasonStoreRequestRefused
	}
	return ""
}

// Store uploads the snapshot at path to loc with its metadata, then reads the stored object
// back and checks it: etcd's integrity hash and the SHA-256 of the whole. A failed upload
// leaves no object (the upload is committed only when it is complete); a stored object that
// does not verify is deleted.
func Store(ctx context.Context, loc backup.Location, path string, info backup.Info) error {
	b, err := openBucket(ctx, loc)
	if err != nil {
		return err
	}
	defer b.Close()
	f, err := os.Open(path) //nolint:gosec // a path the backup Job chooses
	if err != nil {
		return err
	}
	defer f.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(wctx, loc.Key, &blob.WriterOptions{ContentType: "application/octet-stream", Metadata: info.Metadata()})
	if err != nil {
		return describe("writing", loc, err)
	}
	if _, err := io.Copy(w, f); err != nil {
		cancel() // abandons the upload: nothing is committed
		_ = w.Close()
		return describe("writing", loc, err)
	}
	if err := w.Close(); err != nil {
		return describe("writing", loc, err)
	}
	got, err := readBack(ctx, b, loc)
	if err == nil && got.SHA256 != info.SHA256 {
		err = fmt.Errorf("%w: the stored object's SHA-256 is %s, the snapshot's %s", ErrDamaged, got.SHA256, info.SHA256)
	}
	if err != nil {
		_ = b.Delete(ctx, loc.Key)
		return fmt.Errorf("verifying %s after the upload (the object was deleted): %w", loc, err)
	}
	return nil
}

// openBucket opens the bucket of loc and checks, with a small request, that it exists and
// takes the credentials: a store that refuses an upload half-way may only reset the
// connection, which says neither.
func openBucket(ctx context.Context, loc backup.Location) (*blob.Bucket, error) {
	b, err := blob.OpenBucket(ctx, loc.Bucket)
	if err != nil {
		return nil, describe(opOpen, loc, err)
	}
	ok, err := b.IsAccessible(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("%w: NoSuchBucket", fs.ErrNotExist)
	}
	if err != nil {
		_ = b.Close()
		return nil, describe(OpReach, loc, err)
	}
	return b, nil
}

// readBack streams a stored snapshot, checks etcd's integrity hash and returns its metadata
// with the SHA-256 it computed.
func readBack(ctx context.Context, b *blob.Bucket, loc backup.Location) (backup.Info, error) {
	attrs, err := b.Attributes(ctx, loc.Key)
	if err != nil {
		return backup.Info{}, describe("reading the attributes of", loc, err)
	}
	r, err := b.NewReader(ctx, loc.Key, nil)
	if err != nil {
		return backup.Info{}, describe("reading", loc, err)
	}
	defer r.Close()
	sum, err := backup.VerifyStream(r)
	if err != nil {
		return backup.Info{}, fmt.Errorf("reading %s: %w", loc, err)
	}
	info := backup.InfoFromMetadata(attrs.Metadata)
	info.SHA256 = sum
	return info, nil
}

// Fetch downloads the snapshot at loc into path for a restore and checks it: etcd's integrity
// hash, and the SHA-256 recorded in its metadata and, when given, want. It returns the
// recorded metadata.
func Fetch(ctx context.Context, loc backup.Location, path, want string) (backup.Info, error) {
	b, err := blob.OpenBucket(ctx, loc.Bucket)
	if err != nil {
		return backup.Info{}, describe(opOpen, loc, err)
	}
	defer b.Close()
	attrs, err := b.Attributes(ctx, loc.Key)
	if err != nil {
		return backup.Info{}, describe("reading the attributes of", loc, err)
	}
	recorded := backup.InfoFromMetadata(attrs.Metadata)
	r, err := b.NewReader(ctx, loc.Key, nil)
	if err != nil {
		return backup.Info{}, describe("reading", loc, err)
	}
	defer r.Close()
	tmp := path + ".part"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600) //nolint:gosec // a path the restore chooses
	if err != nil {
		return backup.Info{}, err
	}
	// The local file's failures are told apart from the store's: a full volume is not a store
	// out of space.
	lw := &localWriter{f: f}
	n, err := io.Copy(lw, r)
	if cerr := f.Close(); err == nil {
		err, lw.err = cerr, cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		if lw.err != nil {
			return backup.Info{}, &LocalError{Path: tmp, Size: recorded.Size, Err: lw.err}
		}
		return backup.Info{}, describe("downloading", loc, err)
	}
	sum, err := backup.Verify(tmp)
	if recorded.Size > 0 && n != recorded.Size {
		err = fmt.Errorf("it holds %d bytes, its backup recorded %d", n, recorded.Size)
	}
	for _, check := range []struct{ what, sha string }{{"its metadata records", recorded.SHA256}, {"the restore asks for", want}} {
		if err == nil && check.sha != "" && !strings.EqualFold(check.sha, sum) && !mutant.On("restore-skip-hash") {
			err = fmt.Errorf("%w: its SHA-256 is %s, %s %s", ErrHashMismatch, sum, check.what, check.sha)
		}
	}
	if err != nil {
		_ = os.Remove(tmp)
		if intact := recorded.SHA256 != "" && strings.EqualFold(recorded.SHA256, sum); intact && errors.Is(err, ErrHashMismatch) {
			// Not damaged: the very snapshot its backup recorded, and another than the one asked for.
			return backup.Info{}, fmt.Errorf("refusing the snapshot %s: %w; the object is intact (its SHA-256 is the one its backup recorded), so it is another backup than the restore asks for: correct fromBackup.sha256, or point fromBackup at the backup it names", loc, err)
		}
		return backup.Info{}, fmt.Errorf("refusing the snapshot %s: %w (%w); it cannot be restored: restore another backup", loc, ErrDamaged, err)
	}
	recorded.SHA256 = sum
	return recorded, os.Rename(tmp, path)
}

// localWriter remembers whether a failure of io.Copy was its own (writing the local file).
type localWriter struct {
	f   *os.File
	err error
}

func (w *localWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// LocalError is a fetch that failed writing the snapshot to the member's volume, not at the
// store: the volume is full (its Reason is v1alpha1.ReasonDiskFull) or failing.
type LocalError struct {
	Path string
	Size int64 // the snapshot's recorded size, 0 when not recorded
	Err  error
}

func (e *LocalError) Error() string {
	if errors.Is(e.Err, syscall.ENOSPC) {
		return fmt.Sprintf("writing the snapshot to the member's volume at %s: %v: the volume has no room for the snapshot (%d bytes recorded): raise storage.size, or free the volume", e.Path, e.Err, e.Size)
	}
	return fmt.Sprintf("writing the snapshot to the member's volume at %s: %v: check the volume", e.Path, e.Err)
}

func (e *LocalError) Unwrap() error { return e.Err }

// ErrDamaged: the stored object is not, or no longer, the snapshot that was backed up (cut
// short, altered, or replaced by another): no restore can use it, and only another backup helps.
// Storage that cannot be reached or refuses the credentials is never reported as damaged.
var ErrDamaged = errors.New("the stored object is damaged")

// ErrHashMismatch: a snapshot's bytes are not the ones its backup recorded.
var ErrHashMismatch = errors.New("the snapshot is not the one backed up")

// List returns the keys of the snapshots (.db objects) under prefix, with their times.
func List(ctx context.Context, bucket, prefix string) (map[string]time.Time, error) {
	return list(ctx, bucket, prefix, "", func(key string) bool { return strings.HasSuffix(key, ".db") })
}

// ListAll lists every object under prefix (an archive's segments as well as snapshots), with
// its modification time.
func ListAll(ctx context.Context, bucket, prefix string) (map[string]time.Time, error) {
	return list(ctx, bucket, prefix, "", func(string) bool { return true })
}

// list lists the objects under prefix that keep accepts; with a delimiter ("/"), only those
// directly under it.
func list(ctx context.Context, bucket, prefix, delimiter string, keep func(key string) bool) (map[string]time.Time, error) {
	b, err := blob.OpenBucket(ctx, bucket)
	if err != nil {
		return nil, describe(opOpen, backup.Location{Bucket: bucket, Key: prefix}, err)
	}
	defer b.Close()
	objects := map[string]time.Time{}
	if err := walk(ctx, b, bucket, &blob.ListOptions{Prefix: prefix, Delimiter: delimiter}, func(o *blob.ListObject) (bool, error) {
		if !o.IsDir && keep(o.Key) {
			objects[o.Key] = o.ModTime
		}
		return true, nil
	}); err != nil {
		return nil, err
	}
	return objects, nil
}

// Retain applies a schedule's retention to its snapshots and returns the keys it deleted. The
// schedule's snapshots are the objects under prefix (".../<schedule>-") whose keys continue
// with exactly the time the schedule names its backups by (backup.OfSchedule), and whose
// metadata, where it names a schedule, names this one: another schedule whose name begins
// with this one's shares the prefix, and its snapshots are never this retention's to delete.
func Retain(ctx context.Context, bucket, prefix, schedule string, r backup.Retention, now time.Time) ([]string, error) {
	listed, b, err := listSnapshots(ctx, bucket, prefix, "")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	objects := map[string]time.Time{}
	var unread []error
	for k, t := range listed {
		if !backup.OfSchedule(prefix, k) && !mutant.On("retain-by-prefix") {
			continue
		}
		attrs, err := b.Attributes(ctx, k)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			// Left alone, as every object whose owner cannot be told: the others are
			// still retained.
			unread = append(unread, describe("reading the attributes of", backup.Location{Bucket: bucket, Key: k}, err))
			continue
		}
		if owner := attrs.Metadata[backup.MetaSchedule]; owner != "" && owner != schedule && !mutant.On("retain-by-prefix") {
			continue
		}
		// The time the schedule named it by, as the operator's retention of the EtcdBackups
		// takes it: both keep the same backups.
		if at, ok := backup.ScheduledTime(k); ok {
			t = at
		}
		objects[k] = t
	}
	expired := r.Expired(objects, now)
	for i, k := range expired {
		if err := b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return expired[:i], errors.Join(append(unread, describe("deleting", backup.Location{Bucket: bucket, Key: k}, err))...)
		}
	}
	return expired, errors.Join(unread...)
}

// OldestSnapshots returns, for each cluster ID, the revision of the oldest snapshot (.db
// object) directly under prefix (a cluster's directory: not its archive below it) that
// schedule's archive serves: the schedule's own, and those made by hand (or whose metadata
// names no schedule); another schedule's replay its own archive. What they need is what an
// archive's retention keeps. It fails, and nothing should be pruned, when an object's
// metadata cannot be read or does not name its revision and cluster ID.
func OldestSnapshots(ctx context.Context, bucket, prefix, schedule string) (map[uint64]int64, error) {
	listed, b, err := listSnapshots(ctx, bucket, prefix, "/")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	out := map[uint64]int64{}
	for k := range listed {
		attrs, err := b.Attributes(ctx, k)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, describe("reading the attributes of", backup.Location{Bucket: bucket, Key: k}, err)
		}
		info := backup.InfoFromMetadata(attrs.Metadata)
		if info.Schedule != "" && info.Schedule != backup.NoSchedule && info.Schedule != schedule {
			continue
		}
		id, err := names.ParseID(info.ClusterID)
		if err != nil || info.Revision <= 0 {
			return nil, fmt.Errorf("%s records no revision and cluster ID in its metadata (%q, %d): the archive keeps every segment", backup.Location{Bucket: bucket, Key: k}, info.ClusterID, info.Revision)
		}
		if old, ok := out[id]; !ok || info.Revision < old {
			out[id] = info.Revision
		}
	}
	return out, nil
}

// listSnapshots lists the snapshots under prefix (with a delimiter, only those directly under
// it), and opens the bucket to read or delete them: close it when done.
func listSnapshots(ctx context.Context, bucket, prefix, delimiter string) (map[string]time.Time, *blob.Bucket, error) {
	listed, err := list(ctx, bucket, prefix, delimiter, func(key string) bool { return strings.HasSuffix(key, ".db") })
	if err != nil {
		return nil, nil, err
	}
	b, err := blob.OpenBucket(ctx, bucket)
	if err != nil {
		return nil, nil, describe(opOpen, backup.Location{Bucket: bucket, Key: prefix}, err)
	}
	return listed, b, nil
}
