package codefiles_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/codefiles"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// These tests drive the real server over HTTP on both engines.

type obj = map[string]any

var (
	infoKeys = []string{"path", "size", "sha256", "created_at", "updated_at"}
	fileKeys = []string{"path", "size", "sha256", "content", "created_at", "updated_at"}
)

const libFiles = "/api/code-lib/files"

func nodeFiles(workflowID, key string) string {
	return "/api/workflows/" + workflowID + "/nodes/" + key + "/files"
}

func withPath(base, p string) string { return base + "?path=" + url.QueryEscape(p) }

// workflow creates a workflow whose code node c runs source and whose end
// node e answers c's result.
func workflow(t *testing.T, f *fixture.API, c *apitest.Client, source string) string {
	t.Helper()
	r := c.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, c, "P "+ids.New()), "name": "with files",
		"nodes": []obj{{"key": "c", "kind": "code", "config": obj{"language": "sh", "source": source}},
			{"key": "e", "kind": "end", "config": obj{"output": "nodes.c.output.result"}}},
		"edges": []obj{{"source": "c", "target": "e"}}})
	fixture.Want(t, r, http.StatusCreated)
	return r.Map(t)["id"].(string)
}

func put(t *testing.T, c *apitest.Client, base, p, content string) codefiles.FileInfo {
	t.Helper()
	r := c.Do("PUT", base, obj{"path": p, "content": content})
	fixture.Want(t, r, http.StatusOK)
	if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, infoKeys) {
		t.Fatalf("PUT answer keys = %v, want %v", keys, infoKeys)
	}
	var fi codefiles.FileInfo
	r.JSON(t, &fi)
	return fi
}

func list(t *testing.T, c *apitest.Client, base string) []codefiles.FileInfo {
	t.Helper()
	r := c.Do("GET", base, nil)
	fixture.Want(t, r, http.StatusOK)
	for _, keys := range fixture.ElementKeys(t, r.Body) {
		if !slices.Equal(keys, infoKeys) {
			t.Fatalf("list row keys = %v, want %v", keys, infoKeys)
		}
	}
	var out []codefiles.FileInfo
	r.JSON(t, &out)
	return out
}

func paths(fs []codefiles.FileInfo) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

func get(t *testing.T, c *apitest.Client, base, p string) codefiles.File {
	t.Helper()
	r := c.Do("GET", withPath(base, p), nil)
	fixture.Want(t, r, http.StatusOK)
	if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, fileKeys) {
		t.Fatalf("file keys = %v, want %v", keys, fileKeys)
	}
	var f codefiles.File
	r.JSON(t, &f)
	if etag := r.Header.Get("ETag"); etag != `"`+f.SHA256+`"` {
		t.Fatalf("ETag = %q, want the quoted sha256 %s", etag, f.SHA256)
	}
	return f
}

func del(t *testing.T, c *apitest.Client, base, p string) bool {
	t.Helper()
	r := c.Do("DELETE", withPath(base, p), nil)
	fixture.Want(t, r, http.StatusOK)
	if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, []string{"deleted"}) {
		t.Fatalf("delete answer %s", r.Body)
	}
	return r.Map(t)["deleted"].(bool)
}

// wantError checks an error answer: status, code and message fragments.
func wantError(t *testing.T, r *apitest.Response, status int, code string, fragments ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var e struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code != code || e.Error == "" {
		t.Fatalf("error body = %s, want code %s", r.Body, code)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Error, f) {
			t.Errorf("error %q does not name %q", e.Error, f)
		}
	}
}

