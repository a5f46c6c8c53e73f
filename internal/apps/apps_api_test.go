package apps_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/apps"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

const manifestYAML = `name: Orders
entry: index.html
routes:
  - path: /orders/*
    file: index.html
`

// member makes a plain member of the owner's default workspace.
func member(t *testing.T, f *fixture.API, name string) *apitest.Client {
	t.Helper()
	c := f.App.Approved(f.Admin, name)
	r := f.Owner.Do("POST", "/organization/invites", obj{"email": c.Email})
	fixture.Want(t, r, http.StatusCreated)
	tok := r.Map(t)["token"].(string)
	f.App.Remember(tok)
	fixture.Want(t, c.Do("POST", "/organization/invites/accept", obj{"token": tok}), http.StatusOK)
	ws := f.Owner.DefaultWorkspace()
	fixture.Want(t, f.Owner.Do("PUT", "/api/workspaces/"+ws+"/members/"+c.ID, obj{"role": "member"}), http.StatusOK)
	c.Workspace = ws
	return c
}

func create(t *testing.T, c *apitest.Client, name string) apps.App {
	t.Helper()
	r := c.Do("POST", "/api/apps", obj{"name": name, "manifest_yaml": manifestYAML})
	fixture.Want(t, r, http.StatusCreated)
	var a apps.App
	r.JSON(t, &a)
	return a
}

func put(t *testing.T, c *apitest.Client, id, path, content string, header ...string) *apitest.Response {
	t.Helper()
	return c.Do("PUT", "/api/apps/"+id+"/files/"+path, obj{"content": content}, header...)
}

