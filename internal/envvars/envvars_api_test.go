package envvars_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/envvars"
	"slipway/internal/fixture"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/vault"
)

// These tests drive the real server over HTTP on both engines.

type obj = map[string]any

const path = "/api/settings/env-vars"

// recordKeys are the spec's stored record fields, exactly.
var recordKeys = []string{"id", "created_at", "is_secret", "key", "locked", "organization_id", "project_id", "workspace_id", "value"}

// recorder sends requests and keeps every answer, so a test can say no
// answer ever held a secret.
type recorder struct {
	t       *testing.T
	answers strings.Builder
}

func (rec *recorder) do(c *apitest.Client, method, p string, body any) *apitest.Response {
	rec.t.Helper()
	r := c.Do(method, p, body)
	rec.answers.Write(r.Body)
	return r
}

func (rec *recorder) save(c *apitest.Client, body obj) envvars.EnvVar {
	rec.t.Helper()
	r := rec.do(c, "POST", path, body)
	fixture.Want(rec.t, r, http.StatusOK)
	if keys := apitest.ObjectKeys(rec.t, r.Body); !slices.Equal(keys, recordKeys) {
		rec.t.Fatalf("record keys = %v, want %v", keys, recordKeys)
	}
	var v envvars.EnvVar
	r.JSON(rec.t, &v)
	return v
}

func (rec *recorder) list(c *apitest.Client, query string) []envvars.EnvVar {
	rec.t.Helper()
	r := rec.do(c, "GET", path+query, nil)
	fixture.Want(rec.t, r, http.StatusOK)
	var vs []envvars.EnvVar
	r.JSON(rec.t, &vs)
	return vs
}

func (rec *recorder) neverAnswered(secrets ...string) {
	rec.t.Helper()
	for _, s := range secrets {
		if strings.Contains(rec.answers.String(), s) {
			rec.t.Fatalf("an answer held the secret %q", s)
		}
	}
}

// vaultRows lists the paths of the env backend's secrets, and checks that
// none of them holds any of the plaintexts.
func vaultRows(t *testing.T, f *fixture.API, plain ...string) []string {
	t.Helper()
	rows, err := f.App.DB.R.Query("SELECT path, sealed FROM vault_secrets ORDER BY path")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p, sealed string
		if err := rows.Scan(&p, &sealed); err != nil {
			t.Fatal(err)
		}
		for _, s := range plain {
			if strings.Contains(sealed, s) || strings.Contains(p, s) {
				t.Fatalf("the vault row %s holds a plaintext secret", p)
			}
		}
		out = append(out, p)
	}
	return out
}

// stored reads an env var's value and secret_ref columns.
func stored(t *testing.T, f *fixture.API, id string) (value, ref string) {
	t.Helper()
	var r *string
	if err := f.App.DB.R.QueryRow("SELECT value, secret_ref FROM env_vars WHERE id = $1", id).Scan(&value, &r); err != nil {
		t.Fatal(err)
	}
	if r != nil {
		ref = *r
	}
	return value, ref
}

func keysOf(vs []envvars.EnvVar) []string {
	var out []string
	for _, v := range vs {
		p := "*"
		if v.ProjectID != nil {
			p = *v.ProjectID
		}
		out = append(out, p+":"+v.Key)
	}
	return out
}

func orgOf(t *testing.T, c *apitest.Client) string {
	t.Helper()
	return c.Do("GET", "/organization", nil).Map(t)["id"].(string)
}

// member is a plain member of the owner's workspace.
func member(t *testing.T, f *fixture.API, owner *apitest.Client, name string) *apitest.Client {
	t.Helper()
	return f.Member(t, owner, name)
}

