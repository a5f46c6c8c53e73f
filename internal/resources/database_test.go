package resources_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/workflows"
)

// targetDatabase makes a PostgreSQL database on the machine's server for
// a postgresql resource to reach, with a table of orders; it returns the
// resource config and a handle to check what the nodes did.
func targetDatabase(t *testing.T) (obj, *sql.DB) {
	t.Helper()
	admin := dbtest.RequirePostgres(t)
	adm, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })
	name := "slipway_target_" + strings.ReplaceAll(ids.New(), "-", "")[:16]
	if _, err := adm.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	target, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		target.Close()
		_, _ = adm.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	if _, err := target.Exec(`CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, customer TEXT NOT NULL, total NUMERIC(10,2) NOT NULL,
		placed_at TIMESTAMPTZ NOT NULL DEFAULT '2026-11-26T08:00:00Z', ref UUID NOT NULL DEFAULT '7e57d004-2b97-4e7a-b45e-5a16fd5f2a10')`); err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	user := u.User.Username()
	return obj{"host": host, "port": json.Number(port), "database": name, "user": user, "sslmode": "disable"}, target
}

// TestDatabaseNodes: db_execute and db_query against a real PostgreSQL,
// with parameters that are data (never SQL), a read-only query, row and
// time caps, and errors as the database says them.
func TestDatabaseNodes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		config, target := targetDatabase(t)
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		const password = "pg-resource-password-x5"
		f.App.Remember(password)
		c := f.Owner
		res := create(t, c, obj{"name": "Shop DB", "kind": "postgresql", "config": config, "secret": password})
		project := f.Project(t, c, "Shop")
		workflow := func(nodes ...obj) string {
			t.Helper()
			var edges []obj
			for i := 1; i < len(nodes); i++ {
				edges = append(edges, obj{"source": nodes[i-1]["key"], "target": nodes[i]["key"]})
			}
			r := c.Do("POST", "/api/workflows", obj{"project_id": project, "name": "W " + ids.New(), "nodes": nodes, "edges": edges})
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}

		hostile := "Robert'); DROP TABLE orders; --"
		wf := workflow(
			obj{"key": "add", "kind": "db_execute", "config": obj{"resource_id": res.ID,
				"sql":    "INSERT INTO orders (customer, total) VALUES ($1, $2), ($3, $4), ($5, $6)",
				"params": []any{"{{ input.who }}", 12.5, "Ada", 7, "Grace", 30.25}}},
			obj{"key": "top", "kind": "db_query", "config": obj{"resource_id": res.ID,
				"sql": "SELECT id, customer, total, placed_at, ref FROM orders WHERE total > $1 ORDER BY total DESC", "params": []any{"{{ input.min }}"}, "max_rows": 2}},
			obj{"key": "end", "kind": "end", "config": obj{"output": `{"added": nodes.add.output, "top": nodes.top.output}`}},
		)
		v := f.RunWorkflow(t, c, wf, obj{"who": hostile, "min": 5})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s", v.Status, v.Error)
		}
		var out struct {
			Added struct {
				RowsAffected int    `json:"rows_affected"`
				Command      string `json:"command"`
			} `json:"added"`
			Top struct {
				Rows      []map[string]any `json:"rows"`
				RowCount  int              `json:"row_count"`
				Columns   []string         `json:"columns"`
				Truncated bool             `json:"truncated"`
			} `json:"top"`
		}
		if err := json.Unmarshal(v.Output, &out); err != nil {
			t.Fatal(err)
		}
		if out.Added.RowsAffected != 3 || out.Added.Command != "INSERT 0 3" {
			t.Fatalf("db_execute output %s", v.Output)
		}
		if out.Top.RowCount != 2 || !out.Top.Truncated || strings.Join(out.Top.Columns, ",") != "id,customer,total,placed_at,ref" {
			t.Fatalf("db_query output %s", v.Output)
		}
		first := out.Top.Rows[0]
		if first["customer"] != "Grace" || first["total"] != 30.25 || first["placed_at"] != "2026-11-26T08:00:00Z" || first["ref"] != "7e57d004-2b97-4e7a-b45e-5a16fd5f2a10" {
			t.Fatalf("first row %v", first)
		}
		// The hostile name is a row, and the table is still there.
		var n int
		if err := target.QueryRow("SELECT COUNT(*) FROM orders WHERE customer = $1", hostile).Scan(&n); err != nil || n != 1 {
			t.Fatalf("the hostile parameter: %d rows, %v", n, err)
		}

		for _, tc := range []struct {
			name string
			node obj
			want string
		}{
			{"a write in db_query", obj{"key": "q", "kind": "db_query", "config": obj{"resource_id": res.ID, "sql": "DELETE FROM orders"}},
				"cannot execute DELETE in a read-only transaction (SQLSTATE 25006); db_query runs read-only: use db_execute"},
			{"two statements", obj{"key": "q", "kind": "db_execute", "config": obj{"resource_id": res.ID, "sql": "DELETE FROM orders WHERE id = $1; DROP TABLE orders", "params": []any{1}}},
				"cannot insert multiple commands into a prepared statement"},
			{"the time cap", obj{"key": "q", "kind": "db_query", "config": obj{"resource_id": res.ID, "sql": "SELECT pg_sleep(5)", "timeout_seconds": 1}},
				"canceling statement due to statement timeout (SQLSTATE 57014)"},
			{"a wrong table", obj{"key": "q", "kind": "db_query", "config": obj{"resource_id": res.ID, "sql": "SELECT * FROM nothing"}},
				`relation "nothing" does not exist`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				v := f.RunWorkflow(t, c, workflow(tc.node), obj{})
				if v.Status != workflows.RunFailed || !strings.Contains(v.Error, tc.want) || !strings.Contains(v.Error, `postgresql "Shop DB"`) {
					t.Fatalf("%s %q, want it to name %q", v.Status, v.Error, tc.want)
				}
			})
		}
		if err := target.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil || n != 3 {
			t.Fatalf("after the failures: %d orders, %v", n, err)
		}

		// A resource that cannot reach its database fails the node and says
		// why, without the password.
		bad := create(t, c, obj{"name": "Gone DB", "kind": "postgresql", "config": obj{"host": "127.0.0.1", "port": 1, "database": "x", "user": "u", "sslmode": "disable"}, "secret": password})
		v = f.RunWorkflow(t, c, workflow(obj{"key": "q", "kind": "db_query", "config": obj{"resource_id": bad.ID, "sql": "SELECT 1"}}), obj{})
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, `postgresql "Gone DB"`) || strings.Contains(v.Error, password) {
			t.Fatalf("unreachable: %s %q", v.Status, v.Error)
		}
		if where := f.App.Holding(t, password); len(where) > 0 {
			t.Fatalf("the database holds the password in %v", where)
		}
	})
}

// TestDatabaseNodesGuarded: without SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE a
// postgresql resource on a loopback address is refused at dial time.
func TestDatabaseNodesGuarded(t *testing.T) {
	config, _ := targetDatabase(t)
	f := fixture.NewAPI(t, db.SQLite)
	c := f.Owner
	res := create(t, c, obj{"name": "Local DB", "kind": "postgresql", "config": config, "secret": "whatever-pass"})
	r := c.Do("POST", "/api/workflows", obj{"project_id": f.Project(t, c, "P"), "name": "Q",
		"nodes": []obj{{"key": "q", "kind": "db_query", "config": obj{"resource_id": res.ID, "sql": "SELECT 1"}}}})
	fixture.Want(t, r, http.StatusCreated)
	v := f.RunWorkflow(t, c, r.Map(t)["id"].(string), obj{})
	if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "refus") {
		t.Fatalf("a loopback database without the private-address opt-in: %s %q", v.Status, v.Error)
	}
}
