package backup

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Metadata keys of a stored snapshot (lower case: S3 lower-cases user metadata).
const (
	MetaRevision     = "etcd-revision"
	MetaKeys         = "etcd-keys"
	MetaKeyspaceHash = "etcd-keyspace-sha256"
	MetaVersion      = "etcd-version"
	MetaClusterID    = "etcd-cluster-id"
	MetaSHA256       = "sha256"
	MetaSize         = "size"
	// MetaSchedule names the EtcdBackupSchedule whose backup the snapshot is (absent for a
	// backup made by hand): retention deletes only objects of its own schedule.
	MetaSchedule = "quorate-schedule"
)

// NoSchedule is MetaSchedule on a backup made by hand: no schedule is named so (names begin
// with a letter or a digit), so no schedule's retention deletes it.
const NoSchedule = "-"

// Info is what the metadata of a stored snapshot records.
type Info struct {
	Keyspace
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	Version   string `json:"etcdVersion"`
	ClusterID string `json:"clusterID"`
	Schedule  string `json:"schedule,omitempty"`
}

// Metadata is the object metadata the snapshot is stored with.
func (i Info) Metadata() map[string]string {
	md := map[string]string{
		MetaRevision: strconv.FormatInt(i.Revision, 10), MetaKeys: strconv.FormatInt(i.Keys, 10), MetaKeyspaceHash: i.Hash,
		MetaVersion: i.Version, MetaClusterID: i.ClusterID, MetaSHA256: i.SHA256, MetaSize: strconv.FormatInt(i.Size, 10),
	}
	if i.Schedule != "" {
		md[MetaSchedule] = i.Schedule
	}
	return md
}

// InfoFromMetadata reads Info back from a stored object's metadata.
func InfoFromMetadata(md map[string]string) Info {
	atoi := func(k string) int64 { n, _ := strconv.ParseInt(md[k], 10, 64); return n }
	return Info{Keyspace: Keyspace{Revision: atoi(MetaRevision), Keys: atoi(MetaKeys), Hash: md[MetaKeyspaceHash]},
		SHA256: md[MetaSHA256], Size: atoi(MetaSize), Version: md[MetaVersion], ClusterID: md[MetaClusterID], Schedule: md[MetaSchedule]}
}

// ScheduleTimeFormat is the time a schedule's backups are named by: <schedule>-<time>.
const ScheduleTimeFormat = "20060102-150405"

// scheduleSuffix is what follows "<schedule>-" in the key of one of the schedule's snapshots.
var scheduleSuffix = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}\.db$`)

// OfSchedule says whether key is the key of a snapshot of the schedule whose keys begin with
// prefix (".../<schedule>-"): what follows must be exactly the time the schedule names its
// backups by. A schedule whose name extends another's ("nightly" and "nightly-weekly") shares
// its prefix, and its keys ("nightly-weekly-20261128-010203.db") do not match.
func OfSchedule(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	return ok && scheduleSuffix.MatchString(rest)
}

// Location is a bucket URL (gocloud.dev/blob: s3://, gs://, azblob://, file://) and the key of
// an object in it.
type Location struct {
	Bucket string
	Key    string
}

func (l Location) String() string {
	u, err := url.Parse(l.Bucket)
	if err != nil {
		return l.Bucket + " " + l.Key
	}
	// The query holds connection settings (endpoint, region), never credentials.
	return u.Scheme + "://" + u.Host + u.Path + "/" + l.Key
}