// TestEnvVarsSaveListDelete: global and project env vars created, updated
// by key, listed and deleted; a secret one's value is sealed in the vault
// and in no answer, its vault copy replaced on change and removed on
// delete.
func TestEnvVarsSaveListDelete(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		c := f.Owner
		rec := &recorder{t: t}
		const secret = "tok-Sup3r-s3cret-value"
		const secret2 = "tok-an0ther-s3cret-value"
		const moved = "pw-moved-into-the-vault"
		f.App.Remember(secret, secret2, moved)
		ws, org := c.DefaultWorkspace(), orgOf(t, c)
		p1 := f.Project(t, c, "Alpha")
		p2 := f.Project(t, c, "Beta")

		// A global one: the spec's record, exactly.
		level := rec.save(c, obj{"key": "LOG_LEVEL", "value": "debug"})
		if level.ProjectID != nil || level.WorkspaceID != ws || level.OrganizationID != org || level.IsSecret || level.Locked ||
			level.Value != "debug" || !ids.Valid(level.ID) || level.CreatedAt.IsZero() {
			t.Fatalf("created %+v", level)
		}
		// The same key in a project is another env var; scope and
		// workspace_id may say what project_id says.
		alpha := rec.save(c, obj{"key": "LOG_LEVEL", "value": "trace", "project_id": p1, "scope": "project", "workspace_id": ws})
		if alpha.ID == level.ID || alpha.ProjectID == nil || *alpha.ProjectID != p1 || alpha.Value != "trace" {
			t.Fatalf("project env var %+v", alpha)
		}
		rec.save(c, obj{"key": "REGION", "value": "eu", "scope": "global", "project_id": nil})
		rec.save(c, obj{"key": "BETA_ONLY", "value": "multi\nline\ttext\r\n", "project_id": p2})

		// Update by key: same id, same created_at, the new value.
		r := rec.save(c, obj{"key": "LOG_LEVEL", "value": "info"})
		if r.ID != level.ID || !r.CreatedAt.Equal(level.CreatedAt) || r.Value != "info" {
			t.Fatalf("updated %+v, was %+v", r, level)
		}

		// A secret: "" in the answer, sealed in the vault under the env var's id.
		token := rec.save(c, obj{"key": "API_TOKEN", "value": secret, "is_secret": true})
		if !token.IsSecret || token.Value != "" {
			t.Fatalf("secret %+v", token)
		}
		if v, ref := stored(t, f, token.ID); v != "" || !strings.HasPrefix(ref, "envvar."+token.ID+".") {
			t.Fatalf("stored secret: value %q, ref %q", v, ref)
		}
		if paths := vaultRows(t, f, secret); len(paths) != 1 || !strings.HasPrefix(paths[0], ws+"/envvar."+token.ID+".") {
			t.Fatalf("vault %v", paths)
		}
		// A new value replaces the vault copy; the old one is gone.
		_, ref1 := stored(t, f, token.ID)
		if r := rec.save(c, obj{"key": "API_TOKEN", "value": secret2}); r.ID != token.ID || !r.IsSecret || r.Value != "" {
			t.Fatalf("secret changed %+v", r)
		}
		_, ref2 := stored(t, f, token.ID)
		if paths := vaultRows(t, f, secret, secret2); len(paths) != 1 || ref2 == ref1 || paths[0] != ws+"/"+ref2 {
			t.Fatalf("vault after a change %v (ref %s, was %s)", paths, ref2, ref1)
		}
		// No value: the secret stays as it is (an admin locks it).
		if r := rec.save(c, obj{"key": "API_TOKEN", "locked": true}); !r.IsSecret || !r.Locked || r.Value != "" {
			t.Fatalf("locked %+v", r)
		}
		if _, ref := stored(t, f, token.ID); ref != ref2 {
			t.Fatal("a save without a value replaced the secret")
		}
		// Plain → secret moves the stored value into the vault.
		dbURL := rec.save(c, obj{"key": "DB_URL", "value": moved})
		rec.answers.Reset() // that answer held it while plain
		if r := rec.save(c, obj{"key": "DB_URL", "is_secret": true}); !r.IsSecret || r.Value != "" {
			t.Fatalf("made secret %+v", r)
		}
		if v, ref := stored(t, f, dbURL.ID); v != "" || ref == "" {
			t.Fatalf("moved: value %q, ref %q", v, ref)
		}
		if paths := vaultRows(t, f, secret, secret2, moved); len(paths) != 2 {
			t.Fatalf("vault after moving a value %v", paths)
		}
		// Secret → plain needs the value, and drops the vault copy.
		fixture.WantError(t, rec.do(c, "POST", path, obj{"key": "DB_URL", "is_secret": false}), http.StatusBadRequest, "bad_request",
			"value is required to make a secret env var plain")
		if r := rec.save(c, obj{"key": "DB_URL", "is_secret": false, "value": "sqlite://local"}); r.IsSecret || r.Value != "sqlite://local" {
			t.Fatalf("made plain %+v", r)
		}
		if paths := vaultRows(t, f, secret, secret2, moved); len(paths) != 1 {
			t.Fatalf("vault after making one plain %v", paths)
		}

		// Lists: globals first by key, then each project's; with a
		// project, the globals and that project's.
		all := rec.list(c, "")
		first, second := p1, p2
		if second < first {
			first, second = second, first
		}
		want := []string{"*:API_TOKEN", "*:DB_URL", "*:LOG_LEVEL", "*:REGION"}
		for _, p := range []string{first, second} {
			if p == p1 {
				want = append(want, p1+":LOG_LEVEL")
			} else {
				want = append(want, p2+":BETA_ONLY")
			}
		}
		if got := keysOf(all); !slices.Equal(got, want) {
			t.Fatalf("list %v, want %v", got, want)
		}
		for _, v := range all {
			if v.WorkspaceID != ws || v.OrganizationID != org || (v.IsSecret && v.Value != "") {
				t.Fatalf("listed %+v", v)
			}
		}
		if got, want := keysOf(rec.list(c, "?project_id="+p1)), []string{"*:API_TOKEN", "*:DB_URL", "*:LOG_LEVEL", "*:REGION", p1 + ":LOG_LEVEL"}; !slices.Equal(got, want) {
			t.Fatalf("list of a project %v, want %v", got, want)
		}
		fixture.WantError(t, rec.do(c, "GET", path+"?project_id="+ids.New(), nil), http.StatusNotFound, "not_found", "project not found")
		fixture.WantError(t, rec.do(c, "GET", path+"?project_id=nope", nil), http.StatusBadRequest, "bad_request", "project_id")

		// Delete: the row, then its vault copy; a second delete says false.
		del := func(id string) bool {
			r := rec.do(c, "DELETE", path+"/"+id, nil)
			fixture.Want(t, r, http.StatusOK)
			return r.Map(t)["deleted"].(bool)
		}
		if !del(token.ID) || del(token.ID) || del("not-an-id") || !del(alpha.ID) {
			t.Fatal("delete acknowledgements")
		}
		if paths := vaultRows(t, f); len(paths) != 0 {
			t.Fatalf("vault after deleting the last secret %v", paths)
		}
		if got := keysOf(rec.list(c, "?project_id="+p1)); !slices.Equal(got, []string{"*:DB_URL", "*:LOG_LEVEL", "*:REGION"}) {
			t.Fatalf("after deletes %v", got)
		}
		rec.neverAnswered(secret, secret2, moved)
	})
}

