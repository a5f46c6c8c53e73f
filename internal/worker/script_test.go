package worker

import (
	"os"
	"path/filepath"
	"slipway/internal/workport"
	"strings"
	"testing"
)

// writeScratch lays out a script run: the source and input side by side,
// the files under their relative paths, an empty working directory; a path
// that leaves the files directory is refused.
func TestWriteScratch(t *testing.T) {
	root := t.TempDir()
	src, files, lib, work := filepath.Join(root, "script"), filepath.Join(root, "files"), filepath.Join(root, "lib"), filepath.Join(root, "work")
	a := &workport.ScriptWork{Source: "echo hi", Input: []byte(`{"a":1}`), Files: []workport.ScriptFile{{Path: "lib/util.sh", Content: []byte("x=1")}, {Path: "data.json", Content: []byte("{}")}},
		Library: []workport.ScriptFile{{Path: "util.sh", Content: []byte("greet() { echo hi; }")}, {Path: "py/helpers/fmt.py", Content: []byte("def f(): pass")}}}
	if err := writeScratch(src, files, lib, work, "main.sh", a); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"script/main.sh": "echo hi", "script/input.json": `{"a":1}`, "files/lib/util.sh": "x=1", "files/data.json": "{}",
		"lib/util.sh": "greet() { echo hi; }", "lib/py/helpers/fmt.py": "def f(): pass"} {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil || string(got) != want {
			t.Fatalf("%s = %q, %v", path, got, err)
		}
	}
	if entries, err := os.ReadDir(work); err != nil || len(entries) != 0 {
		t.Fatalf("work dir: %v %v", entries, err)
	}
	for _, bad := range []string{"../escape", "/etc/passwd", "a/../../b"} {
		err := writeScratch(src, files, lib, work, "main.sh", &workport.ScriptWork{Files: []workport.ScriptFile{{Path: bad}}})
		if err == nil || !strings.Contains(err.Error(), "leaves the files directory") {
			t.Fatalf("path %q: %v", bad, err)
		}
		err = writeScratch(src, files, lib, work, "main.sh", &workport.ScriptWork{Library: []workport.ScriptFile{{Path: bad}}})
		if err == nil || !strings.Contains(err.Error(), "leaves the library directory") {
			t.Fatalf("library path %q: %v", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); !os.IsNotExist(err) {
		t.Fatalf("a file was written outside: %v", err)
	}
	// No input is JSON null, not an empty file; no library is an empty
	// directory (still mounted, so $SLIPWAY_LIB always exists).
	empty := t.TempDir()
	src, files, lib, work = filepath.Join(empty, "script"), filepath.Join(empty, "files"), filepath.Join(empty, "lib"), filepath.Join(empty, "work")
	if err := writeScratch(src, files, lib, work, "main.sh", &workport.ScriptWork{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(src, "input.json")); string(got) != "null" {
		t.Fatalf("empty input = %q", got)
	}
	for _, d := range []string{files, lib} {
		if entries, err := os.ReadDir(d); err != nil || len(entries) != 0 {
			t.Fatalf("%s: %v %v", d, entries, err)
		}
	}
}
