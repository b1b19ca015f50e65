// Command quorate-backup moves etcd snapshots between a cluster and object storage. The
// operator runs it in pods it creates, with the bucket's credentials from the user's Secret in
// the environment; each subcommand reports a backup.Result as its termination message.
//
//	quorate-backup save    take a snapshot from a healthy follower, store it, read it back and
//	                       verify it, then apply the schedule's retention (a backup Job)
//	quorate-backup fetch   download and verify a snapshot for a member to restore (an init
//	                       container of a member of a cluster created from a backup)
//	quorate-backup verify  compare a restored cluster with what its backup recorded (a restore
//	                       drill's Job)
//	quorate-backup keyspace
//	                       hash a cluster's keyspace at a revision, count its leases (the suite's restore checks)
//	quorate-backup list    list the snapshots under a prefix of a bucket (--segment-ranges:
//	                       the revisions an archive's segments cover)
//	quorate-backup archive stream every change of a cluster into segments of a bucket, until
//	                       stopped, serving its progress (an EtcdBackupSchedule's archiver)
//	quorate-backup disk-check
//	                       measure fdatasync latency and throughput of a directory's disk
//	                       (the pod of `kubectl quorate disk-check`)
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
	"github.com/quorate-dev/quorate/internal/backup/blobstore"
	"github.com/quorate-dev/quorate/internal/launcher"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: quorate-backup save|fetch|verify|list|keyspace|archive|disk-check [flags]")
		os.Exit(64)
	}
	switch os.Args[1] {
	case "disk-check":
		os.Exit(diskCheck(os.Args[2:]))
	case "archive":
		os.Exit(archiveMain(os.Args[2:]))
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	termination := fs.String("termination-log", "/dev/termination-log", "where the result goes (the container's termination message)")
	caBundle := fs.String("ca-bundle", "", "PEM file of the authorities of the store's certificate, trusted besides the public roots (storage.caBundle)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	var run func() (backup.Result, error)
	switch os.Args[1] {
	case "save":
		run = saveCmd(ctx, fs)
	case "fetch":
		// A member that has data or has run fetches nothing: it must start even when the
		// CA bundle it restored with is gone or changed since, so the bundle is read only
		// right before a fetch.
		run = fetchCmd(ctx, fs, func() error { return trustRoots(*caBundle) })
	case "verify":
		run = verifyCmd(ctx, fs)
	case "list":
		run = listCmd(ctx, fs)
	case "keyspace":
		run = keyspaceCmd(ctx, fs)
	default:
		fmt.Fprintln(os.Stderr, "usage: quorate-backup save|fetch|verify|list|keyspace|archive|disk-check [flags]")
		os.Exit(64)
	}
	_ = fs.Parse(os.Args[2:])
	var res backup.Result
	var err error
	if os.Args[1] != "fetch" {
		err = trustRoots(*caBundle)
	}
	if err == nil {
		res, err = run()
	}
	if err != nil {
		res = backup.Result{Kind: backup.ResultFailed, Error: err.Error(), Reason: blobstore.Reason(err)}
	}
	log.Printf("%s: %s", os.Args[1], strings.TrimPrefix(res.Encode(), "quorate-backup-result: "))
	if werr := backup.WriteResult(*termination, res); werr != nil {
		log.Printf("writing the termination message: %v", werr)
	}
	if res.Kind == backup.ResultFailed || (res.Kind == backup.ResultVerified && !res.Matches) {
		os.Exit(1)
	}
}

// tlsFlags are the client certificate flags shared by save and verify.
type tlsFlags struct{ dir, serverName *string }

func addTLS(fs *flag.FlagSet) tlsFlags {
	return tlsFlags{
		dir:        fs.String("tls-dir", "", "directory with tls.crt, tls.key and ca.crt of the operator's client certificate (empty: plaintext)"),
		serverName: fs.String("server-name", "", "name the members' server certificate must carry"),
	}
}

func (t tlsFlags) client(endpoint string) (*clientv3.Client, error) {
	return t.clients([]string{endpoint})
}

// clients is a client of the endpoints together (it moves to another when one fails).
func (t tlsFlags) clients(endpoints []string) (*clientv3.Client, error) {
	// The members are reached directly: a proxy in the environment is the store's.
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop(), DialOptions: []grpc.DialOption{grpc.WithNoProxy()}}
	if *t.dir != "" {
		var err error
		// Read at every handshake: the archiver runs for weeks, across renewals of the
		// operator's client certificate and rotations of the CA.
		if cfg.TLS, err = pki.FilesTLS(*t.dir, *t.serverName, nil); err != nil {
			return nil, err
		}
	}
	return clientv3.New(cfg)
}