// TestEnvVarsResolve: a run's environment is the globals with the
// project's own over them, secrets read from the vault and listed for
// redaction; another workspace's project adds nothing.
func TestEnvVarsResolve(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		c := f.Owner
		rec := &recorder{t: t}
		f.App.Remember("global-s3cret-1", "project-s3cret-2", "override-s3cret-3")
		ws := c.DefaultWorkspace()
		p1 := f.Project(t, c, "Alpha")
		p2 := f.Project(t, c, "Beta")
		for _, b := range []obj{
			{"key": "A", "value": "global a"},
			{"key": "B", "value": "global b"},
			{"key": "S", "value": "global-s3cret-1", "is_secret": true},
			{"key": "A", "value": "alpha a", "project_id": p1},
			{"key": "B", "value": "override-s3cret-3", "is_secret": true, "project_id": p1},
			{"key": "T", "value": "project-s3cret-2", "is_secret": true, "project_id": p1},
			{"key": "C", "value": "beta c", "project_id": p2},
		} {
			rec.save(c, b)
		}
		svc := f.App.Server.Services.EnvVars
		ctx := context.Background()
		resolve := func(ws, project string, wantEnv map[string]string, wantSecrets []string) {
			t.Helper()
			env, secrets, err := svc.Resolve(ctx, nil, ws, project)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(env, wantEnv) || !slices.Equal(secrets, wantSecrets) {
				t.Fatalf("Resolve(%s) = %v %v, want %v %v", project, env, secrets, wantEnv, wantSecrets)
			}
		}
		globals := map[string]string{"A": "global a", "B": "global b", "S": "global-s3cret-1"}
		resolve(ws, "", globals, []string{"global-s3cret-1"})
		resolve(ws, p1, map[string]string{"A": "alpha a", "B": "override-s3cret-3", "S": "global-s3cret-1", "T": "project-s3cret-2"},
			[]string{"override-s3cret-3", "global-s3cret-1", "project-s3cret-2"})
		resolve(ws, p2, map[string]string{"A": "global a", "B": "global b", "C": "beta c", "S": "global-s3cret-1"}, []string{"global-s3cret-1"})
		// Another workspace gets nothing of these, even naming the project.
		resolve(f.Outsider.DefaultWorkspace(), p1, map[string]string{}, []string{})

		// The orphan sweep's question: is a vault name claimed, in its workspace?
		var ref string
		if err := f.App.DB.R.QueryRow("SELECT secret_ref FROM env_vars WHERE workspace_id = $1 AND key = 'S'", ws).Scan(&ref); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			ref  vault.Ref
			want bool
		}{
			{vault.Ref{Workspace: ws, Name: ref}, true},
			{vault.Ref{Workspace: f.Outsider.DefaultWorkspace(), Name: ref}, false},
			{vault.Ref{Workspace: ws, Name: "envvar." + ids.New() + ".abcdef"}, false},
		} {
			if got, err := svc.Claims(ctx, tc.ref); err != nil || got != tc.want {
				t.Fatalf("Claims(%v) = %v, %v; want %v", tc.ref, got, err, tc.want)
			}
		}

		// A secret missing from the vault is a vault_error, not an empty value.
		f.Exec(t, "DELETE FROM vault_secrets WHERE path = $1", ws+"/"+ref)
		_, _, err := svc.Resolve(ctx, nil, ws, p2)
		if ae, ok := apperr.As(err); !ok || ae.Code != apperr.CodeVault || !strings.Contains(ae.Message, "S") {
			t.Fatalf("Resolve with a secret gone: %v", err)
		}
		if errors.Is(err, vault.ErrNotFound) {
			t.Fatal("the vault's own error leaked through")
		}
		rec.neverAnswered("global-s3cret-1", "project-s3cret-2", "override-s3cret-3")
	})
}

