package undo_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/tasks"
	"slipway/internal/undo"
)

// branchLog is the remote branch's commit subjects, newest first ("" when
// the branch is gone).
func branchLog(t *testing.T, repo, branch string) []string {
	t.Helper()
	if out := agenttest.Git(t, repo, "branch", "--list", branch); out == "" {
		return nil
	}
	return strings.Split(agenttest.Git(t, repo, "log", "--format=%s", branch), "\n")
}

func TestUndoAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_UNDO_GRACE_SECS", "3600")
		owner, outsider := f.Owner, f.Outsider
		project := f.Project(t, owner, "Undone")
		task := f.Published(t, owner, project)
		held := f.Task(t, owner, project, "never ran", nil)

		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous list", Method: "GET", Path: "/api/tasks/" + task.ID + "/undo", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous create with a bad body is 401", Method: "POST", Path: "/api/tasks/" + task.ID + "/undo", Body: map[string]any{"kind": 1}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous execute", Method: "POST", Path: "/api/undo/" + ids.New() + "/execute", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "bad kind", Client: owner, Method: "POST", Path: "/api/tasks/" + task.ID + "/undo", Body: map[string]any{"kind": "rewrite_history"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"revert_commit"}},
			{Name: "kind with control characters", Client: owner, Method: "POST", Path: "/api/tasks/" + task.ID + "/undo", Body: map[string]any{"kind": "close_pr\n"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown task", Client: owner, Method: "POST", Path: "/api/tasks/" + ids.New() + "/undo", Body: map[string]any{"kind": "close_pr"}, WantStatus: 404, WantCode: "not_found"},
			{Name: "a task that never finished", Client: owner, Method: "POST", Path: "/api/tasks/" + held.ID + "/undo", Body: map[string]any{"kind": "close_pr"}, WantStatus: 409, WantCode: "conflict"},
			{Name: "unknown action", Client: owner, Method: "POST", Path: "/api/undo/" + ids.New() + "/execute", WantStatus: 404, WantCode: "not_found"},
			{Name: "empty list", Client: owner, Method: "GET", Path: "/api/tasks/" + task.ID + "/undo", WantStatus: 200, Check: func(t *testing.T, r *apitest.Response) {
				if strings.TrimSpace(string(r.Body)) != "[]" {
					t.Fatalf("list = %s", r.Body)
				}
			}},
		})

		create := func(kind string) undo.Action {
			t.Helper()
			r := owner.Do("POST", "/api/tasks/"+task.ID+"/undo", map[string]any{"kind": kind})
			fixture.Want(t, r, http.StatusCreated)
			var a undo.Action
			r.JSON(t, &a)
			if a.Status != undo.StatusGrace || a.Kind != kind || !a.GraceUntil.After(time.Now().Add(50*time.Minute)) {
				t.Fatalf("created %+v", a)
			}
			return a
		}
		revert := create(undo.KindRevertCommit)
		time.Sleep(5 * time.Millisecond)
		closePR := create(undo.KindClosePR)
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "the same kind twice", Client: owner, Method: "POST", Path: "/api/tasks/" + task.ID + "/undo", Body: map[string]any{"kind": "close_pr"}, WantStatus: 409, WantCode: "conflict"},
		})
		r := owner.Do("GET", "/api/tasks/"+task.ID+"/undo", nil)
		var list []undo.Action
		r.JSON(t, &list)
		if len(list) != 2 || list[0].ID != closePR.ID || list[1].ID != revert.ID {
			t.Fatalf("list, newest first: %+v", list)
		}
		// The sweep leaves actions in their grace period alone.
		if n, err := f.App.Server.Services.Undo.Sweep(context.Background()); err != nil || n != 0 {
			t.Fatalf("swept %d, %v", n, err)
		}

		// Execute skips the grace period: a commit reverting the task's.
		r = owner.Do("POST", "/api/undo/"+revert.ID+"/execute", nil)
		fixture.Want(t, r, http.StatusOK)
		var done undo.Action
		r.JSON(t, &done)
		if done.Status != undo.StatusExecuted || !strings.Contains(done.Result, "reverted "+task.PR.Commit) {
			t.Fatalf("executed %+v", done)
		}
		if log := branchLog(t, f.Repo, task.Branch); len(log) != 3 || !strings.HasPrefix(log[0], `Revert "work"`) {
			t.Fatalf("branch log %q", log)
		}
		if out := agenttest.Git(t, f.Repo, "ls-tree", "--name-only", task.Branch); strings.Contains(out, "work.txt") {
			t.Fatalf("work.txt is still on the branch: %s", out)
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "execute again", Client: owner, Method: "POST", Path: "/api/undo/" + revert.ID + "/execute", WantStatus: 409, WantCode: "conflict", WantContains: []string{"executed"}},
		})
		fixture.Want(t, owner.Do("POST", "/api/undo/"+closePR.ID+"/execute", nil), http.StatusOK)
		if got := fixture.GetTask(t, owner, task.ID); got.PR == nil || got.PR.ClosedAt == nil {
			t.Fatalf("the pull request is still open: %+v", got.PR)
		}
		// Delete the branch, through the sweep once its grace ended.
		del := create(undo.KindDeleteBranch)
		f.Exec(t, `UPDATE undo_actions SET grace_until = $2 WHERE id = $1`, del.ID, time.Now().UTC().Add(-time.Second))
		if n, err := f.App.Server.Services.Undo.Sweep(context.Background()); err != nil || n != 1 {
			t.Fatalf("swept %d, %v", n, err)
		}
		if log := branchLog(t, f.Repo, task.Branch); log != nil {
			t.Fatalf("the branch is still there: %q", log)
		}
		var undos []string
		for _, ev := range fixture.Events(t, owner, task.ID, "") {
			if ev.EventType == tasks.EventUndo {
				p := fixture.Payload(t, ev)
				undos = append(undos, p["kind"].(string)+":"+p["status"].(string))
			}
		}
		if strings.Join(undos, " ") != "revert_commit:grace close_pr:grace revert_commit:executed close_pr:executed delete_branch:grace delete_branch:executed" {
			t.Errorf("undo events %v", undos)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "list", Method: "GET", Path: "/api/tasks/{id}/undo", Create: func(t *testing.T, c *apitest.Client) string { return task.ID }},
			{Name: "create", Method: "POST", Path: "/api/tasks/{id}/undo", Body: map[string]any{"kind": "close_pr"},
				Create: func(t *testing.T, c *apitest.Client) string { return task.ID }},
			{Name: "execute", Method: "POST", Path: "/api/undo/{id}/execute", Create: func(t *testing.T, c *apitest.Client) string { return del.ID }},
		})
	})
}

