package tasks_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
	"slipway/internal/tasks"
)

func TestSubtasksAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		project, parent := f.BlockedProject(t, owner, "Delegating")

		r := owner.Do("POST", "/api/tasks/"+parent+"/subtasks", map[string]any{"agent_profile": "shell", "prompt": "echo child", "title": "Child"})
		fixture.Want(t, r, http.StatusCreated)
		if keys := apitest.ObjectKeys(t, r.Body); strings.Join(keys, ",") != "id,status" {
			t.Fatalf("delegate answers %v", keys)
		}
		child := r.Map(t)["id"].(string)
		if st := r.Map(t)["status"]; st != tasks.StatusQueued {
			t.Fatalf("subtask status %v", st)
		}
		got := fixture.GetTask(t, owner, child)
		if got.ParentTaskID == nil || *got.ParentTaskID != parent || got.ProjectID != project || got.Held {
			t.Fatalf("subtask %+v", got)
		}
		other := f.Task(t, owner, project, "unrelated", nil)
		var created bool
		for _, ev := range fixture.Events(t, owner, parent, "") {
			if ev.EventType == tasks.EventSubtask && fixture.Payload(t, ev)["subtask_id"] == child {
				created = true
			}
		}
		if !created {
			t.Fatal("no subtask_created event on the parent")
		}

		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous delegate with a bad body is 401", Method: "POST", Path: "/api/tasks/" + parent + "/subtasks", Body: map[string]any{"prompt": 1}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous list", Method: "GET", Path: "/api/tasks/" + parent + "/subtasks", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "no profile", Client: owner, Method: "POST", Path: "/api/tasks/" + parent + "/subtasks", Body: map[string]any{"prompt": "x"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"agent_profile"}},
			{Name: "unknown profile", Client: owner, Method: "POST", Path: "/api/tasks/" + parent + "/subtasks", Body: map[string]any{"agent_profile": "ghost", "prompt": "x"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "empty prompt", Client: owner, Method: "POST", Path: "/api/tasks/" + parent + "/subtasks", Body: map[string]any{"agent_profile": "shell", "prompt": " "}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown parent", Client: owner, Method: "POST", Path: "/api/tasks/" + ids.New() + "/subtasks", Body: map[string]any{"agent_profile": "shell", "prompt": "x"}, WantStatus: 404, WantCode: "not_found"},
			{Name: "list", Client: owner, Method: "GET", Path: "/api/tasks/" + parent + "/subtasks", WantStatus: 200, WantContains: []string{child}, WantNotContains: []string{other.ID, "echo child"}},
			{Name: "get carries no prompt", Client: owner, Method: "GET", Path: "/api/tasks/" + parent + "/subtasks/" + child, WantStatus: 200, WantContains: []string{child, `"title":"Child"`}, WantNotContains: []string{"echo child"}},
			{Name: "another task is no subtask of it", Client: owner, Method: "GET", Path: "/api/tasks/" + parent + "/subtasks/" + other.ID, WantStatus: 404, WantCode: "not_found"},
			{Name: "its own id is no subtask of it", Client: owner, Method: "GET", Path: "/api/tasks/" + parent + "/subtasks/" + parent, WantStatus: 404, WantCode: "not_found"},
			{Name: "cancel", Client: owner, Method: "POST", Path: "/api/tasks/" + parent + "/subtasks/" + child + "/cancel", WantStatus: 200, WantContains: []string{`"status":"cancelled"`}},
			{Name: "cancel again", Client: owner, Method: "POST", Path: "/api/tasks/" + parent + "/subtasks/" + child + "/cancel", WantStatus: 409, WantCode: "conflict"},
			{Name: "cancel another task through it", Client: owner, Method: "POST", Path: "/api/tasks/" + parent + "/subtasks/" + other.ID + "/cancel", WantStatus: 404, WantCode: "not_found"},
		})
		if got := fixture.GetTask(t, owner, other.ID); got.Status != tasks.StatusQueued {
			t.Fatalf("the unrelated task is %s", got.Status)
		}
		// The ended subtask was reported to its working parent's agent.
		var note string
		if err := f.App.DB.R.QueryRow(`SELECT i.line FROM agent_inbox i JOIN jobs j ON j.id = i.job_id WHERE j.ref_id = $1`, parent).Scan(&note); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(note, child) || !strings.Contains(note, "cancelled") {
			t.Fatalf("note to the parent's agent: %s", note)
		}

		// An agent delegates through its subtask line; one it cannot have
		// is refused on the record, never failing its batch.
		run := f.Run(t, owner.DefaultWorkspace(), project, parent, "", runs.Running, 1, time.Now().UTC())
		if _, err := f.App.Server.Services.Runs.AppendBatch(context.Background(), owner.DefaultWorkspace(), run, 1, []runs.NewEvent{
			{Type: "subtask", Payload: []byte(`{"type":"subtask","agent_profile":"shell","prompt":"echo from the agent","title":"Agent's child"}`), At: time.Now().UTC()},
			{Type: "subtask", Payload: []byte(`{"type":"subtask","agent_profile":"ghost","prompt":"x"}`), At: time.Now().UTC()},
			{Type: "cost", Payload: []byte(`{"type":"cost","model":"m","total_tokens":10,"cost_usd":0.25}`), At: time.Now().UTC()},
		}); err != nil {
			t.Fatal(err)
		}
		r = owner.Do("GET", "/api/tasks/"+parent+"/subtasks", nil)
		var subs []tasks.Subtask
		r.JSON(t, &subs)
		if len(subs) != 2 || subs[1].Title != "Agent's child" {
			t.Fatalf("subtasks %+v", subs)
		}
		text := fixture.DumpEvents(fixture.Events(t, owner, parent, ""))
		if !strings.Contains(text, "subtask_refused") || !strings.Contains(text, "ghost") {
			t.Fatalf("the refused line is not on the record:\n%s", text)
		}
		if got := fixture.GetTask(t, owner, parent); got.CostUSD != 0.25 {
			t.Fatalf("cost %v", got.CostUSD)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "list", Method: "GET", Path: "/api/tasks/{id}/subtasks", Create: func(t *testing.T, c *apitest.Client) string { return parent }},
			{Name: "delegate", Method: "POST", Path: "/api/tasks/{id}/subtasks", Body: map[string]any{"agent_profile": "shell", "prompt": "x"},
				Create: func(t *testing.T, c *apitest.Client) string { return parent }},
			{Name: "get through a foreign parent", Method: "GET", Path: "/api/tasks/{id}/subtasks/" + child, Create: func(t *testing.T, c *apitest.Client) string { return parent }},
			{Name: "cancel through a foreign parent", Method: "POST", Path: "/api/tasks/{id}/subtasks/" + child + "/cancel", Create: func(t *testing.T, c *apitest.Client) string { return parent }},
		})
	})
}

