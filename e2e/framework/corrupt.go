package framework

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/quorate-dev/quorate/internal/resources"
)

// CorruptedKey is the key whose value CorruptValue rewrote in a member's database.
type CorruptedKey struct {
	Key      string
	Revision int64
	// Before and After are the value's lengths before and after.
	Before, After int
}

// keyBucket is etcd's bucket of key revisions (mvcc's schema.Key); its keys are revisions
// (8 bytes main, '_', 8 bytes sub; a deletion's tombstone has a trailing 't') and its values
// marshalled mvccpb.KeyValue.
var keyBucket = []byte("key")

// revKeyLen is the length of a revision key that is not a tombstone.
const revKeyLen = 17

// CorruptValue rewrites, in the bbolt file at path, the value of the most recent key revision
// that is not a deletion: the record stays well-formed (the same key, revisions and lease; a
// different value), which is a silent divergence, not a damaged file: etcd opens it and serves
// it. The file must not be open (bbolt's lock: etcd stopped); it fails after timeout otherwise.
func CorruptValue(path string, timeout time.Duration) (CorruptedKey, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return CorruptedKey{}, fmt.Errorf("opening %s: %w", path, err)
	}
	var got CorruptedKey
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(keyBucket)
		if b == nil {
			return fmt.Errorf("%s has no %q bucket", path, keyBucket)
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if len(k) != revKeyLen {
				continue // a tombstone
			}
			var kv mvccpb.KeyValue
			if err := kv.Unmarshal(v); err != nil {
				return fmt.Errorf("revision %x: %w", k, err)
			}
			got = CorruptedKey{Key: string(kv.Key), Revision: int64(binary.BigEndian.Uint64(k[:8])), Before: len(kv.Value)}
			kv.Value = flipped(kv.Value)
			got.After = len(kv.Value)
			out, err := kv.Marshal()
			if err != nil {
				return err
			}
			// bbolt's values are valid only in the transaction; Put copies out.
			return b.Put(append([]byte(nil), k...), out)
		}
		return errors.New("no key revision to corrupt")
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return got, err
}

// flipped is value with every bit of its first byte inverted ("corrupted" for an empty one):
// the same length, another value.
func flipped(value []byte) []byte {
	if len(value) == 0 {
		return []byte("corrupted")
	}
	out := append([]byte(nil), value...)
	out[0] ^= 0xff
	return out
}

// CorruptData rewrites one value in a stopped member's database on the node (CorruptValue):
// the member's data silently differ from its peers'. Its etcd must be stopped (fenced); the
// database's lock is waited for up to timeout.
func (r *Run) CorruptData(ctx context.Context, member string, timeout time.Duration) (CorruptedKey, error) {
	if err := r.requireNode(); err != nil {
		return CorruptedKey{}, err
	}
	dir, err := r.volumeDir(ctx, member)
	if err != nil {
		return CorruptedKey{}, err
	}
	rel, err := filepath.Rel(resources.DataVolumeMount, resources.DataDir)
	if err != nil {
		return CorruptedKey{}, err
	}
	path := filepath.Join(dir, rel, "member", "snap", "db")
	got, err := CorruptValue(path, timeout)
	if err != nil {
		return got, err
	}
	r.Phase("corrupted the data of " + member)
	r.Event("fault", "value-rewritten", fmt.Sprintf("rewrote the value of %q (revision %d, %d bytes) in %s, the database of %s",
		got.Key, got.Revision, got.Before, path, member))
	return got, nil
}
