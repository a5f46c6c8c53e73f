package workflowscan_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

const good = `name: Greeter
nodes:
  - key: hello
    kind: transform
    config:
      expression: "'hello ' + input.name"
`

type report struct {
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
	Applied bool   `json:"applied"`
	Files   []struct {
		Path       string  `json:"path"`
		Status     string  `json:"status"`
		WorkflowID *string `json:"workflow_id"`
		Name       string  `json:"name"`
		Error      string  `json:"error"`
	} `json:"files"`
}

func scan(t *testing.T, c *apitest.Client, project string, body any) report {
	t.Helper()
	r := c.Do("POST", "/api/projects/"+project+"/workflows/scan", body)
	fixture.Want(t, r, http.StatusOK)
	var rep report
	r.JSON(t, &rep)
	return rep
}

func statuses(rep report) map[string]string {
	out := map[string]string{}
	for _, f := range rep.Files {
		out[f.Path] = f.Status
	}
	return out
}

// The workflows a repository keeps under .slipway/workflows/ are applied
// file by file: created, then unchanged, updated when the file changes; an
// invalid file is reported and leaves the others alone; a dry run writes
// nothing; another workspace's project is an unknown project.
func TestScanAndApply(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		bare := agenttest.BareRepo(t, map[string]string{
			"README.md":                         "repo\n",
			".slipway/workflows/greeter.yaml":   good,
			".slipway/workflows/broken.yml":     "name: Broken\nnodes:\n  - key: 1bad\n    kind: transform\n",
			".slipway/workflows/notes.txt":      "not a workflow",
			"elsewhere/ignored.yaml":            good,
			".slipway/workflows/sub/cycle.yaml": "name: Cycle\nnodes:\n  - {key: a, kind: transform, config: {expression: '1'}}\n  - {key: b, kind: transform, config: {expression: '2'}}\nedges:\n  - {source: a, target: b}\n  - {source: b, target: a}\n",
		})
		r := owner.Do("POST", "/api/projects", obj{"name": "Scanned", "repo_url": bare})
		fixture.Want(t, r, http.StatusCreated)
		project := r.Map(t)["id"].(string)

		// A dry run reports and writes nothing.
		dry := scan(t, owner, project, obj{"apply": false})
		if dry.Applied || dry.Branch != "main" || len(dry.Commit) != 40 || len(dry.Files) != 3 {
			t.Fatalf("dry run %+v", dry)
		}
		want := map[string]string{".slipway/workflows/greeter.yaml": "created", ".slipway/workflows/broken.yml": "invalid",
			".slipway/workflows/sub/cycle.yaml": "invalid"}
		for p, s := range want {
			if statuses(dry)[p] != s {
				t.Fatalf("dry run: %s is %q, want %q: %+v", p, statuses(dry)[p], s, dry)
			}
		}
		for _, fr := range dry.Files {
			if fr.Status == "invalid" && fr.Error == "" {
				t.Fatalf("an invalid file without its error: %+v", fr)
			}
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflows WHERE project_id = $1", project); n != 0 {
			t.Fatalf("a dry run wrote %d workflows", n)
		}

		// Applied: created once, then unchanged.
		rep := scan(t, owner, project, nil)
		if !rep.Applied || statuses(rep)[".slipway/workflows/greeter.yaml"] != "created" {
			t.Fatalf("apply %+v", rep)
		}
		var id string
		for _, fr := range rep.Files {
			if fr.Status == "created" {
				id = *fr.WorkflowID
			}
		}
		fixture.Want(t, owner.Do("GET", "/api/workflows/"+id, nil), http.StatusOK)
		if statuses(scan(t, owner, project, nil))[".slipway/workflows/greeter.yaml"] != "unchanged" {
			t.Fatal("a second scan changed the workflow")
		}

		// The file changes upstream: updated, same workflow.
		seed := filepath.Join(t.TempDir(), "seed")
		agenttest.Git(t, "", "clone", "-q", bare, seed)
		if err := os.WriteFile(filepath.Join(seed, ".slipway/workflows/greeter.yaml"), []byte(strings.Replace(good, "'hello '", "'hi '", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		agenttest.Git(t, seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "change")
		agenttest.Git(t, seed, "push", "-q", "origin", "main")
		rep = scan(t, owner, project, nil)
		if statuses(rep)[".slipway/workflows/greeter.yaml"] != "updated" {
			t.Fatalf("after the change %+v", rep)
		}
		for _, fr := range rep.Files {
			if fr.Status == "updated" && (fr.WorkflowID == nil || *fr.WorkflowID != id) {
				t.Fatalf("updated another workflow: %+v", fr)
			}
		}
		r = owner.Do("GET", "/api/workflows/"+id, nil)
		if !strings.Contains(string(r.Body), "'hi '") {
			t.Fatalf("the workflow did not follow its file: %s", r.Body)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflows WHERE project_id = $1", project); n != 1 {
			t.Fatalf("%d workflows after an update", n)
		}

		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "unknown branch", Client: owner, Method: "POST", Path: "/api/projects/" + project + "/workflows/scan", Body: obj{"branch": "nope"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "bad branch name", Client: owner, Method: "POST", Path: "/api/projects/" + project + "/workflows/scan", Body: obj{"branch": "../x"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "anonymous", Method: "POST", Path: "/api/projects/" + project + "/workflows/scan", WantStatus: 401, WantCode: "unauthorized"},
		})
		apitest.CheckTenancy(t, owner, f.Outsider, []apitest.TenancyCase{
			{Name: "scan", Method: "POST", Path: "/api/projects/{id}/workflows/scan", Body: obj{"apply": false},
				Create: func(*testing.T, *apitest.Client) string { return project }},
		})
	})
}