func saveCmd(ctx context.Context, fs *flag.FlagSet) func() (backup.Result, error) {
	t := addTLS(fs)
	endpoints := fs.String("endpoints", "", "comma-separated member=URL pairs of the cluster's members")
	clusterID := fs.String("cluster-id", "", "the cluster ID (hex) every member must report")
	bucket := fs.String("bucket", "", "bucket URL (gocloud.dev/blob)")
	key := fs.String("key", "", "object key of the snapshot")
	work := fs.String("work-dir", "/work", "directory for the snapshot while it is checked (room for the whole database)")
	rf := addRetention(fs)
	return func() (backup.Result, error) {
		member, c, st, err := pickMember(ctx, t, *endpoints, *clusterID)
		if err != nil {
			return backup.Result{}, err
		}
		defer c.Close()
		log.Printf("taking the snapshot from %s (revision %d, etcd %s)", member, st.Header.Revision, st.Version)
		path := filepath.Join(*work, "snapshot.db")
		_ = os.Remove(path)
		saved, err := backup.Save(ctx, c, path)
		if err != nil {
			return backup.Result{}, fmt.Errorf("taking the snapshot from %s: %w", member, err)
		}
		defer func() { _ = os.Remove(path) }()
		ks, err := backup.Inspect(path)
		if err != nil {
			return backup.Result{}, fmt.Errorf("checking the snapshot of %s: %w", member, err)
		}
		info := backup.Info{Keyspace: ks, SHA256: saved.SHA256, Size: saved.Size, Version: st.Version, ClusterID: names.FormatID(st.Header.ClusterId), Schedule: cmp.Or(*rf.schedule, backup.NoSchedule)}
		loc := backup.Location{Bucket: *bucket, Key: *key}
		if err := blobstore.Store(ctx, loc, path, info); err != nil {
			return backup.Result{}, err
		}
		res := backup.Result{Kind: backup.ResultStored, Member: member, Location: loc.String(), Key: *key, Info: &info}
		// Stored and verified: said so before the retention, which may take long, so that
		// a Job stopped during it still reports its backup.
		if tl := fs.Lookup("termination-log"); tl != nil && *rf.prefix != "" {
			if err := backup.WriteResult(tl.Value.String(), res); err != nil {
				log.Printf("writing the termination message: %v", err)
			}
		}
		rf.apply(ctx, *bucket, st.Header.ClusterId, &res)
		return res, nil
	}
}

// pickMember asks every member for its status and returns a client of a healthy follower of
// the right cluster (the leader only when no follower answers), to spare the leader.
func pickMember(ctx context.Context, t tlsFlags, endpoints, clusterID string) (string, *clientv3.Client, *clientv3.StatusResponse, error) {
	var leader string
	var leaderClient *clientv3.Client
	var leaderStatus *clientv3.StatusResponse
	var problems []string
	for _, pair := range strings.Split(endpoints, ",") {
		member, url, ok := strings.Cut(pair, "=")
		if !ok {
			return "", nil, nil, fmt.Errorf("--endpoints: %q is not member=URL", pair)
		}
		c, err := t.client(url)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", member, err))
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := c.Status(sctx, url)
		cancel()
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", member, err))
		case clusterID != "" && names.FormatID(st.Header.ClusterId) != clusterID:
			problems = append(problems, fmt.Sprintf("%s belongs to cluster %s, not %s", member, names.FormatID(st.Header.ClusterId), clusterID))
		case st.Leader == 0:
			problems = append(problems, member+" has no leader")
		case st.IsLearner:
			problems = append(problems, member+" is a learner")
		case st.Leader != st.Header.MemberId:
			if leaderClient != nil {
				leaderClient.Close()
			}
			return member, c, st, nil
		case leaderClient == nil:
			leader, leaderClient, leaderStatus = member, c, st
			continue
		}
		c.Close()
	}
	if leaderClient != nil {
		log.Printf("no follower answered (%s): taking the snapshot from the leader", strings.Join(problems, "; "))
		return leader, leaderClient, leaderStatus, nil
	}
	return "", nil, nil, fmt.Errorf("no healthy member of the cluster answered: %s", strings.Join(problems, "; "))
}

