// Package storagepolicy is the administrator's rule for where snapshots may go and come from.
// Creating an EtcdBackup reads the whole keyspace (the backup Job uses the operator's root
// client certificate), and its bucket URL's options (endpoint=, domain=) can point a request at
// any address the Job reaches: an administrator who does not want every namespace user to
// export, or to restore, from anywhere names the allowed locations, and whether the pods may
// use their ambient identity (no credentials Secret, no storage.identity).
package storagepolicy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/envflag"
)

// Policy is the operator-wide storage rule. The zero Policy allows every location and the
// ambient identity, as the operator did before policies.
type Policy struct {
	// Allowed are the bucket URLs a storage may name (empty: any). A storage's bucketURL is
	// allowed when it is one of them: the same scheme, bucket and path, and the same query
	// parameters in any order, so that no option (an endpoint=) can be added to an allowed one.
	Allowed []string
	// AllowAmbient lets a storage that names neither a credentials Secret nor an identity's
	// service account use the pods' ambient identity (the node's, or the namespace's default
	// service account's). Only consulted when Allowed is set.
	AllowAmbient bool
}

// Parse reads a comma-separated list of bucket URLs (the --allowed-storage flag), checking
// that each parses.
func Parse(list string, allowAmbient bool) (Policy, error) {
	p := Policy{AllowAmbient: allowAmbient}
	for _, u := range envflag.List(list) {
		if _, err := normalize(u); err != nil {
			return Policy{}, fmt.Errorf("--allowed-storage: %q: %w", u, err)
		}
		p.Allowed = append(p.Allowed, u)
	}
	return p, nil
}

// Refused is a storage the policy does not allow; its message says what to do.
type Refused struct{ msg string }

func (r *Refused) Error() string { return r.msg }

// Check says whether a backup to, or a restore from, st is allowed: nil, or a *Refused.
func (p Policy) Check(st v1alpha1.BackupStorage) error {
	if len(p.Allowed) == 0 {
		return nil
	}
	got, err := normalize(st.BucketURL)
	if err != nil {
		return &Refused{fmt.Sprintf("storage.bucketURL %q does not parse (%v); the operator's storage policy allows only %s", st.BucketURL, err, strings.Join(p.Allowed, ", "))}
	}
	if !slices.ContainsFunc(p.Allowed, func(a string) bool { n, _ := normalize(a); return n == got }) {
		return &Refused{fmt.Sprintf("storage.bucketURL %q is not a location the operator's storage policy allows (--allowed-storage): use one of %s, or ask the operator's administrator to allow it", st.BucketURL, strings.Join(p.Allowed, ", "))}
	}
	// Keys are PREFIX<namespace>/<cluster>/<backup>.db: with a prefix that does not end a path
	// segment, namespace apps with prefix "etcd/prod-" would write and delete the keys of
	// namespace prod-apps (prefix "etcd/") in a shared bucket.
	if st.Prefix != "" && !strings.HasSuffix(st.Prefix, "/") {
		return &Refused{fmt.Sprintf("storage.prefix %q does not end in /, and under the operator's storage policy a prefix must (keys are PREFIX<namespace>/<cluster>/<backup>.db, and a prefix that ends mid-segment reaches another namespace's keys in the shared bucket): add the /", st.Prefix)}
	}
	// The namespace's default service account is what the pods run as without one: ambient.
	ambient := st.CredentialsSecret == "" && (st.Identity == nil || st.Identity.ServiceAccountName == "" || st.Identity.ServiceAccountName == "default")
	if ambient && !p.AllowAmbient {
		return &Refused{"the storage names neither credentialsSecret nor identity.serviceAccountName, and the operator's storage policy does not let its pods use their ambient identity (--allow-ambient-storage-identity): name the credentials Secret or the service account (other than default) to reach the bucket as"}
	}
	return nil
}

// CheckRestoreKey says whether a cluster in namespace may restore the object key of a
// storage Check allows: under a policy the key must be one of the namespace's own snapshots,
// [DIRS/]<namespace>/<cluster>/<backup>.db as backups store them (their prefix ends in /), for
// an allowed bucket is shared by every namespace whose users may create clusters, and a key is
// all it takes to read another namespace's keyspace. The restore's own storage.prefix plays no
// part: it is the restoring user's to choose.
func (p Policy) CheckRestoreKey(namespace, key string) error {
	if len(p.Allowed) == 0 {
		return nil
	}
	segments := strings.Split(key, "/")
	n := len(segments)
	ok := n >= 3 && segments[n-3] == namespace
	if ok {
		cluster, file := segments[n-2], segments[n-1]
		name, db := strings.CutSuffix(file, ".db")
		ok = db && len(validation.IsDNS1123Label(cluster)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0
	}
	if !ok {
		return &Refused{fmt.Sprintf("key %q is not a snapshot of this namespace ([PREFIX/]%s/<cluster>/<backup>.db), and under the operator's storage policy a cluster restores only its namespace's own snapshots", key, namespace)}
	}
	return nil
}

// CheckArchivePrefix refuses, under a storage policy, an archive that is not one of the
// namespace's schedules' ([PREFIX/]<namespace>/<cluster>/archive/<schedule>), as
// CheckRestoreKey does for snapshots.
func (p Policy) CheckArchivePrefix(namespace, prefix string) error {
	if len(p.Allowed) == 0 {
		return nil
	}
	segments := strings.Split(prefix, "/")
	n := len(segments)
	if n < 4 || segments[n-4] != namespace || segments[n-2] != "archive" || len(validation.IsDNS1123Label(segments[n-3])) > 0 || len(validation.IsDNS1123Subdomain(segments[n-1])) > 0 {
		return &Refused{fmt.Sprintf("archive prefix %q is not an archive of this namespace ([PREFIX]%s/<cluster>/archive/<schedule>), and under the operator's storage policy a cluster restores only its namespace's own archives", prefix, namespace)}
	}
	return nil
}

// normalize is a bucket URL's scheme, host, path and sorted query parameters.
func normalize(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.User != nil || u.Fragment != "" {
		return "", fmt.Errorf("a bucket URL is SCHEME://BUCKET[/PATH][?OPTIONS], without a user or a fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", fmt.Errorf("its options do not parse: %w", err)
	}
	for k := range q {
		slices.Sort(q[k])
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host + u.EscapedPath() + "?" + q.Encode(), nil
}
