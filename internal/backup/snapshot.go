package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// integritySize is the length of the SHA-256 etcd appends to a snapshot's database.
const integritySize = sha256.Size

// Saved describes a snapshot written to a file.
type Saved struct {
	Path string
	// Size of the file: the database and etcd's trailing SHA-256.
	Size int64
	// SHA256 of the whole file (hex), which the stored object must match.
	SHA256 string
}

// Save streams the snapshot of the member at endpoint into path. c must be a client of that
// endpoint alone: etcd sends the snapshot of the member the request reaches.
func Save(ctx context.Context, c *clientv3.Client, path string) (Saved, error) {
	rc, err := c.Snapshot(ctx)
	if err != nil {
		return Saved{}, fmt.Errorf("asking for a snapshot: %w", err)
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) //nolint:gosec // a path the backup Job chooses
	if err != nil {
		return Saved{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Saved{}, fmt.Errorf("receiving the snapshot (%d bytes so far): %w", n, err)
	}
	return Saved{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ErrIntegrity: the snapshot's database does not match the SHA-256 etcd appended to it.
var ErrIntegrity = errors.New("the snapshot's database does not match the SHA-256 etcd appended to it")

// Verify checks etcd's integrity hash of the snapshot at path and returns the SHA-256 of the
// whole file.
func Verify(path string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // a path the backup Job chooses
	if err != nil {
		return "", err
	}
	defer f.Close()
	return VerifyStream(f)
}

// VerifyStream reads a whole snapshot, checks etcd's integrity hash, and returns the SHA-256
// of everything it read.
func VerifyStream(r io.Reader) (string, error) {
	whole, db := sha256.New(), sha256.New()
	tail := &tailWriter{next: db, keep: integritySize}
	n, err := io.Copy(io.MultiWriter(whole, tail), r)
	if err != nil {
		return "", err
	}
	if n < integritySize+1 || (n-integritySize)%512 != 0 {
		return "", fmt.Errorf("%w: %d bytes is not a database followed by its SHA-256", ErrIntegrity, n)
	}
	if !bytes.Equal(db.Sum(nil), tail.buf) {
		return "", ErrIntegrity
	}
	return hex.EncodeToString(whole.Sum(nil)), nil
}

// tailWriter passes everything but the last keep bytes on to next, and keeps those.
type tailWriter struct {
	next hash.Hash
	keep int
	buf  []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.keep; over > 0 {
		t.next.Write(t.buf[:over])
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// Keyspace is what a cluster holds at one revision: its number of keys and a hash of them.
type Keyspace struct {
	Revision int64 `json:"revision"`
	Keys     int64 `json:"keys"`
	// Hash is the SHA-256 (hex) of every key at the revision, in key order, with its value,
	// create and modification revisions, version and lease.
	Hash string `json:"hash"`
}

// keyspaceHash accumulates Keyspace.Hash; keys must be added in order.
type keyspaceHash struct {
	h    hash.Hash
	n    int64
	last []byte
}

func newKeyspaceHash() *keyspaceHash { return &keyspaceHash{h: sha256.New()} }

func (k *keyspaceHash) add(kv *mvccpb.KeyValue) error {
	if k.n > 0 && bytes.Compare(kv.Key, k.last) <= 0 {
		return fmt.Errorf("key %q after %q: keys out of order", kv.Key, k.last)
	}
	var buf [binary.MaxVarintLen64]byte
	put := func(b []byte) {
		k.h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(b)))])
		k.h.Write(b)
	}
	num := func(v int64) { k.h.Write(buf[:binary.PutVarint(buf[:], v)]) }
	put(kv.Key)
	put(kv.Value)
	num(kv.CreateRevision)
	num(kv.ModRevision)
	num(kv.Version)
	num(kv.Lease)
	k.n++
	k.last = append(k.last[:0], kv.Key...)
	return nil
}

func (k *keyspaceHash) result(rev int64) Keyspace {
	return Keyspace{Revision: rev, Keys: k.n, Hash: hex.EncodeToString(k.h.Sum(nil))}
}

// Inspect reads the keyspace of a snapshot at path (etcd's integrity hash checked first) at
// the snapshot's own revision, the newest it holds.
func Inspect(path string) (Keyspace, error) {
	if _, err := Verify(path); err != nil {
		return Keyspace{}, err
	}
	// bbolt reads the database without etcd's trailing hash: a copy without it, beside the
	// snapshot (the pods that inspect one have no writable /tmp, but its directory is theirs).
	db, err := os.CreateTemp(filepath.Dir(path), "quorate-snapshot-*.db")
	if err != nil {
		return Keyspace{}, err
	}
	defer func() { _ = os.Remove(db.Name()) }()
	src, err := os.Open(path) //nolint:gosec // a path the backup Job chooses
	if err != nil {
		db.Close()
		return Keyspace{}, err
	}
	st, err := src.Stat()
	if err == nil {
		_, err = io.CopyN(db, src, st.Size()-integritySize)
	}
	src.Close()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Keyspace{}, err
	}
	return keyspaceOfDB(db.Name())
}

