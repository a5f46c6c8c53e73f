package migrations_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/migrations"
)

// TestRunStorageCarriesRuns: upgrading through 00023 keeps a run written
// before it (its JSON the same documents, on PostgreSQL now json as
// written), drops the indexes no read needs and narrows the others.
func TestRunStorageCarriesRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.Empty(t, e)
		if _, err := d.NewMigrations(before(t, 22), nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		exec := executor(t, d)
		ws, project, now := seedProject(exec)
		workflow, graph, run, log := ids.New(), ids.New(), ids.New(), ids.New()
		g := `{"nodes":[{"key":"a","kind":"transform"}],"edges":[]}`
		exec(`INSERT INTO workflows (id, workspace_id, project_id, name, graph, created_at, updated_at) VALUES ($1, $2, $3, 'w', $4, $5, $5)`,
			workflow, ws, project, g, now)
		exec(`INSERT INTO workflow_graphs (id, workspace_id, workflow_id, hash, graph, created_at) VALUES ($1, $2, $3, 'h', $4, $5)`,
			graph, ws, workflow, g, now)
		events := `[{"t":"run","p":{"status":"queued"},"us":-5},{"t":"run","p":{"status":"succeeded"},"us":40}]`
		nodes := `[{"k":"a","kd":"transform","s":"succeeded","o":{"b":1,"a":[2,3]},"a":1,"c":1}]`
		exec("INSERT INTO event_logs (id, workspace_id, created_at, event_seq) VALUES ($1, $2, $3, 2)", log, ws, now)
		exec(`INSERT INTO runs (id, workspace_id, log_id, kind, status, project_id, attempt, created_at, finished_at, event_seq, events)
			VALUES ($1, $2, $3, 'workflow', 'succeeded', $4, 1, $5, $5, 2, $6)`, run, ws, log, project, now, events)
		exec(`INSERT INTO workflow_runs (id, workspace_id, project_id, workflow_id, log_id, status, graph_id, input, trigger_data, output,
			created_at, started_at, finished_at, updated_at, nodes) VALUES ($1, $2, $3, $4, $5, 'succeeded', $6, '{"z":1,"y":"x"}', '{"kind":"manual"}',
			'{"b":1,"a":[2,3]}', $7, $7, $7, $7, $8)`, run, ws, project, workflow, log, graph, now, nodes)

		if _, err := d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		var gotEvents, gotNodes, input, trigger, output string
		if err := d.R.QueryRowContext(ctx, `SELECT r.events, w.nodes, w.input, w.trigger_data, w.output FROM runs r JOIN workflow_runs w ON w.id = r.id
			WHERE r.id = $1`, run).Scan(&gotEvents, &gotNodes, &input, &trigger, &output); err != nil {
			t.Fatal(err)
		}
		for _, c := range [][2]string{{gotEvents, events}, {gotNodes, nodes}, {input, `{"z":1,"y":"x"}`}, {trigger, `{"kind":"manual"}`},
			{output, `{"b":1,"a":[2,3]}`}} {
			if !jsonSame(t, c[0], c[1]) {
				t.Fatalf("after the upgrade %s, want %s", c[0], c[1])
			}
		}
		var q string
		if e == db.SQLite {
			q = `SELECT name || ': ' || COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' AND name IN ('workflow_runs_workspace',
				'workflow_runs_workflow', 'runs_finished') ORDER BY name`
		} else {
			q = `SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE indexname IN ('workflow_runs_workspace', 'workflow_runs_workflow',
				'runs_finished') ORDER BY indexname`
			// New values are kept as written (json, not jsonb).
			types := strings2(t, d, `SELECT table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns
				WHERE (table_name = 'runs' AND column_name = 'events') OR (table_name = 'workflow_runs' AND column_name IN ('input', 'trigger_data',
				'output', 'nodes')) ORDER BY 1`)
			want := []string{"runs.events json", "workflow_runs.input json", "workflow_runs.nodes json", "workflow_runs.output json",
				"workflow_runs.trigger_data json"}
			if !slices.Equal(types, want) {
				t.Fatalf("column types %v, want %v", types, want)
			}
		}
		got := strings2(t, d, q)
		if len(got) != 2 || !strings.Contains(got[0], "kind <> 'workflow'") || !strings.HasPrefix(got[1], "workflow_runs_workflow") ||
			strings.Contains(got[1], "created_at") {
			t.Fatalf("indexes after the upgrade:\n%s", strings.Join(got, "\n"))
		}
	})
}
