package treecopy

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func archive(t *testing.T, entries ...tar.Header) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range entries {
		h := h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Linkname))
			body := h.Linkname
			h.Linkname = ""
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
			tw.Write([]byte(body))
			continue
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return &b
}

// TestExtractRefusesEscapes: what comes back from an agent's host is
// untrusted: absolute names, "..", and writes through a link it made are
// refused, and nothing lands outside the tree.
func TestExtractRefusesEscapes(t *testing.T) {
	outside := t.TempDir()
	for _, c := range []struct {
		name    string
		entries []tar.Header
	}{
		{"dot-dot", []tar.Header{{Typeflag: tar.TypeReg, Name: "../escaped", Mode: 0o644, Linkname: "x"}}},
		{"nested dot-dot", []tar.Header{{Typeflag: tar.TypeReg, Name: "a/../../escaped", Mode: 0o644, Linkname: "x"}}},
		{"absolute", []tar.Header{{Typeflag: tar.TypeReg, Name: filepath.Join(outside, "escaped"), Mode: 0o644, Linkname: "x"}}},
		{"through a link", []tar.Header{{Typeflag: tar.TypeSymlink, Name: "link", Linkname: outside},
			{Typeflag: tar.TypeReg, Name: "link/escaped", Mode: 0o644, Linkname: "x"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "in")
			if err := Extract(archive(t, c.entries...), dst, ""); err == nil {
				t.Fatal("an escaping archive was accepted")
			}
			if _, err := os.Stat(filepath.Join(outside, "escaped")); !os.IsNotExist(err) {
				t.Fatalf("a file landed outside the tree: %v", err)
			}
		})
	}
}

// TestRoundTrip: a tree with modes, a subdirectory and a link survives
// Tar, Extract and Replace, which keeps the named entries and drops what
// the new tree no longer has.
func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "a.txt"), []byte("a"), 0o600)
	os.Symlink("sub/a.txt", filepath.Join(src, "link"))
	var b bytes.Buffer
	if err := TarAs(&b, src, "d", 1000, 1000); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	tr := tar.NewReader(bytes.NewReader(b.Bytes()))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Uid != 1000 || h.Gid != 1000 {
			t.Fatalf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		names = append(names, h.Name)
	}
	if names[0] != "d/" || !strings.Contains(strings.Join(names, ","), "d/sub/a.txt") {
		t.Fatalf("entries %v", names)
	}
	in := filepath.Join(t.TempDir(), "in")
	if err := Extract(&b, in, "d"); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, ".git"), []byte("gitdir: x"), 0o644)
	os.WriteFile(filepath.Join(dst, "stale.txt"), []byte("old"), 0o644)
	if err := Replace(dst, in, ".git"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dst, "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("run.sh: %v %v", st, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "link")); string(got) != "a" {
		t.Fatalf("the link reads %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, ".git")); string(got) != "gitdir: x" {
		t.Fatal("the kept .git changed")
	}
	if _, err := os.Stat(filepath.Join(dst, "stale.txt")); !os.IsNotExist(err) {
		t.Fatal("an entry the new tree lacks survived")
	}
	if _, err := os.Stat(in); !os.IsNotExist(err) {
		t.Fatal("the incoming tree was not consumed")
	}
}

// FuzzExtract: whatever tar stream comes back from an agent's host,
// extracting it never panics and never creates anything outside its
// directory.
func FuzzExtract(f *testing.F) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o755})
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "d/f", Mode: 0o644, Size: 2})
	tw.Write([]byte("hi"))
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc"})
	tw.Close()
	f.Add(b.Bytes())
	f.Add([]byte{})
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		parent, err := os.MkdirTemp(root, "x")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(parent)
		dst := filepath.Join(parent, "in")
		_ = Extract(bytes.NewReader(data), dst, "")
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "in" {
				t.Fatalf("extraction created %q beside its directory", e.Name())
			}
		}
	})
}
