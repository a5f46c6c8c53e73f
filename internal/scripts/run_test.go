package scripts_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type scriptRun struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Version  int64  `json:"version"`
	Output   any    `json:"output"`
	ExitCode *int   `json:"exit_code"`
	Error    string `json:"error"`
}

// waitRuns polls a script's runs until n of them ended.
func waitRuns(t *testing.T, c *apitest.Client, id string, n int) []scriptRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := c.Do("GET", "/api/scripts/"+id+"/runs", nil)
		fixture.Want(t, r, http.StatusOK)
		var rs []scriptRun
		r.JSON(t, &rs)
		ended := 0
		for _, x := range rs {
			if x.Status != "running" {
				ended++
			}
		}
		if ended >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs of %s: %s", id, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A script runs on its own through a worker, with its input; its runs list
// newest first with their revision and output; a code node runs a saved
// script by id; another workspace sees none of it.
func TestScriptRuns(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		r := owner.Do("POST", "/api/scripts", obj{"name": "Doubler", "slug": "doubler", "language": "python",
			"source": "import json, os\nenv = json.load(open(os.environ['SLIPWAY_INPUT']))\nprint('doubling')\nprint(json.dumps({'n': env['input']['n'] * 2, 'v': env['script']['version']}))"})
		fixture.Want(t, r, http.StatusCreated)
		id := r.Map(t)["id"].(string)

		r = owner.Do("POST", "/api/scripts/"+id+"/run", obj{"input": obj{"n": 21}})
		fixture.Want(t, r, http.StatusAccepted)
		first := r.Map(t)
		if first["version"] != float64(1) || first["run_id"] == "" {
			t.Fatalf("run answer %s", r.Body)
		}
		rs := waitRuns(t, owner, id, 1)
		if len(rs) != 1 || rs[0].ID != first["run_id"] || rs[0].Status != "succeeded" || rs[0].Version != 1 || rs[0].ExitCode == nil || *rs[0].ExitCode != 0 {
			t.Fatalf("runs %+v", rs)
		}
		if out, ok := rs[0].Output.(map[string]any); !ok || out["n"] != float64(42) || out["v"] != float64(1) {
			t.Fatalf("output %v", rs[0].Output)
		}
		// Its events: the script's output lines.
		r = owner.Do("GET", "/api/runs/"+rs[0].ID+"/events", nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "doubling") {
			t.Fatalf("events of the run: %d %s", r.Status, r.Body)
		}

		// A new revision runs as itself; a failing one says how it ended.
		fixture.Want(t, owner.Do("PATCH", "/api/scripts/"+id, obj{"language": "sh", "source": "echo broken >&2; exit 4"}), http.StatusOK)
		r = owner.Do("POST", "/api/scripts/"+id+"/run", nil)
		fixture.Want(t, r, http.StatusAccepted)
		if r.Map(t)["version"] != float64(2) {
			t.Fatalf("second run %s", r.Body)
		}
		rs = waitRuns(t, owner, id, 2)
		if rs[0].Status != "failed" || rs[0].Version != 2 || rs[0].ExitCode == nil || *rs[0].ExitCode != 4 || !strings.Contains(rs[0].Error, "broken") {
			t.Fatalf("failed run %+v", rs[0])
		}

		// A code node runs the script by id, its current revision.
		fixture.Want(t, owner.Do("PATCH", "/api/scripts/"+id, obj{"source": "echo '{\"from\": \"saved\"}'"}), http.StatusOK)
		project := f.Project(t, owner, "P")
		r = owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "uses a script",
			"nodes": []obj{{"key": "c", "kind": "code", "config": obj{"script_id": id}}, {"key": "e", "kind": "end", "config": obj{"output": "nodes.c.output.result"}}},
			"edges": []obj{{"source": "c", "target": "e"}}})
		fixture.Want(t, r, http.StatusCreated)
		wf := r.Map(t)["id"].(string)
		r = owner.Do("POST", "/api/workflows/"+wf+"/runs", nil)
		fixture.Want(t, r, http.StatusCreated)
		runID := r.Map(t)["run_id"].(string)
		deadline := time.Now().Add(30 * time.Second)
		for {
			r = owner.Do("GET", "/api/workflows/runs/"+runID, nil)
			if st := r.Map(t)["status"]; st == "succeeded" || st == "failed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("workflow run %s", r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if m := r.Map(t); m["status"] != "succeeded" || m["output"].(map[string]any)["from"] != "saved" {
			t.Fatalf("workflow run %s", r.Body)
		}

		// Tenancy: another workspace's script id is an unknown id.
		apitest.CheckTenancy(t, owner, f.Outsider, []apitest.TenancyCase{
			{Name: "run", Method: "POST", Path: "/api/scripts/{id}/run", Body: obj{"input": 1}, Create: func(*testing.T, *apitest.Client) string { return id }},
			{Name: "runs", Method: "GET", Path: "/api/scripts/{id}/runs", Create: func(*testing.T, *apitest.Client) string { return id }},
		})
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous run", Method: "POST", Path: "/api/scripts/" + id + "/run", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "bad input", Client: owner, Method: "POST", Path: "/api/scripts/" + id + "/run", Body: `{"input": }`, WantStatus: 400, WantCode: "bad_request"},
			{Name: "extra field", Client: owner, Method: "POST", Path: "/api/scripts/" + id + "/run", Body: obj{"inptu": 1}, WantStatus: 400, WantCode: "bad_request"},
		})

		// Deleting the script (once no node names it) takes its runs along.
		fixture.Want(t, owner.Do("DELETE", "/api/workflows/"+wf, nil), http.StatusOK)
		fixture.Want(t, owner.Do("DELETE", "/api/scripts/"+id, nil), http.StatusOK)
		if r := owner.Do("GET", "/api/runs/"+rs[0].ID, nil); r.Status != http.StatusNotFound {
			t.Fatalf("a deleted script's run: %d %s", r.Status, r.Body)
		}
	})
}
