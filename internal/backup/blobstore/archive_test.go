package blobstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/testsupport"
)

// The archive in a bucket: an archiver writes its segments there, and they list and read back
// whole; a bucket that does not exist is refused when opened.
func TestArchiveInABucket(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir()
	s, err := OpenArchive(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	c := testsupport.StartEtcd(t, "archive", false).Client(t)
	var last int64
	for i := range 30 {
		resp, err := c.Put(ctx, fmt.Sprintf("k%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		last = resp.Header.Revision
	}
	resp, err := c.Get(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.ClusterId
	a := &archive.Archiver{Client: c, Store: s, Prefix: "ns/demo/archive", ClusterID: id, MaxRecords: 10, MaxLag: 20 * time.Millisecond}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx, 1) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := archive.Last(ctx, s, a.Prefix, id)
		if err != nil {
			t.Fatal(err)
		}
		if got == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("archived up to %d, want %d", got, last)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	spans, err := archive.Segments(ctx, s, a.Prefix, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := archive.Ranges(spans); len(got) != 1 || got[0] != [2]int64{2, last} {
		t.Errorf("covered %v, want [2 %d]", got, last)
	}
	var records int
	for _, sp := range spans {
		data, err := s.Get(ctx, sp.Name)
		if err != nil {
			t.Fatal(err)
		}
		h, recs, err := archive.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", sp.Name, err)
		}
		if h.First != sp.First || h.Last != sp.Last {
			t.Errorf("%s holds %d–%d", sp.Name, h.First, h.Last)
		}
		records += len(recs)
	}
	if records != int(last-1) {
		t.Errorf("%d records, want %d", records, last-1)
	}

	missing := t.TempDir() + "/missing"
	_, err = OpenArchive(ctx, "file://"+missing)
	want := "opening bucket of file://" + missing + "/: the bucket does not exist: create the bucket, or correct the URL (stat " + missing + ": no such file or directory)"
	if err == nil || err.Error() != want || Reason(err) != "StoreBucketNotFound" {
		t.Errorf("a missing bucket: %v (%s)\nwant %s (StoreBucketNotFound)", err, Reason(err), want)
	}
}
