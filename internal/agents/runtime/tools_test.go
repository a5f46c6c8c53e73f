package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway/internal/agents/protocol"
)

// testToolbox makes base/ws with a.txt, sub/b.txt and symbolic links in and
// out, and base/secret.txt outside it.
func testToolbox(t *testing.T) (*toolbox, string, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "sub", "b.txt"), []byte("bee\n"), 0o644))
	must(os.WriteFile(filepath.Join(base, "secret.txt"), []byte("top secret\n"), 0o644))
	must(os.Symlink("sub", filepath.Join(ws, "in")))                              // stays inside
	must(os.Symlink("..", filepath.Join(ws, "up")))                               // the parent
	must(os.Symlink("../secret.txt", filepath.Join(ws, "outfile")))               // a file outside
	must(os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(ws, "abs"))) // absolute
	w, err := openWorkspace(ws)
	must(err)
	t.Cleanup(w.close)
	return &toolbox{ws: w, env: []string{"PATH=" + defaultPath}}, ws, base
}

func callTool(t *testing.T, tb *toolbox, name string, args any) toolOutcome {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tb.call(context.Background(), name, b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

type m = map[string]any

func TestPathConfinement(t *testing.T) {
	tb, ws, base := testToolbox(t)
	tests := []struct {
		path   string
		ok     bool
		refuse string
	}{
		{path: "a.txt", ok: true},
		{path: "./sub/../a.txt", ok: true},
		{path: filepath.Join(ws, "a.txt"), ok: true},
		{path: "in/b.txt", ok: true},
		{path: "../secret.txt", refuse: "escapes the workspace"},
		{path: "sub/../../secret.txt", refuse: "escapes the workspace"},
		{path: filepath.Join(base, "secret.txt"), refuse: "outside the workspace"},
		{path: "/nonexistent-slipway-test/x.txt", refuse: "outside the workspace"},
		{path: "outfile", refuse: "through a symbolic link"},
		{path: "up/secret.txt", refuse: "through a symbolic link"},
		{path: "abs", refuse: "through a symbolic link"},
		{path: "", refuse: "path is required"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			for _, tool := range []struct {
				name string
				args m
			}{
				{toolReadFile, m{"path": tc.path}},
				{toolEditFile, m{"path": tc.path, "old_string": "never there", "new_string": "x"}},
				{toolWriteFile, m{"path": tc.path, "content": "planted"}},
				{toolListDir, m{"path": tc.path}},
			} {
				if tc.path == "" && tool.name == toolListDir {
					continue // "" lists the workspace
				}
				out := callTool(t, tb, tool.name, tool.args)
				if tc.ok {
					if strings.Contains(out.output, "workspace") {
						t.Errorf("%s %q refused: %s", tool.name, tc.path, out.output)
					}
					continue
				}
				if out.ok || !strings.Contains(out.output, tc.refuse) {
					t.Errorf("%s %q: ok=%v %q, want a refusal saying %q", tool.name, tc.path, out.ok, out.output, tc.refuse)
				}
				if strings.Contains(out.output, "top secret") {
					t.Errorf("%s %q leaked the secret", tool.name, tc.path)
				}
			}
		})
	}
	if data, _ := os.ReadFile(filepath.Join(base, "secret.txt")); string(data) != "top secret\n" {
		t.Errorf("the file outside was changed: %q", data)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 2 {
		t.Errorf("a file was written outside the workspace: %v", entries)
	}
}

func TestEditFile(t *testing.T) {
	tests := []struct {
		name     string
		args     m
		ok       bool
		output   string
		contents string
	}{
		{name: "unique", args: m{"path": "a.txt", "old_string": "two\n", "new_string": "2\n"}, ok: true, output: "edited a.txt", contents: "one\n2\nthree\n"},
		{name: "not found", args: m{"path": "a.txt", "old_string": "four", "new_string": "4"}, output: "old_string not found in a.txt"},
		{name: "not unique", args: m{"path": "a.txt", "old_string": "e", "new_string": "E"}, output: "old_string occurs 3 times in a.txt"},
		{name: "empty old_string", args: m{"path": "a.txt", "old_string": "", "new_string": "x"}, output: "must not be empty"},
		{name: "no change", args: m{"path": "a.txt", "old_string": "one", "new_string": "one"}, output: "the same"},
		{name: "missing file", args: m{"path": "nope.txt", "old_string": "a", "new_string": "b"}, output: "nope.txt: no such file"},
		{name: "directory", args: m{"path": "sub", "old_string": "a", "new_string": "b"}, output: "is a directory"},
		{name: "wrong argument type", args: m{"path": 7, "old_string": "a", "new_string": "b"}, output: "invalid arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, ws, _ := testToolbox(t)
			out := callTool(t, tb, toolEditFile, tc.args)
			if out.ok != tc.ok || !strings.Contains(out.output, tc.output) {
				t.Errorf("ok=%v %q, want ok=%v containing %q", out.ok, out.output, tc.ok, tc.output)
			}
			data, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
			want := tc.contents
			if want == "" {
				want = "one\ntwo\nthree\n"
			}
			if string(data) != want {
				t.Errorf("a.txt is %q, want %q", data, want)
			}
		})
	}
}

func TestFileTools(t *testing.T) {
	tb, ws, _ := testToolbox(t)
	tests := []struct {
		name   string
		tool   string
		args   m
		ok     bool
		output string // exact, or a prefix when it ends with "…"
	}{
		{name: "read", tool: toolReadFile, args: m{"path": "a.txt"}, ok: true, output: "one\ntwo\nthree\n"},
		{name: "read lines", tool: toolReadFile, args: m{"path": "a.txt", "start_line": 2, "end_line": 3}, ok: true, output: "two\nthree\n"},
		{name: "read from a line", tool: toolReadFile, args: m{"path": "a.txt", "start_line": 3}, ok: true, output: "three\n"},
		{name: "read past the end", tool: toolReadFile, args: m{"path": "a.txt", "start_line": 9}, output: "a.txt has 3 lines; start_line 9 is past the end"},
		{name: "read a directory", tool: toolReadFile, args: m{"path": "sub"}, output: "sub is a directory; use list_dir"},
		{name: "read a missing file", tool: toolReadFile, args: m{"path": "missing.go"}, output: "missing.go: no such file or directory"},
		{name: "list the workspace", tool: toolListDir, args: m{}, ok: true, output: "a.txt\nabs@\nin@\noutfile@\nsub/\nup@\n"},
		{name: "list through a link inside", tool: toolListDir, args: m{"path": "in"}, ok: true, output: "b.txt\n"},
		{name: "write a new file in new dirs", tool: toolWriteFile, args: m{"path": "x/y/z.txt", "content": "zed"}, ok: true, output: "wrote 3 bytes to x/y/z.txt"},
		{name: "read it back", tool: toolReadFile, args: m{"path": "x/y/z.txt"}, ok: true, output: "zed"},
		{name: "write without content", tool: toolWriteFile, args: m{"path": "c.txt"}, output: "content is required"},
		{name: "write over a directory", tool: toolWriteFile, args: m{"path": "sub", "content": ""}, output: "sub is a directory"},
		{name: "finish", tool: toolFinish, args: m{"summary": "all good"}, ok: true, output: "all good"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := callTool(t, tb, tc.tool, tc.args)
			if out.ok != tc.ok || out.output != tc.output {
				t.Errorf("ok=%v %q, want ok=%v %q", out.ok, out.output, tc.ok, tc.output)
			}
		})
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "x", "y", "z.txt")); string(data) != "zed" {
		t.Errorf("z.txt is %q", data)
	}
}

