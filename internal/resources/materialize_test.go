package resources_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/workflows"
)

// TestResourcesReachScripts: a code node's resources are in its script's
// environment as JSON (kind, name, config, secret), the secret redacted from
// what the script prints; a foreign resource or a bad name fails the node.
func TestResourcesReachScripts(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		c := f.Owner
		const secret = "api-token-for-scripts-x9"
		f.App.Remember(secret)
		api := create(t, c, obj{"name": "Tracker", "kind": "http", "config": obj{"base_url": "https://tracker.example/v1", "auth": "bearer"}, "secret": secret})
		theirs := create(t, f.Outsider, obj{"name": "Theirs", "kind": "http", "config": obj{"base_url": "https://x.example"}, "secret": "their-secret-123"})
		project := f.Project(t, c, "Scripts")
		run := func(resources obj) *workflows.RunView {
			t.Helper()
			r := c.Do("POST", "/api/workflows", obj{"project_id": project, "name": "S " + strings.Join(func() []string {
				var ks []string
				for k := range resources {
					ks = append(ks, k)
				}
				return ks
			}(), ","),
				"nodes": []obj{{"key": "sh", "kind": "code", "config": obj{"language": "sh", "resources": resources,
					"source": `echo "seen: ${TRACKER:-unset}" >&2; printf '%s\n' "${TRACKER:-null}"`}}}})
			fixture.Want(t, r, http.StatusCreated)
			return f.RunWorkflow(t, c, r.Map(t)["id"].(string), obj{})
		}
		v := run(obj{"TRACKER": api.ID})
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s", v.Status, v.Error)
		}
		var got struct {
			Nodes []struct {
				Output struct {
					Result map[string]any `json:"result"`
				} `json:"output"`
			} `json:"nodes"`
		}
		raw, _ := json.Marshal(v)
		if err := json.Unmarshal(raw, &got); err != nil || len(got.Nodes) != 1 {
			t.Fatalf("%v: %s", err, raw)
		}
		res := got.Nodes[0].Output.Result
		cfg, _ := res["config"].(map[string]any)
		if res["kind"] != "http" || res["name"] != "Tracker" || res["id"] != api.ID || cfg["base_url"] != "https://tracker.example/v1" || res["secret"] != "[REDACTED]" {
			t.Fatalf("the script saw %v", res)
		}
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the run view holds the secret: %s", raw)
		}
		for _, tc := range []struct {
			resources obj
			want      string
		}{
			{obj{"TRACKER": theirs.ID}, "resource " + theirs.ID + " (TRACKER) not found in this workspace"},
			{obj{"tracker": api.ID}, `"tracker" is not a variable name`},
			{obj{"SLIPWAY_X": api.ID}, `"SLIPWAY_X" is not a variable name`},
		} {
			v := run(tc.resources)
			if v.Status != workflows.RunFailed || !strings.Contains(v.Error, tc.want) {
				t.Fatalf("%v: %s %q", tc.resources, v.Status, v.Error)
			}
		}
		for _, s := range []string{secret, "their-secret-123"} {
			if where := f.App.Holding(t, s); len(where) > 0 {
				t.Fatalf("the database holds a secret in %v", where)
			}
		}
	})
}
