package main

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// The archiver restarts once its CA bundle holds other certificates; an unchanged bundle, and
// one that cannot be read, is gone or holds no certificate, do not restart it.
func TestFollowCABundle(t *testing.T) {
	oldCA, newCA := otherCA(t), otherCA(t)
	for _, tc := range []struct {
		name   string
		change func(path string) error
	}{
		{"rotated", func(path string) error { return os.WriteFile(path, newCA, 0o600) }},
		{"rewritten whole", func(path string) error {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, newCA, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ca.crt")
			if err := os.WriteFile(path, oldCA, 0o600); err != nil {
				t.Fatal(err)
			}
			var changedYet atomic.Bool
			called := make(chan bool, 2)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				followCABundle(ctx, path, oldCA, time.Millisecond, func() { called <- changedYet.Load() })
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
				followCABundle(ctx, path, oldCA, time.Millisecond, func() { called <- struct{}{} })
			}()
			time.Sleep(50 * time.Millisecond)
			cancel()
			<-done
			if len(called) != 0 {
				t.Fatal("a bundle that could not be read restarted the archiver")
			}
		})
	}
}