// TestEnvVarsLocked: only workspace owners and admins lock, unlock, change
// or delete a locked env var; a member changes the unlocked ones.
func TestEnvVarsLocked(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		rec := &recorder{t: t}
		mo := member(t, f, owner, "Mo Member")
		f.App.Remember("locked-s3cret-value")
		p := f.Project(t, owner, "Alpha")

		region := rec.save(owner, obj{"key": "REGION", "value": "eu", "locked": true})
		token := rec.save(owner, obj{"key": "TOKEN", "value": "locked-s3cret-value", "is_secret": true, "locked": true})
		if !region.Locked || !token.Locked {
			t.Fatalf("locked %+v %+v", region, token)
		}
		// The member sees them (a secret still as "").
		if got := keysOf(rec.list(mo, "")); !slices.Equal(got, []string{"*:REGION", "*:TOKEN"}) {
			t.Fatalf("the member lists %v", got)
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "a member locks a new one", Client: mo, Method: "POST", Path: path, Body: obj{"key": "MINE", "value": "x", "locked": true},
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"only a workspace owner or admin may lock an env var"}},
			{Name: "a member changes a locked one", Client: mo, Method: "POST", Path: path, Body: obj{"key": "REGION", "value": "us"},
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"the env var REGION is locked"}},
			{Name: "a member unlocks one", Client: mo, Method: "POST", Path: path, Body: obj{"key": "REGION", "locked": false},
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"the env var REGION is locked"}},
			{Name: "a member replaces a locked secret", Client: mo, Method: "POST", Path: path, Body: obj{"key": "TOKEN", "value": "mine now"},
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"the env var TOKEN is locked"}},
			{Name: "a member overrides a locked one in a project", Client: mo, Method: "POST", Path: path, Body: obj{"key": "REGION", "value": "us", "project_id": p},
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"the env var REGION is locked"}},
			{Name: "a member deletes a locked one", Client: mo, Method: "DELETE", Path: path + "/" + region.ID,
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"the env var REGION is locked"}},
		})
		if got := rec.list(owner, ""); got[0].Value != "eu" || !got[0].Locked || len(got) != 2 {
			t.Fatalf("after the member's refused requests %+v", got)
		}
		// Unlocked ones are the member's to change and delete.
		mine := rec.save(mo, obj{"key": "MINE", "value": "1", "locked": false})
		if r := rec.save(mo, obj{"key": "MINE", "value": "2"}); r.ID != mine.ID || r.Value != "2" || r.Locked {
			t.Fatalf("the member's update %+v", r)
		}
		rec.save(mo, obj{"key": "MINE", "value": "3", "project_id": p})
		fixture.Want(t, rec.do(mo, "DELETE", path+"/"+mine.ID, nil), http.StatusOK)
		// The owner unlocks; then the member may change it.
		if r := rec.save(owner, obj{"key": "REGION", "locked": false}); r.Locked || r.Value != "eu" {
			t.Fatalf("unlocked %+v", r)
		}
		if r := rec.save(mo, obj{"key": "REGION", "value": "us"}); r.Value != "us" || r.Locked {
			t.Fatalf("the member's change after unlocking %+v", r)
		}
		// An admin locks and deletes.
		if r := rec.save(owner, obj{"key": "REGION", "locked": true}); !r.Locked {
			t.Fatalf("relocked %+v", r)
		}
		fixture.Want(t, rec.do(owner, "DELETE", path+"/"+token.ID, nil), http.StatusOK)
		rec.neverAnswered("locked-s3cret-value")
	})
}

