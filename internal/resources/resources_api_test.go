package resources_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/app"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/vault"
	"slipway/internal/platform/vault/kvtest"
	"slipway/internal/resources"
)

// These tests drive the real server over HTTP on both engines.

type obj = map[string]any

var resourceKeys = []string{"id", "name", "kind", "description", "config", "has_secret", "rls_managed", "max_concurrent_uses",
	"created_at", "updated_at", "secret_updated_at"}

func create(t *testing.T, c *apitest.Client, body obj) resources.Resource {
	t.Helper()
	r := c.Do("POST", "/api/resources", body)
	fixture.Want(t, r, http.StatusCreated)
	if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, resourceKeys) {
		t.Fatalf("resource keys = %v, want %v", keys, resourceKeys)
	}
	var out resources.Resource
	r.JSON(t, &out)
	return out
}

// secretsStored counts the vault rows of the env backend, and checks that
// none of them holds any of the plaintexts.
func secretsStored(t *testing.T, f *fixture.API, plain ...string) int {
	t.Helper()
	rows, err := f.App.DB.R.Query("SELECT path, sealed FROM vault_secrets")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var path, sealed string
		if err := rows.Scan(&path, &sealed); err != nil {
			t.Fatal(err)
		}
		for _, p := range plain {
			if strings.Contains(sealed, p) || strings.Contains(path, p) {
				t.Fatalf("the vault row %s holds a plaintext secret", path)
			}
		}
		n++
	}
	return n
}

func pg(host string) obj {
	return obj{"host": host, "port": 5432, "database": "app", "user": "reader", "sslmode": "disable"}
}

