package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestTextAtTheEdge: names and titles with control characters or bidi
// overrides, and any text with a NUL, are refused with 400 on both engines
// (PostgreSQL used to answer 500: invalid byte sequence) and store nothing.
func TestTextAtTheEdge(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		app, owner := f.App, f.Owner
		project := f.Project(t, owner, "Alpha")
		task := f.Task(t, owner, project, "echo hi", nil)

		bad := []string{"nul\x00name", "tab\tname", "line\nbreak", "esc\x1b[2J", "rtl\u202eevil", "del\x7f"}
		counts := func() string {
			return fmt.Sprint(app.Count(t, "SELECT COUNT(*) FROM projects"), app.Count(t, "SELECT COUNT(*) FROM tasks"),
				app.Count(t, "SELECT COUNT(*) FROM workspaces"), app.Count(t, "SELECT COUNT(*) FROM agent_profiles"))
		}
		snapshot := func() string {
			var sb strings.Builder
			for _, p := range []string{"/api/me", "/api/projects/" + project, "/api/tasks/" + task.ID, "/organization"} {
				r := owner.Do("GET", p, nil)
				fixture.Want(t, r, http.StatusOK)
				sb.Write(r.Body)
			}
			return sb.String() + counts()
		}
		before := snapshot()
		var scenarios []apitest.Scenario
		for i, s := range bad {
			name := fmt.Sprintf("%d %q", i, s)
			// The message names the field (a NUL is refused before any field
			// is looked at, and says so).
			says := []string{"name must not contain control"}
			if strings.ContainsRune(s, 0) {
				says = []string{"NUL"}
			}
			scenarios = append(scenarios,
				apitest.Scenario{Name: "project name " + name, Client: owner, Method: "POST", Path: "/api/projects",
					Body: map[string]any{"name": s, "repo_url": f.Repo}, WantStatus: 400, WantCode: "bad_request", WantContains: says},
				apitest.Scenario{Name: "project rename " + name, Client: owner, Method: "PUT", Path: "/api/projects/" + project,
					Body: map[string]any{"name": s}, WantStatus: 400, WantCode: "bad_request"},
				apitest.Scenario{Name: "task title " + name, Client: owner, Method: "POST", Path: "/api/tasks",
					Body: map[string]any{"project_id": project, "prompt": "echo x", "title": s, "hold": true}, WantStatus: 400, WantCode: "bad_request"},
				apitest.Scenario{Name: "task rename " + name, Client: owner, Method: "PUT", Path: "/api/tasks/" + task.ID + "/title",
					Body: map[string]any{"title": s}, WantStatus: 400, WantCode: "bad_request"},
				apitest.Scenario{Name: "display name " + name, Client: owner, Method: "PUT", Path: "/api/me",
					Body: map[string]any{"display_name": s}, WantStatus: 400, WantCode: "bad_request"},
				apitest.Scenario{Name: "workspace name " + name, Client: owner, Method: "POST", Path: "/api/workspaces",
					Body: map[string]any{"name": s}, WantStatus: 400, WantCode: "bad_request"},
				apitest.Scenario{Name: "organization name " + name, Client: owner, Method: "PUT", Path: "/organization",
					Body: map[string]any{"name": s}, WantStatus: 400, WantCode: "bad_request"},
				apitest.Scenario{Name: "profile name " + name, Client: owner, Method: "POST", Path: "/api/agent-profiles",
					Body: map[string]any{"name": s, "agent_type": "shell"}, WantStatus: 400, WantCode: "bad_request"},
			)
		}
		// NUL in free text (prompts, notes, instructions, anything) and in
		// searches.
		scenarios = append(scenarios,
			apitest.Scenario{Name: "NUL in a prompt", Client: owner, Method: "POST", Path: "/api/tasks",
				Body: map[string]any{"project_id": project, "prompt": "echo \x00", "hold": true}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"NUL"}},
			apitest.Scenario{Name: "NUL in notes", Client: owner, Method: "PUT", Path: "/api/tasks/" + task.ID + "/notes",
				Body: map[string]any{"notes": "a\x00b"}, WantStatus: 400, WantCode: "bad_request"},
			apitest.Scenario{Name: "NUL in instructions", Client: owner, Method: "POST", Path: "/api/agent-profiles",
				Body: map[string]any{"name": "ok-name", "agent_type": "shell", "instructions": "x\x00y"}, WantStatus: 400, WantCode: "bad_request"},
			apitest.Scenario{Name: "NUL in a registration", Method: "POST", Path: "/api/auth/register",
				Body: map[string]any{"email": "x\x00@example.test", "password": apitest.Password}, WantStatus: 400, WantCode: "bad_request"},
			apitest.Scenario{Name: "NUL in a search", Client: owner, Method: "GET", Path: "/api/tasks?q=a%00b", WantStatus: 400, WantCode: "bad_request"},
			apitest.Scenario{Name: "NUL in a board search", Client: owner, Method: "GET", Path: "/tasks/board?q=%00", WantStatus: 400, WantCode: "bad_request"},
			apitest.Scenario{Name: "NUL in a project search", Client: owner, Method: "GET", Path: "/api/projects/board?q=%00", WantStatus: 400, WantCode: "bad_request"},
			// An escaped backslash before u0000 is text, not a NUL.
			apitest.Scenario{Name: "a literal backslash-u0000 is fine", Client: owner, Method: "PUT", Path: "/api/tasks/" + task.ID + "/notes",
				Body: `{"notes":"C:\\u0000"}`, WantStatus: 200, WantContains: []string{`C:\\u0000`}},
			// Ordinary non-ASCII names pass.
			apitest.Scenario{Name: "unicode name", Client: owner, Method: "PUT", Path: "/api/tasks/" + task.ID + "/title",
				Body: map[string]any{"title": "Größe 日本 🚀"}, WantStatus: 200},
		)
		apitest.Run(t, app, scenarios)
		// The two accepted edits changed the task; put them back and compare.
		fixture.Want(t, owner.Do("PUT", "/api/tasks/"+task.ID+"/title", map[string]any{"title": task.Title}), http.StatusOK)
		fixture.Want(t, owner.Do("PUT", "/api/tasks/"+task.ID+"/notes", map[string]any{"notes": ""}), http.StatusOK)
		after := snapshot()
		// updated_at moved with the edits; everything else is as before.
		strip := func(s string) string {
			for {
				i := strings.Index(s, `"updated_at":"`)
				if i < 0 {
					return s
				}
				j := strings.IndexByte(s[i+14:], '"')
				s = s[:i] + s[i+14+j+1:]
			}
		}
		if strip(after) != strip(before) {
			t.Fatalf("refused requests changed something:\n%s\n%s", before, after)
		}
	})
}
