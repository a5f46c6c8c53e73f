package tasks_test

import (
	"net/http"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestTaskListFollowsEveryChange: a page of the task list is kept in memory
// while its workspace's tasks do not change, and every change to a task
// row shows on the next request, whoever makes it: the API, a statement
// from outside the service (another process, a cascade), another replica,
// a project's deletion. Deleting a workspace with tasks still works.
func TestTaskListFollowsEveryChange(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		proj := f.Project(t, owner, "Alpha")
		first := f.Task(t, owner, proj, "echo one", nil)
		f.Task(t, owner, proj, "echo two", nil)
		const path = "/api/tasks?limit=20"
		type page struct {
			Tasks []struct{ ID, Title string }
			Total int
		}
		list := func(c *apitest.Client) page {
			t.Helper()
			r := c.Do("GET", path, nil)
			fixture.Want(t, r, http.StatusOK)
			var p page
			r.JSON(t, &p)
			return p
		}
		titleOf := func(c *apitest.Client, id string) string {
			t.Helper()
			for _, task := range list(c).Tasks {
				if task.ID == id {
					return task.Title
				}
			}
			t.Fatalf("task %s is not on the page", id)
			return ""
		}
		if p := list(owner); p.Total != 2 || len(p.Tasks) != 2 {
			t.Fatalf("page %+v, want 2 tasks", p)
		}

		// Through the API.
		fixture.Want(t, owner.Do("PUT", "/api/tasks/"+first.ID+"/title", map[string]any{"title": "renamed"}), http.StatusOK)
		if got := titleOf(owner, first.ID); got != "renamed" {
			t.Fatalf("after a rename the list says %q", got)
		}
		// From outside the service: the version moves with the row.
		f.Exec(t, "UPDATE tasks SET title = 'from outside' WHERE id = $1", first.ID)
		if got := titleOf(owner, first.ID); got != "from outside" {
			t.Fatalf("after an outside update the list says %q", got)
		}
		// The page is kept: with the version held still, a change goes
		// unseen until the version moves.
		if e == db.SQLite {
			f.Exec(t, "DROP TRIGGER tasks_version_update")
		} else {
			f.Exec(t, "ALTER TABLE tasks DISABLE TRIGGER tasks_version")
		}
		f.Exec(t, "UPDATE tasks SET title = 'unseen' WHERE id = $1", first.ID)
		if got := titleOf(owner, first.ID); got != "from outside" {
			t.Fatalf("the list says %q: it was read again with its version unchanged", got)
		}
		ws := owner.DefaultWorkspace()
		f.Exec(t, "UPDATE task_versions SET version = version + 1 WHERE workspace_id = $1", ws)
		if got := titleOf(owner, first.ID); got != "unseen" {
			t.Fatalf("after the version moved the list says %q", got)
		}
		if e == db.Postgres {
			f.Exec(t, "ALTER TABLE tasks ENABLE TRIGGER tasks_version")
		} else {
			f.Exec(t, `CREATE TRIGGER tasks_version_update AFTER UPDATE ON tasks BEGIN
				INSERT INTO task_versions (workspace_id, version)
					SELECT NEW.workspace_id, 1 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = NEW.workspace_id)
					ON CONFLICT (workspace_id) DO UPDATE SET version = version + 1;
				END`)
		}

		// Another replica's change, and this replica's change seen there
		// (replicas share PostgreSQL).
		if e == db.Postgres {
			replica := f.App.Replica(t)
			there := owner.On(replica)
			if got := titleOf(there, first.ID); got != "unseen" {
				t.Fatalf("the replica's list says %q", got)
			}
			fixture.Want(t, there.Do("PUT", "/api/tasks/"+first.ID+"/title", map[string]any{"title": "on the replica"}), http.StatusOK)
			if got := titleOf(owner, first.ID); got != "on the replica" {
				t.Fatalf("after the replica's rename the list says %q", got)
			}
			fixture.Want(t, owner.Do("PUT", "/api/tasks/"+first.ID+"/title", map[string]any{"title": "back here"}), http.StatusOK)
			if got := titleOf(there, first.ID); got != "back here" {
				t.Fatalf("after this replica's rename the replica's list says %q", got)
			}
		}

		// A new task, then the project's deletion (its tasks go by cascade).
		f.Task(t, owner, proj, "echo three", nil)
		if p := list(owner); p.Total != 3 {
			t.Fatalf("page %+v after a third task, want 3", p)
		}
		fixture.Want(t, owner.Do("DELETE", "/api/projects/"+proj, nil), http.StatusOK)
		if p := list(owner); p.Total != 0 || len(p.Tasks) != 0 {
			t.Fatalf("page %+v after the project's deletion, want none", p)
		}

		// A workspace deleted with its tasks: nothing refuses it.
		other := f.Project(t, owner, "Bravo")
		f.Task(t, owner, other, "echo four", nil)
		f.Exec(t, "DELETE FROM workspaces WHERE id = $1", ws)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM task_versions WHERE workspace_id = $1", ws); n != 0 {
			t.Fatalf("%d versions left of a deleted workspace", n)
		}
	})
}