func TestReadFileBounds(t *testing.T) {
	tb, ws, _ := testToolbox(t)
	os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("0123456789\n", 10_000)), 0o644)
	os.WriteFile(filepath.Join(ws, "bin"), []byte("ELF\x00\x01"), 0o644)
	out := callTool(t, tb, toolReadFile, m{"path": "big.txt"})
	if !out.ok || len(out.output) > toolOutputLimit+200 || !strings.Contains(out.output, "[truncated: showing the first") {
		t.Errorf("big file: ok=%v, %d bytes, tail %q", out.ok, len(out.output), out.output[len(out.output)-100:])
	}
	if out := callTool(t, tb, toolReadFile, m{"path": "bin"}); out.ok || !strings.Contains(out.output, "looks binary") {
		t.Errorf("binary file: %+v", out)
	}
}

func TestBashTool(t *testing.T) {
	tb, ws, _ := testToolbox(t)
	tests := []struct {
		name    string
		args    m
		ok      bool
		has     []string
		maxSize int
	}{
		{name: "output and exit code", args: m{"command": "cat a.txt; echo err >&2"}, ok: true, has: []string{"one\ntwo\nthree\nerr\n[exit code 0]"}},
		{name: "failure", args: m{"command": "ls does-not-exist"}, has: []string{"does-not-exist", "[exit code "}},
		{name: "exit code", args: m{"command": "exit 5"}, has: []string{"(no output)\n[exit code 5]"}},
		{name: "bounded output", args: m{"command": "i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done"}, ok: true,
			has: []string{"line 0\n", "bytes of output omitted", "line 19999\n[exit code 0]"}, maxSize: toolOutputLimit + 200},
		{name: "timeout", args: m{"command": "echo before; sleep 1000", "timeout_seconds": 1}, has: []string{"before\n", "timed out after 1s"}},
		{name: "empty", args: m{"command": " "}, has: []string{"command is required"}},
		{name: "no stdin", args: m{"command": "cat; echo read-nothing"}, ok: true, has: []string{"read-nothing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := callTool(t, tb, toolBash, tc.args)
			if out.ok != tc.ok {
				t.Errorf("ok=%v, want %v: %q", out.ok, tc.ok, out.output)
			}
			for _, s := range tc.has {
				if !strings.Contains(out.output, s) {
					t.Errorf("output %q lacks %q", truncate(out.output, 2000), s)
				}
			}
			if tc.maxSize > 0 && len(out.output) > tc.maxSize {
				t.Errorf("output is %d bytes, bound %d", len(out.output), tc.maxSize)
			}
		})
	}
	_ = ws
}

