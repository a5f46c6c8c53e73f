package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

func (g *engine) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := g.DB.R.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (g *engine) graphOf(t *testing.T, runID string) string {
	t.Helper()
	var id string
	if err := g.DB.R.QueryRow("SELECT graph_id FROM workflow_runs WHERE id = $1", runID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestWorkflowVersions: runs of one graph share one stored version
// (concurrent starts of a new graph too), a run keeps its version when the
// workflow is edited, going back to a graph finds its version again, and
// the versions go with their workflow.
func TestWorkflowVersions(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		ctx := context.Background()
		nodes := func(factor string) []n {
			return []n{
				node("ask", "human", map[string]any{"message": "go?"}),
				node("calc", "transform", map[string]any{"expression": "input.x * " + factor}),
			}
		}
		edges := []e{edge("ask", "approved", "calc")}
		w := g.workflow(t, nodes("10"), edges)
		versions := func() int {
			return g.count(t, "SELECT COUNT(*) FROM workflow_graphs WHERE workspace_id = $1 AND workflow_id = $2", g.WS.ID, w.ID)
		}

		var first []string
		for range 5 {
			first = append(first, g.run(t, w, `{"x": 2}`))
		}
		for _, id := range first {
			g.wait(t, id, "waiting at ask", waitingAt("ask"))
		}
		if n := versions(); n != 1 {
			t.Fatalf("5 runs of one graph stored %d versions, want 1", n)
		}
		v1 := g.graphOf(t, first[0])
		if n := g.count(t, "SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = $1 AND graph_id = $2", w.ID, v1); n != 5 {
			t.Fatalf("%d runs name version %s, want 5", n, v1)
		}

		// An edit while they wait: they keep their version; new runs take
		// the new graph, and concurrent starts of it store it once.
		if _, err := g.Workflows.Replace(ctx, g.WS, w.ID, workflows.Input{Nodes: nodes("100"), Edges: edges}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var second []string
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, err := g.Workflows.StartRun(ctx, g.WS, g.user, w.ID, json.RawMessage(`{"x": 2}`), nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				second = append(second, id)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		if n := versions(); n != 2 {
			t.Fatalf("after an edit and 8 concurrent runs: %d versions, want 2", n)
		}
		v2 := g.graphOf(t, second[0])
		for _, id := range second {
			if got := g.graphOf(t, id); got != v2 || got == v1 {
				t.Fatalf("run %s names version %s; the new graph's runs name %s, the old %s", id, got, v2, v1)
			}
		}
		for _, id := range first {
			if got := g.graphOf(t, id); got != v1 {
				t.Fatalf("the edit moved run %s to version %s", id, got)
			}
		}
		decide := func(ids []string) {
			for _, id := range ids {
				g.wait(t, id, "waiting at ask", waitingAt("ask"))
				if _, err := g.Workflows.Decide(ctx, g.user, id, "", workflows.Decision{Decision: "approve"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		decide(first)
		decide(second)
		for _, id := range first {
			if v := g.finished(t, id); v.Status != workflows.RunSucceeded {
				t.Fatalf("run %s: %s %s", id, v.Status, v.Error)
			} else {
				jsonEq(t, v.Output, `20`) // the graph it started with
			}
		}
		for _, id := range second {
			jsonEq(t, g.finished(t, id).Output, `200`)
		}

		// Back to the first graph: its version again, not a third.
		if _, err := g.Workflows.Replace(ctx, g.WS, w.ID, workflows.Input{Nodes: nodes("10"), Edges: edges}); err != nil {
			t.Fatal(err)
		}
		again := g.run(t, w, `{"x": 3}`)
		if got := g.graphOf(t, again); got != v1 || versions() != 2 {
			t.Fatalf("the first graph again: version %s (first %s), %d versions", got, v1, versions())
		}
		g.wait(t, again, "waiting at ask", waitingAt("ask"))

		// The versions go with the workflow (and its runs with it).
		if _, err := g.Workflows.Delete(ctx, g.WS, w.ID); err != nil {
			t.Fatal(err)
		}
		if n := g.count(t, "SELECT COUNT(*) FROM workflow_graphs WHERE workflow_id = $1", w.ID); n != 0 {
			t.Fatalf("%d versions outlived their workflow", n)
		}
		if n := g.count(t, "SELECT COUNT(*) FROM workflow_runs WHERE workflow_id = $1", w.ID); n != 0 {
			t.Fatalf("%d runs outlived their workflow", n)
		}
	})
}

// TestWorkflowVersionRolledBack: a start whose transaction rolls back
// after it stored a new graph version leaves nothing behind that a later
// start would name (the definition cache keeps only committed versions).
func TestWorkflowVersionRolledBack(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		ctx := context.Background()
		w := g.workflow(t, []n{node("calc", "transform", map[string]any{"expression": "input.x * 3"})}, nil)
		boom := errors.New("the caller gave up")
		err := g.DB.Tx(ctx, func(tx *db.Tx) error {
			if _, err := g.Workflows.StartRunTx(ctx, tx, g.WS.ID, &g.user.ID, w.ID, json.RawMessage(`{"x": 1}`), nil); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("the start's transaction: %v", err)
		}
		if n := g.count(t, "SELECT COUNT(*) FROM workflow_graphs WHERE workflow_id = $1", w.ID); n != 0 {
			t.Fatalf("a rolled-back start left %d versions", n)
		}
		id := g.run(t, w, `{"x": 2}`)
		if n := g.count(t, "SELECT COUNT(*) FROM workflow_graphs WHERE workspace_id = $1 AND id = $2", g.WS.ID, g.graphOf(t, id)); n != 1 {
			t.Fatalf("the next run names a version that is not stored")
		}
		jsonEq(t, g.finished(t, id).Output, `6`)
	})
}

// TestWorkflowTriggerBody: a trigger whose body is the run's input is
// stored without it, and expressions still see trigger.body.
func TestWorkflowTriggerBody(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		w := g.workflow(t, []n{
			node("echo", "transform", map[string]any{"mapping": map[string]any{
				"body": "trigger.body", "kind": "trigger.kind", "sum": "(trigger.body?.a ?? 0) + input.a", "tag": "trigger.body?.tag"}}),
		}, nil)
		for _, c := range []struct {
			name, input, trigger string
			stripped             bool
			want                 string
		}{
			{"a webhook's body", `{"a": 1, "tag": "<b>&"}`, `{"body":{"a":1,"tag":"\u003cb\u003e\u0026"},"kind":"webhook","query":{}}`, true,
				`{"body": {"a": 1, "tag": "<b>&"}, "kind": "webhook", "sum": 2, "tag": "<b>&"}`},
			{"another body", `{"a": 1}`, `{"body":{"a":2},"kind":"webhook"}`, false, `{"body": {"a": 2}, "kind": "webhook", "sum": 3, "tag": null}`},
			{"no body", `{"a": 1}`, `{"kind":"schedule"}`, false, `{"body": null, "kind": "schedule", "sum": 1, "tag": null}`},
		} {
			id, err := g.Workflows.StartRun(context.Background(), g.WS, g.user, w.ID, json.RawMessage(c.input), json.RawMessage(c.trigger))
			if err != nil {
				t.Fatal(err)
			}
			v := g.finished(t, id)
			if v.Status != workflows.RunSucceeded {
				t.Fatalf("%s: %s %s", c.name, v.Status, v.Error)
			}
			jsonEq(t, v.Output, c.want)
			var stored string
			var stripped bool
			if err := g.DB.R.QueryRow("SELECT trigger_data, trigger_body_is_input FROM workflow_runs WHERE id = $1", id).Scan(&stored, &stripped); err != nil {
				t.Fatal(err)
			}
			if stripped != c.stripped {
				t.Fatalf("%s: stored %s (body is input: %v)", c.name, stored, stripped)
			}
			want := c.trigger
			if c.stripped {
				want = `{"kind":"webhook","query":{}}`
			}
			jsonEq(t, json.RawMessage(stored), want)
		}
	})
}