// Both sets (the library and a code node's files) behave alike: create,
// replace, read, list by path, delete; paths are normalised.
func TestCodeFilesCRUD(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		wf := workflow(t, f, owner, "true")
		for _, base := range []string{libFiles, nodeFiles(wf, "c")} {
			t.Run(base, func(t *testing.T) {
				if got := list(t, owner, base); len(got) != 0 {
					t.Fatalf("a new set lists %v", got)
				}
				content := "greet() {\n\techo \"hello $1\" \x1b[1m é\n}\n"
				a := put(t, owner, base, "  lib//util.sh ", content)
				if a.Path != "lib/util.sh" || a.Size != int64(len(content)) || len(a.SHA256) != 64 || !a.CreatedAt.Equal(a.UpdatedAt) ||
					!strings.HasSuffix(a.CreatedAt.Format(time.RFC3339Nano), "Z") {
					t.Fatalf("created %+v", a)
				}
				put(t, owner, base, "Zeta.txt", "z")
				put(t, owner, base, ".env", "")
				put(t, owner, base, "data/x.txt", "42\n")
				if got, want := paths(list(t, owner, base)), []string{".env", "Zeta.txt", "data/x.txt", "lib/util.sh"}; !slices.Equal(got, want) {
					t.Fatalf("list = %v, want %v (by path, byte order)", got, want)
				}
				got := get(t, owner, base, "./lib/util.sh")
				if got.Content != content || got.SHA256 != a.SHA256 || got.Path != "lib/util.sh" {
					t.Fatalf("GET = %+v", got)
				}
				if empty := get(t, owner, base, ".env"); empty.Content != "" || empty.Size != 0 {
					t.Fatalf("empty file = %+v", empty)
				}

				// The same content changes nothing; new content replaces it and
				// keeps created_at.
				if same := put(t, owner, base, "lib/util.sh", content); !same.UpdatedAt.Equal(a.UpdatedAt) {
					t.Fatalf("an unchanged put moved updated_at: %+v", same)
				}
				b := put(t, owner, base, "lib/util.sh", "greet() { :; }\n")
				if b.SHA256 == a.SHA256 || !b.CreatedAt.Equal(a.CreatedAt) || b.Size != 15 {
					t.Fatalf("replaced %+v (was %+v)", b, a)
				}
				if n := len(list(t, owner, base)); n != 4 {
					t.Fatalf("a replace added a file: %d", n)
				}

				// If-Match: the sha256 the file has now.
				wantError(t, owner.Do("PUT", base, obj{"path": "lib/util.sh", "content": "x"}, "If-Match", `"`+a.SHA256+`"`),
					http.StatusPreconditionFailed, "precondition_failed")
				wantError(t, owner.Do("PUT", base, obj{"path": "new.txt", "content": "x"}, "If-Match", "*"),
					http.StatusPreconditionFailed, "precondition_failed")
				fixture.Want(t, owner.Do("PUT", base, obj{"path": "lib/util.sh", "content": "x"}, "If-Match", `"`+b.SHA256+`"`), http.StatusOK)

				// A file cannot be a directory, nor a directory a file.
				wantError(t, owner.Do("PUT", base, obj{"path": "data/x.txt/y", "content": ""}), http.StatusBadRequest, "bad_request",
					"data/x.txt is a file")
				wantError(t, owner.Do("PUT", base, obj{"path": "lib", "content": ""}), http.StatusBadRequest, "bad_request",
					"lib is a directory")

				// Missing files.
				wantError(t, owner.Do("GET", withPath(base, "nothing.txt"), nil), http.StatusNotFound, "not_found", "code file not found")
				if del(t, owner, base, "nothing.txt") {
					t.Fatal("deleting a missing file said deleted")
				}
				if !del(t, owner, base, "lib//util.sh") {
					t.Fatal("delete said not deleted")
				}
				wantError(t, owner.Do("GET", withPath(base, "lib/util.sh"), nil), http.StatusNotFound, "not_found")
				if got, want := paths(list(t, owner, base)), []string{".env", "Zeta.txt", "data/x.txt"}; !slices.Equal(got, want) {
					t.Fatalf("after delete: %v", got)
				}
				// The directory is free again for a file.
				put(t, owner, base, "lib", "now a file")
				wantError(t, owner.Do("DELETE", base, nil), http.StatusBadRequest, "bad_request", "path")
			})
		}
		// The sets are separate: the library and the node hold their own
		// data/x.txt, and another node key of the workflow has none.
		if n := f.App.Count(t, "SELECT COUNT(*) FROM code_files WHERE path = 'data/x.txt'"); n != 2 {
			t.Fatalf("data/x.txt rows = %d, want 2", n)
		}
	})
}