// TestResourcesCRUD: create, read, list, board, change, clear and delete,
// with the secret in the vault only and never in an answer.
func TestResourcesCRUD(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		c := f.Owner
		const secret = "pw-Sup3r-s3cret-value"
		const secret2 = "pw-an0ther-s3cret-value"
		f.App.Remember(secret, secret2)
		var answers strings.Builder
		do := func(method, path string, body any) *apitest.Response {
			r := c.Do(method, path, body)
			answers.Write(r.Body)
			return r
		}

		// The kinds and their schemas.
		r := do("GET", "/api/resource-kinds", nil)
		fixture.Want(t, r, http.StatusOK)
		var kinds []resources.ResourceKind
		r.JSON(t, &kinds)
		var slugs []string
		for _, k := range kinds {
			slugs = append(slugs, k.Slug)
			var schema map[string]any
			if err := json.Unmarshal(k.ConfigSchema, &schema); err != nil || schema["type"] != "object" || k.Secret == "" {
				t.Fatalf("kind %s: schema %s, secret %q", k.Slug, k.ConfigSchema, k.Secret)
			}
		}
		if want := []string{"postgresql", "http", "api_key", "smtp", "imap", "discord", "telegram", "seafile_webdav", "openai_compatible", "github", "gitlab", "gitea", "forgejo", "s3"}; !slices.Equal(slugs, want) {
			t.Fatalf("kinds %v, want %v", slugs, want)
		}

		db1 := create(t, c, obj{"name": "Warehouse", "kind": "postgresql", "description": "reporting\ndatabase", "config": pg("db.internal"),
			"secret": secret, "rls_managed": true})
		if !db1.HasSecret || !db1.RLSManaged || db1.SecretUpdatedAt == nil || db1.MaxConcurrentUses != nil || db1.Description != "reporting\ndatabase" {
			t.Fatalf("created %+v", db1)
		}
		if n := secretsStored(t, f, secret); n != 1 {
			t.Fatalf("%d vault rows, want 1", n)
		}
		hook := create(t, c, obj{"name": "Hooks API", "kind": "http", "config": obj{"base_url": "https://api.example.com/v1", "auth": "none"}})
		if hook.HasSecret || hook.SecretUpdatedAt != nil {
			t.Fatalf("a resource without a secret: %+v", hook)
		}
		create(t, c, obj{"name": "Alerts", "kind": "telegram", "config": obj{"default_chat_id": "42"}, "secret": "123456:bot-token-abcdef"})
		f.App.Remember("123456:bot-token-abcdef")

		// Read, list, filter.
		r = do("GET", "/api/resources/"+db1.ID, nil)
		fixture.Want(t, r, http.StatusOK)
		var got resources.Resource
		r.JSON(t, &got)
		var config obj
		if err := json.Unmarshal(got.Config, &config); err != nil || got.Name != "Warehouse" || !got.HasSecret ||
			!reflect.DeepEqual(config, obj{"database": "app", "host": "db.internal", "port": 5432.0, "sslmode": "disable", "user": "reader"}) {
			t.Fatalf("GET %s", r.Body)
		}
		names := func(path string) []string {
			t.Helper()
			r := do("GET", path, nil)
			fixture.Want(t, r, http.StatusOK)
			var rs []resources.Resource
			r.JSON(t, &rs)
			var out []string
			for _, x := range rs {
				out = append(out, x.Name)
			}
			return out
		}
		if got := names("/api/resources"); !slices.Equal(got, []string{"Alerts", "Hooks API", "Warehouse"}) {
			t.Fatalf("list %v", got)
		}
		if got := names("/api/resources?kind=postgresql"); !slices.Equal(got, []string{"Warehouse"}) {
			t.Fatalf("kind filter %v", got)
		}
		fixture.WantError(t, do("GET", "/api/resources?kind=oracle", nil), http.StatusBadRequest, "bad_request", "kind must be one of")

		// The board: search, facet, pages.
		r = do("GET", "/api/resources/board?q=ware&page_size=1", nil)
		fixture.Want(t, r, http.StatusOK)
		var b struct {
			Rows   []resources.Resource        `json:"rows"`
			Total  int                         `json:"total"`
			Facets map[string][]map[string]any `json:"facets"`
		}
		r.JSON(t, &b)
		if b.Total != 1 || len(b.Rows) != 1 || b.Rows[0].ID != db1.ID || len(b.Facets["kind"]) != 1 || b.Facets["kind"][0]["label"] != "PostgreSQL" {
			t.Fatalf("board %s", r.Body)
		}
		r = do("GET", "/api/resources/board?sort=kind&order=desc&page_size=2&page=2", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &b)
		if b.Total != 3 || len(b.Rows) != 1 || b.Rows[0].Kind != "http" {
			t.Fatalf("board page 2 by kind desc %s", r.Body)
		}

		// Changes. A rename and a description keep the secret.
		r = do("PUT", "/api/resources/"+db1.ID, obj{"name": "Warehouse EU", "description": ""})
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &got)
		if got.Name != "Warehouse EU" || !got.HasSecret || !got.SecretUpdatedAt.Equal(*db1.SecretUpdatedAt) {
			t.Fatalf("renamed %+v", got)
		}
		// Moving the secret elsewhere needs the secret again.
		fixture.WantError(t, do("PUT", "/api/resources/"+db1.ID, obj{"config": pg("attacker.example")}), http.StatusBadRequest, "bad_request",
			"requires sending the secret again")
		// The same address with other settings is fine.
		other := pg("db.internal")
		other["user"] = "writer"
		fixture.Want(t, do("PUT", "/api/resources/"+db1.ID, obj{"config": other}), http.StatusOK)
		// A new secret replaces the old one in the vault.
		r = do("PUT", "/api/resources/"+db1.ID, obj{"config": pg("db2.internal"), "secret": secret2})
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &got)
		if !got.HasSecret || !got.SecretUpdatedAt.After(*db1.SecretUpdatedAt) {
			t.Fatalf("after a new secret %+v", got)
		}
		if n := secretsStored(t, f, secret, secret2); n != 2 {
			t.Fatalf("%d vault rows after replacing one, want 2 (the bot token and the new one)", n)
		}
		// "" clears it.
		r = do("PUT", "/api/resources/"+db1.ID, obj{"secret": ""})
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &got)
		if got.HasSecret || got.SecretUpdatedAt != nil {
			t.Fatalf("after clearing %+v", got)
		}
		if n := secretsStored(t, f); n != 1 {
			t.Fatalf("%d vault rows after clearing, want 1", n)
		}
		// Without a secret, the address may move.
		fixture.Want(t, do("PUT", "/api/resources/"+db1.ID, obj{"config": pg("db3.internal")}), http.StatusOK)

		// Concurrency.
		r = do("PATCH", "/api/resources/"+hook.ID+"/concurrency", obj{"max_concurrent_uses": 3})
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &got)
		if got.MaxConcurrentUses == nil || *got.MaxConcurrentUses != 3 {
			t.Fatalf("concurrency %s", r.Body)
		}
		r = do("PATCH", "/api/resources/"+hook.ID+"/concurrency", obj{"max_concurrent_uses": nil})
		fixture.Want(t, r, http.StatusOK)
		if r.JSON(t, &got); got.MaxConcurrentUses != nil {
			t.Fatalf("unlimited %s", r.Body)
		}
		if r := do("PATCH", "/api/resources/"+hook.ID+"/concurrency", obj{"max_concurrent_uses": 0}); r.Status < 400 || r.Status >= 500 {
			t.Fatalf("0 uses: %d %s", r.Status, r.Body)
		}
		if r := do("PATCH", "/api/resources/"+hook.ID+"/concurrency", obj{}); r.Status < 400 || r.Status >= 500 {
			t.Fatalf("no field: %d %s", r.Status, r.Body)
		}

		// Usage: the workflows whose nodes name a resource.
		p := f.Project(t, c, "Reports")
		r = do("POST", "/api/workflows", obj{"project_id": p, "name": "Nightly report",
			"nodes": []obj{{"key": "q", "kind": "db_query", "config": obj{"resource_id": db1.ID, "sql": "SELECT 1"}},
				{"key": "e", "kind": "end", "config": obj{}}},
			"edges": []obj{{"source": "q", "target": "e"}}})
		fixture.Want(t, r, http.StatusCreated)
		wfID := r.Map(t)["id"].(string)
		r = do("GET", "/api/resources/"+db1.ID+"/usage", nil)
		fixture.Want(t, r, http.StatusOK)
		var u resources.ResourceUsage
		r.JSON(t, &u)
		if len(u.Workflows) != 1 || u.Workflows[0].WorkflowID != wfID || !slices.Equal(u.Workflows[0].NodeKeys, []string{"q"}) {
			t.Fatalf("usage %s", r.Body)
		}
		r = do("GET", "/api/resources/usage", nil)
		fixture.Want(t, r, http.StatusOK)
		var all []resources.ResourceUsage
		r.JSON(t, &all)
		if len(all) != 3 {
			t.Fatalf("usage of all %s", r.Body)
		}
		for _, x := range all {
			if want := map[bool]int{true: 1, false: 0}[x.ResourceID == db1.ID]; len(x.Workflows) != want {
				t.Fatalf("usage of %s: %s", x.Name, r.Body)
			}
		}

		// Delete: the row, then the vault's copy; a second delete says false.
		del := func(id string) bool {
			r := do("DELETE", "/api/resources/"+id, nil)
			fixture.Want(t, r, http.StatusOK)
			return r.Map(t)["deleted"].(bool)
		}
		alerts := names("/api/resources?kind=telegram")
		if len(alerts) != 1 {
			t.Fatal(alerts)
		}
		var tg []resources.Resource
		do("GET", "/api/resources?kind=telegram", nil).JSON(t, &tg)
		if !del(tg[0].ID) || del(tg[0].ID) || del("not-an-id") {
			t.Fatal("delete acknowledgements")
		}
		if n := secretsStored(t, f); n != 0 {
			t.Fatalf("%d vault rows after deleting the last resource with a secret", n)
		}
		fixture.WantError(t, do("GET", "/api/resources/"+tg[0].ID, nil), http.StatusNotFound, "not_found")

		for _, s := range []string{secret, secret2, "bot-token-abcdef"} {
			if strings.Contains(answers.String(), s) {
				t.Fatalf("an answer held the secret %q", s)
			}
		}
	})
}

