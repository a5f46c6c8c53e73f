package migrations_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// TestWorkflowVersionsCarryRuns: upgrading to workflow versions (00016)
// turns the graphs of existing runs into one version per distinct graph of
// a workflow, points every run at the version holding its graph, and keeps
// the runs' node runs and every index of both tables as it was.
func TestWorkflowVersionsCarryRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.Empty(t, e)
		if _, err := d.NewMigrations(before(t, 15), nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		exec := executor(t, d)
		// The indexes of the runs' tables, each with its definition.
		indexes := func() []string {
			var q string
			if e == db.SQLite {
				q = `SELECT name || ': ' || COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('workflow_runs', 'node_runs')
					ORDER BY name`
			} else {
				q = "SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE tablename IN ('workflow_runs', 'node_runs') ORDER BY indexname"
			}
			return strings2(t, d, q)
		}
		ws, project, now := seedProject(exec)
		graphA := `{"nodes":[{"key":"a","kind":"transform"}],"edges":[]}`
		graphB := `{"nodes":[{"key":"b","kind":"transform"}],"edges":[]}`
		workflow := func() string {
			id := ids.New()
			exec(`INSERT INTO workflows (id, workspace_id, project_id, name, graph, created_at, updated_at) VALUES ($1, $2, $3, $1, $4, $5, $5)`,
				id, ws, project, graphA, now)
			return id
		}
		run := func(workflowID, graph string, at time.Time) string {
			id, log := ids.New(), ids.New()
			exec("INSERT INTO event_logs (id, workspace_id, created_at) VALUES ($1, $2, $3)", log, ws, at)
			exec(`INSERT INTO runs (id, workspace_id, log_id, kind, status, project_id, attempt, created_at)
				VALUES ($1, $2, $3, 'workflow', 'running', $4, 1, $5)`, id, ws, log, project, at)
			exec(`INSERT INTO workflow_runs (id, workspace_id, project_id, workflow_id, log_id, status, graph, input, trigger_data, created_at,
				updated_at) VALUES ($1, $2, $3, $4, $5, 'running', $6, '{"x":1}', 'null', $7, $7)`, id, ws, project, workflowID, log, graph, at)
			exec(`INSERT INTO node_runs (id, run_id, node_key, kind, status, seq, created_at) VALUES ($1, $2, 'a', 'transform', 'ready', 1, $3)`,
				ids.New(), id, at)
			return id
		}
		one, two := workflow(), workflow()
		runs := map[string]string{} // run -> its graph
		for i, c := range []struct{ workflow, graph string }{{one, graphA}, {one, graphB}, {one, graphA}, {two, graphA}, {one, graphB}} {
			runs[run(c.workflow, c.graph, now.Add(time.Duration(i)*time.Second))] = c.graph
		}
		kept := indexes()

		if _, err := d.NewMigrations(before(t, 16), nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		var versions int
		if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM workflow_graphs").Scan(&versions); err != nil || versions != 3 {
			t.Fatalf("%d versions (%v), want 3: A and B of the first workflow, A of the second", versions, err)
		}
		for runID, graph := range runs {
			var workflowID, versionWorkflow, versionGraph string
			err := d.R.QueryRowContext(ctx, `SELECT r.workflow_id, g.workflow_id, g.graph FROM workflow_runs r
				JOIN workflow_graphs g ON g.id = r.graph_id AND g.workspace_id = r.workspace_id WHERE r.id = $1`, runID).
				Scan(&workflowID, &versionWorkflow, &versionGraph)
			if err != nil {
				t.Fatalf("run %s: %v", runID, err)
			}
			if versionWorkflow != workflowID || !jsonSame(t, versionGraph, graph) {
				t.Fatalf("run %s of %s names a version of %s with %s, want %s", runID, workflowID, versionWorkflow, versionGraph, graph)
			}
		}
		var nodes int
		if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM node_runs").Scan(&nodes); err != nil || nodes != len(runs) {
			t.Fatalf("%d node runs after the upgrade (%v), want %d", nodes, err, len(runs))
		}
		if got := indexes(); !slices.Equal(got, kept) {
			t.Fatalf("indexes of the runs' tables:\n%s\nbefore the upgrade:\n%s", strings.Join(got, "\n"), strings.Join(kept, "\n"))
		}
		// The foreign keys still hold: deleting a workflow takes its runs,
		// their node runs and its versions along.
		if _, err := d.W.ExecContext(ctx, "DELETE FROM workflows WHERE id = $1", one); err != nil {
			t.Fatal(err)
		}
		for q, want := range map[string]int{"SELECT COUNT(*) FROM workflow_graphs": 1, "SELECT COUNT(*) FROM workflow_runs": 1,
			"SELECT COUNT(*) FROM node_runs": 1} {
			var n int
			if err := d.R.QueryRowContext(ctx, q).Scan(&n); err != nil || n != want {
				t.Fatalf("%s = %d (%v), want %d", q, n, err, want)
			}
		}
	})
}

func jsonSame(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
