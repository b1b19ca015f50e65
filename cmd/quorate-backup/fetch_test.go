package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/quorate-dev/quorate/internal/backup"
)

// A member that has data fetches nothing, and so never reads its CA bundle: its restore pod
// starts even after the bundle's ConfigMap was deleted. A member with nothing reads the bundle
// before it reaches the store, and fails on a bundle it cannot read.
func TestFetchReadsTheCABundleOnlyToFetch(t *testing.T) {
	gone := errors.New("the CA bundle is gone")
	for _, tc := range []struct {
		name    string
		hasData bool
		want    backup.Result
		wantErr error
	}{
		{"a member with data", true, backup.Result{Kind: backup.ResultStored, Message: "the member has data or has run: nothing fetched"}, nil},
		{"a member to restore", false, backup.Result{}, gone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			if tc.hasData {
				if err := os.MkdirAll(filepath.Join(data, "member", "wal"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
			run := fetchCmd(context.Background(), fs, func() error { return gone })
			if err := fs.Parse([]string{"--bucket=s3://b", "--key=k", "--out=" + filepath.Join(dir, "snap", "db"),
				"--data-dir=" + data, "--marker=" + filepath.Join(dir, "marker.json")}); err != nil {
				t.Fatal(err)
			}
			got, err := run()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("result (-want +got):\n%s", d)
			}
		})
	}
}

// The credentials Secret is mounted optionally: a member that has run starts without it, and a
// member to restore whose Secret is missing (an empty mount) fails before reaching the store,
// naming the Secret.
func TestFetchNeedsTheCredentialsSecretOnlyToFetch(t *testing.T) {
	for _, hasData := range []bool{true, false} {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if hasData {
			if err := os.MkdirAll(filepath.Join(data, "member", "wal"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		creds := filepath.Join(dir, "creds") // the optional volume of a missing Secret: empty
		if err := os.Mkdir(creds, 0o700); err != nil {
			t.Fatal(err)
		}
		fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
		run := fetchCmd(context.Background(), fs, func() error { return nil })
		if err := fs.Parse([]string{"--bucket=s3://b", "--key=k", "--out=" + filepath.Join(dir, "snap", "db"), "--data-dir=" + data,
			"--marker=" + filepath.Join(dir, "marker.json"), "--credentials-secret=store-keys", "--credentials-dir=" + creds}); err != nil {
			t.Fatal(err)
		}
		got, err := run()
		want, wantErr := backup.Result{Kind: backup.ResultStored, Message: "the member has data or has run: nothing fetched"}, ""
		if !hasData {
			want, wantErr = backup.Result{}, `the storage's credentials Secret "store-keys" (storage.credentialsSecret) does not exist in the namespace, or has no keys: create it, then delete this pod so that it fetches again`
		}
		if gotErr := fmt.Sprint(err); (err != nil || wantErr != "") && gotErr != wantErr {
			t.Fatalf("has data %v: error %v, want %s", hasData, err, wantErr)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("has data %v: result (-want +got):\n%s", hasData, d)
		}
	}
}
