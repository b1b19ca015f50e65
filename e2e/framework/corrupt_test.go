package framework

import (
	"encoding/binary"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

func revKey(main int64, tombstone bool) []byte {
	k := make([]byte, 17, 18)
	binary.BigEndian.PutUint64(k, uint64(main))
	k[8] = '_'
	if tombstone {
		k = append(k, 't')
	}
	return k
}

// The most recent put is rewritten, its value changed at the same length and the rest of the
// record kept; tombstones after it and older revisions are left alone.
func TestCorruptValueRewritesTheLastPut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]mvccpb.KeyValue{
		string(revKey(5, false)): {Key: []byte("a"), Value: []byte("old"), CreateRevision: 5, ModRevision: 5, Version: 1},
		string(revKey(6, false)): {Key: []byte("b"), Value: []byte("value"), CreateRevision: 6, ModRevision: 6, Version: 1, Lease: 7},
		string(revKey(7, true)):  {Key: []byte("a"), ModRevision: 7},
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(keyBucket)
		if err != nil {
			return err
		}
		for k, kv := range records {
			v, err := kv.Marshal()
			if err != nil {
				return err
			}
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	got, err := CorruptValue(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := (CorruptedKey{Key: "b", Revision: 6, Before: 5, After: 5}); got != want {
		t.Fatalf("CorruptValue = %+v, want %+v", got, want)
	}

	want := records[string(revKey(6, false))]
	want.Value = []byte{'v' ^ 0xff, 'a', 'l', 'u', 'e'}
	records[string(revKey(6, false))] = want
	db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.View(func(tx *bolt.Tx) error {
		n := 0
		return tx.Bucket(keyBucket).ForEach(func(k, v []byte) error {
			n++
			var kv mvccpb.KeyValue
			if err := kv.Unmarshal(v); err != nil {
				return err
			}
			if w := records[string(k)]; !reflect.DeepEqual(kv, w) {
				t.Errorf("revision %x is %v, want %v", k, &kv, &w)
			}
			if n > len(records) {
				t.Errorf("more records than the %d written", len(records))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A database still open elsewhere (etcd running) is not touched: the lock is not granted.
func TestCorruptValueNeedsTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := CorruptValue(path, 100*time.Millisecond); err == nil {
		t.Fatal("CorruptValue succeeded on a database open elsewhere")
	}
}
