package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// writeArchive writes the tree under dir (regular files, directories, symbolic links, with
// their modes and owners) to a tar archive at out.
func writeArchive(dir, out string) (err error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := archiveTree(dir, f); err != nil {
		return err
	}
	return f.Sync()
}

func archiveTree(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The root itself too (as "."): its owner and mode are the volume's (the kubelet gives
		// it the pod's fsGroup).
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() && link == "" {
			return nil // sockets, FIFOs, devices: not volume data
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = src.Close() }()
		// A file that grows while it is archived is cut at its size in the header.
		_, err = io.CopyN(tw, src, h.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// extractArchive unpacks the tar archive at in into dir, keeping modes, owners and times.
func extractArchive(in, dir string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return extractTree(f, dir)
}

func extractTree(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	type dirTime struct {
		path string
		t    time.Time
	}
	var dirs []dirTime
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q leaves the volume", h.Name)
		}
		path := filepath.Join(dir, name)
		mode := fs.FileMode(h.Mode).Perm() | fs.FileMode(h.Mode)&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirTime{path, h.ModTime})
		case tar.TypeReg:
			out, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.CopyN(out, tr, h.Size); err != nil {
				_ = out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
			if err := os.Lchown(path, h.Uid, h.Gid); err != nil {
				return err
			}
			continue
		default:
			continue
		}
		if err := os.Lchown(path, h.Uid, h.Gid); err != nil && !errors.Is(err, syscall.EPERM) {
			return err
		}
		// After the owner: chown clears the set-user-ID and set-group-ID bits.
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if err := os.Chtimes(path, h.ModTime, h.ModTime); err != nil {
				return err
			}
		}
	}
	// Directories' times last: creating their entries changed them.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].t, dirs[i].t); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the tree under src into dst (which exists), through a tar stream.
func copyTree(src, dst string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(archiveTree(src, pw)) }()
	err := extractTree(pr, dst)
	_ = pr.CloseWithError(err)
	return err
}