// TestApps: an app's life through the API on both databases: create
// (the manifest validated, a name collision 400), read (the list without
// the manifest), change (description three-state), the board, install
// and uninstall (idempotent; a stranger's id 403), delete, and another
// workspace's app answering as an unknown one.
func TestApps(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		anon := f.App.Anonymous()
		fixture.WantError(t, anon.Do("POST", "/api/apps", obj{"name": 7}), http.StatusUnauthorized, "unauthorized")

		a := create(t, owner, "Orders")
		if a.Manifest == nil || a.Manifest.Entry != "index.html" || a.ManifestYAML != manifestYAML || a.Deployment != nil || a.Installed {
			t.Fatalf("created: %+v", a)
		}
		fixture.WantError(t, owner.Do("POST", "/api/apps", obj{"name": "Orders", "manifest_yaml": manifestYAML}), http.StatusBadRequest, "bad_request", "already has an app named")
		fixture.WantError(t, owner.Do("POST", "/api/apps", obj{"name": "Bad", "manifest_yaml": "name: X\nfunctions:\n  - name: f\n    operation: query\n"}),
			http.StatusBadRequest, "bad_request", "manifest_yaml", "sql")
		fixture.WantError(t, owner.Do("POST", "/api/apps", obj{"name": "Bad", "manifest_yaml": "nmae: X\n"}), http.StatusBadRequest, "bad_request", "nmae")
		fixture.WantError(t, owner.Do("POST", "/api/apps", obj{"name": "Bad\u202e", "manifest_yaml": manifestYAML}), http.StatusBadRequest, "bad_request", "name")
		if n := f.App.Count(t, "SELECT COUNT(*) FROM apps"); n != 1 {
			t.Fatalf("refused creates left %d apps", n)
		}

		r := owner.Do("GET", "/api/apps", nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), "manifest") || !strings.Contains(string(r.Body), `"name":"Orders"`) {
			t.Fatalf("the list: %s", r.Body)
		}

		// Description: a value sets it, absent leaves it, null clears it.
		r = owner.Do("PUT", "/api/apps/"+a.ID, obj{"description": "Track orders"})
		fixture.Want(t, r, http.StatusOK)
		r = owner.Do("PUT", "/api/apps/"+a.ID, obj{"name": "Orders 2"})
		var got apps.App
		r.JSON(t, &got)
		if got.Description == nil || *got.Description != "Track orders" || got.Name != "Orders 2" {
			t.Fatalf("after a rename: %+v", got)
		}
		r = owner.Do("PUT", "/api/apps/"+a.ID, obj{"description": nil})
		got = apps.App{}
		r.JSON(t, &got)
		if got.Description != nil {
			t.Fatalf("null did not clear: %+v", got)
		}
		fixture.WantError(t, owner.Do("PUT", "/api/apps/"+a.ID, obj{"manifest_yaml": "name: [x"}), http.StatusBadRequest, "bad_request", "manifest_yaml")

		// The board: search and the status facet.
		create(t, owner, "Invoices")
		r = owner.Do("GET", "/api/apps/board?q=invo", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"total":1`) || !strings.Contains(string(r.Body), `"value":"never","label":"never","count":1`) {
			t.Fatalf("the board: %s", r.Body)
		}

		// Install: for you, twice; for a member by the owner; a stranger 403.
		mo := member(t, f, "Mo Member")
		for range 2 {
			r = owner.Do("POST", "/api/apps/"+a.ID+"/install", nil)
			fixture.Want(t, r, http.StatusOK)
		}
		if got := owner.Do("GET", "/api/apps/"+a.ID, nil).Map(t)["installed"]; got != true {
			t.Fatalf("installed: %v", got)
		}
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/install", obj{"user_id": mo.ID}), http.StatusOK)
		stranger := f.App.Approved(f.Admin, "Sam Stranger")
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/install", obj{"user_id": stranger.ID}), http.StatusForbidden, "forbidden", "not a member")
		fixture.WantError(t, mo.Do("POST", "/api/apps/"+a.ID+"/install", obj{"user_id": owner.ID}), http.StatusForbidden, "forbidden")
		if n := f.App.Count(t, "SELECT COUNT(*) FROM app_members WHERE app_id = $1", a.ID); n != 2 {
			t.Fatalf("install rows: %d", n)
		}
		for range 2 {
			fixture.Want(t, mo.Do("POST", "/api/apps/"+a.ID+"/uninstall", nil), http.StatusOK)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM app_members WHERE app_id = $1", a.ID); n != 1 {
			t.Fatalf("install rows after uninstall: %d", n)
		}

		// Another workspace's app is an unknown one, on every route.
		for _, p := range []string{"", "/files", "/files/index.html", "/builds", "/releases", "/deployment"} {
			foreign := stranger.Do("GET", "/api/apps/"+a.ID+p, nil)
			unknown := stranger.Do("GET", "/api/apps/01a00000-0000-7000-8000-000000000000"+p, nil)
			if foreign.Status != http.StatusNotFound || string(foreign.Body) != strings.ReplaceAll(string(unknown.Body), "01a00000-0000-7000-8000-000000000000", a.ID) &&
				string(foreign.Body) != string(unknown.Body) {
				t.Fatalf("GET %s: foreign %d %s, unknown %d %s", p, foreign.Status, foreign.Body, unknown.Status, unknown.Body)
			}
		}
		fixture.WantError(t, stranger.Do("DELETE", "/api/apps/"+a.ID, nil), http.StatusNotFound, "not_found")

		// Delete: the app and its install rows.
		r = owner.Do("DELETE", "/api/apps/"+a.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM app_members WHERE app_id = $1", a.ID); n != 0 {
			t.Fatalf("install rows after delete: %d", n)
		}
		fixture.WantError(t, owner.Do("GET", "/api/apps/"+a.ID, nil), http.StatusNotFound, "not_found")
		if entries := f.App.AuditEntries(t, "app.delete", a.ID); len(entries) != 1 {
			t.Fatalf("audited delete: %v", entries)
		}
	})
}

// TestAppFiles: files with etags (also in the ETag header); If-Match
// holds a write to the etag it names (412 when stale), If-None-Match: *
// makes it create-only; paths are cleaned and traversal refused; sizes are
// capped; bytes that are not text go as base64.
func TestAppFiles(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		a := create(t, owner, "Files")
		r := put(t, owner, a.ID, "index.html", "<h1>v1</h1>")
		fixture.Want(t, r, http.StatusCreated)
		etag1 := r.Map(t)["etag"].(string)
		if r.Header.Get("ETag") != `"`+etag1+`"` || len(etag1) != 64 {
			t.Fatalf("etag %q, header %q", etag1, r.Header.Get("ETag"))
		}
		r = owner.Do("GET", "/api/apps/"+a.ID+"/files/index.html", nil)
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["content"] != "<h1>v1</h1>" || m["encoding"] != "utf-8" || r.Header.Get("ETag") != `"`+etag1+`"` {
			t.Fatalf("read: %s %v", r.Body, r.Header)
		}
		fixture.Want(t, put(t, owner, a.ID, "index.html", "<h1>v2</h1>", "If-Match", `"`+etag1+`"`), http.StatusOK)
		fixture.WantError(t, put(t, owner, a.ID, "index.html", "<h1>v3</h1>", "If-Match", `"`+etag1+`"`), http.StatusPreconditionFailed, "precondition_failed")
		fixture.WantError(t, put(t, owner, a.ID, "index.html", "<h1>v3</h1>", "If-None-Match", "*"), http.StatusPreconditionFailed, "precondition_failed")
		fixture.WantError(t, put(t, owner, a.ID, "new.html", "x", "If-Match", "*"), http.StatusPreconditionFailed, "precondition_failed")
		fixture.Want(t, put(t, owner, a.ID, "new.html", "x", "If-None-Match", "*"), http.StatusCreated)
		if got := owner.Do("GET", "/api/apps/"+a.ID+"/files/index.html", nil).Map(t)["content"]; got != "<h1>v2</h1>" {
			t.Fatalf("a stale write changed the file: %v", got)
		}
		// Paths: a directory over a file, backslashes and controls refused;
		// a path with . or .. segments never reaches the app (the router
		// redirects it to its clean form), so nothing is written.
		fixture.Want(t, put(t, owner, a.ID, "assets/app.js", "console.log(1)"), http.StatusCreated)
		before := f.App.Count(t, "SELECT COUNT(*) FROM app_files")
		for _, p := range []string{"assets/app.js/x", "a%5Cb", "x%01y", "x%E2%80%AEy"} {
			if r := put(t, owner, a.ID, p, "x"); r.Status != http.StatusBadRequest {
				t.Fatalf("PUT %s: %d %s", p, r.Status, r.Body)
			}
		}
		for _, p := range []string{"a/%2E%2E/%2E%2E/%2E%2E/etc/passwd", "../../x", "./x"} {
			if r := put(t, owner, a.ID, p, "x"); r.Status/100 == 2 {
				t.Fatalf("PUT %s: %d %s", p, r.Status, r.Body)
			}
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM app_files"); n != before {
			t.Fatalf("refused paths wrote files: %d, was %d", n, before)
		}
		// Bytes: base64 both ways; over 1 MiB refused.
		bin := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
		fixture.Want(t, owner.Do("PUT", "/api/apps/"+a.ID+"/files/logo.png", obj{"content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"}), http.StatusCreated)
		if m := owner.Do("GET", "/api/apps/"+a.ID+"/files/logo.png", nil).Map(t); m["encoding"] != "base64" || m["content"] != base64.StdEncoding.EncodeToString(bin) {
			t.Fatalf("binary: %v", m)
		}
		big := strings.Repeat("x", apps.MaxFileBytes+1)
		fixture.WantError(t, put(t, owner, a.ID, "big.txt", big), http.StatusBadRequest, "bad_request", "too large")
		r = owner.Do("GET", "/api/apps/"+a.ID+"/files", nil)
		if !strings.Contains(string(r.Body), `"path":"assets/app.js"`) || strings.Contains(string(r.Body), "console.log") {
			t.Fatalf("the list: %s", r.Body)
		}
		// Delete: If-Match stale 412, then deleted, then {deleted: false}.
		fixture.WantError(t, owner.Do("DELETE", "/api/apps/"+a.ID+"/files/new.html", nil, "If-Match", `"`+etag1+`"`), http.StatusPreconditionFailed, "precondition_failed")
		if r := owner.Do("DELETE", "/api/apps/"+a.ID+"/files/new.html", nil); r.Map(t)["deleted"] != true {
			t.Fatalf("delete: %s", r.Body)
		}
		if r := owner.Do("DELETE", "/api/apps/"+a.ID+"/files/new.html", nil); r.Status != http.StatusOK || r.Map(t)["deleted"] != false {
			t.Fatalf("delete again: %s", r.Body)
		}
		fixture.WantError(t, owner.Do("GET", "/api/apps/"+a.ID+"/files/new.html", nil), http.StatusNotFound, "not_found")
	})
}

// viewMeta matches the tags a served page carries first.
var viewMeta = regexp.MustCompile(`^<meta name="slipway-app-id" content="[^"]+"><meta name="slipway-view-token" content="(scwv_[^"]+)">`)

// body is a served page without the tags Slipway put first.
func body(r *apitest.Response) string { return viewMeta.ReplaceAllString(string(r.Body), "") }

// page fetches a served page as c.
func page(t *testing.T, c *apitest.Client, path string, header ...string) *apitest.Response {
	t.Helper()
	return c.Do("GET", path, nil, append([]string{"X-Workspace-Id", ""}, header...)...)
}

// TestBuildDeployServe: a build is an immutable release, the same source
// one build; a deployment serves a release at /a<route>/ to the
// workspace's members (sandboxed, with ETags), a rollback points it at an
// earlier release without rebuilding, a release whose migrations part
// from those applied is refused, undeploying shows the error page, and a
// route is the instance's.
func TestBuildDeployServe(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		a := create(t, owner, "Orders")
		if r := owner.Do("GET", "/api/apps/"+a.ID+"/builds", nil); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != "null" {
			t.Fatalf("a never-built app: %d %s", r.Status, r.Body)
		}
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/orders"}), http.StatusConflict, "conflict", "build it first")
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil), http.StatusBadRequest, "bad_request", "entry page index.html")
		fixture.Want(t, put(t, owner, a.ID, "index.html", "<h1>release one</h1>"), http.StatusCreated)
		fixture.Want(t, put(t, owner, a.ID, "app.js", "let v = 1"), http.StatusCreated)
		build := func(want int) apps.AppBuild {
			t.Helper()
			r := owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil)
			fixture.Want(t, r, want)
			var b apps.AppBuild
			r.JSON(t, &b)
			return b
		}
		b1 := build(http.StatusCreated)
		if b1.Status != "succeeded" || b1.Number != 1 || b1.Files != 2 {
			t.Fatalf("build 1: %+v", b1)
		}
		if again := build(http.StatusOK); again.ID != b1.ID {
			t.Fatalf("the same source built twice: %s, %s", b1.ID, again.ID)
		}

		r := owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "orders"})
		fixture.Want(t, r, http.StatusOK)
		var d apps.AppDeployment
		r.JSON(t, &d)
		if d.RoutePath != "/orders" || d.URL != "/a/orders/" || d.ReleaseID != b1.ID || d.Status != "deployed" {
			t.Fatalf("deployed: %+v", d)
		}
		for _, bad := range []string{"/", "/a/b/c/d", "/Orders", "/-x", "/x y"} {
			fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": bad}), http.StatusBadRequest, "bad_request", "route_path")
		}

		// Served to the workspace's members, sandboxed: a page with its
		// viewer's token and not cached, other files with an ETag.
		r = page(t, owner, "/a/orders/")
		if r.Status != http.StatusOK || body(r) != "<h1>release one</h1>" || !viewMeta.MatchString(string(r.Body)) ||
			!strings.HasPrefix(r.Header.Get("Content-Security-Policy"), "sandbox allow-scripts") ||
			r.Header.Get("Content-Type") != "text/html; charset=utf-8" || r.Header.Get("ETag") != "" || r.Header.Get("Cache-Control") != "private, no-store" {
			t.Fatalf("served: %d %q %v", r.Status, r.Body, r.Header)
		}
		if r2 := page(t, owner, "/a/orders/app.js"); r2.Status != http.StatusOK || string(r2.Body) != "let v = 1" || r2.Header.Get("ETag") == "" ||
			!strings.HasPrefix(r2.Header.Get("Content-Type"), "text/javascript") {
			t.Fatalf("a script: %d %q %v", r2.Status, r2.Body, r2.Header)
		} else if r3 := page(t, owner, "/a/orders/app.js", "If-None-Match", r2.Header.Get("ETag")); r3.Status != http.StatusNotModified {
			t.Fatalf("revalidated: %d", r3.Status)
		}
		if r2 := page(t, owner, "/a/orders/orders/42"); r2.Status != http.StatusOK || body(r2) != "<h1>release one</h1>" {
			t.Fatalf("a manifest route: %d %s", r2.Status, r2.Body)
		}
		if r2 := page(t, owner, "/a/orders/missing.js"); r2.Status != http.StatusNotFound {
			t.Fatalf("a missing file: %d", r2.Status)
		}
		stranger := f.App.Approved(f.Admin, "Sam Stranger")
		if r2 := page(t, stranger, "/a/orders/"); r2.Status != http.StatusNotFound || strings.Contains(string(r2.Body), "release one") {
			t.Fatalf("a stranger: %d %s", r2.Status, r2.Body)
		}
		if r2 := page(t, stranger, "/a/nothing-here/"); r2.Status != http.StatusNotFound {
			t.Fatalf("an unknown route: %d", r2.Status)
		}
		anon := f.App.Anonymous()
		if r2 := page(t, anon, "/a/orders/"); r2.Status != http.StatusFound || !strings.HasPrefix(r2.Header.Get("Location"), "/login?next=") {
			t.Fatalf("signed out: %d %v", r2.Status, r2.Header)
		}

		// Release two, then a rollback to one: a pointer swap.
		fixture.Want(t, put(t, owner, a.ID, "index.html", "<h1>release two</h1>"), http.StatusOK)
		b2 := build(http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/orders"}), http.StatusOK)
		if r := page(t, owner, "/a/orders/"); body(r) != "<h1>release two</h1>" {
			t.Fatalf("release two: %s", r.Body)
		}
		builds := f.App.Count(t, "SELECT COUNT(*) FROM app_releases WHERE app_id = $1", a.ID)
		fixture.Want(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"build_id": b1.ID}), http.StatusOK)
		if r := page(t, owner, "/a/orders/"); body(r) != "<h1>release one</h1>" {
			t.Fatalf("after the rollback: %s", r.Body)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM app_releases WHERE app_id = $1", a.ID); n != builds {
			t.Fatalf("a rollback built: %d releases, was %d", n, builds)
		}

		// Migrations: a release expecting m1 deploys over m1 applied; when
		// the database's history parts from the release's, 409 names it.
		now := time.Now().UTC()
		f.Exec(t, `INSERT INTO app_migrations (app_id, workspace_id, name, seq, sql_text, checksum, applied_at, created_at)
			VALUES ($1, $2, 'm1', 1, 'CREATE TABLE t (id INT)', 'c1', $3, $3)`, a.ID, owner.DefaultWorkspace(), now)
		b3 := build(http.StatusCreated)
		if len(b3.Migrations) != 1 || b3.Migrations[0] != "m1" {
			t.Fatalf("build 3's migrations: %v", b3.Migrations)
		}
		fixture.Want(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"build_id": b3.ID}), http.StatusOK)
		fixture.Want(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"build_id": b2.ID}), http.StatusOK) // [] is a prefix of [m1]
		f.Exec(t, "UPDATE app_migrations SET checksum = 'other' WHERE app_id = $1", a.ID)
		fixture.WantError(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"build_id": b3.ID}), http.StatusConflict, "conflict", "m1", "not a prefix")
		if r := page(t, owner, "/a/orders/"); body(r) != "<h1>release two</h1>" {
			t.Fatalf("a refused rollback moved the deployment: %s", r.Body)
		}

		// A route is the instance's: another workspace cannot take it.
		other := create(t, stranger, "Other")
		fixture.Want(t, put(t, stranger, other.ID, "index.html", "theirs"), http.StatusCreated)
		r = stranger.Do("POST", "/api/apps/"+other.ID+"/builds", nil)
		fixture.Want(t, r, http.StatusCreated)
		fixture.WantError(t, stranger.Do("POST", "/api/apps/"+other.ID+"/deploy", obj{"route_path": "/orders"}), http.StatusConflict, "conflict", "taken")
		fixture.Want(t, stranger.Do("POST", "/api/apps/"+other.ID+"/deploy", obj{"route_path": "/orders/sub"}), http.StatusOK)
		if r := page(t, stranger, "/a/orders/sub/"); body(r) != "theirs" {
			t.Fatalf("the longer route: %s", r.Body)
		}

		// Undeployed: the error page, 404, at the route.
		r = owner.Do("POST", "/api/apps/"+a.ID+"/undeploy", nil)
		fixture.Want(t, r, http.StatusOK)
		r = page(t, owner, "/a/orders/")
		if r.Status != http.StatusNotFound || !strings.Contains(r.Header.Get("Content-Type"), "text/html") || strings.Contains(string(r.Body), "release") {
			t.Fatalf("undeployed: %d %v %s", r.Status, r.Header, r.Body)
		}
		if d := owner.Do("GET", "/api/apps/"+a.ID+"/deployment", nil).Map(t); d["status"] != "undeployed" {
			t.Fatalf("the deployment: %v", d)
		}
	})
}

// TestAppToken: the App token is minted by a workspace admin, shown once
// with its prefix, stored only as a hash, and revoked idempotently.
func TestAppToken(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		a := create(t, owner, "Tokens")
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/deployment/token", nil), http.StatusConflict, "conflict", "not deployed")
		fixture.Want(t, put(t, owner, a.ID, "index.html", "x"), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/tokens"}), http.StatusOK)
		mo := member(t, f, "Mo Member")
		fixture.WantError(t, mo.Do("POST", "/api/apps/"+a.ID+"/deployment/token", nil), http.StatusForbidden, "forbidden")
		r := owner.Do("POST", "/api/apps/"+a.ID+"/deployment/token", nil)
		fixture.Want(t, r, http.StatusCreated)
		tok := r.Map(t)["token"].(string)
		f.App.Remember(tok)
		if !strings.HasPrefix(tok, apps.TokenPrefix) || len(tok) < 40 {
			t.Fatalf("token %q", tok)
		}
		if held := f.App.Holding(t, tok); len(held) != 0 {
			t.Fatalf("the token is stored in the clear: %v", held)
		}
		for _, p := range []string{"", "/deployment"} {
			r := owner.Do("GET", "/api/apps/"+a.ID+p, nil)
			if strings.Contains(string(r.Body), tok) || !strings.Contains(string(r.Body), `"has_token":true`) {
				t.Fatalf("GET %s: %s", p, r.Body)
			}
		}
		r = owner.Do("POST", "/api/apps/"+a.ID+"/deployment/token", nil)
		tok2 := r.Map(t)["token"].(string)
		f.App.Remember(tok2)
		if tok2 == tok {
			t.Fatal("a new token is the old one")
		}
		fixture.WantError(t, mo.Do("DELETE", "/api/apps/"+a.ID+"/deployment/token", nil), http.StatusForbidden, "forbidden")
		if r := owner.Do("DELETE", "/api/apps/"+a.ID+"/deployment/token", nil); r.Map(t)["deleted"] != true {
			t.Fatalf("revoke: %s", r.Body)
		}
		if r := owner.Do("DELETE", "/api/apps/"+a.ID+"/deployment/token", nil); r.Status != http.StatusOK || r.Map(t)["deleted"] != false {
			t.Fatalf("revoke again: %s", r.Body)
		}
	})
}

// TestAppsQuota: the plan's apps.max holds; going past it answers
// quota_exceeded with its details.
func TestAppsQuota(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		ws := f.Owner.DefaultWorkspace()
		fixture.Want(t, f.Admin.Do("POST", "/api/admin/overrides", obj{"feature": "apps.max", "value": 1, "reason": "a test", "workspace_id": ws}), http.StatusCreated)
		create(t, f.Owner, "One")
		r := f.Owner.Do("POST", "/api/apps", obj{"name": "Two", "manifest_yaml": manifestYAML})
		fixture.WantError(t, r, http.StatusForbidden, "quota_exceeded")
		d, _ := r.Map(t)["details"].(map[string]any)
		if d["feature"] != "apps.max" || d["limit"] != float64(1) || d["usage"] != float64(1) {
			t.Fatalf("details: %s", r.Body)
		}
	})
}

const backendManifest = `name: Orders
functions:
  - name: list_orders
    operation: query
    sql: SELECT id, customer, total FROM orders WHERE customer = $1 ORDER BY id
    args:
      - name: customer
        type: string
  - name: add_order
    operation: execute
    sql: INSERT INTO orders (customer, total) VALUES ($1, $2)
    args:
      - name: customer
        type: string
      - name: total
        type: integer
  - name: peek
    operation: query
    sql: SELECT COUNT(*) AS n FROM users
  - name: peek_public
    operation: query
    sql: SELECT email FROM public.users
  - name: escape
    operation: execute
    sql: RESET ROLE; DELETE FROM public.users
  - name: slow
    operation: query
    timeout_ms: 200
    sql: WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c
`

// TestBackendEndToEnd: an app with a page and backend functions over a
// migrated table, deployed; the page fetched through the hub, the
// functions called with the App token and with a session; migrations
// immutable; the App token refused on every other route and for another
// app; the app's SQL kept to the app's own database.
func TestBackendEndToEnd(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		anon := f.App.Anonymous()
		r := owner.Do("POST", "/api/apps", obj{"name": "Orders", "manifest_yaml": backendManifest})
		fixture.Want(t, r, http.StatusCreated)
		id := r.Map(t)["id"].(string)
		fixture.Want(t, put(t, owner, id, "index.html", "<h1>orders</h1>"), http.StatusCreated)

		// Migrations: recorded, the same again a no-op, new content refused.
		m1 := obj{"name": "001_orders", "sql": "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total INTEGER NOT NULL)"}
		if e == db.Postgres {
			m1["sql"] = "CREATE TABLE orders (id SERIAL PRIMARY KEY, customer TEXT NOT NULL, total INTEGER NOT NULL)"
		}
		r = owner.Do("POST", "/api/apps/"+id+"/migrations", m1)
		fixture.Want(t, r, http.StatusCreated)
		if m := r.Map(t); len(m["checksum"].(string)) != 64 || m["applied_at"] != nil {
			t.Fatalf("recorded: %v", m)
		}
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/migrations", m1), http.StatusOK)
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+id+"/migrations", obj{"name": "001_orders", "sql": "CREATE TABLE other (x INT)"}),
			http.StatusBadRequest, "bad_request", "001_orders")
		if e == db.SQLite {
			for _, bad := range []string{"ATTACH DATABASE 'x.db' AS x", "PRAGMA query_only = 0", "VACUUM INTO '/tmp/x.db'", "-- ok\n  pragma writable_schema=1"} {
				fixture.WantError(t, owner.Do("POST", "/api/apps/"+id+"/migrations", obj{"name": "bad", "sql": bad}), http.StatusBadRequest, "bad_request", "not allowed")
			}
		}
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+id+"/backend/list_orders", obj{"args": []any{"ada"}}), http.StatusConflict, "conflict", "not deployed")

		// Build, deploy: the migration applies.
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/builds", nil), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/deploy", obj{"route_path": "/shop"}), http.StatusOK)
		r = owner.Do("GET", "/api/apps/"+id+"/migrations", nil)
		if ms := r.Body; !strings.Contains(string(ms), `"name":"001_orders"`) || strings.Contains(string(ms), `"applied_at":null`) {
			t.Fatalf("after the deploy: %s", ms)
		}
		if p := page(t, owner, "/a/shop/"); p.Status != http.StatusOK || body(p) != "<h1>orders</h1>" {
			t.Fatalf("the page: %d %s", p.Status, p.Body)
		}

		// The App token calls the functions; the listing shows no SQL.
		r = owner.Do("POST", "/api/apps/"+id+"/deployment/token", nil)
		fixture.Want(t, r, http.StatusCreated)
		tok := r.Map(t)["token"].(string)
		f.App.Remember(tok)
		bearer := []string{"Authorization", "Bearer " + tok, "X-CSRF-Token", ""}
		r = anon.Do("GET", "/api/apps/"+id+"/backend", nil, bearer...)
		fixture.Want(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), "SELECT") || !strings.Contains(string(r.Body), `"name":"add_order"`) {
			t.Fatalf("the listing: %s", r.Body)
		}
		for _, args := range [][]any{{"ada", 12}, {"ada", 30}, {"bob", 5}} {
			r = anon.Do("POST", "/api/apps/"+id+"/backend/add_order", obj{"args": args}, bearer...)
			fixture.Want(t, r, http.StatusOK)
		}
		r = anon.Do("POST", "/api/apps/"+id+"/backend/list_orders", obj{"args": []any{"ada"}}, bearer...)
		fixture.Want(t, r, http.StatusOK)
		var res struct {
			Result struct {
				Rows     []map[string]any `json:"rows"`
				RowCount int              `json:"row_count"`
			} `json:"result"`
		}
		r.JSON(t, &res)
		if res.Result.RowCount != 2 || res.Result.Rows[1]["total"] != float64(30) {
			t.Fatalf("list_orders: %s", r.Body)
		}
		// A workflow's app node calls a function, its params templates.
		wr := owner.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, owner, "P"), "name": "Orders flow",
			"nodes": []obj{{"key": "add", "kind": "app", "config": obj{"app_id": id, "action": "add_order", "params": obj{"customer": "{{ input.who }}", "total": 7}}},
				{"key": "list", "kind": "app", "config": obj{"app_id": id, "action": "list_orders", "params": obj{"customer": "{{ input.who }}"}}},
				{"key": "e", "kind": "end", "config": obj{"output": "nodes.list.output.rows"}}},
			"edges": []obj{{"source": "add", "target": "list"}, {"source": "list", "target": "e"}}})
		fixture.Want(t, wr, http.StatusCreated)
		v := f.RunWorkflow(t, owner, wr.Map(t)["id"].(string), obj{"who": "cy"})
		if v.Status != "succeeded" || !strings.Contains(string(v.Output), `"customer":"cy"`) || !strings.Contains(string(v.Output), `"total":7`) {
			t.Fatalf("the app nodes: %s %s %s", v.Status, v.Error, v.Output)
		}
		// Another workspace's app is not reachable from a workflow.
		sw := f.App.Approved(f.Admin, "Wanda Workflow")
		wr = sw.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, sw, "P"), "name": "Smuggle",
			"nodes": []obj{{"key": "add", "kind": "app", "config": obj{"app_id": id, "action": "add_order", "params": obj{"customer": "x", "total": 1}}}}})
		fixture.Want(t, wr, http.StatusCreated)
		if v := f.RunWorkflow(t, sw, wr.Map(t)["id"].(string), obj{}); v.Status != "failed" || !strings.Contains(v.Error, "not found") {
			t.Fatalf("another workspace's app: %s %s", v.Status, v.Error)
		}
		// A session of the workspace calls them too; a stranger's is 404.
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/backend/list_orders", obj{"args": []any{"bob"}}), http.StatusOK)
		stranger := f.App.Approved(f.Admin, "Sam Stranger")
		fixture.WantError(t, stranger.Do("POST", "/api/apps/"+id+"/backend/list_orders", obj{"args": []any{"bob"}}), http.StatusNotFound, "not_found")
		// Arguments are checked against their types; unknown functions 404.
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+id+"/backend/add_order", obj{"args": []any{"ada", "many"}}, bearer...), http.StatusBadRequest, "bad_request", "total")
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+id+"/backend/add_order", obj{"args": []any{"ada"}}, bearer...), http.StatusBadRequest, "bad_request")
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+id+"/backend/drop_all", obj{"args": []any{}}, bearer...), http.StatusNotFound, "not_found")
		// Unauthenticated: 401 before the body is read.
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+id+"/backend/add_order", `{"args": 7}`), http.StatusUnauthorized, "unauthorized")

		// The app's SQL reaches only its own database.
		users := f.App.Count(t, "SELECT COUNT(*) FROM users")
		for _, fn := range []string{"peek", "peek_public", "escape"} {
			r = anon.Do("POST", "/api/apps/"+id+"/backend/"+fn, obj{"args": []any{}}, bearer...)
			if r.Status != http.StatusUnprocessableEntity || strings.Contains(string(r.Body), owner.Email) {
				t.Fatalf("%s: %d %s", fn, r.Status, r.Body)
			}
			if e == db.Postgres && fn == "peek_public" && !strings.Contains(string(r.Body), "permission denied") {
				t.Fatalf("%s: %s", fn, r.Body)
			}
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM users"); n != users {
			t.Fatalf("an app deleted Slipway's users: %d, were %d", n, users)
		}
		// A function past its time limit is stopped.
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+id+"/backend/slow", obj{"args": []any{}}, bearer...), http.StatusUnprocessableEntity, "unprocessable")
		// After the slow one, the app's database still answers.
		fixture.Want(t, anon.Do("POST", "/api/apps/"+id+"/backend/list_orders", obj{"args": []any{"bob"}}, bearer...), http.StatusOK)

		// The App token is refused everywhere else, and for another app.
		for _, p := range []string{"/api/apps", "/api/apps/" + id, "/api/apps/" + id + "/files", "/api/me", "/api/tasks", "/api/apps/" + id + "/migrations"} {
			fixture.WantError(t, anon.Do("GET", p, nil, bearer...), http.StatusUnauthorized, "unauthorized")
		}
		other := create(t, owner, "Other")
		fixture.WantError(t, anon.Do("GET", "/api/apps/"+other.ID+"/backend", nil, bearer...), http.StatusUnauthorized, "unauthorized")
		// Revoked: refused.
		fixture.Want(t, owner.Do("DELETE", "/api/apps/"+id+"/deployment/token", nil), http.StatusOK)
		fixture.WantError(t, anon.Do("GET", "/api/apps/"+id+"/backend", nil, bearer...), http.StatusUnauthorized, "unauthorized")

		// Deleting the app drops its database.
		fixture.Want(t, owner.Do("DELETE", "/api/apps/"+id, nil), http.StatusOK)
		if e == db.Postgres {
			if n := f.App.Count(t, "SELECT COUNT(*) FROM pg_namespace WHERE nspname = $1", "app_"+strings.ReplaceAll(id, "-", "")); n != 0 {
				t.Fatal("the app's schema outlived it")
			}
		}
	})
}

// TestErrorPageCascade: an undeployed app shows its own page, else its
// workspace's, else the instance's, else the built-in one: every
// combination, through the API's resolution and on the app's route.
func TestErrorPageCascade(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		a := create(t, owner, "Cascade")
		fixture.Want(t, put(t, owner, a.ID, "index.html", "x"), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/cascade"}), http.StatusOK)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/undeploy", nil), http.StatusOK)
		fixture.WantError(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"error_page": []any{1}}), http.StatusBadRequest, "bad_request")
		for i := range 8 {
			app, ws, inst := i&4 != 0, i&2 != 0, i&1 != 0
			set := func(on bool, title string) obj {
				if on {
					return obj{"title": title}
				}
				return obj{}
			}
			fixture.Want(t, owner.Do("PATCH", "/api/apps/"+a.ID+"/deployment", obj{"error_page": set(app, "App down")}), http.StatusOK)
			fixture.Want(t, owner.Do("PUT", "/api/workspace/error-page", set(ws, "Workspace down")), http.StatusOK)
			fixture.Want(t, f.Admin.Do("PUT", "/api/admin/error-page", set(inst, "Instance down")), http.StatusOK)
			want, title := "default", ""
			switch {
			case app:
				want, title = "app", "App down"
			case ws:
				want, title = "workspace", "Workspace down"
			case inst:
				want, title = "instance", "Instance down"
			}
			r := owner.Do("GET", "/api/apps/"+a.ID+"/deployment/error-page", nil)
			fixture.Want(t, r, http.StatusOK)
			var got apps.ResolvedErrorPage
			r.JSON(t, &got)
			if got.Source != want || title != "" && !strings.Contains(string(got.Page), title) {
				t.Fatalf("app %v, workspace %v, instance %v: %s", app, ws, inst, r.Body)
			}
			p := page(t, owner, "/a/cascade/")
			if p.Status != http.StatusNotFound || title != "" && !strings.Contains(string(p.Body), title) {
				t.Fatalf("app %v, workspace %v, instance %v: the route showed %d %s", app, ws, inst, p.Status, p.Body)
			}
		}
	})
}

// multipartBody is a submission: fields, then files (name → content).
func multipartBody(t *testing.T, fields map[string]string, files ...[2]string) (string, string) {
	t.Helper()
	var b strings.Builder
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	for _, f := range files {
		fw, err := w.CreateFormFile("files", f[0])
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(f[1]))
	}
	w.Close()
	return b.String(), w.FormDataContentType()
}

// TestAppRuns: an app submits a workflow run with files, by its App token
// or a session; the run's input lists the files, which members download
// until they expire; the bounds hold; another workspace's workflow is an
// unknown one.
func TestAppRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		anon := f.App.Anonymous()
		a := create(t, owner, "Intake")
		fixture.Want(t, put(t, owner, a.ID, "index.html", "x"), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/builds", nil), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/deploy", obj{"route_path": "/intake"}), http.StatusOK)
		r := owner.Do("POST", "/api/apps/"+a.ID+"/deployment/token", nil)
		tok := r.Map(t)["token"].(string)
		f.App.Remember(tok)
		wr := owner.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, owner, "P"), "name": "Intake",
			"nodes": []obj{{"key": "e", "kind": "end", "config": obj{"output": "input"}}}})
		fixture.Want(t, wr, http.StatusCreated)
		wf := wr.Map(t)["id"].(string)

		body, ct := multipartBody(t, map[string]string{"workflow_id": wf, "input": `{"ticket": 42}`}, [2]string{"notes.txt", "hello"}, [2]string{"../../x.csv", "a,b"})
		r = anon.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct, "Authorization", "Bearer "+tok, "X-CSRF-Token", "")
		fixture.Want(t, r, http.StatusCreated)
		var run apps.AppRun
		r.JSON(t, &run)
		if len(run.Files) != 2 || run.Files[1].Name != "x.csv" || run.Files[0].Size != 5 {
			t.Fatalf("submitted: %s", r.Body)
		}
		var v struct {
			Status string          `json:"status"`
			Output json.RawMessage `json:"output"`
		}
		deadline := time.Now().Add(20 * time.Second)
		for v.Status != "succeeded" && time.Now().Before(deadline) {
			owner.Do("GET", "/api/workflows/runs/"+run.RunID, nil).JSON(t, &v)
			time.Sleep(20 * time.Millisecond)
		}
		if v.Status != "succeeded" || !strings.Contains(string(v.Output), `"ticket":42`) || !strings.Contains(string(v.Output), run.Files[0].URL) {
			t.Fatalf("the run: %s %s", v.Status, v.Output)
		}
		// Members download; others get 404; App tokens do not download.
		d := owner.Do("GET", run.Files[0].URL, nil)
		if d.Status != http.StatusOK || string(d.Body) != "hello" || !strings.HasPrefix(d.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("download: %d %q %v", d.Status, d.Body, d.Header)
		}
		stranger := f.App.Approved(f.Admin, "Sam Stranger")
		fixture.WantError(t, stranger.Do("GET", run.Files[0].URL, nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, anon.Do("GET", run.Files[0].URL, nil, "Authorization", "Bearer "+tok), http.StatusUnauthorized, "unauthorized")
		f.Exec(t, "UPDATE app_uploads SET expires_at = $1 WHERE id = $2", time.Now().Add(-time.Minute).UTC(), run.Files[0].ID)
		fixture.WantError(t, owner.Do("GET", run.Files[0].URL, nil), http.StatusNotFound, "not_found")
		if n, err := f.App.Server.Services.AppRuns.PruneUploads(context.Background()); err != nil || n != 1 {
			t.Fatalf("prune: %d %v", n, err)
		}

		// A session of the workspace submits too; bounds and tenancy hold.
		body, ct = multipartBody(t, map[string]string{"workflow_id": wf})
		fixture.Want(t, owner.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct), http.StatusCreated)
		body, ct = multipartBody(t, map[string]string{"workflow_id": wf}, [2]string{"big.bin", strings.Repeat("x", apps.MaxUploadBytes+1)})
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct), http.StatusBadRequest, "bad_request", "10 MiB")
		var many [][2]string
		for i := range apps.MaxUploadFiles + 1 {
			many = append(many, [2]string{fmt.Sprintf("f%d.txt", i), "x"})
		}
		body, ct = multipartBody(t, map[string]string{"workflow_id": wf}, many...)
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct), http.StatusBadRequest, "bad_request", "at most 10")
		body, ct = multipartBody(t, map[string]string{"workflow_id": wf, "input": "[1]"})
		fixture.WantError(t, owner.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct), http.StatusBadRequest, "bad_request", "JSON object")
		other := stranger.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, stranger, "P"), "name": "Theirs",
			"nodes": []obj{{"key": "e", "kind": "end", "config": obj{"output": "input"}}}})
		body, ct = multipartBody(t, map[string]string{"workflow_id": other.Map(t)["id"].(string)})
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct, "Authorization", "Bearer "+tok, "X-CSRF-Token", ""), http.StatusNotFound, "not_found")
		fixture.WantError(t, stranger.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct), http.StatusNotFound, "not_found")
		fixture.WantError(t, anon.Do("POST", "/api/apps/"+a.ID+"/runs", body, "Content-Type", ct), http.StatusUnauthorized, "unauthorized")
		if n := f.App.Count(t, "SELECT COUNT(*) FROM app_uploads"); n != 1 {
			t.Fatalf("refused submissions stored files: %d uploads", n)
		}
	})
}

// TestViewToken: a page served to a member carries a view token that lets
// the sandboxed page (origin "null", no cookies) call its own app's
// backend as that member, and nothing else: not another app's, not with a
// byte changed, not once the member has left the workspace.
func TestViewToken(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		anon := f.App.Anonymous()
		r := owner.Do("POST", "/api/apps", obj{"name": "Orders", "manifest_yaml": backendManifest})
		fixture.Want(t, r, http.StatusCreated)
		id := r.Map(t)["id"].(string)
		fixture.Want(t, put(t, owner, id, "index.html", "<!doctype html><html><HEAD><title>x</title></HEAD><body>hi</body></html>"), http.StatusCreated)
		ddl := "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total INTEGER NOT NULL)"
		if e == db.Postgres {
			ddl = "CREATE TABLE orders (id SERIAL PRIMARY KEY, customer TEXT NOT NULL, total INTEGER NOT NULL)"
		}
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/migrations", obj{"name": "001", "sql": ddl}), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/builds", nil), http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/deploy", obj{"route_path": "/view"}), http.StatusOK)
		mo := member(t, f, "Mo Member")
		p := page(t, mo, "/a/view/")
		m := regexp.MustCompile(`<HEAD><meta name="slipway-app-id" content="([^"]+)"><meta name="slipway-view-token" content="(scwv_[^"]+)"><title>`).FindStringSubmatch(string(p.Body))
		if p.Status != http.StatusOK || m == nil || m[1] != id {
			t.Fatalf("the page: %d %s", p.Status, p.Body)
		}
		tok := m[2]
		f.App.Remember(tok)
		as := func(token string, path string, body any) *apitest.Response {
			return anon.Do("POST", path, body, "Authorization", "Bearer "+token, "Origin", "null", "X-CSRF-Token", "")
		}
		// The preflight a sandboxed page's fetch makes, then the call.
		pre := anon.Do("OPTIONS", "/api/apps/"+id+"/backend/add_order", nil, "Origin", "null", "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type")
		if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
		}
		r = as(tok, "/api/apps/"+id+"/backend/add_order", obj{"args": []any{"mo", 3}})
		if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatalf("a call with the view token: %d %s %v", r.Status, r.Body, r.Header)
		}
		// A run submitted with it is the viewer's.
		wr := owner.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, owner, "P"), "name": "W", "nodes": []obj{{"key": "e", "kind": "end", "config": obj{"output": "input"}}}})
		fixture.Want(t, wr, http.StatusCreated)
		b, ct := multipartBody(t, map[string]string{"workflow_id": wr.Map(t)["id"].(string)})
		r = anon.Do("POST", "/api/apps/"+id+"/runs", b, "Content-Type", ct, "Authorization", "Bearer "+tok, "Origin", "null", "X-CSRF-Token", "")
		fixture.Want(t, r, http.StatusCreated)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflow_runs WHERE id = $1 AND created_by = $2", r.Map(t)["run_id"], mo.ID); n != 1 {
			t.Fatal("the run is not the viewer's")
		}
		// Nowhere else, for no other app, not tampered with.
		for _, path := range []string{"/api/me", "/api/apps/" + id, "/api/apps/" + id + "/files"} {
			fixture.WantError(t, anon.Do("GET", path, nil, "Authorization", "Bearer "+tok), http.StatusUnauthorized, "unauthorized")
		}
		other := create(t, owner, "Other")
		fixture.WantError(t, as(tok, "/api/apps/"+other.ID+"/backend/add_order", obj{"args": []any{"x", 1}}), http.StatusUnauthorized, "unauthorized")
		bad := []byte(tok)
		bad[len(bad)-3] ^= 1
		fixture.WantError(t, as(string(bad), "/api/apps/"+id+"/backend/add_order", obj{"args": []any{"x", 1}}), http.StatusUnauthorized, "unauthorized")
		// The session cookie does not ride along with a null origin.
		r = owner.Do("POST", "/api/apps/"+id+"/backend/add_order", obj{"args": []any{"x", 1}}, "Origin", "null")
		fixture.WantError(t, r, http.StatusUnauthorized, "unauthorized")
		// Once the member leaves the workspace, the token is a stranger's.
		fixture.Want(t, owner.Do("DELETE", "/api/workspaces/"+owner.DefaultWorkspace()+"/members/"+mo.ID, nil), http.StatusOK)
		fixture.WantError(t, as(tok, "/api/apps/"+id+"/backend/add_order", obj{"args": []any{"mo", 4}}), http.StatusNotFound, "not_found")
	})
}

// TestAppsTenancy: on every app route, another workspace's app answers
// exactly as an unknown id, and the outsider's request changes nothing.
func TestAppsTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		outsider := f.App.Approved(f.Admin, "Otto Outsider")
		n := 0
		deployed := func(t *testing.T, owner *apitest.Client) string {
			n++
			r := owner.Do("POST", "/api/apps", obj{"name": fmt.Sprintf("App %d", n), "manifest_yaml": backendManifest})
			fixture.Want(t, r, http.StatusCreated)
			id := r.Map(t)["id"].(string)
			fixture.Want(t, put(t, owner, id, "index.html", "x"), http.StatusCreated)
			fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/builds", nil), http.StatusCreated)
			fixture.Want(t, owner.Do("POST", "/api/apps/"+id+"/deploy", obj{"route_path": fmt.Sprintf("/t%d", n)}), http.StatusOK)
			return id
		}
		var cases []apitest.TenancyCase
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/apps/{id}", nil}, {"PUT", "/api/apps/{id}", obj{"name": "Stolen"}}, {"POST", "/api/apps/{id}/install", nil},
			{"POST", "/api/apps/{id}/uninstall", nil}, {"GET", "/api/apps/{id}/files", nil}, {"GET", "/api/apps/{id}/files/index.html", nil},
			{"PUT", "/api/apps/{id}/files/index.html", obj{"content": "stolen"}}, {"DELETE", "/api/apps/{id}/files/index.html", nil},
			{"GET", "/api/apps/{id}/builds", nil}, {"POST", "/api/apps/{id}/builds", nil}, {"GET", "/api/apps/{id}/releases", nil},
			{"POST", "/api/apps/{id}/deploy", obj{"route_path": "/stolen"}}, {"POST", "/api/apps/{id}/undeploy", nil},
			{"GET", "/api/apps/{id}/deployment", nil}, {"PATCH", "/api/apps/{id}/deployment", obj{"route_path": "/stolen"}},
			{"GET", "/api/apps/{id}/deployment/error-page", nil}, {"GET", "/api/apps/{id}/migrations", nil},
			{"POST", "/api/apps/{id}/migrations", obj{"name": "x", "sql": "SELECT 1"}}, {"GET", "/api/apps/{id}/backend", nil},
			{"POST", "/api/apps/{id}/backend/list_orders", obj{"args": []any{"x"}}}, {"POST", "/api/apps/{id}/deployment/token", nil},
			{"DELETE", "/api/apps/{id}/deployment/token", nil}, {"DELETE", "/api/apps/{id}", nil},
		} {
			cases = append(cases, apitest.TenancyCase{Name: c.method + " " + c.path, Method: c.method, Path: c.path, Body: c.body, Create: deployed})
		}
		apitest.CheckTenancy(t, f.Owner, outsider, cases)
	})
}
