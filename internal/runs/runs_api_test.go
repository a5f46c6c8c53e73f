package runs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
)

var (
	eventFields = []string{"event_id", "event_type", "payload", "sequence_num", "task_id", "timestamp"}
	runFields   = []string{"id", "kind", "status", "workspace_id", "project_id", "task_id", "parent_run_id", "attempt", "backend",
		"exit_code", "error", "created_at", "finished_at"}
)

func TestRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		ws := owner.DefaultWorkspace()
		alpha := f.Project(t, owner, "Alpha")
		bravo := f.Project(t, owner, "Bravo")
		t1 := f.Task(t, owner, alpha, "echo one", nil)
		t2 := f.Task(t, owner, bravo, "echo two", nil)

		type runBoard = board.Board[runs.Run]
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "no runs", Client: owner, Method: "GET", Path: "/api/runs", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"runs":[],"total":0}` {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "empty board", Client: owner, Method: "GET", Path: "/api/runs/board", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"rows", "total", "page", "page_size", "facets"}) {
						t.Fatalf("fields = %v", got)
					}
					var b runBoard
					r.JSON(t, &b)
					if b.Rows == nil || len(b.Rows) != 0 || b.Total != 0 || b.Page != 1 || b.PageSize != 50 || len(b.Facets["status"]) != 4 ||
						len(b.Facets["kind"]) != 3 || b.Facets["kind"][0] != (board.Facet{Value: "task", Label: "Task", Count: 0}) ||
						b.Facets["kind"][1] != (board.Facet{Value: "workflow", Label: "Workflow", Count: 0}) ||
						b.Facets["kind"][2] != (board.Facet{Value: "script", Label: "Script", Count: 0}) {
						t.Fatalf("board = %s", r.Body)
					}
				}},
		})

		base := time.Now().UTC().Truncate(time.Second).Add(-3 * time.Hour)
		r1 := f.Run(t, ws, alpha, t1.ID, "", "succeeded", 1, base)
		r1c := f.Run(t, ws, alpha, t1.ID, r1, "running", 1, base.Add(10*time.Second))
		r1cc := f.Run(t, ws, alpha, t1.ID, r1c, "failed", 1, base.Add(20*time.Second))
		r2 := f.Run(t, ws, bravo, t2.ID, "", "failed", 1, base.Add(time.Hour))
		r3 := f.Run(t, ws, alpha, t1.ID, "", "cancelled", 2, base.Add(2*time.Hour))
		s2 := f.Event(t, t1.ID, r1, "log", `{"line":"first"}`, base.Add(time.Second))
		s3 := f.Event(t, t1.ID, r1c, "message", `{"text":"child"}`, base.Add(11*time.Second))
		s4 := f.Event(t, t1.ID, r1, "result", `{"ok":true}`, base.Add(30*time.Second))
		// An outsider's run never shows.
		otherProject := f.Project(t, f.Outsider, "Other")
		other := f.Task(t, f.Outsider, otherProject, "echo other", nil)
		f.Run(t, f.Outsider.DefaultWorkspace(), otherProject, other.ID, "", "failed", 1, base.Add(90*time.Minute))

		runIDs := func(rs []runs.Run) []string {
			var out []string
			for _, r := range rs {
				out = append(out, r.ID)
			}
			return out
		}
		list := func(query string, wantIDs []string, total int) apitest.Scenario {
			return apitest.Scenario{Name: "runs " + query, Client: owner, Method: "GET", Path: "/api/runs" + query, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var l runs.RunList
					r.JSON(t, &l)
					if got := runIDs(l.Runs); !slices.Equal(got, wantIDs) || l.Total != total {
						t.Fatalf("runs = %v total %d, want %v total %d", got, l.Total, wantIDs, total)
					}
				}}
		}
		bad := func(name, path string) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "GET", Path: path, WantStatus: 400, WantCode: "bad_request"}
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "runs: top-level, newest first", Client: owner, Method: "GET", Path: "/api/runs", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"runs", "total"}) {
						t.Fatalf("fields = %v", got)
					}
					var raw struct{ Runs []json.RawMessage }
					r.JSON(t, &raw)
					for _, rr := range raw.Runs {
						if got := apitest.ObjectKeys(t, rr); !slices.Equal(got, runFields) {
							t.Fatalf("run fields = %v", got)
						}
					}
					var l runs.RunList
					r.JSON(t, &l)
					if got := runIDs(l.Runs); !slices.Equal(got, []string{r3, r2, r1}) || l.Total != 3 {
						t.Fatalf("runs = %v total %d", got, l.Total)
					}
					run := l.Runs[2]
					if run.Kind != "task" || run.Status != "succeeded" || run.WorkspaceID != ws || run.ProjectID == nil || *run.ProjectID != alpha ||
						run.TaskID == nil || *run.TaskID != t1.ID || run.ParentRunID != nil || run.Attempt != 1 || run.Backend != "process" ||
						!run.CreatedAt.Equal(base) || run.FinishedAt == nil || !run.FinishedAt.Equal(base.Add(time.Minute)) {
						t.Fatalf("run = %+v", run)
					}
				}},
			list("?include_children=true", []string{r3, r2, r1cc, r1c, r1}, 5),
			list("?task_id="+t1.ID, []string{r3, r1}, 2),
			list("?task_id="+t1.ID+"&include_children=true", []string{r3, r1cc, r1c, r1}, 4),
			list("?status=failed", []string{r2}, 1),
			list("?status=failed&include_children=true", []string{r2, r1cc}, 2),
			list("?status=running", nil, 0),
			list("?status=running&include_children=true", []string{r1c}, 1),
			list("?project_id="+bravo, []string{r2}, 1),
			list("?kind=task", []string{r3, r2, r1}, 3),
			list("?limit=1&offset=1", []string{r2}, 3),
			bad("unknown status", "/api/runs?status=paused"),
			bad("unknown kind", "/api/runs?kind=app_build"),
			bad("malformed task_id", "/api/runs?task_id=x"),
			bad("limit 0", "/api/runs?limit=0"),
			bad("include_children not a boolean", "/api/runs?include_children=maybe"),

			{Name: "run tree", Client: owner, Method: "GET", Path: "/api/runs/" + r1, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var tree runs.RunTree
					r.JSON(t, &tree)
					if tree.ID != r1 || len(tree.Children) != 1 || tree.Children[0].ID != r1c || tree.Children[0].ParentRunID == nil ||
						*tree.Children[0].ParentRunID != r1 || len(tree.Children[0].Children) != 1 || tree.Children[0].Children[0].ID != r1cc ||
						tree.Children[0].Children[0].Children == nil || len(tree.Children[0].Children[0].Children) != 0 {
						t.Fatalf("tree = %s", r.Body)
					}
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, append(append([]string{}, runFields...), "children")) {
						t.Fatalf("tree fields = %v", got)
					}
					if !strings.Contains(string(r.Body), `"children":[]`) {
						t.Fatalf("a leaf's children must be []: %s", r.Body)
					}
				}},
			{Name: "subtree", Client: owner, Method: "GET", Path: "/api/runs/" + r1c, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var tree runs.RunTree
					r.JSON(t, &tree)
					if tree.ID != r1c || tree.Status != "running" || tree.FinishedAt != nil || len(tree.Children) != 1 || tree.Children[0].ID != r1cc {
						t.Fatalf("tree = %s", r.Body)
					}
				}},
			{Name: "leaf", Client: owner, Method: "GET", Path: "/api/runs/" + r2, WantStatus: 200, WantContains: []string{`"children":[]`, `"status":"failed"`}},
			{Name: "unknown run", Client: owner, Method: "GET", Path: "/api/runs/" + ids.New(), WantStatus: 404, WantCode: "not_found"},
			{Name: "malformed run id", Client: owner, Method: "GET", Path: "/api/runs/x", WantStatus: 404, WantCode: "not_found"},

			{Name: "run events", Client: owner, Method: "GET", Path: "/api/runs/" + r1 + "/events", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					for _, k := range fixture.ElementKeys(t, r.Body) {
						if !slices.Equal(k, eventFields) {
							t.Fatalf("event fields = %v", k)
						}
					}
					var evs []runs.TaskEvent
					r.JSON(t, &evs)
					if len(evs) != 2 || evs[0].SequenceNum != s2 || evs[1].SequenceNum != s4 || evs[0].EventType != "log" ||
						evs[1].EventType != "result" || evs[0].TaskID != t1.ID || string(evs[0].Payload) != `{"line":"first"}` {
						t.Fatalf("run events = %s", r.Body)
					}
				}},
			{Name: "run events after a sequence", Client: owner, Method: "GET", Path: fmt.Sprintf("/api/runs/%s/events?after_sequence=%d", r1, s2),
				WantStatus: 200, Check: func(t *testing.T, r *apitest.Response) {
					var evs []runs.TaskEvent
					r.JSON(t, &evs)
					if len(evs) != 1 || evs[0].SequenceNum != s4 {
						t.Fatalf("run events = %s", r.Body)
					}
				}},
			{Name: "run events limit", Client: owner, Method: "GET", Path: "/api/runs/" + r1 + "/events?limit=1", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var evs []runs.TaskEvent
					r.JSON(t, &evs)
					if len(evs) != 1 || evs[0].SequenceNum != s2 {
						t.Fatalf("run events = %s", r.Body)
					}
				}},
			{Name: "child run events", Client: owner, Method: "GET", Path: "/api/runs/" + r1c + "/events", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var evs []runs.TaskEvent
					r.JSON(t, &evs)
					if len(evs) != 1 || evs[0].SequenceNum != s3 || evs[0].EventType != "message" {
						t.Fatalf("child run events = %s", r.Body)
					}
				}},
			{Name: "run without events", Client: owner, Method: "GET", Path: "/api/runs/" + r2 + "/events", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != "[]" {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "events of an unknown run", Client: owner, Method: "GET", Path: "/api/runs/" + ids.New() + "/events", WantStatus: 404, WantCode: "not_found"},
			bad("run events limit 0", "/api/runs/"+r1+"/events?limit=0"),
		})
		// The task's own log holds the runs' events too, in one sequence.
		if got := len(fixture.Events(t, owner, t1.ID, "")); got != 4 {
			t.Fatalf("task log has %d events, want 4", got)
		}

		board := func(query string, wantIDs []string, total int, status map[string]int, kind int) apitest.Scenario {
			return apitest.Scenario{Name: "board " + query, Client: owner, Method: "GET", Path: "/api/runs/board" + query, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var b runBoard
					r.JSON(t, &b)
					if got := runIDs(b.Rows); !slices.Equal(got, wantIDs) || b.Total != total {
						t.Fatalf("board = %v total %d, want %v total %d", got, b.Total, wantIDs, total)
					}
					var values []string
					for _, c := range b.Facets["status"] {
						values = append(values, c.Value)
						if c.Count != status[c.Value] || c.Label == "" {
							t.Fatalf("status chip %+v, want counts %v", c, status)
						}
					}
					if !slices.Equal(values, []string{"running", "succeeded", "failed", "cancelled"}) {
						t.Fatalf("status facet = %v", values)
					}
					if len(b.Facets["kind"]) != 3 || b.Facets["kind"][0] != (board.Facet{Value: "task", Label: "Task", Count: kind}) ||
						b.Facets["kind"][1] != (board.Facet{Value: "workflow", Label: "Workflow", Count: 0}) ||
						b.Facets["kind"][2] != (board.Facet{Value: "script", Label: "Script", Count: 0}) || len(b.Facets) != 2 {
						t.Fatalf("facets = %v", b.Facets)
					}
				}}
		}
		top := map[string]int{"succeeded": 1, "failed": 1, "cancelled": 1}
		apitest.Run(t, app, []apitest.Scenario{
			board("", []string{r3, r2, r1}, 3, top, 3),
			board("?status=failed", []string{r2}, 1, top, 1),
			board("?kind=task", []string{r3, r2, r1}, 3, top, 3),
			board("?project_id="+alpha, []string{r3, r1}, 2, map[string]int{"succeeded": 1, "cancelled": 1}, 2),
			board("?sort=created_at", []string{r3, r2, r1}, 3, top, 3),
			board("?page=2&page_size=2", []string{r1}, 3, top, 3),
			// order is part of every board's query (DESIGN §3); the runs
			// board must honour it.
			board("?sort=created_at&order=asc", []string{r1, r2, r3}, 3, top, 3),
			bad("board unknown sort", "/api/runs/board?sort=status"),
			bad("board page_size 201", "/api/runs/board?page_size=201"),
			bad("board unknown status", "/api/runs/board?status=paused"),
		})

		// Deleting a task takes its runs with it.
		fixture.Want(t, owner.Do("DELETE", "/api/tasks/"+t2.ID, nil), http.StatusOK)
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "run of a deleted task", Client: owner, Method: "GET", Path: "/api/runs/" + r2, WantStatus: 404, WantCode: "not_found"},
			list("", []string{r3, r1}, 2),
		})
	})
}