// TestResourcesValidation: bad input gets a structured 400 (or 409 for a
// taken name) and stores nothing, neither a row nor a vault secret.
func TestResourcesValidation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		c := f.Owner
		create(t, c, obj{"name": "Taken", "kind": "http", "config": obj{"base_url": "https://x.example"}})
		for _, tc := range []struct {
			name      string
			body      obj
			status    int
			fragments []string
		}{
			{"unknown kind", obj{"name": "a", "kind": "oracle", "config": obj{}}, 400, []string{"kind must be one of"}},
			{"missing host", obj{"name": "a", "kind": "postgresql", "config": obj{"database": "d", "user": "u"}, "secret": "x-secret-1"}, 400, []string{"host"}},
			{"unknown config field", obj{"name": "a", "kind": "http", "config": obj{"base_url": "https://x.example", "password": "p"}}, 400, []string{"password"}},
			{"a port out of range", obj{"name": "a", "kind": "smtp", "config": obj{"host": "mx", "port": 70000, "from": "a@b.example"}}, 400, []string{"port"}},
			{"credentials in a URL", obj{"name": "a", "kind": "http", "config": obj{"base_url": "https://u:p@x.example"}, "secret": "x-secret-1"}, 400, []string{"user name or password"}},
			{"a non-http URL", obj{"name": "a", "kind": "openai_compatible", "config": obj{"base_url": "file:///etc/passwd"}}, 400, []string{"http or https"}},
			{"rls on http", obj{"name": "a", "kind": "http", "config": obj{"base_url": "https://x.example"}, "rls_managed": true}, 400, []string{"postgresql"}},
			{"a control character", obj{"name": "a\x1bb", "kind": "http", "config": obj{"base_url": "https://x.example"}}, 400, []string{"U+001B"}},
			{"an empty name", obj{"name": "  ", "kind": "http", "config": obj{"base_url": "https://x.example"}}, 400, []string{"name"}},
			{"a taken name", obj{"name": "Taken", "kind": "http", "config": obj{"base_url": "https://y.example"}, "secret": "x-secret-1"}, 409, []string{"Taken"}},
			{"NUL in the secret", obj{"name": "a", "kind": "http", "config": obj{"base_url": "https://x.example"}, "secret": "a\x00b"}, 400, []string{"NUL"}},
			{"an unknown body field", obj{"name": "a", "kind": "http", "config": obj{"base_url": "https://x.example"}, "owner": "me"}, 400, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := c.Do("POST", "/api/resources", tc.body)
				code := map[int]string{400: "bad_request", 409: "conflict"}[tc.status]
				fixture.WantError(t, r, tc.status, code, tc.fragments...)
			})
		}
		var rs []resources.Resource
		c.Do("GET", "/api/resources", nil).JSON(t, &rs)
		if len(rs) != 1 {
			t.Fatalf("bad requests stored %d resources", len(rs)-1)
		}
		if n := secretsStored(t, f); n != 0 {
			t.Fatalf("bad requests left %d secrets in the vault", n)
		}
		// Unauthenticated: 401 before any validation.
		fixture.WantError(t, f.App.Anonymous().Do("POST", "/api/resources", obj{"kind": "oracle"}), http.StatusUnauthorized, "unauthorized")
	})
}