// TestEnvVarsValidation: bad input gets a structured 400 (404 for an
// unknown project) naming what is wrong, and stores nothing, neither a row
// nor a vault secret; an anonymous caller gets 401 whatever it sends.
func TestEnvVarsValidation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		c := f.Owner
		p := f.Project(t, c, "Alpha")
		ws := c.DefaultWorkspace()
		f.App.Remember("vs3cret-never-stored")
		bad := func(name string, body obj, status int, fragments ...string) apitest.Scenario {
			code := map[int]string{400: "bad_request", 404: "not_found"}[status]
			return apitest.Scenario{Name: name, Client: c, Method: "POST", Path: path, Body: body, WantStatus: status, WantCode: code, WantContains: fragments}
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			bad("a key starting with a digit", obj{"key": "1ABC", "value": "x"}, 400, "key must be a letter or _ followed by letters, digits or _"),
			bad("a key with a dash", obj{"key": "MY-KEY", "value": "x"}, 400, "key must be a letter or _ followed by letters, digits or _"),
			bad("a key with a space", obj{"key": "MY KEY", "value": "x"}, 400, "key must be a letter"),
			bad("an empty key", obj{"key": "", "value": "x"}, 400, "body.key"),
			bad("a key too long", obj{"key": "K" + strings.Repeat("_", 128), "value": "x"}, 400, "body.key"),
			bad("a reserved key", obj{"key": "SLIPWAY_TOKEN", "value": "x"}, 400, "keys starting with SLIPWAY_ are reserved"),
			bad("no value", obj{"key": "NEW_ONE"}, 400, "value is required for a new env var"),
			bad("an empty secret", obj{"key": "NEW_ONE", "value": "", "is_secret": true}, 400, "a secret env var needs a value that is not empty"),
			bad("a value over 64 KiB", obj{"key": "BIG", "value": strings.Repeat("€", 22000), "is_secret": true}, 400, "value must be at most 65536 bytes"),
			bad("a value over 65536 characters", obj{"key": "BIG", "value": strings.Repeat("x", 65537)}, 400, "body.value"),
			bad("an escape in the value", obj{"key": "ESC", "value": "a\x1b[2Jb", "is_secret": true}, 400, "value must not contain control characters", "U+001B"),
			bad("DEL in the value", obj{"key": "ESC", "value": "a\x7fb"}, 400, "U+007F"),
			bad("NUL in the value", obj{"key": "NUL", "value": "vs3cret-never-stored\x00"}, 400, "NUL"),
			bad("another workspace", obj{"key": "W", "value": "x", "workspace_id": f.Outsider.DefaultWorkspace()}, 400, "workspace_id is not the active workspace"),
			bad("an unknown workspace", obj{"key": "W", "value": "x", "workspace_id": ids.New()}, 400, "workspace_id is not the active workspace"),
			bad("a malformed workspace_id", obj{"key": "W", "value": "x", "workspace_id": "mine"}, 400, "body.workspace_id"),
			bad("scope global with a project", obj{"key": "S", "value": "x", "scope": "global", "project_id": p}, 400, "scope global takes no project_id"),
			bad("scope project without one", obj{"key": "S", "value": "x", "scope": "project"}, 400, "scope project needs a project_id"),
			bad("an unknown scope", obj{"key": "S", "value": "x", "scope": "team"}, 400, "body.scope"),
			bad("an unknown project", obj{"key": "P", "value": "x", "project_id": ids.New()}, 404, "project not found"),
			bad("a malformed project_id", obj{"key": "P", "value": "x", "project_id": "alpha"}, 400, "body.project_id"),
			bad("a value that is not text", obj{"key": "N", "value": 5}, 400, "body.value"),
			bad("an unknown field", obj{"key": "U", "value": "x", "secret": "vs3cret-never-stored"}, 400, "secret"),
			// Authentication comes first: an anonymous caller learns nothing of the rules.
			{Name: "anonymous", Method: "POST", Path: path, Body: obj{"key": "1bad", "scope": "team"}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous list", Method: "GET", Path: path + "?project_id=bad", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous delete", Method: "DELETE", Path: path + "/" + ids.New(), WantStatus: 401, WantCode: "unauthorized"},
		})
		// An unknown workspace and another one answer alike.
		foreign := c.Do("POST", path, obj{"key": "W", "value": "x", "workspace_id": f.Outsider.DefaultWorkspace()})
		unknown := c.Do("POST", path, obj{"key": "W", "value": "x", "workspace_id": ids.New()})
		if string(foreign.Body) != string(unknown.Body) {
			t.Fatalf("another workspace %s, an unknown one %s", foreign.Body, unknown.Body)
		}
		// workspace_id naming the active workspace is fine.
		fixture.Want(t, c.Do("POST", path, obj{"key": "W", "value": "x", "workspace_id": ws}), http.StatusOK)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM env_vars"); n != 1 {
			t.Fatalf("bad requests stored %d env vars", n-1)
		}
		if paths := vaultRows(t, f, "vs3cret-never-stored"); len(paths) != 0 {
			t.Fatalf("bad requests left secrets in the vault: %v", paths)
		}
	})
}