func TestGroupsAndTeamBoard(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		project, _ := f.BlockedProject(t, owner, "Grouped")
		single := f.Task(t, owner, project, "alone", nil)

		r := owner.Do("POST", "/api/tasks/group", map[string]any{"title": "Fan out", "tasks": []any{
			map[string]any{"project_id": project, "prompt": "echo one"},
			map[string]any{"project_id": project, "prompt": "echo two", "agent_profile": "shell"},
			map[string]any{"project_id": project, "prompt": "echo three"},
		}})
		fixture.Want(t, r, http.StatusCreated)
		var g tasks.Group
		r.JSON(t, &g)
		if g.Title != "Fan out" || len(g.Tasks) != 3 || g.Counts[tasks.StatusQueued] != 3 {
			t.Fatalf("group %+v", g)
		}
		for _, task := range g.Tasks {
			if !task.Held || task.GroupID == nil || *task.GroupID != g.ID {
				t.Fatalf("group task %+v", task)
			}
		}
		before := countTasks(t, f)
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous create with a bad body is 401", Method: "POST", Path: "/api/tasks/group", Body: map[string]any{"tasks": 3}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous team board", Method: "GET", Path: "/api/team-board", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "no tasks", Client: owner, Method: "POST", Path: "/api/tasks/group", Body: map[string]any{"tasks": []any{}}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "one bad task refuses them all", Client: owner, Method: "POST", Path: "/api/tasks/group", Body: map[string]any{"tasks": []any{
				map[string]any{"project_id": project, "prompt": "fine"}, map[string]any{"project_id": project, "prompt": "  "}}},
				WantStatus: 400, WantCode: "bad_request", WantContains: []string{"tasks[1]"}},
			{Name: "title with control characters", Client: owner, Method: "POST", Path: "/api/tasks/group", Body: map[string]any{"title": "a\x07", "tasks": []any{
				map[string]any{"project_id": project, "prompt": "fine"}}}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown group", Client: owner, Method: "GET", Path: "/api/tasks/group/" + ids.New(), WantStatus: 404, WantCode: "not_found"},
			{Name: "malformed group id", Client: owner, Method: "POST", Path: "/api/tasks/group/nope/launch", WantStatus: 404, WantCode: "not_found"},
		})
		if n := countTasks(t, f); n != before {
			t.Fatalf("a refused group left %d tasks behind", n-before)
		}

		// The board shows the group as one unit.
		r = owner.Do("GET", "/tasks/board?page_size=50", nil)
		fixture.Want(t, r, http.StatusOK)
		body := string(r.Body)
		units := 0
		for _, task := range g.Tasks {
			units += strings.Count(body, `"id":"`+task.ID+`"`)
		}
		if units != 1 || !strings.Contains(body, single.ID) {
			t.Fatalf("the board shows %d of the group's tasks (want 1 unit): %s", units, body)
		}

		// Launch releases them; cancel stops them all.
		r = owner.Do("POST", "/api/tasks/group/"+g.ID+"/launch", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &g)
		for _, task := range g.Tasks {
			if task.Held {
				t.Fatalf("still held after launch: %+v", task)
			}
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "launch again", Client: owner, Method: "POST", Path: "/api/tasks/group/" + g.ID + "/launch", WantStatus: 409, WantCode: "conflict"},
		})
		r = owner.Do("POST", "/api/tasks/group/"+g.ID+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &g)
		if g.Counts[tasks.StatusCancelled] != 3 {
			t.Fatalf("after cancel %+v", g.Counts)
		}

		// The team board: a row per profile with counts; a gone profile's
		// tasks fall to unassigned.
		f.Exec(t, `UPDATE tasks SET agent_profile = 'retired', status = 'failed' WHERE id = $1`, single.ID)
		f.Exec(t, `UPDATE tasks SET cost_usd = 1.5 WHERE id = $1`, single.ID)
		r = owner.Do("GET", "/api/team-board", nil)
		fixture.Want(t, r, http.StatusOK)
		var rows []tasks.TeamRow
		r.JSON(t, &rows)
		byName := map[string]tasks.TeamRow{}
		for _, row := range rows {
			byName[row.AgentProfile] = row
		}
		shell, un := byName["shell"], byName[tasks.Unassigned]
		if _, ok := byName["coder"]; !ok {
			t.Fatalf("a profile without tasks has no row: %+v", rows)
		}
		if shell.Running != 1 || shell.LastActivity == nil {
			t.Fatalf("shell row %+v", shell)
		}
		if un.Failed != 1 || un.CostUSD != 1.5 {
			t.Fatalf("unassigned row %+v", un)
		}
		r = outsider.Do("GET", "/api/team-board", nil)
		if strings.Contains(string(r.Body), `"running":1`) || strings.Contains(string(r.Body), tasks.Unassigned) {
			t.Fatalf("the outsider's team board counts our tasks: %s", r.Body)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "get", Method: "GET", Path: "/api/tasks/group/{id}", Create: func(t *testing.T, c *apitest.Client) string { return g.ID }},
			{Name: "cancel", Method: "POST", Path: "/api/tasks/group/{id}/cancel", Create: func(t *testing.T, c *apitest.Client) string { return g.ID }},
			{Name: "launch", Method: "POST", Path: "/api/tasks/group/{id}/launch", Create: func(t *testing.T, c *apitest.Client) string { return g.ID }},
		})
	})
}

func countTasks(t *testing.T, f *fixture.API) int {
	t.Helper()
	var n int
	if err := f.App.DB.R.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
