package main

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// The archiver starts again once its CA bundle names other certificates; the same
// certificates written otherwise, a bundle that cannot be read, is gone or holds no
// certificate, do not start it again.
func TestFollowCABundle(t *testing.T) {
	caA, caB, caC := otherCA(t), otherCA(t), otherCA(t)
	was := append(append([]byte{}, caA...), caB...)
	for _, tc := range []struct {
		name   string
		change func(path string) error
	}{
		{"another authority", func(path string) error { return os.WriteFile(path, caC, 0o600) }},
		{"one more authority", func(path string) error {
			return os.WriteFile(path, append(append([]byte{}, was...), caC...), 0o600)
		}},
		{"one authority less", func(path string) error { return os.WriteFile(path, caA, 0o600) }},
		{"rewritten whole, as the kubelet does", func(path string) error {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, caC, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ca.crt")
			if err := os.WriteFile(path, was, 0o600); err != nil {
				t.Fatal(err)
			}
			var changedYet atomic.Bool
			called := make(chan bool, 2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				followCABundle(ctx, path, was, time.Millisecond, func() { called <- changedYet.Load() })
			}()
			// Many polls of the unchanged bundle first.
			time.Sleep(50 * time.Millisecond)
			changedYet.Store(true)
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			select {
			case after := <-called:
				if !after {
					t.Fatal("reported a change of a bundle that had not changed")
				}
			case <-time.After(time.Minute):
				t.Fatal("the change was not reported")
			}
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("followCABundle did not return after reporting the change")
			}
			if len(called) != 0 {
				t.Fatal("the change was reported twice")
			}
		})
	}
	for _, tc := range []struct {
		name  string
		place func(path string) error
	}{
		{"the same authorities in another order, with text around them", func(path string) error {
			return os.WriteFile(path, append(append([]byte("# the store's CAs\n"), caB...), caA...), 0o600)
		}},
		{"unreadable", func(path string) error { return os.Mkdir(path, 0o700) }}, // a directory in its place
		{"gone", func(string) error { return nil }},
		{"no certificate", func(path string) error { return os.WriteFile(path, []byte("not a certificate"), 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ca.crt")
			if err := tc.place(path); err != nil {
				t.Fatal(err)
			}
			called := make(chan struct{}, 1)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				followCABundle(ctx, path, was, time.Millisecond, func() { called <- struct{}{} })
			}()
			time.Sleep(50 * time.Millisecond)
			cancel()
			<-done
			if len(called) != 0 {
				t.Fatal("the archiver would start again")
			}
		})
	}
}