// TestEnvVarsTenancy: another workspace's env var and project answer
// exactly like unknown ones, and change nothing.
func TestEnvVarsTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		f.App.Remember("tenancy-s3cret-1")
		project := func(t *testing.T, c *apitest.Client) string { return f.Project(t, c, "P "+ids.RandomHex(3)) }
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "list of a project", Method: "GET", Path: path + "?project_id={id}", Create: project},
		})
		// The outsider names the owner's project, or an unknown one: the same 404.
		p := project(t, owner)
		body := func(projectID string) obj {
			return obj{"key": "STOLEN", "value": "x", "project_id": projectID, "scope": "project"}
		}
		foreign := outsider.Do("POST", path, body(p))
		missing := outsider.Do("POST", path, body(ids.New()))
		if foreign.Status != http.StatusNotFound || string(foreign.Body) != string(missing.Body) {
			t.Fatalf("POST with another workspace's project = %d %s; with an unknown one %s", foreign.Status, foreign.Body, missing.Body)
		}
		fixture.Want(t, owner.Do("POST", path, body(p)), http.StatusOK)

		// DELETE: another workspace's env var is {deleted: false}, as an unknown one.
		var victim envvars.EnvVar
		r := owner.Do("POST", path, obj{"key": "SECRET", "value": "tenancy-s3cret-1", "is_secret": true})
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &victim)
		foreign = outsider.Do("DELETE", path+"/"+victim.ID, nil)
		missing = outsider.Do("DELETE", path+"/"+ids.New(), nil)
		if foreign.Status != http.StatusOK || string(foreign.Body) != string(missing.Body) || !strings.Contains(string(foreign.Body), `"deleted":false`) {
			t.Fatalf("DELETE of another workspace's env var = %d %s; of an unknown one %s", foreign.Status, foreign.Body, missing.Body)
		}
		// The outsider's same key is its own; the owner's is untouched.
		r = outsider.Do("POST", path, obj{"key": "SECRET", "value": "theirs"})
		fixture.Want(t, r, http.StatusOK)
		var theirs envvars.EnvVar
		r.JSON(t, &theirs)
		if theirs.ID == victim.ID || theirs.WorkspaceID != outsider.DefaultWorkspace() {
			t.Fatalf("the outsider's save %+v", theirs)
		}
		var mine []envvars.EnvVar
		owner.Do("GET", path, nil).JSON(t, &mine)
		if len(mine) != 2 || mine[0].ID != victim.ID || !mine[0].IsSecret {
			t.Fatalf("the owner's env vars after the outsider's requests: %+v", mine)
		}
		var listed []envvars.EnvVar
		outsider.Do("GET", path, nil).JSON(t, &listed)
		if len(listed) != 1 || listed[0].ID != theirs.ID {
			t.Fatalf("the outsider lists %+v", listed)
		}
		env, _, err := f.App.Server.Services.EnvVars.Resolve(context.Background(), nil, owner.DefaultWorkspace(), p)
		if err != nil || env["SECRET"] != "tenancy-s3cret-1" || env["STOLEN"] != "x" {
			t.Fatalf("the owner's env %v, %v", env, err)
		}
	})
}