// TestResourcesTenancy: another workspace's resource answers exactly like
// an unknown one on every route, and its secret is out of reach.
func TestResourcesTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		mk := func(t *testing.T, c *apitest.Client) string {
			return create(t, c, obj{"name": "R " + ids.New(), "kind": "http", "config": obj{"base_url": "https://x.example"}, "secret": "tenancy-secret-1"}).ID
		}
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "GET", Method: "GET", Path: "/api/resources/{id}", Create: mk},
			{Name: "PUT", Method: "PUT", Path: "/api/resources/{id}", Body: obj{"name": "mine now"}, Create: mk},
			{Name: "PATCH concurrency", Method: "PATCH", Path: "/api/resources/{id}/concurrency", Body: obj{"max_concurrent_uses": 1}, Create: mk},
			{Name: "usage", Method: "GET", Path: "/api/resources/{id}/usage", Create: mk},
		})
		victim := mk(t, owner)
		foreign := outsider.Do("DELETE", "/api/resources/"+victim, nil)
		missing := outsider.Do("DELETE", "/api/resources/"+ids.New(), nil)
		if foreign.Status != http.StatusOK || string(foreign.Body) != string(missing.Body) || !strings.Contains(string(foreign.Body), `"deleted":false`) {
			t.Fatalf("DELETE of a foreign resource = %d %s; of an unknown one %s", foreign.Status, foreign.Body, missing.Body)
		}
		fixture.Want(t, owner.Do("GET", "/api/resources/"+victim, nil), http.StatusOK)
		var theirs []resources.Resource
		outsider.Do("GET", "/api/resources", nil).JSON(t, &theirs)
		if len(theirs) != 0 {
			t.Fatalf("the outsider lists %d resources", len(theirs))
		}
	})
}