// Every path rule answers 400 naming the problem, for writes and reads of
// both sets.
func TestCodeFilesBadPaths(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		wf := workflow(t, f, owner, "true")
		bad := []struct{ path, want string }{
			{"", "path must not be empty"},
			{"   ", "path must not be empty"},
			{"/etc/passwd", "relative"},
			{"../escape", ".. segment"},
			{"a/../../b", ".. segment"},
			{"a/../b", ".. segment"},
			{"..", ".. segment"},
			{`dir\file`, `not \`},
			{"tab\tname", "control"},
			{"line\nbreak", "control"},
			{"esc\x1b[2J", "control"},
			{"rtl\u202eevil", "control"},
			{".", "name a file"},
			{strings.Repeat("a", 256), "at most 255 bytes"},
			{strings.Repeat("é", 128), "at most 255 bytes"},
			{"1/2/3/4/5/6/7/8/9", "at most 8 segments"},
		}
		for _, base := range []string{libFiles, nodeFiles(wf, "c")} {
			for _, b := range bad {
				t.Run(fmt.Sprintf("%s %q", base, b.path), func(t *testing.T) {
					wantError(t, owner.Do("PUT", base, obj{"path": b.path, "content": "x"}), http.StatusBadRequest, "bad_request", b.want)
					if b.path != "" { // an empty ?path= lists
						wantError(t, owner.Do("GET", withPath(base, b.path), nil), http.StatusBadRequest, "bad_request", b.want)
					}
					want := b.want
					if b.path == "" {
						want = "query.path: required" // DELETE needs one
					}
					wantError(t, owner.Do("DELETE", withPath(base, b.path), nil), http.StatusBadRequest, "bad_request", want)
				})
			}
			// NUL: the body's JSON is refused as a whole, a query names it.
			wantError(t, owner.Do("PUT", base, `{"path": "a\u0000b", "content": "x"}`), http.StatusBadRequest, "bad_request")
			wantError(t, owner.Do("GET", base+"?path=a%00b", nil), http.StatusBadRequest, "bad_request", "NUL")
			wantError(t, owner.Do("GET", base+"?path=a%FFb", nil), http.StatusBadRequest, "bad_request", "UTF-8")
			wantError(t, owner.Do("PUT", base, `{"path": "a", "content": "x\u0000y"}`), http.StatusBadRequest, "bad_request")
			wantError(t, owner.Do("PUT", base, obj{"path": "a", "content": "x", "mode": "0755"}), http.StatusBadRequest, "bad_request")
			wantError(t, owner.Do("PUT", base, obj{"path": "a"}), http.StatusBadRequest, "bad_request", "content")
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM code_files"); n != 0 {
			t.Fatalf("%d files were stored", n)
		}
	})
}

// Node files belong to a code node of a workflow of the workspace: an
// unknown (or foreign) workflow is 404, a key that is no code node 400;
// a key that lost its code node keeps its files readable and deletable,
// not writable; deleting the workflow deletes its files.
func TestCodeFilesNodes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		wf := workflow(t, f, owner, "true")
		other := workflow(t, f, owner, "true")
		put(t, owner, nodeFiles(wf, "c"), "a.txt", "a")
		put(t, owner, nodeFiles(wf, "c"), "b.txt", "b")
		put(t, owner, nodeFiles(other, "c"), "a.txt", "other")
		put(t, owner, libFiles, "a.txt", "library")

		for _, method := range []string{"GET", "PUT", "DELETE"} {
			var body any
			if method == "PUT" {
				body = obj{"path": "a.txt", "content": "x"}
			}
			for _, id := range []string{"01930000-0000-7000-8000-000000000001", "not-an-id"} {
				wantError(t, owner.Do(method, withPath(nodeFiles(id, "c"), "a.txt"), body), http.StatusNotFound, "not_found", "workflow not found")
			}
			wantError(t, owner.Do(method, withPath(nodeFiles(wf, "e"), "a.txt"), body), http.StatusBadRequest, "bad_request",
				`node "e" is not a code node (it is end)`)
			wantError(t, owner.Do(method, withPath(nodeFiles(wf, "nope"), "a.txt"), body), http.StatusBadRequest, "bad_request", `no node "nope"`)
		}

		// The node goes from the graph: its files stay, readable and
		// deletable but not writable; a code node of the key again writes.
		r := owner.Do("PUT", "/api/workflows/"+wf, obj{"nodes": []obj{{"key": "e", "kind": "end", "config": obj{}}}})
		fixture.Want(t, r, http.StatusOK)
		if got := paths(list(t, owner, nodeFiles(wf, "c"))); !slices.Equal(got, []string{"a.txt", "b.txt"}) {
			t.Fatalf("orphaned files = %v", got)
		}
		if got := get(t, owner, nodeFiles(wf, "c"), "a.txt"); got.Content != "a" {
			t.Fatalf("orphaned file = %+v", got)
		}
		wantError(t, owner.Do("PUT", nodeFiles(wf, "c"), obj{"path": "c.txt", "content": "x"}), http.StatusBadRequest, "bad_request", `no node "c"`)
		if !del(t, owner, nodeFiles(wf, "c"), "a.txt") {
			t.Fatal("an orphaned file was not deleted")
		}
		if !del(t, owner, nodeFiles(wf, "c"), "b.txt") {
			t.Fatal("an orphaned file was not deleted")
		}
		wantError(t, owner.Do("GET", nodeFiles(wf, "c"), nil), http.StatusBadRequest, "bad_request", `no node "c"`)
		r = owner.Do("PUT", "/api/workflows/"+wf, obj{"nodes": []obj{{"key": "c", "kind": "code", "config": obj{"source": "true"}}}})
		fixture.Want(t, r, http.StatusOK)
		put(t, owner, nodeFiles(wf, "c"), "again.txt", "x")

		// Deleting the workflow deletes its files, not another's or the library's.
		fixture.Want(t, owner.Do("DELETE", "/api/workflows/"+wf, nil), http.StatusOK)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM code_files WHERE workflow_id = $1", wf); n != 0 {
			t.Fatalf("%d files of the deleted workflow remain", n)
		}
		wantError(t, owner.Do("GET", nodeFiles(wf, "c"), nil), http.StatusNotFound, "not_found")
		if got := get(t, owner, nodeFiles(other, "c"), "a.txt"); got.Content != "other" {
			t.Fatalf("the other workflow's file = %+v", got)
		}
		if got := get(t, owner, libFiles, "a.txt"); got.Content != "library" {
			t.Fatalf("the library's file = %+v", got)
		}

		// Tenancy: another workspace's workflow is an unknown one on every
		// route; its library is its own.
		withFile := func(t *testing.T, c *apitest.Client) string {
			put(t, c, nodeFiles(other, "c"), "a.txt", "other")
			return other
		}
		apitest.CheckTenancy(t, owner, f.Outsider, []apitest.TenancyCase{
			{Name: "list", Method: "GET", Path: nodeFiles("{id}", "c"), Create: withFile},
			{Name: "get", Method: "GET", Path: nodeFiles("{id}", "c") + "?path=a.txt", Create: withFile},
			{Name: "put", Method: "PUT", Path: nodeFiles("{id}", "c"), Body: obj{"path": "a.txt", "content": "theirs"}, Create: withFile},
			{Name: "delete", Method: "DELETE", Path: nodeFiles("{id}", "c") + "?path=a.txt", Create: withFile},
			{Name: "library get", Method: "GET", Path: libFiles + "?path={id}.txt", Create: func(t *testing.T, c *apitest.Client) string {
				put(t, c, libFiles, other+".txt", "mine")
				return other
			}},
		})
		if got := list(t, f.Outsider, libFiles); len(got) != 0 {
			t.Fatalf("the outsider's library lists %v", paths(got))
		}
		if del(t, f.Outsider, libFiles, "a.txt") {
			t.Fatal("the outsider deleted the owner's library file")
		}
		put(t, f.Outsider, libFiles, "a.txt", "theirs")
		if got := get(t, owner, libFiles, "a.txt"); got.Content != "library" {
			t.Fatalf("the owner's library file = %+v", got)
		}
	})
}

// The caps: 256 KiB a file, 200 files and 4 MiB a set; a replace counts
// its new size only.
func TestCodeFilesLimits(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		wf := workflow(t, f, owner, "true")
		node := nodeFiles(wf, "c")

		// One file: the cap counts bytes, escaped JSON is no problem.
		put(t, owner, node, "max.txt", strings.Repeat("\x01", codefiles.MaxFileBytes))
		wantError(t, owner.Do("PUT", node, obj{"path": "big.txt", "content": strings.Repeat("x", codefiles.MaxFileBytes+1)}),
			http.StatusBadRequest, "bad_request", "at most 262144 bytes (256 KiB) per file")
		wantError(t, owner.Do("PUT", node, obj{"path": "wide.txt", "content": strings.Repeat("é", codefiles.MaxFileBytes/2+1)}),
			http.StatusBadRequest, "bad_request", "at most 262144 bytes")

		// The total: 16 files of 256 KiB fill a node's 4 MiB.
		chunk := strings.Repeat("y", codefiles.MaxFileBytes)
		for i := 1; i < 16; i++ {
			put(t, owner, node, fmt.Sprintf("part/%02d", i), chunk)
		}
		wantError(t, owner.Do("PUT", node, obj{"path": "one-more.txt", "content": "z"}), http.StatusBadRequest, "bad_request",
			"code node c holds at most 4194304 bytes (4 MiB) in all")
		// Replacing a file with a smaller one makes room; the library is
		// another set.
		put(t, owner, node, "max.txt", "small")
		put(t, owner, node, "one-more.txt", "z")
		put(t, owner, libFiles, "big.txt", chunk)

		// The count: 200 files in the library.
		for i := 1; i < codefiles.MaxFiles; i++ {
			put(t, owner, libFiles, fmt.Sprintf("f/%03d.txt", i), "")
		}
		wantError(t, owner.Do("PUT", libFiles, obj{"path": "f/200.txt", "content": ""}), http.StatusBadRequest, "bad_request",
			"the code library holds at most 200 files")
		put(t, owner, libFiles, "f/001.txt", "replacing is fine") // not a new file
		if !del(t, owner, libFiles, "f/001.txt") {
			t.Fatal("not deleted")
		}
		put(t, owner, libFiles, "f/200.txt", "")
	})
}

// A code node reads its files at $SLIPWAY_FILES and the library at
// $SLIPWAY_LIB, as they are when the node runs; a standalone script run
// reads the library.
func TestCodeFilesMountedInRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		wf := workflow(t, f, owner, strings.Join([]string{
			`. "$SLIPWAY_LIB/util.sh"`,
			`n=$(cat "$SLIPWAY_FILES/data/x.txt")`,
			`echo "{\"greeting\": \"$(greet world)\", \"n\": $n, \"lib\": \"$SLIPWAY_LIB\"}"`,
		}, "\n"))
		put(t, owner, libFiles, "util.sh", "greet() { printf 'hello %s' \"$1\"; }\n")
		put(t, owner, nodeFiles(wf, "c"), "data/x.txt", "42\n")
		// Another workspace's library is not mounted.
		put(t, f.Outsider, libFiles, "util.sh", "greet() { printf 'wrong'; }\n")

		r := owner.Do("POST", "/api/workflows/"+wf+"/runs", nil)
		fixture.Want(t, r, http.StatusCreated)
		runID := r.Map(t)["run_id"].(string)
		deadline := time.Now().Add(30 * time.Second)
		var run struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Output struct {
				Greeting string `json:"greeting"`
				N        int    `json:"n"`
				Lib      string `json:"lib"`
			} `json:"output"`
		}
		for {
			r = owner.Do("GET", "/api/workflows/runs/"+runID, nil)
			fixture.Want(t, r, http.StatusOK)
			r.JSON(t, &run)
			if run.Status == "succeeded" || run.Status == "failed" || run.Status == "cancelled" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run did not end: %s", r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if run.Status != "succeeded" || run.Output.Greeting != "hello world" || run.Output.N != 42 || run.Output.Lib == "" {
			t.Fatalf("run %s", r.Body)
		}

		// A saved script run on its own sees the library too (and no node's
		// files: its files directory is empty).
		r = owner.Do("POST", "/api/scripts", obj{"name": "Greeter", "slug": "greeter", "language": "sh",
			"source": `. "$SLIPWAY_LIB/util.sh"; echo "{\"greeting\": \"$(greet script)\", \"files\": $(ls -A "$SLIPWAY_FILES" | wc -l)}"`})
		fixture.Want(t, r, http.StatusCreated)
		script := r.Map(t)["id"].(string)
		fixture.Want(t, owner.Do("POST", "/api/scripts/"+script+"/run", nil), http.StatusAccepted)
		deadline = time.Now().Add(30 * time.Second)
		for {
			r = owner.Do("GET", "/api/scripts/"+script+"/runs", nil)
			fixture.Want(t, r, http.StatusOK)
			var runs []struct {
				Status string         `json:"status"`
				Output map[string]any `json:"output"`
			}
			r.JSON(t, &runs)
			if len(runs) == 1 && runs[0].Status != "running" {
				if runs[0].Status != "succeeded" || runs[0].Output["greeting"] != "hello script" || runs[0].Output["files"] != float64(0) {
					t.Fatalf("script run %s", r.Body)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the script run did not end: %s", r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
