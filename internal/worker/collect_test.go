package worker

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"slipway/internal/workport"
)

// collect brings back the regular files of the output directory within
// its bounds, and refuses what would carry the worker's machine along or
// pass them.
func TestCollect(t *testing.T) {
	limits := workport.Collect{Dir: "dist", MaxFiles: 3, MaxFileBytes: 10, MaxTotalBytes: 15}
	layout := func(t *testing.T, files map[string]string) string {
		t.Helper()
		work := t.TempDir()
		for p, c := range files {
			full := filepath.Join(work, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return work
	}
	work := layout(t, map[string]string{"dist/index.html": "hi", "dist/js/a.js": "1", "src/x": "not collected"})
	got, err := collect(work, &limits)
	if err != nil || len(got) != 2 || got[0].Path != "index.html" || string(got[0].Content) != "hi" || got[1].Path != "js/a.js" {
		t.Fatalf("collected %+v, %v", got, err)
	}

	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, work string)
		dir   string
		want  string
	}{
		{"too many files", func(t *testing.T, w string) {
			for _, n := range []string{"a", "b", "c", "d"} {
				os.WriteFile(filepath.Join(w, "dist", n), []byte("x"), 0o644)
			}
		}, "dist", "more than 3 files"},
		{"a file too large", func(t *testing.T, w string) {
			os.WriteFile(filepath.Join(w, "dist", "big"), []byte("0123456789x"), 0o644)
		}, "dist", "larger than 10 bytes"},
		{"too large together", func(t *testing.T, w string) {
			os.WriteFile(filepath.Join(w, "dist", "a"), []byte("0123456789"), 0o644)
			os.WriteFile(filepath.Join(w, "dist", "b"), []byte("0123456789"), 0o644)
		}, "dist", "more than 15 bytes"},
		{"a symlink to a file outside", func(t *testing.T, w string) { os.Symlink(secret, filepath.Join(w, "dist", "leak")) }, "dist", "not a regular file"},
		{"a symlink to a directory outside", func(t *testing.T, w string) { os.Symlink(filepath.Dir(secret), filepath.Join(w, "dist", "dir")) }, "dist", "not a regular file"},
		{"the output a symlink", func(t *testing.T, w string) { os.Symlink(filepath.Dir(secret), filepath.Join(w, "out")) }, "out", "left no directory"},
		{"a FIFO", func(t *testing.T, w string) { syscall.Mkfifo(filepath.Join(w, "dist", "pipe"), 0o644) }, "dist", "not a regular file"},
		{"a directory out of the work", func(t *testing.T, w string) {}, "../x", "leaves the working directory"},
		{"no directory", func(t *testing.T, w string) {}, "missing", "left no directory missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := layout(t, map[string]string{"dist/index.html": "hi"})
			c.setup(t, w)
			l := limits
			l.Dir = c.dir
			got, err := collect(w, &l)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("want an error with %q, got %+v, %v", c.want, got, err)
			}
		})
	}
}