// keyBucket is etcd's bucket of key revisions: each entry's key is the revision (8 bytes of
// main revision, '_', 8 bytes of sub revision, and 't' for a deletion), its value the
// mvccpb.KeyValue.
var keyBucket = []byte("key")

func keyspaceOfDB(path string) (Keyspace, error) {
	db, err := bolt.Open(path, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return Keyspace{}, fmt.Errorf("opening the snapshot's database: %w", err)
	}
	defer func() { _ = db.Close() }() // read only: nothing to flush
	live := map[string]*mvccpb.KeyValue{}
	var rev int64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(keyBucket)
		if b == nil {
			return errors.New("the snapshot's database has no key bucket: it is not an etcd v3 database")
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) < 17 || k[8] != '_' {
				return fmt.Errorf("key bucket entry %x is not a revision", k)
			}
			main := int64(binary.BigEndian.Uint64(k[:8])) //nolint:gosec // revisions are positive int64s stored as uint64
			rev = max(rev, main)
			kv := &mvccpb.KeyValue{}
			if err := kv.Unmarshal(v); err != nil {
				return fmt.Errorf("revision %d: %w", main, err)
			}
			if len(k) == 18 && k[17] == 't' {
				delete(live, string(kv.Key))
				return nil
			}
			if len(kv.Key) == 0 {
				// etcdutl's --bump-revision marks the new revision with an entry of no key:
				// it counts for the revision, and no client can write an empty key.
				return nil
			}
			live[string(kv.Key)] = kv
			return nil
		})
	})
	if err != nil {
		return Keyspace{}, err
	}
	keys := make([]string, 0, len(live))
	for k := range live {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := newKeyspaceHash()
	for _, k := range keys {
		if err := h.add(live[k]); err != nil {
			return Keyspace{}, err
		}
	}
	return h.result(rev), nil
}

// KeyspaceAt computes the keyspace of a running cluster at revision rev (0: its current
// revision), reading it in pages, so that it can be compared with a snapshot's.
func KeyspaceAt(ctx context.Context, c *clientv3.Client, rev int64) (Keyspace, error) {
	const page = 1000
	h := newKeyspaceHash()
	from := []byte{0}
	for {
		opts := []clientv3.OpOption{clientv3.WithRange("\x00"), clientv3.WithLimit(page), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.Get(ctx, string(from), opts...)
		if err != nil {
			return Keyspace{}, fmt.Errorf("reading the keyspace at revision %d: %w", rev, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if err := h.add(kv); err != nil {
				return Keyspace{}, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return h.result(rev), nil
		}
		from = append(append([]byte{}, resp.Kvs[len(resp.Kvs)-1].Key...), 0)
	}
}