func fetchCmd(ctx context.Context, fs *flag.FlagSet, trust func() error) func() (backup.Result, error) {
	bucket := fs.String("bucket", "", "bucket URL (gocloud.dev/blob)")
	key := fs.String("key", "", "object key of the snapshot")
	sha := fs.String("sha256", "", "SHA-256 the snapshot must have (empty: the one its metadata records)")
	out := fs.String("out", "", "where to put the verified snapshot")
	dataDir := fs.String("data-dir", "", "the member's data directory: nothing is fetched once it exists")
	marker := fs.String("marker", "", "the member's marker: nothing is fetched for a member that has run")
	podAnnotations := fs.String("pod-annotations", "", "the pod's annotations file (downward API): nothing is fetched for a member the operator recorded as having run")
	credSecret := fs.String("credentials-secret", "", "the storage's credentials Secret, mounted optionally at --credentials-dir: checked before fetching")
	credDir := fs.String("credentials-dir", "", "where the credentials Secret is mounted")
	pit := addPointInTime(fs)
	return func() (backup.Result, error) {
		ann, err := launcher.ReadPodAnnotations(*podAnnotations)
		if err != nil {
			return backup.Result{}, fmt.Errorf("reading the pod's annotations, which say whether the member has run: %w", err)
		}
		if launcher.HasData(*dataDir) || fileExists(*marker) || ann[names.AnnotationRequireData] == "true" {
			log.Printf("the member has data or has run: nothing to restore")
			return backup.Result{Kind: backup.ResultStored, Message: "the member has data or has run: nothing fetched"}, nil
		}
		if _, err := backup.Verify(*out); err == nil {
			if pit.done(*out) {
				log.Printf("%s was fetched and verified before", *out)
				return backup.Result{Kind: backup.ResultStored, Message: "fetched before"}, nil
			}
			// The plan needs the snapshot's recorded cluster ID: fetch it again.
			_ = os.Remove(*out)
		}
		if err := os.MkdirAll(filepath.Dir(*out), 0o750); err != nil {
			return backup.Result{}, err
		}
		if err := trust(); err != nil {
			return backup.Result{}, err
		}
		if err := credentialsMounted(*credSecret, *credDir); err != nil {
			return backup.Result{}, err
		}
		info, err := blobstore.Fetch(ctx, backup.Location{Bucket: *bucket, Key: *key}, *out, *sha)
		if err != nil {
			return backup.Result{}, err
		}
		res := backup.Result{Kind: backup.ResultStored, Location: backup.Location{Bucket: *bucket, Key: *key}.String(), Key: *key, Info: &info}
		if res.Message, err = pit.prepare(ctx, *bucket, *out, info); err != nil {
			// The snapshot goes too: the next attempt fetches it again, with its record.
			_ = os.Remove(*out)
			return backup.Result{}, err
		}
		return res, nil
	}
}

// credentialsMounted checks that the credentials Secret a restore names is there: it is
// mounted optionally, so that a member that has run starts without it, and an empty mount is a
// Secret that does not exist.
func credentialsMounted(secret, dir string) error {
	if secret == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return nil
	}
	return fmt.Errorf("the storage's credentials Secret %q (storage.credentialsSecret) does not exist in the namespace, or has no keys: create it, then delete this pod so that it fetches again", secret)
}