// Twenty executes of one undo racing the sweep: the reversal runs once.
func TestUndoExecuteRace(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_UNDO_GRACE_SECS", "3600")
		owner := f.Owner
		task := f.Published(t, owner, f.Project(t, owner, "Raced"))
		r := owner.Do("POST", "/api/tasks/"+task.ID+"/undo", map[string]any{"kind": "revert_commit"})
		fixture.Want(t, r, http.StatusCreated)
		id := r.Map(t)["id"].(string)
		f.Exec(t, `UPDATE undo_actions SET grace_until = $2 WHERE id = $1`, id, time.Now().UTC().Add(-time.Second))

		const racers = 20
		statuses := make([]int, racers)
		swept := make([]int, 4)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				statuses[i] = owner.Do("POST", "/api/undo/"+id+"/execute", nil).Status
			}()
		}
		for i := range swept {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				n, err := f.App.Server.Services.Undo.Sweep(context.Background())
				if err != nil {
					t.Error(err)
				}
				swept[i] = n
			}()
		}
		close(start)
		wg.Wait()
		runs := 0
		for _, s := range statuses {
			switch s {
			case http.StatusOK:
				runs++
			case http.StatusConflict:
			default:
				t.Fatalf("an execute got %d", s)
			}
		}
		for _, n := range swept {
			runs += n
		}
		if runs != 1 {
			t.Fatalf("the undo ran %d times (executes %v, sweeps %v)", runs, statuses, swept)
		}
		if log := branchLog(t, f.Repo, task.Branch); len(log) != 3 || strings.Count(strings.Join(log, "\n"), "Revert") != 1 {
			t.Fatalf("branch log %q: want exactly one revert", log)
		}
	})
}
