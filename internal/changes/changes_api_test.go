package changes_test

import (
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/changes"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// A task's published change reads back as files and a patch, fetched from
// the remote when the hub never had the commit (a runner pushed it);
// another workspace's task is unknown, and a task that published nothing
// says so.
func TestTaskDiff(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		project := f.Project(t, owner, "p")
		task := f.Published(t, owner, project)
		r := owner.Do("GET", "/api/tasks/"+task.ID+"/diff", nil)
		fixture.Want(t, r, http.StatusOK)
		var c changes.TaskChange
		r.JSON(t, &c)
		if c.TaskID != task.ID || c.Base != "main" || c.Commit != task.PR.Commit || len(c.Files) != 1 || c.Files[0].Path != "work.txt" ||
			c.Files[0].Insertions != 1 || c.Truncated || !strings.Contains(c.Patch, "+the agent's work") {
			t.Fatalf("change = %+v", c)
		}
		held := f.Task(t, owner, project, "never ran", nil)
		for path, want := range map[string]int{
			"/api/tasks/" + held.ID + "/diff":   http.StatusNotFound,
			"/api/tasks/" + ids.New() + "/diff": http.StatusNotFound,
			"/api/tasks/not-an-id/diff":         http.StatusNotFound,
		} {
			fixture.Want(t, owner.Do("GET", path, nil), want)
		}
		if r := owner.Do("GET", "/api/tasks/"+held.ID+"/diff", nil); !strings.Contains(string(r.Body), "published no change") {
			t.Fatalf("a task without a change: %s", r.Body)
		}
		// Tenancy: another workspace's task is exactly an unknown one.
		apitest.CheckTenancy(t, owner, f.Outsider, []apitest.TenancyCase{
			{Name: "diff", Method: "GET", Path: "/api/tasks/{id}/diff", Create: func(*testing.T, *apitest.Client) string { return task.ID }},
		})
		fixture.Want(t, f.App.Anonymous().Do("GET", "/api/tasks/"+task.ID+"/diff", nil), http.StatusUnauthorized)
	})
}