func fileExists(p string) bool {
	if p == "" {
		return false
	}
	_, err := os.Stat(p)
	return err == nil
}

func verifyCmd(ctx context.Context, fs *flag.FlagSet) func() (backup.Result, error) {
	t := addTLS(fs)
	endpoint := fs.String("endpoint", "", "client URL of the restored cluster")
	revision := fs.Int64("revision", 0, "the backup's revision")
	keys := fs.Int64("keys", 0, "the number of keys the backup recorded")
	hash := fs.String("keyspace-sha256", "", "the keyspace hash the backup recorded")
	return func() (backup.Result, error) {
		c, err := t.client(*endpoint)
		if err != nil {
			return backup.Result{}, err
		}
		defer c.Close()
		var got backup.Keyspace
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(2 * time.Second) {
			if got, err = backup.KeyspaceAt(ctx, c, *revision); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			return backup.Result{}, fmt.Errorf("reading the restored cluster: %w", err)
		}
		want := backup.Keyspace{Revision: *revision, Keys: *keys, Hash: *hash}
		if got == want {
			return backup.Result{Kind: backup.ResultVerified, Matches: true,
				Message: fmt.Sprintf("the restored cluster holds the %d keys of the backup at revision %d, keyspace SHA-256 %s", got.Keys, got.Revision, got.Hash)}, nil
		}
		var diff []string
		if got.Keys != want.Keys {
			diff = append(diff, fmt.Sprintf("%d keys, the backup recorded %d", got.Keys, want.Keys))
		}
		if got.Hash != want.Hash {
			diff = append(diff, fmt.Sprintf("keyspace SHA-256 %s, the backup recorded %s", got.Hash, want.Hash))
		}
		return backup.Result{Kind: backup.ResultVerified, Matches: false,
			Message: fmt.Sprintf("the restored cluster differs from the backup at revision %d: %s", *revision, strings.Join(diff, "; "))}, nil
	}
}

func keyspaceCmd(ctx context.Context, fs *flag.FlagSet) func() (backup.Result, error) {
	t := addTLS(fs)
	endpoint := fs.String("endpoint", "", "client URL of the cluster")
	revision := fs.Int64("revision", 0, "the revision (0: the cluster's newest)")
	return func() (backup.Result, error) {
		c, err := t.client(*endpoint)
		if err != nil {
			return backup.Result{}, err
		}
		defer c.Close()
		ks, err := backup.KeyspaceAt(ctx, c, *revision)
		if err != nil {
			return backup.Result{}, err
		}
		leases, err := c.Leases(ctx)
		if err != nil {
			return backup.Result{}, fmt.Errorf("listing the cluster's leases: %w", err)
		}
		return backup.Result{Kind: backup.ResultKeyspace, Info: &backup.Info{Keyspace: ks}, Leases: int64(len(leases.Leases))}, nil
	}
}

func listCmd(ctx context.Context, fs *flag.FlagSet) func() (backup.Result, error) {
	bucket := fs.String("bucket", "", "bucket URL (gocloud.dev/blob)")
	prefix := fs.String("prefix", "", "key prefix")
	ranges := fs.Bool("segment-ranges", false, "list the revision ranges the archive segments under the prefix cover (first-last), not the objects")
	return func() (backup.Result, error) {
		listing := blobstore.List
		if *ranges {
			listing = blobstore.ListAll
		}
		objects, err := listing(ctx, *bucket, *prefix)
		if err != nil {
			return backup.Result{}, err
		}
		res := backup.Result{Kind: backup.ResultListed}
		if *ranges {
			var spans []archive.Span
			for k := range objects {
				if sp, ok := archive.ParseSegmentName(k); ok {
					spans = append(spans, sp)
				}
			}
			archive.SortSpans(spans)
			res.Objects = archive.FormatRanges(archive.Ranges(spans))
			res.Message = fmt.Sprintf("%d segments", len(spans))
			return res, nil
		}
		for k := range objects {
			res.Objects = append(res.Objects, k)
		}
		slices.Sort(res.Objects)
		return res, nil
	}
}
