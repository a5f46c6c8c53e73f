package n8nimport_test

import (
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/n8nimport"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

type imported struct {
	WorkflowID string `json:"workflow_id"`
	Triggers   []struct {
		ID          string         `json:"id"`
		Kind        string         `json:"kind"`
		Token       *string        `json:"token"`
		ReceiverURL *string        `json:"receiver_url"`
		Config      map[string]any `json:"config"`
	} `json:"triggers"`
	Warnings []string `json:"warnings"`
}

func readFixture(t *testing.T, name string) string {
	t.Helper()
	doc, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

func wantError(t *testing.T, r *apitest.Response, status int, code string) {
	t.Helper()
	var e struct {
		Code  string `json:"code"`
		Error string `json:"error"`
	}
	if r.Status != status || json.Unmarshal(r.Body, &e) != nil || e.Code != code || e.Error == "" {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

func TestImportN8n(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		project := f.Project(t, owner, "Imports")
		path := "/api/workflows/import/n8n?project_id=" + project
		importDoc := func(c *apitest.Client, path, doc string) (*apitest.Response, imported) {
			t.Helper()
			r := c.Do("POST", path, doc)
			var out imported
			if r.Status == http.StatusCreated {
				r.JSON(t, &out)
				for _, tr := range out.Triggers {
					if tr.Token != nil {
						f.App.Remember(*tr.Token)
					}
				}
			}
			return r, out
		}

		// The bench flow: webhook -> set -> respond, answering {n: 2n, ok: true}.
		r, bench := importDoc(owner, path, readFixture(t, "bench.json"))
		fixture.Want(t, r, http.StatusCreated)
		if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, []string{"workflow_id", "triggers", "warnings"}) {
			t.Fatalf("answer keys %v", keys)
		}
		if !ids.Valid(bench.WorkflowID) || len(bench.Triggers) != 1 || bench.Triggers[0].Kind != "webhook" || bench.Triggers[0].ReceiverURL == nil ||
			bench.Triggers[0].Config["response_mode"] != "sync" || bench.Warnings == nil || len(bench.Warnings) != 0 {
			t.Fatalf("bench import %s", r.Body)
		}
		receiver := *bench.Triggers[0].ReceiverURL
		receiver = receiver[strings.Index(receiver, "/api/"):]
		r = f.App.Anonymous().Do("POST", receiver, `{"n":21}`)
		fixture.Want(t, r, http.StatusOK)
		var got, want any
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(`{"n":42,"ok":true}`), &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the bench flow answered %s", r.Body)
		}
		w := owner.Do("GET", "/api/workflows/"+bench.WorkflowID, nil)
		fixture.Want(t, w, http.StatusOK)
		if m := w.Map(t); m["name"] != "Bench: double n" || m["project_id"] != project || len(m["nodes"].([]any)) != 2 {
			t.Fatalf("the imported workflow %s", w.Body)
		}

		// The larger flows import with their triggers and warnings.
		r, orders := importDoc(owner, path, readFixture(t, "orders.json"))
		fixture.Want(t, r, http.StatusCreated)
		if len(orders.Triggers) != 2 || orders.Triggers[0].Kind != "schedule" || orders.Triggers[1].Config["cron"] != "30 9 * * 1-5" ||
			orders.Triggers[1].Config["timezone"] != "Europe/Berlin" || len(orders.Warnings) == 0 {
			t.Fatalf("orders import %s", r.Body)
		}
		r, unknown := importDoc(owner, path, readFixture(t, "unknown.json"))
		fixture.Want(t, r, http.StatusCreated)
		if len(unknown.Triggers) != 0 || !strings.Contains(strings.Join(unknown.Warnings, "\n"), `Node "Google Sheets" (n8n-nodes-base.googleSheets)`) {
			t.Fatalf("unknown import %s", r.Body)
		}

		// Each conversion also saves as it is through the workflows API.
		for _, name := range []string{"bench.json", "orders.json", "unknown.json"} {
			in, _, _, err := n8nimport.Convert([]byte(readFixture(t, name)))
			if err != nil {
				t.Fatal(err)
			}
			in.ProjectID = project
			fixture.Want(t, owner.Do("POST", "/api/workflows", in), http.StatusCreated)
		}

		// Refusals create nothing.
		before := f.App.Count(t, "SELECT COUNT(*) FROM workflows")
		for _, doc := range []string{`{"nodes": [`, `not json`, `{"name": "x"}`, ``, `{"nodes": [{"name": "Hook", "type": "n8n-nodes-base.webhook"}]}`} {
			r, _ := importDoc(owner, path, doc)
			wantError(t, r, http.StatusBadRequest, "bad_request")
		}
		r, _ = importDoc(owner, "/api/workflows/import/n8n", readFixture(t, "bench.json"))
		wantError(t, r, http.StatusBadRequest, "bad_request")
		r, _ = importDoc(owner, "/api/workflows/import/n8n?project_id=not-a-uuid", readFixture(t, "bench.json"))
		wantError(t, r, http.StatusBadRequest, "bad_request")
		r, _ = importDoc(f.App.Anonymous(), path, readFixture(t, "bench.json"))
		wantError(t, r, http.StatusUnauthorized, "unauthorized")

		// Another workspace's project is an unknown project.
		unknownProject := ids.New()
		foreign, _ := importDoc(f.Outsider, "/api/workflows/import/n8n?project_id="+project, readFixture(t, "bench.json"))
		missing, _ := importDoc(f.Outsider, "/api/workflows/import/n8n?project_id="+unknownProject, readFixture(t, "bench.json"))
		wantError(t, foreign, http.StatusBadRequest, "bad_request")
		if fb, mb := strings.ReplaceAll(string(foreign.Body), project, "{id}"), strings.ReplaceAll(string(missing.Body), unknownProject, "{id}"); foreign.Status != missing.Status || fb != mb {
			t.Fatalf("another workspace's project answers %d %s, an unknown one %d %s", foreign.Status, fb, missing.Status, mb)
		}
		if after := f.App.Count(t, "SELECT COUNT(*) FROM workflows"); after != before {
			t.Fatalf("refused imports changed the workflows: %d -> %d", before, after)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflow_triggers WHERE workflow_id NOT IN (SELECT id FROM workflows)"); n != 0 {
			t.Fatalf("%d triggers without their workflow", n)
		}
	})
}
