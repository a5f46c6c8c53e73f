package tasks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/tenancy"
)

// Agents cannot run in these tests. Every task is created held (no worker
// claims a held task), and tasks that must be queued and not held live in a
// "blocked" project whose only slot a job that never ends holds
// (fixture.API.BlockedProject).

var (
	taskFields = []string{"id", "workspace_id", "project_id", "title", "prompt", "agent_profile", "config", "notes", "status", "held",
		"branch", "error", "pr", "created_by", "created_at", "updated_at", "started_at", "finished_at", "parent_task_id", "group_id", "cost_usd"}
	eventFields = []string{"event_id", "event_type", "payload", "sequence_num", "task_id", "timestamp"}
	runFields   = []string{"id", "kind", "status", "workspace_id", "project_id", "task_id", "parent_run_id", "attempt", "backend",
		"exit_code", "error", "created_at", "finished_at"}
)

// refused sends a request that must be refused and checks that it changed
// nothing: the task reads the same and has as many events.
func refused(t *testing.T, f *fixture.API, c *apitest.Client, taskID, method, path string, body any, status int, fragments ...string) {
	t.Helper()
	before := c.Do("GET", "/api/tasks/"+taskID, nil)
	fixture.Want(t, before, http.StatusOK)
	n := f.EventCount(t, taskID)
	r := c.Do(method, path, body)
	if r.Status != status {
		t.Fatalf("%s %s = %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	var e struct{ Code, Error string }
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == "" || e.Error == "" {
		t.Fatalf("%s %s: not an error body: %s", method, path, r.Body)
	}
	if status == http.StatusConflict && e.Code != "conflict" {
		t.Fatalf("%s %s: code %q, want conflict", method, path, e.Code)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Error, f) {
			t.Errorf("%s %s: error %q lacks %q", method, path, e.Error, f)
		}
	}
	after := c.Do("GET", "/api/tasks/"+taskID, nil)
	if !bytes.Equal(before.Body, after.Body) {
		t.Fatalf("the refused %s %s changed the task:\n%s\n%s", method, path, before.Body, after.Body)
	}
	if m := f.EventCount(t, taskID); m != n {
		t.Fatalf("the refused %s %s wrote %d event(s)", method, path, m-n)
	}
}

func TestTaskCreate(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		ws := owner.DefaultWorkspace()
		proj := f.Project(t, owner, "Alpha")
		archived := f.Project(t, owner, "Archived")
		fixture.Want(t, owner.Do("POST", "/api/projects/"+archived+"/archive", nil), http.StatusOK)
		foreignProject := f.Project(t, f.Outsider, "Foreign")

		longLine := strings.Repeat("é", 100)
		exact := strings.Repeat("x", 80)
		cfg := map[string]any{"model": "gpt-x", "effort": "high", "timeout_minutes": 30,
			"runner": map[string]any{"required_labels": []string{"gpu", "linux"}}, "test_db": true}
		var first tasks.Task
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "defaults", Client: owner, Method: "POST", Path: "/api/tasks",
				Body: map[string]any{"project_id": proj, "prompt": "echo hello\necho second line", "hold": true}, WantStatus: http.StatusCreated,
				Check: func(t *testing.T, r *apitest.Response) {
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, taskFields) {
						t.Fatalf("fields = %v", got)
					}
					r.JSON(t, &first)
					if !ids.Valid(first.ID) || first.WorkspaceID != ws || first.ProjectID != proj || first.Title != "echo hello" ||
						first.Prompt != "echo hello\necho second line" || first.AgentProfile != "shell" || first.Status != "queued" ||
						!first.Held || first.Branch != "slipway/task-"+first.ID[len(first.ID)-8:] || first.Notes != "" || first.Error != "" ||
						first.PR != nil || first.CreatedBy == nil || *first.CreatedBy != owner.ID || first.StartedAt != nil ||
						first.FinishedAt != nil || first.CreatedAt.IsZero() || !first.UpdatedAt.Equal(first.CreatedAt) {
						t.Fatalf("created = %+v", first)
					}
					if !strings.Contains(string(r.Body), `"config":{}`) || !strings.Contains(string(r.Body), `"pr":null`) {
						t.Fatalf("config or pr: %s", r.Body)
					}
					if g := owner.Do("GET", "/api/tasks/"+first.ID, nil); g.Status != 200 || !bytes.Equal(g.Body, r.Body) {
						t.Fatalf("GET after create differs:\n%s\n%s", g.Body, r.Body)
					}
				}},
			{Name: "title cut to 80 characters", Client: owner, Method: "POST", Path: "/api/tasks",
				Body: map[string]any{"project_id": proj, "prompt": longLine + "\nmore", "hold": true}, WantStatus: http.StatusCreated,
				Check: func(t *testing.T, r *apitest.Response) {
					var got tasks.Task
					r.JSON(t, &got)
					if utf8.RuneCountInString(got.Title) != 80 || got.Title != strings.Repeat("é", 79)+"…" {
						t.Fatalf("title = %q (%d characters)", got.Title, utf8.RuneCountInString(got.Title))
					}
				}},
			{Name: "a first line of exactly 80 characters is kept", Client: owner, Method: "POST", Path: "/api/tasks",
				Body: map[string]any{"project_id": proj, "prompt": exact, "hold": true}, WantStatus: http.StatusCreated,
				WantContains: []string{`"title":"` + exact + `"`}},
			{Name: "leading blank lines are skipped", Client: owner, Method: "POST", Path: "/api/tasks",
				Body: map[string]any{"project_id": proj, "prompt": "\n\n   ls -la   \nwc -l", "hold": true}, WantStatus: http.StatusCreated,
				WantContains: []string{`"title":"ls -la"`}},
			{Name: "explicit title, profile and config", Client: owner, Method: "POST", Path: "/api/tasks",
				Body:       map[string]any{"project_id": proj, "prompt": "echo hi", "title": "  Say hi  ", "agent_profile": "coder", "config": cfg, "hold": true},
				WantStatus: http.StatusCreated,
				Check: func(t *testing.T, r *apitest.Response) {
					var got tasks.Task
					r.JSON(t, &got)
					c := got.Config
					if got.Title != "Say hi" || got.AgentProfile != "coder" || c.Model != "gpt-x" || c.Effort != "high" || c.TimeoutMinutes != 30 ||
						c.Runner == nil || !slices.Equal(c.Runner.RequiredLabels, []string{"gpu", "linux"}) || !c.TestDB {
						t.Fatalf("created = %+v", got)
					}
					if g := fixture.GetTask(t, owner, got.ID); g.Config.Runner == nil || !slices.Equal(g.Config.Runner.RequiredLabels, c.Runner.RequiredLabels) ||
						g.Config.Model != "gpt-x" || !g.Config.TestDB {
						t.Fatalf("stored config = %+v", g.Config)
					}
				}},
			{Name: "a list shows each task as GET does (config and pr row by row)", Client: owner, Method: "GET", Path: "/api/tasks",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var l struct{ Tasks []json.RawMessage }
					r.JSON(t, &l)
					if len(l.Tasks) < 5 {
						t.Fatalf("listed %d tasks", len(l.Tasks))
					}
					withConfig := 0
					for _, raw := range l.Tasks {
						var one tasks.Task
						if err := json.Unmarshal(raw, &one); err != nil {
							t.Fatal(err)
						}
						if one.Config.Model != "" {
							withConfig++
						}
						g := owner.Do("GET", "/api/tasks/"+one.ID, nil)
						if g.Status != 200 || !bytes.Equal(bytes.TrimSpace(g.Body), raw) {
							t.Fatalf("listed task differs from GET:\n%s\n%s", raw, g.Body)
						}
					}
					if withConfig != 1 {
						t.Fatalf("%d listed tasks have a model, want 1", withConfig)
					}
				}},
		})

		// The creation is a status event "to queued".
		evs := fixture.Events(t, owner, first.ID, "")
		if len(evs) != 1 || evs[0].EventType != "status" || evs[0].SequenceNum != 1 || evs[0].TaskID != first.ID {
			t.Fatalf("events after create = %+v", evs)
		}
		if p := fixture.Payload(t, evs[0]); p["to"] != "queued" || p["from"] != nil || p["reason"] != "created" || p["held"] != true {
			t.Fatalf("creation event payload = %s", evs[0].Payload)
		}

		before := app.Count(t, "SELECT COUNT(*) FROM tasks")
		bad := func(name string, body any, fragments ...string) apitest.Scenario {
			return apitest.Scenario{Name: name, Client: owner, Method: "POST", Path: "/api/tasks", Body: body,
				WantStatus: http.StatusBadRequest, WantCode: "bad_request", WantContains: fragments}
		}
		task := func(kv ...any) map[string]any {
			m := map[string]any{"project_id": proj, "prompt": "echo x", "hold": true}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}
		labels := func(ls ...string) map[string]any {
			return map[string]any{"runner": map[string]any{"required_labels": ls}}
		}
		many := make([]string, 21)
		for i := range many {
			many[i] = fmt.Sprintf("l%d", i)
		}
		apitest.Run(t, app, []apitest.Scenario{
			bad("empty prompt", task("prompt", ""), "prompt"),
			bad("blank prompt", task("prompt", " \n\t "), "prompt"),
			bad("missing prompt", map[string]any{"project_id": proj, "hold": true}, "prompt"),
			bad("missing project_id", map[string]any{"prompt": "echo", "hold": true}, "project_id"),
			bad("malformed project_id", task("project_id", "alpha"), "project_id"),
			bad("unknown project", task("project_id", ids.New()), "no such project"),
			bad("another workspace's project", task("project_id", foreignProject), "no such project"),
			bad("unknown agent_profile", task("agent_profile", "ghost"), "ghost"),
			bad("label with a space", task("config", labels("gpu", "big box")), "required_labels"),
			bad("label with a comma", task("config", labels("a,b")), "required_labels"),
			bad("empty label", task("config", labels("")), "required_labels"),
			bad("too many labels", task("config", labels(many...))),
			bad("unknown effort", task("config", map[string]any{"effort": "extreme"}), "effort"),
			bad("timeout above the maximum", task("config", map[string]any{"timeout_minutes": 10081}), "timeout_minutes"),
			bad("negative timeout", task("config", map[string]any{"timeout_minutes": -5}), "timeout_minutes"),
			bad("unknown config field", task("config", map[string]any{"gpu": true}), "gpu"),
			bad("unknown field", task("priority", 1), "priority"),
			bad("blank explicit title", task("title", "   "), "title"),
			bad("title too long", task("title", strings.Repeat("t", 201)), "title"),
			bad("hold not a boolean", task("hold", "yes"), "hold"),
			{Name: "archived project", Client: owner, Method: "POST", Path: "/api/tasks", Body: task("project_id", archived),
				WantStatus: http.StatusConflict, WantCode: "conflict", WantContains: []string{"archived"}},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM tasks"); n != before {
			t.Fatalf("refused creates made %d task(s)", n-before)
		}
		// Another workspace's project answers exactly like a random id.
		a := owner.Do("POST", "/api/tasks", task("project_id", foreignProject))
		b := owner.Do("POST", "/api/tasks", task("project_id", ids.New()))
		if a.Status != b.Status || !bytes.Equal(a.Body, b.Body) {
			t.Fatalf("foreign and unknown project differ:\n%d %s\n%d %s", a.Status, a.Body, b.Status, b.Body)
		}
	})
}