// TestResourcesOnOpenBao: with BAO_ADDR and a token set, secrets go to the
// OpenBao KV v2 engine under the prefix; a vault failure is a vault_error
// that leaves no row behind.
func TestResourcesOnOpenBao(t *testing.T) {
	bao := kvtest.New(t, kvtest.Options{Token: "bao-root-token-1"})
	f := fixture.NewAPI(t, db.SQLite, "BAO_ADDR", bao.URL, "BAO_TOKEN", "bao-root-token-1")
	f.App.Remember("bao-root-token-1", "bao-kept-secret")
	c := f.Owner
	r := create(t, c, obj{"name": "Bot", "kind": "discord", "config": obj{}, "secret": "bao-kept-secret"})
	paths := bao.Paths()
	if len(paths) != 1 || !strings.HasPrefix(paths[0], "slipway/"+c.DefaultWorkspace()+"/resource."+r.ID+".") {
		t.Fatalf("OpenBao holds %v", paths)
	}
	if n := secretsStored(t, f); n != 0 {
		t.Fatalf("the env backend holds %d secrets with OpenBao configured", n)
	}
	bao.Fail(1)
	fixture.WantError(t, c.Do("POST", "/api/resources", obj{"name": "Bot 2", "kind": "discord", "config": obj{}, "secret": "bao-kept-secret"}),
		http.StatusInternalServerError, "vault_error")
	var rs []resources.Resource
	c.Do("GET", "/api/resources", nil).JSON(t, &rs)
	if len(rs) != 1 {
		t.Fatalf("a vault failure left %d resources", len(rs))
	}
	fixture.Want(t, c.Do("DELETE", "/api/resources/"+r.ID, nil), http.StatusOK)
	if paths := bao.Paths(); len(paths) != 0 {
		t.Fatalf("after delete OpenBao holds %v", paths)
	}
}

// TestInstanceKeysFromTheVault: LLM_PROVIDER_API_KEY and
// SPEECH_PROVIDER_API_KEY, unset, are read from the vault (OpenBao's
// <prefix>/instance/<name>); set, the env wins.
func TestInstanceKeysFromTheVault(t *testing.T) {
	bao := kvtest.New(t, kvtest.Options{Token: "bao-root-token-2"})
	client, err := vault.NewOpenBao(vault.OpenBaoConfig{Addr: bao.URL, Token: "bao-root-token-2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Put(context.Background(), vault.Ref{Workspace: "instance", Name: app.InstanceLLMKey}, "sk-from-the-vault-1"); err != nil {
		t.Fatal(err)
	}
	f := fixture.NewAPI(t, db.SQLite, "BAO_ADDR", bao.URL, "BAO_TOKEN", "bao-root-token-2")
	f.App.Remember("sk-from-the-vault-1")
	if got := f.App.Server.Services.Resources.LLMKey; got != "sk-from-the-vault-1" {
		t.Fatalf("LLM key %q, want the vault's", got)
	}
	g := fixture.NewAPI(t, db.SQLite, "BAO_ADDR", bao.URL, "BAO_TOKEN", "bao-root-token-2", "LLM_PROVIDER_API_KEY", "sk-from-the-env-2")
	if got := g.App.Server.Services.Resources.LLMKey; got != "sk-from-the-env-2" {
		t.Fatalf("LLM key %q, want the env's", got)
	}
}

// TestResourcesPerWorkspaceBound: a workspace holds at most
// MaxPerWorkspace resources; the next one is a 400 that stores nothing.
func TestResourcesPerWorkspaceBound(t *testing.T) {
	f := fixture.NewAPI(t, db.SQLite)
	c := f.Owner
	ws := c.DefaultWorkspace()
	for i := range resources.MaxPerWorkspace {
		f.Exec(t, `INSERT INTO resources (id, workspace_id, name, kind, config, created_at, updated_at) VALUES ($1, $2, $3, 'http', '{"base_url":"https://x.example"}', $4, $4)`,
			ids.New(), ws, "R"+strconv.Itoa(i), time.Now().UTC())
	}
	fixture.WantError(t, c.Do("POST", "/api/resources", obj{"name": "One more", "kind": "http", "config": obj{"base_url": "https://x.example"}, "secret": "one-more-secret"}),
		http.StatusBadRequest, "bad_request", "at most 1000 resources")
	if n := f.App.Count(t, "SELECT COUNT(*) FROM resources WHERE workspace_id = $1", ws); n != resources.MaxPerWorkspace {
		t.Fatalf("%d resources", n)
	}
	if n := f.App.Count(t, "SELECT COUNT(*) FROM vault_secrets"); n != 0 {
		t.Fatalf("the refused create left %d secrets in the vault", n)
	}
	// Another workspace is not bound by this one's.
	create(t, f.Outsider, obj{"name": "Theirs", "kind": "http", "config": obj{"base_url": "https://x.example"}})
}
