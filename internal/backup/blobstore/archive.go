package blobstore

import (
	"context"
	"errors"
	"io"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/quorate-dev/quorate/internal/archive"
	"github.com/quorate-dev/quorate/internal/backup"
)

// ArchiveStore is an archive's Store in a bucket (the backups' URL: s3://, gs://, azblob://,
// file://). Close it when done.
type ArchiveStore struct {
	url string
	b   *blob.Bucket
}

var _ archive.Store = (*ArchiveStore)(nil)

// OpenArchive opens the bucket at url and checks that it exists and takes the credentials.
func OpenArchive(ctx context.Context, url string) (*ArchiveStore, error) {
	b, err := openBucket(ctx, backup.Location{Bucket: url})
	if err != nil {
		return nil, err
	}
	return &ArchiveStore{url: url, b: b}, nil
}

// Close releases the bucket.
func (s *ArchiveStore) Close() error { return s.b.Close() }

// Put writes the object whole: an upload cut short commits nothing.
func (s *ArchiveStore) Put(ctx context.Context, name string, data []byte) error {
	if err := s.b.WriteAll(ctx, name, data, &blob.WriterOptions{ContentType: "application/gzip"}); err != nil {
		return describe("writing", backup.Location{Bucket: s.url, Key: name}, err)
	}
	return nil
}

// Get reads the object.
func (s *ArchiveStore) Get(ctx context.Context, name string) ([]byte, error) {
	data, err := s.b.ReadAll(ctx, name)
	if err != nil {
		return nil, describe("reading", backup.Location{Bucket: s.url, Key: name}, err)
	}
	return data, nil
}

// List names the objects under prefix.
func (s *ArchiveStore) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	if err := s.Walk(ctx, prefix, func(name string) (bool, error) {
		out = append(out, name)
		return true, nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

var _ archive.Deleter = (*ArchiveStore)(nil)

// Delete removes the object; one that is gone already is no error.
func (s *ArchiveStore) Delete(ctx context.Context, name string) error {
	if err := s.b.Delete(ctx, name); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return describe("deleting", backup.Location{Bucket: s.url, Key: name}, err)
	}
	return nil
}

// ListFirst names the first object under prefix in the store's order (byte order of the keys
// on S3, Google Cloud Storage, Azure and file://), reading one listing page of one object.
func (s *ArchiveStore) ListFirst(ctx context.Context, prefix string) (string, bool, error) {
	page, _, err := s.b.ListPage(ctx, blob.FirstPageToken, 1, &blob.ListOptions{Prefix: prefix})
	if err != nil {
		return "", false, describe(OpList, backup.Location{Bucket: s.url, Key: prefix}, err)
	}
	if len(page) == 0 {
		return "", false, nil
	}
	return page[0].Key, true, nil
}

var (
	_ archive.Walker    = (*ArchiveStore)(nil)
	_ archive.DirLister = (*ArchiveStore)(nil)
)

// Walk calls fn with the objects under prefix in the store's order (byte order of the keys),
// reading the listing a page at a time and no further than fn goes.
func (s *ArchiveStore) Walk(ctx context.Context, prefix string, fn func(name string) (bool, error)) error {
	return walk(ctx, s.b, s.url, &blob.ListOptions{Prefix: prefix}, func(o *blob.ListObject) (bool, error) {
		if o.IsDir {
			return true, nil
		}
		return fn(o.Key)
	})
}

// ListDirs names the directories directly under prefix ("<prefix><name>/").
func (s *ArchiveStore) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	if err := walk(ctx, s.b, s.url, &blob.ListOptions{Prefix: prefix, Delimiter: "/"}, func(o *blob.ListObject) (bool, error) {
		if o.IsDir {
			out = append(out, o.Key)
		}
		return true, nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// walk calls fn with the listing's entries in the store's order, a page at a time, until the
// listing ends or fn returns false or an error. A listing error names the bucket and prefix.
func walk(ctx context.Context, b *blob.Bucket, bucket string, opts *blob.ListOptions, fn func(*blob.ListObject) (bool, error)) error {
	it := b.List(opts)
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return describe(OpList, backup.Location{Bucket: bucket, Key: opts.Prefix}, err)
		}
		if more, err := fn(o); err != nil || !more {
			return err
		}
	}
}
