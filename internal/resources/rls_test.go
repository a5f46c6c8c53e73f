package resources_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/resources"
	"slipway/internal/workflows"
)

// TestRowLevelSecurity against the machine's PostgreSQL: two workspaces
// provision their roles in one shared database; each role sees and writes
// only its workspace's rows; two refreshes at once leave one role; a
// workspace's own tables go to its schema; deleting the resource drops the
// role (its schema stays with the data).
func TestRowLevelSecurity(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		config, target := targetDatabase(t)
		if _, err := target.Exec(`CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, workspace_id UUID NOT NULL, body TEXT NOT NULL);
			CREATE TABLE settings (name TEXT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		owner, outsider := f.Owner, f.Outsider
		wsA, wsB := owner.DefaultWorkspace(), outsider.DefaultWorkspace()
		roleOf := func(ws string) string { return "slipway_ws_" + strings.ReplaceAll(ws, "-", "") }
		t.Cleanup(func() {
			for _, ws := range []string{wsA, wsB} {
				_, _ = target.Exec("DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + roleOf(ws) + "') THEN " +
					"EXECUTE 'REASSIGN OWNED BY " + roleOf(ws) + " TO CURRENT_USER'; EXECUTE 'DROP OWNED BY " + roleOf(ws) + "'; EXECUTE 'DROP ROLE " + roleOf(ws) + "'; END IF; END $$")
			}
		})
		if _, err := target.Exec("INSERT INTO notes (workspace_id, body) VALUES ($1, 'a1'), ($1, 'a2'), ($2, 'b1')", wsA, wsB); err != nil {
			t.Fatal(err)
		}
		const password = "pg-admin-password-x6"
		f.App.Remember(password)
		resA := create(t, owner, obj{"name": "Shared", "kind": "postgresql", "config": config, "secret": password, "rls_managed": true})
		resB := create(t, outsider, obj{"name": "Shared too", "kind": "postgresql", "config": config, "secret": password, "rls_managed": true})

		status := func(c *apitest.Client, id string) resources.RLSStatus {
			t.Helper()
			r := c.Do("GET", "/api/resources/"+id+"/rls_status", nil)
			fixture.Want(t, r, http.StatusOK)
			var st resources.RLSStatus
			r.JSON(t, &st)
			return st
		}
		r := owner.Do("GET", "/api/resources/"+resA.ID+"/rls_status", nil)
		fixture.Want(t, r, http.StatusOK)
		if got := string(r.Body); !strings.Contains(got, `"status":"unprovisioned"`) || !strings.Contains(got, `"role_name":null`) ||
			!strings.Contains(got, `"schema_name":null`) || !strings.Contains(got, `"provisioned_at":null`) {
			t.Fatalf("before a refresh: %s", got)
		}

		// Two refreshes at once: both succeed, one role.
		var wg sync.WaitGroup
		answers := make([]*apitest.Response, 2)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = owner.Do("POST", "/api/resources/"+resA.ID+"/rls_refresh", nil)
			}()
		}
		wg.Wait()
		for _, a := range answers {
			fixture.Want(t, a, http.StatusOK)
			var st resources.RLSStatus
			a.JSON(t, &st)
			if st.Status != "provisioned" || st.RoleName == nil || *st.RoleName != roleOf(wsA) || st.Policies != 1 {
				t.Fatalf("refresh: %s", a.Body)
			}
		}
		var roles int
		if err := target.QueryRow("SELECT COUNT(*) FROM pg_roles WHERE rolname = $1", roleOf(wsA)).Scan(&roles); err != nil || roles != 1 {
			t.Fatalf("%d roles after two refreshes, %v", roles, err)
		}
		fixture.Want(t, outsider.Do("POST", "/api/resources/"+resB.ID+"/rls_refresh", nil), http.StatusOK)
		if st := status(owner, resA.ID); st.Status != "provisioned" || st.SchemaName == nil || *st.SchemaName != "ws_"+strings.ReplaceAll(wsA, "-", "") {
			t.Fatalf("status %+v", st)
		}

		// Each workspace's nodes see only its rows and cannot write another's.
		run := func(c *apitest.Client, res string, nodes ...obj) *workflows.RunView {
			t.Helper()
			var edges []obj
			for i := 1; i < len(nodes); i++ {
				edges = append(edges, obj{"source": nodes[i-1]["key"], "target": nodes[i]["key"]})
			}
			r := c.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, c, "P "+ids.New()), "name": "RLS", "nodes": nodes, "edges": edges})
			fixture.Want(t, r, http.StatusCreated)
			return f.RunWorkflow(t, c, r.Map(t)["id"].(string), obj{})
		}
		read := func(c *apitest.Client, res string) []string {
			t.Helper()
			v := run(c, res, obj{"key": "q", "kind": "db_query", "config": obj{"resource_id": res, "sql": "SELECT body FROM notes ORDER BY body"}},
				obj{"key": "e", "kind": "end", "config": obj{"output": "nodes.q.output.rows"}})
			if v.Status != workflows.RunSucceeded {
				t.Fatalf("read: %s", v.Error)
			}
			var rows []map[string]string
			_ = json.Unmarshal(v.Output, &rows)
			var out []string
			for _, r := range rows {
				out = append(out, r["body"])
			}
			return out
		}
		if got := strings.Join(read(owner, resA.ID), ","); got != "a1,a2" {
			t.Fatalf("workspace A sees %q", got)
		}
		if got := strings.Join(read(outsider, resB.ID), ","); got != "b1" {
			t.Fatalf("workspace B sees %q", got)
		}
		v := run(owner, resA.ID, obj{"key": "w", "kind": "db_execute", "config": obj{"resource_id": resA.ID,
			"sql": "INSERT INTO notes (workspace_id, body) VALUES ($1, 'smuggled')", "params": []any{wsB}}})
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "row-level security policy") {
			t.Fatalf("writing another workspace's row: %s %q", v.Status, v.Error)
		}
		v = run(owner, resA.ID, obj{"key": "w", "kind": "db_query", "config": obj{"resource_id": resA.ID, "sql": "SELECT name FROM settings"}})
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "permission denied") {
			t.Fatalf("a table without workspace_id: %s %q", v.Status, v.Error)
		}
		// Its own tables go to its schema.
		v = run(owner, resA.ID, obj{"key": "w", "kind": "db_execute", "config": obj{"resource_id": resA.ID, "sql": "CREATE TABLE mine (x INT)"}})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("create in its schema: %s", v.Error)
		}
		var schema string
		if err := target.QueryRow("SELECT schemaname FROM pg_tables WHERE tablename = 'mine'").Scan(&schema); err != nil || schema != "ws_"+strings.ReplaceAll(wsA, "-", "") {
			t.Fatalf("mine is in %q (%v)", schema, err)
		}
		r = owner.Do("GET", "/api/db-namespaces", nil)
		fixture.Want(t, r, http.StatusOK)
		if got := string(r.Body); got != `[{"handle":"Shared","schema":"ws_`+strings.ReplaceAll(wsA, "-", "")+`"}]`+"\n" && got != `[{"handle":"Shared","schema":"ws_`+strings.ReplaceAll(wsA, "-", "")+`"}]` {
			t.Fatalf("namespaces %s", got)
		}

		// Only postgresql with rls_managed is provisioned.
		plain := create(t, owner, obj{"name": "Plain", "kind": "postgresql", "config": config, "secret": password})
		hook := create(t, owner, obj{"name": "Hook", "kind": "http", "config": obj{"base_url": "https://x.example"}})
		for _, id := range []string{plain.ID, hook.ID} {
			fixture.WantError(t, owner.Do("POST", "/api/resources/"+id+"/rls_refresh", nil), http.StatusBadRequest, "bad_request", "rls_managed")
		}
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "rls_status", Method: "GET", Path: "/api/resources/{id}/rls_status", Create: func(t *testing.T, c *apitest.Client) string { return resA.ID }},
			{Name: "rls_refresh", Method: "POST", Path: "/api/resources/{id}/rls_refresh", Create: func(t *testing.T, c *apitest.Client) string { return resA.ID }},
		})

		// Deleting the resource drops the role; the schema and its table stay.
		fixture.Want(t, owner.Do("DELETE", "/api/resources/"+resA.ID, nil), http.StatusOK)
		if err := target.QueryRow("SELECT COUNT(*) FROM pg_roles WHERE rolname = $1", roleOf(wsA)).Scan(&roles); err != nil || roles != 0 {
			t.Fatalf("%d roles after delete, %v", roles, err)
		}
		var kept int
		if err := target.QueryRow("SELECT COUNT(*) FROM pg_tables WHERE tablename = 'mine'").Scan(&kept); err != nil || kept != 1 {
			t.Fatalf("the workspace's table after delete: %d, %v", kept, err)
		}
		if got := strings.Join(read(outsider, resB.ID), ","); got != "b1" {
			t.Fatalf("workspace B after A left sees %q", got)
		}
		if where := f.App.Holding(t, password); len(where) > 0 {
			t.Fatalf("the database holds the password in %v", where)
		}
	})
}
