package workflows_test

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

// A user node type is a saved script plus the JSON Schema of its params: it
// is listed after the built-in kinds, a code node names it by slug with
// params that must meet the schema when the workflow is saved, and the
// script reads them when the node runs.
func TestUserNodeTypes(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		r := owner.Do("POST", "/api/scripts", apiObj{"name": "Greeter", "slug": "greeter", "language": "sh",
			"source": `name=$(tr -d ' \n' < "$SLIPWAY_INPUT" | sed -n 's/.*"params":{"name":"\([^"]*\)".*/\1/p'); echo "{\"hello\": \"$name\"}"`})
		fixture.Want(t, r, http.StatusCreated)
		script := r.Map(t)["id"].(string)
		schema := apiObj{"type": "object", "properties": apiObj{"name": apiObj{"type": "string", "minLength": 1}}, "required": []string{"name"},
			"additionalProperties": false}
		r = owner.Do("POST", "/api/workflow-node-types", apiObj{"slug": "greet", "name": "Greet", "script_id": script, "config_schema": schema})
		fixture.Want(t, r, http.StatusCreated)
		created := r.Map(t)
		id := created["id"].(string)
		if created["builtin"] != false || created["script_id"] != script || created["category"] != "custom" || created["available"] != true {
			t.Fatalf("created %s", r.Body)
		}
		r = owner.Do("GET", "/api/workflow-node-types/"+id, nil)
		fixture.Want(t, r, http.StatusOK)
		r = owner.Do("GET", "/api/workflow-node-types", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"slug":"greet"`) || !strings.Contains(string(r.Body), `"slug":"transform"`) {
			t.Fatalf("list %s", r.Body)
		}
		if strings.Contains(string(f.Outsider.Do("GET", "/api/workflow-node-types", nil).Body), `"slug":"greet"`) {
			t.Fatal("another workspace lists the node type")
		}

		project := f.Project(t, owner, "P")
		body := func(params apiObj) apiObj {
			cfg := apiObj{"node_type": "greet"}
			if params != nil {
				cfg["params"] = params
			}
			return apiObj{"project_id": project, "name": "greets", "nodes": []apiObj{apiNode("g", "code", cfg),
				apiNode("e", "end", apiObj{"output": "nodes.g.output.result"})}, "edges": []apiObj{{"source": "g", "target": "e"}}}
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "params missing a required one", Client: owner, Method: "POST", Path: "/api/workflows", Body: body(apiObj{}), WantStatus: 400,
				WantCode: "bad_request", WantContains: []string{`node \"g\"`, "name"}},
			{Name: "params of the wrong type", Client: owner, Method: "POST", Path: "/api/workflows", Body: body(apiObj{"name": 5}), WantStatus: 400,
				WantCode: "bad_request", WantContains: []string{"config.params.name"}},
			{Name: "an unknown param", Client: owner, Method: "POST", Path: "/api/workflows", Body: body(apiObj{"name": "x", "nmae": "y"}), WantStatus: 400,
				WantCode: "bad_request"},
			{Name: "an unknown node type", Client: owner, Method: "POST", Path: "/api/workflows",
				Body: apiObj{"project_id": project, "name": "x", "nodes": []apiObj{apiNode("g", "code", apiObj{"node_type": "nope"})}}, WantStatus: 400,
				WantCode: "bad_request", WantContains: []string{`no node type \"nope\"`}},
			{Name: "source and node type", Client: owner, Method: "POST", Path: "/api/workflows",
				Body:       apiObj{"project_id": project, "name": "x", "nodes": []apiObj{apiNode("g", "code", apiObj{"node_type": "greet", "source": "true"})}},
				WantStatus: 400, WantCode: "bad_request", WantContains: []string{"one of source, script_id and node_type"}},
			{Name: "a slug of a built-in kind", Client: owner, Method: "POST", Path: "/api/workflow-node-types",
				Body: apiObj{"slug": "transform", "name": "T", "script_id": script, "config_schema": schema}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "a slug taken", Client: owner, Method: "POST", Path: "/api/workflow-node-types",
				Body: apiObj{"slug": "greet", "name": "G2", "script_id": script, "config_schema": schema}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "a schema that is no object schema", Client: owner, Method: "POST", Path: "/api/workflow-node-types",
				Body: apiObj{"slug": "g2", "name": "G2", "script_id": script, "config_schema": apiObj{"type": "string"}}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "a schema with a bad pattern", Client: owner, Method: "POST", Path: "/api/workflow-node-types",
				Body:       apiObj{"slug": "g3", "name": "G3", "script_id": script, "config_schema": apiObj{"type": "object", "properties": apiObj{"a": apiObj{"type": "string", "pattern": "("}}}},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "another workspace's script", Client: f.Outsider, Method: "POST", Path: "/api/workflow-node-types",
				Body: apiObj{"slug": "g4", "name": "G4", "script_id": script, "config_schema": schema}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "another workspace's node type", Client: f.Outsider, Method: "GET", Path: "/api/workflow-node-types/" + id, WantStatus: 404, WantCode: "not_found"},
			{Name: "anonymous create", Method: "POST", Path: "/api/workflow-node-types", Body: apiObj{}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "the script stays while the node type runs it", Client: owner, Method: "DELETE", Path: "/api/scripts/" + script, WantStatus: 400,
				WantCode: "bad_request", WantContains: []string{"greet"}},
		})

		apitest.CheckTenancy(t, owner, f.Outsider, []apitest.TenancyCase{
			{Name: "node type", Method: "GET", Path: "/api/workflow-node-types/{id}", Create: func(*testing.T, *apitest.Client) string { return id }},
		})

		r = owner.Do("POST", "/api/workflows", body(apiObj{"name": "Ada"}))
		fixture.Want(t, r, http.StatusCreated)
		wf := r.Map(t)["id"].(string)
		r = owner.Do("POST", "/api/workflows/"+wf+"/runs", nil)
		fixture.Want(t, r, http.StatusCreated)
		runID := r.Map(t)["run_id"].(string)
		deadline := time.Now().Add(30 * time.Second)
		for {
			r = owner.Do("GET", "/api/workflows/runs/"+runID, nil)
			m := r.Map(t)
			if m["status"] == "succeeded" || m["status"] == "failed" {
				if m["status"] != "succeeded" || m["output"].(apiObj)["hello"] != "Ada" {
					t.Fatalf("run %s", r.Body)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s", r.Body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
