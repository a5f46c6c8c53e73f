// Package treecopy moves a directory tree (or one file) to where an agent
// runs and back, as a tar stream: for backends whose agents do not share
// the runner's filesystem (a remote Docker engine, a host reached by SSH).
// What comes back is untrusted: it is unpacked confined to its directory
// (os.Root: no absolute paths, no "..", no writing through symlinks) and
// only then put in place of the old tree.
package treecopy

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Tar writes src as a tar stream: a directory's contents relative to it,
// or a single file under its base name; every entry is owned by root.
func Tar(w io.Writer, src string) error { return TarAs(w, src, "", 0, 0) }

// TarAs is Tar with every entry owned by uid:gid (who will use the copy)
// and, when root is not "", a directory's tree under that name (its first
// entry, carrying the directory's mode: a receiver that skips "." still
// gives the tree's root its mode and owner).
func TarAs(w io.Writer, src, root string, uid, gid int) error {
	tw := &owned{Writer: tar.NewWriter(w), uid: uid, gid: gid}
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		if err := addFile(tw, src, filepath.Base(src), st); err != nil {
			return err
		}
		return tw.Close()
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			// The root itself, so that the receiving directory takes its
			// mode (an agent running as another user must be able to
			// create files in its workspace).
			name := "./"
			if root != "" {
				name = root + "/"
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: int64(st.Mode().Perm()), ModTime: st.ModTime()})
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if root != "" {
			name = root + "/" + name
		}
		return addFile(tw, p, name, info)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// owned stamps every header with the copy's owner.
type owned struct {
	*tar.Writer
	uid, gid int
}

func (o *owned) WriteHeader(h *tar.Header) error {
	h.Uid, h.Gid, h.Uname, h.Gname = o.uid, o.gid, "", ""
	return o.Writer.WriteHeader(h)
}

func addFile(tw *owned, p, name string, info fs.FileInfo) error {
	link := ""
	if info.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	}
	h, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return err
	}
	h.Name = name
	if info.IsDir() {
		h.Name += "/"
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

// MaxSize bounds what Extract unpacks (a runaway agent cannot fill the
// runner's disk through it).
const MaxSize = 8 << 30

// Extract unpacks a tar stream into dir (created if missing), confined to
// it. strip removes a leading path element every name carries (Docker's
// archives of a directory start with its base name); "" strips nothing.
func Extract(r io.Reader, dir, strip string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if strip != "" {
			if name == strip {
				continue
			}
			name = strings.TrimPrefix(name, strip+"/")
		}
		if name == "." || name == "" {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("treecopy: %q leaves the tree", h.Name)
		}
		if sparse(h) {
			// A sparse entry's holes read as zeros: a small archive could
			// unpack to gigabytes. Worktrees have no need of them.
			return fmt.Errorf("treecopy: %q is a sparse file", h.Name)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			f, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o200)
			if err != nil {
				return err
			}
			// What is written is counted, not what the header claims.
			n, err := io.Copy(f, io.LimitReader(tr, MaxSize-total+1))
			total += n
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil && total > MaxSize {
				err = fmt.Errorf("treecopy: more than %d bytes", MaxSize)
			}
			if err != nil {
				return err
			}
			if err := root.Chmod(name, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			// The link is kept as it is (git records it as a link); writes
			// through it are what os.Root refuses.
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		default:
			// Devices, fifos and hard links have no place in a worktree.
		}
	}
}

// sparse reports a sparse entry (GNU's type, or the PAX sparse records).
func sparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// Replace puts the tree in src in place of dst's contents, keeping dst's
// entries named in keep (a worktree's .git link). src is consumed.
func Replace(dst, src string, keep ...string) error {
	old, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	for _, e := range old {
		if contains(keep, e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	fresh, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range fresh {
		if contains(keep, e.Name()) {
			continue
		}
		if err := os.Rename(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return os.RemoveAll(src)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