func TestToolArguments(t *testing.T) {
	tests := []struct {
		raw, want, err string
	}{
		{raw: `"{\"path\": \"a\"}"`, want: `{"path":"a"}`},
		{raw: `{"path": "a"}`, want: `{"path":"a"}`},
		{raw: `""`, want: `{}`},
		{raw: ``, want: `{}`},
		{raw: `null`, want: `{}`},
		{raw: `"{\"path\": "`, err: "not valid JSON"},
		{raw: `"[1]"`, err: "not a JSON object"},
		{raw: `"42"`, err: "not a JSON object"},
	}
	for _, tc := range tests {
		got, err := toolArguments(json.RawMessage(tc.raw))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.raw, got, err, tc.want)
		}
	}
}

func TestMessageText(t *testing.T) {
	tests := map[string]string{
		`"hi"`: "hi",
		`null`: "",
		``:     "",
		`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`: "ab",
	}
	for raw, want := range tests {
		if got := messageText(json.RawMessage(raw)); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}

// TestScrubbedEnvKeepsTheRunsEnvVars: credential-looking names of the
// container's environment are dropped, except the run's own env vars; a
// value holding the API key is dropped whatever its name.
func TestScrubbedEnvKeepsTheRunsEnvVars(t *testing.T) {
	environ := []string{"PATH=/bin", "DEPLOY_TOKEN=d1", "AWS_SECRET_ACCESS_KEY=a1", "GREETING=hi", "LEAK=key-123"}
	got := scrubbedEnv(environ, protocol.Start{WorkDir: "/w", APIKey: "key-123", EnvKeys: []string{"DEPLOY_TOKEN", "GREETING", "LEAK"}})
	want := []string{"PATH=/bin", "DEPLOY_TOKEN=d1", "GREETING=hi", "PWD=/w"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("scrubbed %v, want %v", got, want)
	}
}