func TestTaskListBoardNames(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		alpha := f.Project(t, owner, "Alpha")
		bravo := f.Project(t, owner, "Bravo")
		t1 := f.Task(t, owner, alpha, "echo one", nil)
		t2 := f.Task(t, owner, alpha, "echo two NEEDLE", nil)
		t3 := f.Task(t, owner, bravo, "echo three", map[string]any{"title": "third needle"})
		t4 := f.Task(t, owner, bravo, "echo four", nil)
		t5 := f.Task(t, owner, alpha, "echo five", nil)
		fixture.Want(t, owner.Do("POST", "/api/tasks/"+t4.ID+"/cancel", nil), http.StatusOK)
		f.SetStatus(t, t5.ID, tasks.StatusFailed)
		f.SetStatus(t, t1.ID, tasks.StatusDone)
		// Another account's tasks never show.
		other := f.Project(t, f.Outsider, "Other")
		f.Task(t, f.Outsider, other, "echo needle of the outsider", nil)

		idsOf := func(ts []tasks.Task) []string {
			var out []string
			for _, x := range ts {
				out = append(out, x.ID)
			}
			return out
		}
		list := func(query string, wantIDs []string, total int) apitest.Scenario {
			return apitest.Scenario{Name: "list " + query, Client: owner, Method: "GET", Path: "/api/tasks" + query, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"tasks", "total"}) {
						t.Fatalf("fields = %v", got)
					}
					var l tasks.TaskList
					r.JSON(t, &l)
					if got := idsOf(l.Tasks); !slices.Equal(got, wantIDs) || l.Total != total {
						t.Fatalf("list = %v total %d, want %v total %d", got, l.Total, wantIDs, total)
					}
					if l.Tasks == nil {
						t.Fatal("tasks is null, want []")
					}
				}}
		}
		badList := func(query string) apitest.Scenario {
			return apitest.Scenario{Name: "list " + query, Client: owner, Method: "GET", Path: "/api/tasks" + query,
				WantStatus: 400, WantCode: "bad_request"}
		}
		all := []string{t5.ID, t4.ID, t3.ID, t2.ID, t1.ID}
		apitest.Run(t, app, []apitest.Scenario{
			list("", all, 5),
			list("?status=queued", []string{t3.ID, t2.ID}, 2),
			list("?status=cancelled", []string{t4.ID}, 1),
			list("?status=running", nil, 0),
			list("?project_id="+bravo, []string{t4.ID, t3.ID}, 2),
			list("?q=needle", []string{t3.ID, t2.ID}, 2),
			list("?q=NEEDLE&project_id="+alpha, []string{t2.ID}, 1),
			list("?q=%25", nil, 0),
			list("?limit=2&offset=1", []string{t4.ID, t3.ID}, 5),
			list("?offset=10", nil, 5),
			badList("?limit=0"),
			badList("?limit=501"),
			badList("?offset=-1"),
			badList("?status=paused"),
			badList("?project_id=alpha"),
		})

		type taskBoard = board.Board[tasks.Task]
		facetMap := func(b taskBoard, name string) map[string]int {
			out := map[string]int{}
			for _, c := range b.Facets[name] {
				out[c.Value] = c.Count
			}
			return out
		}
		boardCheck := func(query string, wantIDs []string, total int, status, project map[string]int) apitest.Scenario {
			return apitest.Scenario{Name: "board " + query, Client: owner, Method: "GET", Path: "/tasks/board" + query, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if got := apitest.ObjectKeys(t, r.Body); !slices.Equal(got, []string{"rows", "total", "page", "page_size", "facets"}) {
						t.Fatalf("fields = %v", got)
					}
					var b taskBoard
					r.JSON(t, &b)
					if got := idsOf(b.Rows); !slices.Equal(got, wantIDs) || b.Total != total {
						t.Fatalf("board = %v total %d, want %v total %d", got, b.Total, wantIDs, total)
					}
					if len(b.Facets) != 2 {
						t.Fatalf("facets = %v", b.Facets)
					}
					// The status facet lists every status, in lifecycle order, labelled.
					var values []string
					for _, c := range b.Facets["status"] {
						values = append(values, c.Value)
						if c.Label == "" {
							t.Fatalf("status chip without label: %+v", c)
						}
					}
					if !slices.Equal(values, tasks.Statuses) {
						t.Fatalf("status facet values = %v", values)
					}
					for _, st := range tasks.Statuses {
						if got := facetMap(b, "status")[st]; got != status[st] {
							t.Fatalf("status facet %s = %d, want %d (%v)", st, got, status[st], b.Facets["status"])
						}
					}
					if got := facetMap(b, "project"); len(got) != len(project) {
						t.Fatalf("project facet = %v, want %v", b.Facets["project"], project)
					}
					for _, c := range b.Facets["project"] {
						if c.Count != project[c.Value] || (c.Value == alpha && c.Label != "Alpha") || (c.Value == bravo && c.Label != "Bravo") {
							t.Fatalf("project chip %+v, want counts %v", c, project)
						}
					}
				}}
		}
		allStatus := map[string]int{"queued": 2, "done": 1, "failed": 1, "cancelled": 1}
		apitest.Run(t, app, []apitest.Scenario{
			boardCheck("", all, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?status=queued", []string{t3.ID, t2.ID}, 2, allStatus, map[string]int{alpha: 1, bravo: 1}),
			boardCheck("?project_id="+bravo, []string{t4.ID, t3.ID}, 2, map[string]int{"queued": 1, "cancelled": 1}, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?q=needle", []string{t3.ID, t2.ID}, 2, map[string]int{"queued": 2}, map[string]int{alpha: 1, bravo: 1}),
			boardCheck("?sort=title&order=asc", []string{t5.ID, t4.ID, t1.ID, t2.ID, t3.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?sort=title&order=desc", []string{t3.ID, t2.ID, t1.ID, t4.ID, t5.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			// Without order, text keys sort A to Z (dates newest first), ties broken by id.
			boardCheck("?sort=title", []string{t5.ID, t4.ID, t1.ID, t2.ID, t3.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?sort=status&order=asc", []string{t4.ID, t1.ID, t5.ID, t2.ID, t3.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?sort=created_at&order=asc", []string{t1.ID, t2.ID, t3.ID, t4.ID, t5.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			// The cancel touched t4 last.
			boardCheck("?sort=updated_at&order=desc", []string{t4.ID, t5.ID, t3.ID, t2.ID, t1.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?page=2&page_size=2", []string{t3.ID, t2.ID}, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			boardCheck("?page=4&page_size=2", nil, 5, allStatus, map[string]int{alpha: 3, bravo: 2}),
			{Name: "board page and size echoed", Client: owner, Method: "GET", Path: "/tasks/board?page=2&page_size=2", WantStatus: 200,
				WantContains: []string{`"page":2`, `"page_size":2`, `"total":5`}},
			{Name: "board defaults", Client: owner, Method: "GET", Path: "/tasks/board", WantStatus: 200,
				WantContains: []string{`"page":1`, `"page_size":50`}, WantNotContains: []string{"outsider"}},
			{Name: "board unknown sort", Client: owner, Method: "GET", Path: "/tasks/board?sort=prompt", WantStatus: 400, WantCode: "bad_request"},
			{Name: "board unknown order", Client: owner, Method: "GET", Path: "/tasks/board?order=up", WantStatus: 400, WantCode: "bad_request"},
			{Name: "board page_size 201", Client: owner, Method: "GET", Path: "/tasks/board?page_size=201", WantStatus: 400, WantCode: "bad_request"},
			{Name: "board page 0", Client: owner, Method: "GET", Path: "/tasks/board?page=0", WantStatus: 400, WantCode: "bad_request"},
			{Name: "board unknown status", Client: owner, Method: "GET", Path: "/tasks/board?status=paused", WantStatus: 400, WantCode: "bad_request"},
			{Name: "board malformed project", Client: owner, Method: "GET", Path: "/tasks/board?project_id=x", WantStatus: 400, WantCode: "bad_request"},

			{Name: "names", Client: owner, Method: "GET", Path: "/api/tasks/names", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					for _, k := range fixture.ElementKeys(t, r.Body) {
						if !slices.Equal(k, []string{"id", "title", "status"}) {
							t.Fatalf("name fields = %v", k)
						}
					}
					var ns []tasks.TaskName
					r.JSON(t, &ns)
					wantNames := []tasks.TaskName{{t5.ID, "echo five", "failed"}, {t4.ID, "echo four", "cancelled"},
						{t3.ID, "third needle", "queued"}, {t2.ID, "echo two NEEDLE", "queued"}, {t1.ID, "echo one", "done"}}
					if !slices.Equal(ns, wantNames) {
						t.Fatalf("names = %+v", ns)
					}
				}},
			{Name: "names limit", Client: owner, Method: "GET", Path: "/api/tasks/names?limit=2", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var ns []tasks.TaskName
					r.JSON(t, &ns)
					if len(ns) != 2 || ns[0].ID != t5.ID || ns[1].ID != t4.ID {
						t.Fatalf("names = %+v", ns)
					}
				}},
			{Name: "names limit 0", Client: owner, Method: "GET", Path: "/api/tasks/names?limit=0", WantStatus: 400, WantCode: "bad_request"},
			{Name: "names of the outsider", Client: f.Outsider, Method: "GET", Path: "/api/tasks/names", WantStatus: 200,
				WantContains: []string{"echo needle of the outsider"}, WantNotContains: []string{t1.ID, t2.ID, t3.ID, t4.ID, t5.ID}},
		})
	})
}

func TestTaskEdits(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		proj := f.Project(t, owner, "Alpha")
		task := f.Task(t, owner, proj, "echo edit", map[string]any{"config": map[string]any{"model": "m1", "test_db": true}})
		plain := f.Task(t, owner, proj, "echo plain", nil)
		path := "/api/tasks/" + task.ID
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "notes", Client: owner, Method: "PUT", Path: path + "/notes", Body: map[string]any{"notes": "remember the milk"},
				WantStatus: 200, WantContains: []string{`"notes":"remember the milk"`, `"id":"` + task.ID + `"`}},
			{Name: "notes read back", Client: owner, Method: "GET", Path: path, WantStatus: 200, WantContains: []string{`"notes":"remember the milk"`}},
			{Name: "notes missing", Client: owner, Method: "PUT", Path: path + "/notes", Body: `{}`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "notes unknown field", Client: owner, Method: "PUT", Path: path + "/notes", Body: `{"notes":"x","pin":true}`,
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "notes of an unknown task", Client: owner, Method: "PUT", Path: "/api/tasks/" + ids.New() + "/notes",
				Body: map[string]any{"notes": "x"}, WantStatus: 404, WantCode: "not_found"},

			{Name: "title", Client: owner, Method: "PUT", Path: path + "/title", Body: map[string]any{"title": "  Better title  "}, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"title":"Better title"}` {
						t.Fatalf("body = %s", r.Body)
					}
					if got := fixture.GetTask(t, owner, task.ID).Title; got != "Better title" {
						t.Fatalf("stored title = %q", got)
					}
				}},
			{Name: "empty title", Client: owner, Method: "PUT", Path: path + "/title", Body: map[string]any{"title": ""}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "blank title", Client: owner, Method: "PUT", Path: path + "/title", Body: map[string]any{"title": "  "}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "title too long", Client: owner, Method: "PUT", Path: path + "/title", Body: map[string]any{"title": strings.Repeat("t", 201)},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "title of an unknown task", Client: owner, Method: "PUT", Path: "/api/tasks/" + ids.New() + "/title",
				Body: map[string]any{"title": "x"}, WantStatus: 404, WantCode: "not_found"},

			{Name: "runner line without labels", Client: owner, Method: "GET", Path: "/api/tasks/" + plain.ID + "/runner-line", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"in_group":false,"match_count":0,"state":"local"}` {
						t.Fatalf("runner line = %s", r.Body)
					}
				}},
			{Name: "config replaced on a queued task", Client: owner, Method: "PATCH", Path: path + "/config",
				Body: map[string]any{"effort": "low", "runner": map[string]any{"required_labels": []string{"gpu"}}}, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var got tasks.Task
					r.JSON(t, &got)
					c := got.Config
					if c.Effort != "low" || c.Model != "" || c.TestDB || c.Runner == nil || !slices.Equal(c.Runner.RequiredLabels, []string{"gpu"}) {
						t.Fatalf("config = %+v", c)
					}
					if !strings.Contains(string(r.Body), `"config":{"effort":"low","runner":{"required_labels":["gpu"]}}`) {
						t.Fatalf("config JSON: %s", r.Body)
					}
				}},
			{Name: "runner line with required labels", Client: owner, Method: "GET", Path: path + "/runner-line", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"in_group":true,"match_count":0,"state":"local"}` {
						t.Fatalf("runner line = %s", r.Body)
					}
				}},
			{Name: "runner line of an unknown task", Client: owner, Method: "GET", Path: "/api/tasks/" + ids.New() + "/runner-line",
				WantStatus: 404, WantCode: "not_found"},
		})
		// Invalid configurations change nothing.
		refused(t, f, owner, task.ID, "PATCH", path+"/config", map[string]any{"runner": map[string]any{"required_labels": []string{"two words"}}}, 400)
		refused(t, f, owner, task.ID, "PATCH", path+"/config", map[string]any{"effort": "max"}, 400)
		refused(t, f, owner, task.ID, "PATCH", path+"/config", `{"effort":"low","gpu":1}`, 400)
		// Notes and title writes are not status events.
		if n := f.EventCount(t, task.ID); n != 1 {
			t.Fatalf("%d events after edits, want 1", n)
		}
		// Once cancelled, the configuration is frozen; notes still change.
		fixture.Want(t, owner.Do("POST", path+"/cancel", nil), http.StatusOK)
		refused(t, f, owner, task.ID, "PATCH", path+"/config", map[string]any{"effort": "high"}, http.StatusConflict, "queued")
		fixture.Want(t, owner.Do("PUT", path+"/notes", map[string]any{"notes": ""}), http.StatusOK)
		if got := fixture.GetTask(t, owner, task.ID); got.Notes != "" || got.Config.Effort != "low" {
			t.Fatalf("after the cancel: %+v", got)
		}
	})
}

func TestTaskTransitions(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		plainProject := f.Project(t, owner, "Alpha")
		blocked, blocker := f.BlockedProject(t, owner, "Blocked")

		// A held, queued task: cancel, and everything refused after.
		h := f.Task(t, owner, plainProject, "echo held", nil)
		hp := "/api/tasks/" + h.ID
		refused(t, f, owner, h.ID, "POST", hp+"/restart", nil, http.StatusConflict, "restart")
		refused(t, f, owner, h.ID, "POST", hp+"/pr", nil, http.StatusConflict)
		r := owner.Do("POST", hp+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		var cancelled tasks.Task
		r.JSON(t, &cancelled)
		if cancelled.Status != "cancelled" || cancelled.FinishedAt == nil || cancelled.ID != h.ID {
			t.Fatalf("cancelled = %+v", cancelled)
		}
		evs := fixture.Events(t, owner, h.ID, "")
		if len(evs) != 2 || evs[1].SequenceNum != 2 || evs[1].EventType != "status" {
			t.Fatalf("events = %+v", evs)
		}
		if p := fixture.Payload(t, evs[1]); p["from"] != "queued" || p["to"] != "cancelled" || !strings.Contains(fmt.Sprint(p["reason"]), "cancel") {
			t.Fatalf("cancel event = %s", evs[1].Payload)
		}
		refused(t, f, owner, h.ID, "POST", hp+"/cancel", nil, http.StatusConflict, "cancel")
		refused(t, f, owner, h.ID, "POST", hp+"/launch", nil, http.StatusConflict)
		refused(t, f, owner, h.ID, "POST", hp+"/pr", nil, http.StatusConflict)
		refused(t, f, owner, h.ID, "PATCH", hp+"/config", map[string]any{"effort": "low"}, http.StatusConflict)

		// Delete of a finished task: gone with its events.
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "delete a cancelled task", Client: owner, Method: "DELETE", Path: hp, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					if string(bytes.TrimSpace(r.Body)) != `{"deleted":true}` {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "get after delete", Client: owner, Method: "GET", Path: hp, WantStatus: 404, WantCode: "not_found"},
			{Name: "events after delete", Client: owner, Method: "GET", Path: hp + "/events", WantStatus: 404, WantCode: "not_found"},
			{Name: "delete again", Client: owner, Method: "DELETE", Path: hp, WantStatus: 404, WantCode: "not_found"},
			{Name: "cancel after delete", Client: owner, Method: "POST", Path: hp + "/cancel", WantStatus: 404, WantCode: "not_found"},
		})
		if n := f.EventCount(t, h.ID); n != 0 {
			t.Fatalf("%d events of the deleted task are left", n)
		}

		// Launch releases a held task; in the blocked project it stays queued.
		b1 := f.Task(t, owner, blocked, "echo launched", nil)
		bp := "/api/tasks/" + b1.ID
		r = owner.Do("POST", bp+"/launch", nil)
		fixture.Want(t, r, http.StatusOK)
		var launched tasks.Task
		r.JSON(t, &launched)
		if launched.Status != "queued" || launched.Held {
			t.Fatalf("launched = %+v", launched)
		}
		evs = fixture.Events(t, owner, b1.ID, "")
		if p := fixture.Payload(t, evs[len(evs)-1]); len(evs) != 2 || p["from"] != "queued" || p["to"] != "queued" || p["reason"] != "launched" {
			t.Fatalf("launch events = %+v", evs)
		}
		refused(t, f, owner, b1.ID, "POST", bp+"/launch", nil, http.StatusConflict, "held")
		refused(t, f, owner, b1.ID, "POST", bp+"/restart", nil, http.StatusConflict)
		// Cancel, then restart: queued again, not held.
		fixture.Want(t, owner.Do("POST", bp+"/cancel", nil), http.StatusOK)
		r = owner.Do("POST", bp+"/restart", nil)
		fixture.Want(t, r, http.StatusOK)
		var restarted tasks.Task
		r.JSON(t, &restarted)
		if restarted.Status != "queued" || restarted.Held || restarted.FinishedAt != nil || restarted.Error != "" || restarted.Branch != b1.Branch {
			t.Fatalf("restarted = %+v", restarted)
		}
		evs = fixture.Events(t, owner, b1.ID, "")
		if p := fixture.Payload(t, evs[len(evs)-1]); len(evs) != 4 || p["from"] != "cancelled" || p["to"] != "queued" {
			t.Fatalf("restart events = %+v", evs)
		}
		if got := fixture.GetTask(t, owner, b1.ID); got.Status != "queued" || got.Held {
			t.Fatalf("restarted task reads %+v", got)
		}

		// A failed task restarts with its error cleared.
		b2 := f.Task(t, owner, blocked, "echo failed", nil)
		f.Exec(t, "UPDATE tasks SET status = 'failed', error = 'boom', finished_at = $2 WHERE id = $1", b2.ID, time.Now().UTC())
		r = owner.Do("POST", "/api/tasks/"+b2.ID+"/restart", nil)
		fixture.Want(t, r, http.StatusOK)
		if got := r.Map(t); got["status"] != "queued" || got["error"] != "" || got["finished_at"] != nil || got["held"] != false {
			t.Fatalf("restarted failed task = %s", r.Body)
		}

		// A done task without a pull request record: nothing to propose.
		b3 := f.Task(t, owner, blocked, "echo done", nil)
		f.SetStatus(t, b3.ID, tasks.StatusDone)
		b3p := "/api/tasks/" + b3.ID
		refused(t, f, owner, b3.ID, "POST", b3p+"/pr", nil, http.StatusConflict, "changed nothing")
		refused(t, f, owner, b3.ID, "POST", b3p+"/cancel", nil, http.StatusConflict)
		refused(t, f, owner, b3.ID, "POST", b3p+"/launch", nil, http.StatusConflict)
		refused(t, f, owner, b3.ID, "PATCH", b3p+"/config", map[string]any{"effort": "low"}, http.StatusConflict)

		// A done task with a proposed change: pr opens it (done -> done_pr).
		b4 := f.Task(t, owner, blocked, "echo changed", nil)
		f.Exec(t, "UPDATE tasks SET status = 'done', pr = $2 WHERE id = $1", b4.ID,
			`{"provider":"local","branch":"`+b4.Branch+`","base":"main","commit":"0123abcd","files_changed":1,"insertions":2,"deletions":0,"url":null,"opened_at":null}`)
		r = owner.Do("POST", "/api/tasks/"+b4.ID+"/pr", nil)
		fixture.Want(t, r, http.StatusOK)
		var opened tasks.Task
		r.JSON(t, &opened)
		if opened.Status != "done_pr" || opened.PR == nil || opened.PR.OpenedAt == nil || opened.PR.Commit != "0123abcd" || opened.PR.Branch != b4.Branch {
			t.Fatalf("after pr = %s", r.Body)
		}
		evs = fixture.Events(t, owner, b4.ID, "")
		var types []string
		for _, ev := range evs {
			types = append(types, ev.EventType)
		}
		if !slices.Equal(types, []string{"status", "pr", "status"}) {
			t.Fatalf("event types after pr = %v", types)
		}
		if p := fixture.Payload(t, evs[2]); p["from"] != "done" || p["to"] != "done_pr" {
			t.Fatalf("pr status event = %s", evs[2].Payload)
		}
		refused(t, f, owner, b4.ID, "POST", "/api/tasks/"+b4.ID+"/pr", nil, http.StatusConflict)

		// A running task (the dispatcher normally puts it there) cannot be
		// deleted, reconfigured, launched, restarted or proposed.
		b5 := f.Task(t, owner, blocked, "echo running", nil)
		f.SetStatus(t, b5.ID, tasks.StatusRunning)
		b5p := "/api/tasks/" + b5.ID
		refused(t, f, owner, b5.ID, "DELETE", b5p, nil, http.StatusConflict, "running")
		refused(t, f, owner, b5.ID, "PATCH", b5p+"/config", map[string]any{"effort": "low"}, http.StatusConflict)
		refused(t, f, owner, b5.ID, "POST", b5p+"/launch", nil, http.StatusConflict)
		refused(t, f, owner, b5.ID, "POST", b5p+"/restart", nil, http.StatusConflict)
		refused(t, f, owner, b5.ID, "POST", b5p+"/pr", nil, http.StatusConflict)
		f.SetStatus(t, b5.ID, tasks.StatusNeedsInput)
		refused(t, f, owner, b5.ID, "DELETE", b5p, nil, http.StatusConflict, "needs_input")
		f.SetStatus(t, b5.ID, tasks.StatusRunning)
		// Cancelling a running task is allowed (its agent, if it ran here,
		// would be stopped).
		r = owner.Do("POST", b5p+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		if got := r.Map(t); got["status"] != "cancelled" {
			t.Fatalf("cancel of a running task = %s", r.Body)
		}
		if p := fixture.Payload(t, fixture.Events(t, owner, b5.ID, "")[1]); p["from"] != "running" || p["to"] != "cancelled" {
			t.Fatalf("cancel event of a running task = %v", p)
		}

		// Rerun makes a new, unheld task with the same settings; the
		// original is untouched.
		src := f.Task(t, owner, blocked, "echo rerun\nline two", map[string]any{"title": "Rerun me", "agent_profile": "coder",
			"config": map[string]any{"effort": "medium"}})
		srcBefore := owner.Do("GET", "/api/tasks/"+src.ID, nil)
		r = owner.Do("POST", "/api/tasks/"+src.ID+"/rerun", nil)
		if r.Status != http.StatusOK && r.Status != http.StatusCreated {
			t.Fatalf("rerun = %d: %s", r.Status, r.Body)
		}
		var rerun tasks.Task
		r.JSON(t, &rerun)
		if rerun.ID == src.ID || rerun.ProjectID != blocked || rerun.Prompt != src.Prompt || rerun.Title != "Rerun me" ||
			rerun.AgentProfile != "coder" || rerun.Config.Effort != "medium" || rerun.Status != "queued" || rerun.Held ||
			rerun.Branch == src.Branch || rerun.Branch != "slipway/task-"+rerun.ID[len(rerun.ID)-8:] {
			t.Fatalf("rerun = %+v", rerun)
		}
		if after := owner.Do("GET", "/api/tasks/"+src.ID, nil); !bytes.Equal(after.Body, srcBefore.Body) {
			t.Fatalf("rerun changed the original:\n%s\n%s", srcBefore.Body, after.Body)
		}
		if got := fixture.GetTask(t, owner, rerun.ID); got.Status != "queued" {
			t.Fatalf("rerun task reads %+v", got)
		}
		// The blocker never moved.
		if got := fixture.GetTask(t, owner, blocker); got.Status != "running" {
			t.Fatalf("blocker = %+v", got)
		}
	})
}

func TestTaskEvents(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		blocked, _ := f.BlockedProject(t, owner, "Blocked")
		task := f.Task(t, owner, blocked, "echo events", nil)
		p := "/api/tasks/" + task.ID
		// created (1), then cancel/restart/cancel/restart/cancel: 6 events.
		for _, action := range []string{"cancel", "restart", "cancel", "restart", "cancel"} {
			fixture.Want(t, owner.Do("POST", p+"/"+action, nil), http.StatusOK)
		}
		seqs := func(evs []runs.TaskEvent) []int32 {
			out := []int32{}
			for _, e := range evs {
				out = append(out, e.SequenceNum)
			}
			return out
		}
		page := func(query string, wantSeqs ...int32) apitest.Scenario {
			if wantSeqs == nil {
				wantSeqs = []int32{}
			}
			return apitest.Scenario{Name: "events" + query, Client: owner, Method: "GET", Path: p + "/events" + query, WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					var evs []runs.TaskEvent
					r.JSON(t, &evs)
					if got := seqs(evs); !slices.Equal(got, wantSeqs) {
						t.Fatalf("sequence numbers = %v, want %v", got, wantSeqs)
					}
					if len(wantSeqs) == 0 && string(bytes.TrimSpace(r.Body)) != "[]" {
						t.Fatalf("empty page = %s, want []", r.Body)
					}
				}}
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "all events", Client: owner, Method: "GET", Path: p + "/events", WantStatus: 200,
				Check: func(t *testing.T, r *apitest.Response) {
					for _, k := range fixture.ElementKeys(t, r.Body) {
						if !slices.Equal(k, eventFields) {
							t.Fatalf("event fields = %v, want %v", k, eventFields)
						}
					}
					var raw []map[string]any
					r.JSON(t, &raw)
					var evs []runs.TaskEvent
					r.JSON(t, &evs)
					if got := seqs(evs); !slices.Equal(got, []int32{1, 2, 3, 4, 5, 6}) {
						t.Fatalf("sequence numbers = %v", got)
					}
					seen := map[string]bool{}
					wantMoves := [][2]any{{nil, "queued"}, {"queued", "cancelled"}, {"cancelled", "queued"}, {"queued", "cancelled"},
						{"cancelled", "queued"}, {"queued", "cancelled"}}
					for i, ev := range evs {
						if !ids.Valid(ev.EventID) || seen[ev.EventID] || ev.TaskID != task.ID || ev.EventType != "status" || ev.Timestamp.IsZero() {
							t.Fatalf("event %d = %+v", i, ev)
						}
						seen[ev.EventID] = true
						if ts, _ := raw[i]["timestamp"].(string); !strings.HasSuffix(ts, "Z") {
							t.Fatalf("timestamp %v is not UTC with Z", raw[i]["timestamp"])
						}
						if i > 0 && ev.Timestamp.Before(evs[i-1].Timestamp) {
							t.Fatalf("timestamps go back at %d", i)
						}
						pl := fixture.Payload(t, ev)
						if pl["from"] != wantMoves[i][0] || pl["to"] != wantMoves[i][1] {
							t.Fatalf("event %d payload = %s, want %v", i, ev.Payload, wantMoves[i])
						}
					}
				}},
			page("?after_sequence=2&limit=2", 3, 4),
			page("?after_sequence=4", 5, 6),
			page("?after_sequence=6"),
			page("?after_sequence=100"),
			page("?limit=1", 1),
			page("?after_sequence=0&limit=1000", 1, 2, 3, 4, 5, 6),
			{Name: "limit 0", Client: owner, Method: "GET", Path: p + "/events?limit=0", WantStatus: 400, WantCode: "bad_request"},
			{Name: "limit 1001", Client: owner, Method: "GET", Path: p + "/events?limit=1001", WantStatus: 400, WantCode: "bad_request"},
			{Name: "negative after_sequence", Client: owner, Method: "GET", Path: p + "/events?after_sequence=-1", WantStatus: 400, WantCode: "bad_request"},
			{Name: "after_sequence not a number", Client: owner, Method: "GET", Path: p + "/events?after_sequence=x", WantStatus: 400, WantCode: "bad_request"},
			// Huma parses the query as int64, checks minimum 0, then stores it
			// in the int32 field: without a maximum it wraps to a negative
			// number and the whole log comes back.
			{Name: "after_sequence beyond int32", Client: owner, Method: "GET", Path: p + "/events?after_sequence=2147483648", WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown task", Client: owner, Method: "GET", Path: "/api/tasks/" + ids.New() + "/events", WantStatus: 404, WantCode: "not_found"},
			{Name: "malformed task id", Client: owner, Method: "GET", Path: "/api/tasks/nope/events", WantStatus: 404, WantCode: "not_found"},
		})
	})
}

func TestTasksTenancy(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner, outsider := f.App, f.Owner, f.Outsider
		ownerWS := owner.DefaultWorkspace()
		// The owner's follow-up requests of the harness (launch, restart,
		// rerun) queue unheld tasks: the blocked project keeps them queued.
		blocked, _ := f.BlockedProject(t, owner, "Blocked")
		f.Project(t, outsider, "Outsider's")
		heldTask := func(t *testing.T, c *apitest.Client) string {
			return f.Task(t, c, blocked, "echo tenancy", nil).ID
		}
		cancelledTask := func(t *testing.T, c *apitest.Client) string {
			id := heldTask(t, c)
			fixture.Want(t, c.Do("POST", "/api/tasks/"+id+"/cancel", nil), http.StatusOK)
			return id
		}
		doneTask := func(t *testing.T, c *apitest.Client) string {
			id := heldTask(t, c)
			f.Exec(t, "UPDATE tasks SET status = 'done', pr = $2 WHERE id = $1", id,
				`{"provider":"local","branch":"b","base":"main","commit":"abc","files_changed":1,"insertions":1,"deletions":0,"url":null,"opened_at":null}`)
			return id
		}
		run := func(t *testing.T, c *apitest.Client) string {
			id := heldTask(t, c)
			return f.Run(t, ownerWS, blocked, id, "", "succeeded", 1, time.Now().UTC())
		}
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "GET task", Method: "GET", Path: "/api/tasks/{id}", Create: heldTask},
			{Name: "DELETE task", Method: "DELETE", Path: "/api/tasks/{id}", Create: cancelledTask},
			{Name: "cancel", Method: "POST", Path: "/api/tasks/{id}/cancel", Create: heldTask},
			{Name: "launch", Method: "POST", Path: "/api/tasks/{id}/launch", Create: heldTask},
			{Name: "restart", Method: "POST", Path: "/api/tasks/{id}/restart", Create: cancelledTask},
			{Name: "rerun", Method: "POST", Path: "/api/tasks/{id}/rerun", Create: heldTask},
			{Name: "pr", Method: "POST", Path: "/api/tasks/{id}/pr", Create: doneTask},
			{Name: "config", Method: "PATCH", Path: "/api/tasks/{id}/config", Body: map[string]any{"effort": "low"}, Create: heldTask},
			{Name: "notes", Method: "PUT", Path: "/api/tasks/{id}/notes", Body: map[string]any{"notes": "mine"}, Create: heldTask},
			{Name: "title", Method: "PUT", Path: "/api/tasks/{id}/title", Body: map[string]any{"title": "Mine"}, Create: heldTask},
			{Name: "runner-line", Method: "GET", Path: "/api/tasks/{id}/runner-line", Create: heldTask},
			{Name: "events", Method: "GET", Path: "/api/tasks/{id}/events", Create: heldTask},
			{Name: "events page", Method: "GET", Path: "/api/tasks/{id}/events?after_sequence=0&limit=10", Create: heldTask},
			{Name: "GET run", Method: "GET", Path: "/api/runs/{id}", Create: run},
			{Name: "run events", Method: "GET", Path: "/api/runs/{id}/events", Create: run},
		})

		// The outsider's requests change nothing: each writes to one task and
		// one run of the owner, which then read exactly as before.
		victim := heldTask(t, owner)
		done := doneTask(t, owner)
		victimRun := f.Run(t, ownerWS, blocked, victim, "", "succeeded", 1, time.Now().UTC())
		snapshot := func() string {
			var sb strings.Builder
			for _, p := range []string{"/api/tasks/" + victim, "/api/tasks/" + victim + "/events", "/api/tasks/" + done, "/api/runs/" + victimRun} {
				r := owner.Do("GET", p, nil)
				fixture.Want(t, r, http.StatusOK)
				sb.Write(r.Body)
			}
			return sb.String()
		}
		before := snapshot()
		tasksBefore := app.Count(t, "SELECT COUNT(*) FROM tasks")
		for _, req := range []struct {
			method, path string
			body         any
		}{
			{"PATCH", "/api/tasks/" + victim + "/config", map[string]any{"effort": "high"}},
			{"PUT", "/api/tasks/" + victim + "/notes", map[string]any{"notes": "pwned"}},
			{"PUT", "/api/tasks/" + victim + "/title", map[string]any{"title": "pwned"}},
			{"POST", "/api/tasks/" + victim + "/launch", nil},
			{"POST", "/api/tasks/" + victim + "/rerun", nil},
			{"POST", "/api/tasks/" + victim + "/cancel", nil},
			{"POST", "/api/tasks/" + done + "/pr", nil},
			{"POST", "/api/tasks/" + done + "/restart", nil},
			{"DELETE", "/api/tasks/" + done, nil},
		} {
			if r := outsider.Do(req.method, req.path, req.body); r.Status != 404 {
				t.Fatalf("outsider %s %s = %d: %s", req.method, req.path, r.Status, r.Body)
			}
		}
		if after := snapshot(); after != before {
			t.Fatalf("the outsider's requests changed the owner's task:\n%s\n%s", before, after)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM tasks"); n != tasksBefore {
			t.Fatalf("the outsider's rerun made %d task(s)", n-tasksBefore)
		}

		// A task create naming the owner's project answers exactly like one
		// naming a random id.
		foreign := outsider.Do("POST", "/api/tasks", map[string]any{"project_id": blocked, "prompt": "echo x", "hold": true})
		unknownID := ids.New()
		unknown := outsider.Do("POST", "/api/tasks", map[string]any{"project_id": unknownID, "prompt": "echo x", "hold": true})
		if foreign.Status != http.StatusBadRequest || foreign.Status != unknown.Status ||
			strings.ReplaceAll(string(foreign.Body), blocked, "{id}") != strings.ReplaceAll(string(unknown.Body), unknownID, "{id}") {
			t.Fatalf("foreign project %d %s, unknown project %d %s", foreign.Status, foreign.Body, unknown.Status, unknown.Body)
		}
		if !strings.Contains(string(foreign.Body), "no such project") {
			t.Fatalf("foreign project: %s", foreign.Body)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM tasks"); n != tasksBefore {
			t.Fatal("the outsider made a task on the owner's project")
		}

		// The outsider's lists and boards hold nothing of the owner's.
		for _, path := range []string{"/api/tasks", "/tasks/board", "/api/tasks/names", "/api/runs", "/api/runs/board",
			"/api/runs?include_children=true", "/tasks/board?project_id=" + blocked, "/api/tasks?project_id=" + blocked, "/api/runs?task_id=" + victim} {
			r := outsider.Do("GET", path, nil)
			fixture.Want(t, r, http.StatusOK)
			for _, leak := range []string{victim, done, victimRun, blocked, ownerWS, "echo tenancy"} {
				if strings.Contains(string(r.Body), leak) {
					t.Fatalf("%s shows the owner's %s to the outsider: %s", path, leak, r.Body)
				}
			}
		}
	})
}

func TestTasksAccess(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		pending := app.Pending("Pat Pending")
		proj := f.Project(t, owner, "Alpha")
		task := f.Task(t, owner, proj, "echo access", nil)
		run := f.Run(t, owner.DefaultWorkspace(), proj, task.ID, "", "succeeded", 1, time.Now().UTC())
		foreign := []string{tenancy.WorkspaceHeader, f.Outsider.DefaultWorkspace()}
		var scenarios []apitest.Scenario
		for _, ep := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/tasks", nil},
			{"POST", "/api/tasks", map[string]any{"project_id": proj, "prompt": "echo x", "hold": true}},
			{"GET", "/tasks/board", nil},
			{"GET", "/api/tasks/names", nil},
			{"GET", "/api/tasks/" + task.ID, nil},
			{"DELETE", "/api/tasks/" + task.ID, nil},
			{"POST", "/api/tasks/" + task.ID + "/cancel", nil},
			{"PUT", "/api/tasks/" + task.ID + "/notes", map[string]any{"notes": "x"}},
			{"GET", "/api/tasks/" + task.ID + "/runner-line", nil},
			{"GET", "/api/tasks/" + task.ID + "/events", nil},
			{"GET", "/api/runs", nil},
			{"GET", "/api/runs/board", nil},
			{"GET", "/api/runs/" + run, nil},
			{"GET", "/api/runs/" + run + "/events", nil},
		} {
			scenarios = append(scenarios,
				apitest.Scenario{Name: "anonymous " + ep.method + " " + ep.path, Method: ep.method, Path: ep.path, Body: ep.body,
					WantStatus: 401, WantCode: "unauthorized"},
				apitest.Scenario{Name: "pending " + ep.method + " " + ep.path, Client: pending, Method: ep.method, Path: ep.path, Body: ep.body,
					WantStatus: 403, WantCode: "forbidden"},
				apitest.Scenario{Name: "foreign workspace " + ep.method + " " + ep.path, Client: owner, Method: ep.method, Path: ep.path, Body: ep.body,
					Header: foreign, WantStatus: 403, WantCode: "forbidden"},
			)
		}
		scenarios = append(scenarios,
			apitest.Scenario{Name: "without CSRF header", Client: owner, Method: "POST", Path: "/api/tasks/" + task.ID + "/cancel",
				Header: []string{"X-CSRF-Token", ""}, WantStatus: 403, WantCode: "forbidden"},
			apitest.Scenario{Name: "own workspace by header", Client: owner, Method: "GET", Path: "/api/tasks/" + task.ID,
				Header: []string{tenancy.WorkspaceHeader, owner.DefaultWorkspace()}, WantStatus: 200},
		)
		before := owner.Do("GET", "/api/tasks/"+task.ID, nil)
		n := app.Count(t, "SELECT COUNT(*) FROM tasks")
		apitest.Run(t, app, scenarios)
		if after := owner.Do("GET", "/api/tasks/"+task.ID, nil); !bytes.Equal(before.Body, after.Body) {
			t.Fatalf("refused requests changed the task:\n%s\n%s", before.Body, after.Body)
		}
		if m := app.Count(t, "SELECT COUNT(*) FROM tasks"); m != n {
			t.Fatalf("refused creates made %d task(s)", m-n)
		}
	})
}
