package templates_test

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/triggers"
)

type obj = map[string]any

type trigger struct {
	ID          string  `json:"id"`
	WorkflowID  string  `json:"workflow_id"`
	Kind        string  `json:"kind"`
	Enabled     bool    `json:"enabled"`
	Token       *string `json:"token"`
	ReceiverURL *string `json:"receiver_url"`
	NextFireAt  *string `json:"next_fire_at"`
	Config      obj     `json:"config"`
}

type instance struct {
	WorkflowID string    `json:"workflow_id"`
	Triggers   []trigger `json:"triggers"`
}

// shipped is what each template must instantiate to: its workflow's nodes
// (key:kind, in order) and its triggers' kinds and configs.
var shipped = map[string]struct {
	name     string
	nodes    []string
	triggers []obj
}{
	"http-health-check": {"HTTP health check", []string{"settings:transform", "check:http_request", "healthy:gate", "up:end", "alert:notify_webhook", "down:end"},
		[]obj{{"cron": "*/5 * * * *", "timezone": "UTC"}}},
	"issue-triage": {"Issue triage", []string{"issue:transform", "approve:human", "work:agent", "done:end", "skipped:end"},
		[]obj{{"response_mode": "async"}}},
	"loop-over-list": {"Loop over a list", []string{"each:loop", "handle:transform", "respond:end"},
		[]obj{{"response_mode": "sync", "sync_timeout_seconds": 30.0}}},
	"nightly-agent-task": {"Nightly agent task", []string{"task:agent", "done:end"},
		[]obj{{"cron": "0 2 * * *", "timezone": "UTC"}}},
	"webhook-respond": {"Webhook respond", []string{"shape:transform", "respond:end"},
		[]obj{{"response_mode": "sync", "sync_timeout_seconds": 30.0}}},
}

type templatesFixture struct {
	*fixture.API
	project string
}

// instantiate creates a template's workflow and remembers its tokens (the
// server's logs must never hold them).
func (f *templatesFixture) instantiate(t *testing.T, slug string, body obj) instance {
	t.Helper()
	r := f.Owner.Do("POST", "/api/workflows/templates/"+slug, body)
	fixture.Want(t, r, http.StatusCreated)
	if keys := apitest.ObjectKeys(t, r.Body); !slices.Equal(keys, []string{"workflow_id", "triggers"}) {
		t.Fatalf("instance keys %v", keys)
	}
	var in instance
	r.JSON(t, &in)
	for _, tr := range in.Triggers {
		if tr.Token != nil {
			f.App.Remember(*tr.Token)
		}
	}
	return in
}

// receiver is the path of a webhook's receiver URL on the test server.
func (f *templatesFixture) receiver(t *testing.T, tr trigger) string {
	t.Helper()
	if tr.Kind != triggers.KindWebhook || tr.Token == nil || tr.ReceiverURL == nil {
		t.Fatalf("not a fresh webhook: %+v", tr)
	}
	p := strings.TrimPrefix(*tr.ReceiverURL, f.App.URL)
	if p != triggers.ReceiverPath+*tr.Token {
		t.Fatalf("receiver URL %s for token %s", *tr.ReceiverURL, *tr.Token)
	}
	return p
}

func (f *templatesFixture) workflowCount(t *testing.T) int {
	return f.App.Count(t, "SELECT COUNT(*) FROM workflows")
}

func TestTemplatesAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := &templatesFixture{API: fixture.NewAPI(t, e)}
		f.project = f.Project(t, f.Owner, "Templates")
		owner := f.Owner

		// The list: exactly the shipped five, with their fields.
		r := owner.Do("GET", "/api/workflows/templates", nil)
		fixture.Want(t, r, http.StatusOK)
		var list []struct {
			Slug        string   `json:"slug"`
			Name        string   `json:"name"`
			Description string   `json:"description"`
			Category    string   `json:"category"`
			NodeCount   int      `json:"node_count"`
			Triggers    []string `json:"triggers"`
		}
		r.JSON(t, &list)
		var slugs []string
		for _, keys := range fixture.ElementKeys(t, r.Body) {
			if !slices.Equal(keys, []string{"slug", "name", "description", "category", "node_count", "triggers"}) {
				t.Fatalf("template keys %v", keys)
			}
		}
		for _, tm := range list {
			slugs = append(slugs, tm.Slug)
			want := shipped[tm.Slug]
			var kinds []string
			for _, c := range want.triggers {
				kind := triggers.KindWebhook
				if c["cron"] != nil {
					kind = triggers.KindSchedule
				}
				kinds = append(kinds, kind)
			}
			if tm.Name == "" || tm.Description == "" || tm.Category == "" || tm.NodeCount != len(want.nodes) || !slices.Equal(tm.Triggers, kinds) {
				t.Errorf("template %+v", tm)
			}
		}
		if !slices.Equal(slugs, []string{"http-health-check", "issue-triage", "loop-over-list", "nightly-agent-task", "webhook-respond"}) {
			t.Fatalf("templates %v", slugs)
		}

		// Each template instantiates into a project (through the workflows
		// service's validation), reads back, and has its triggers.
		instances := map[string]instance{}
		for _, slug := range slugs {
			want := shipped[slug]
			in := f.instantiate(t, slug, obj{"project_id": f.project})
			instances[slug] = in
			r := owner.Do("GET", "/api/workflows/"+in.WorkflowID, nil)
			fixture.Want(t, r, http.StatusOK)
			var wf struct {
				ID        string `json:"id"`
				ProjectID string `json:"project_id"`
				Name      string `json:"name"`
				Nodes     []struct {
					Key  string `json:"key"`
					Kind string `json:"kind"`
				} `json:"nodes"`
			}
			r.JSON(t, &wf)
			var nodes []string
			for _, n := range wf.Nodes {
				nodes = append(nodes, n.Key+":"+n.Kind)
			}
			if wf.ID != in.WorkflowID || wf.ProjectID != f.project || wf.Name != want.name || !slices.Equal(nodes, want.nodes) {
				t.Fatalf("%s: workflow %s", slug, r.Body)
			}
			if len(in.Triggers) != len(want.triggers) {
				t.Fatalf("%s: triggers %+v", slug, in.Triggers)
			}
			for i, tr := range in.Triggers {
				if tr.WorkflowID != in.WorkflowID || !tr.Enabled || !reflect.DeepEqual(tr.Config, want.triggers[i]) {
					t.Errorf("%s: trigger %+v, want config %v", slug, tr, want.triggers[i])
				}
				if tr.Kind == triggers.KindWebhook {
					f.receiver(t, tr)
					if tr.NextFireAt != nil {
						t.Errorf("%s: a webhook with a next tick %+v", slug, tr)
					}
					continue
				}
				if tr.Token != nil || tr.ReceiverURL != nil || tr.NextFireAt == nil {
					t.Fatalf("%s: schedule %+v", slug, tr)
				}
				next, err := time.Parse(time.RFC3339, *tr.NextFireAt)
				if err != nil || !next.After(time.Now()) || next.Second() != 0 ||
					(slug == "nightly-agent-task" && (next.Hour() != 2 || next.Minute() != 0 || next.Sub(time.Now()) > 24*time.Hour)) ||
					(slug == "http-health-check" && (next.Minute()%5 != 0 || next.Sub(time.Now()) > 5*time.Minute)) {
					t.Errorf("%s: next tick %s", slug, *tr.NextFireAt)
				}
			}
			// The workflow's trigger list has them (without the token).
			r = owner.Do("GET", "/api/workflows/"+in.WorkflowID+"/triggers", nil)
			fixture.Want(t, r, http.StatusOK)
			if n := len(fixture.ElementKeys(t, r.Body)); n != len(want.triggers) {
				t.Fatalf("%s: %d triggers listed: %s", slug, n, r.Body)
			}
		}

		// A name of one's own.
		named := f.instantiate(t, "webhook-respond", obj{"project_id": f.project, "name": "Echo for the CI"})
		if r := owner.Do("GET", "/api/workflows/"+named.WorkflowID, nil); r.Map(t)["name"] != "Echo for the CI" {
			t.Fatalf("named instance %s", r.Body)
		}

		// webhook-respond end to end: an anonymous delivery gets the
		// transform's output back.
		r = f.App.Anonymous().Do("POST", f.receiver(t, instances["webhook-respond"].Triggers[0]), `{"hello": "world"}`)
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["ok"] != true || !reflect.DeepEqual(m["received"], obj{"hello": "world"}) || m["run_id"] == "" || m["received_at"] == "" {
			t.Fatalf("webhook-respond answered %s", r.Body)
		}

		// loop-over-list end to end: one result per item, in order; no items,
		// none.
		loop := f.receiver(t, instances["loop-over-list"].Triggers[0])
		r = f.App.Anonymous().Do("POST", loop, `{"items": ["a", {"b": 1}, 3]}`)
		fixture.Want(t, r, http.StatusOK)
		want := obj{"count": 3.0, "results": []any{obj{"index": 0.0, "item": "a"}, obj{"index": 1.0, "item": obj{"b": 1.0}}, obj{"index": 2.0, "item": 3.0}}}
		if got := r.Map(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("loop-over-list answered %s", r.Body)
		}
		r = f.App.Anonymous().Do("POST", loop, `{}`)
		fixture.Want(t, r, http.StatusOK)
		if got := r.Map(t); !reflect.DeepEqual(got, obj{"count": 0.0, "results": []any{}}) {
			t.Fatalf("loop-over-list without items answered %s", r.Body)
		}

		// issue-triage: a GitHub issues event waits for its owner's decision;
		// rejected, the run ends without an agent.
		r = f.App.Anonymous().Do("POST", f.receiver(t, instances["issue-triage"].Triggers[0]),
			`{"action": "opened", "issue": {"number": 7, "title": "Crash on empty input", "body": "Steps: ...", "html_url": "https://git.example/i/7"}}`)
		fixture.Want(t, r, http.StatusAccepted)
		run := r.Map(t)["run_id"].(string)
		waitRun(t, owner, run, func(m obj) bool { return slices.Contains(m["waiting_on"].([]any), "approve") })
		fixture.Want(t, owner.Do("POST", "/api/workflows/runs/"+run+"/nodes/approve/decision", obj{"decision": "reject"}), http.StatusOK)
		m := waitRun(t, owner, run, func(m obj) bool { return m["status"] == "succeeded" })
		if !reflect.DeepEqual(m["output"], obj{"skipped": true, "title": "Crash on empty input", "decided_by": owner.ID}) {
			t.Fatalf("issue-triage run %v", m)
		}
		for _, n := range m["nodes"].([]any) {
			if n := n.(obj); n["key"] == "issue" && !reflect.DeepEqual(n["output"], obj{"title": "Crash on empty input", "body": "Steps: ...",
				"url": "https://git.example/i/7", "number": 7.0}) {
				t.Fatalf("issue node %v", n)
			}
		}

		// The workflow routes the template paths share still work.
		id := instances["webhook-respond"].WorkflowID
		fixture.Want(t, owner.Do("GET", "/api/workflows/"+id+"/export", nil), http.StatusOK)
		r = owner.Do("POST", "/api/workflows/"+id+"/runs", obj{"input": obj{"x": 1}})
		fixture.Want(t, r, http.StatusCreated)
		waitRun(t, owner, r.Map(t)["run_id"].(string), func(m obj) bool { return m["status"] == "succeeded" })
		r = owner.Do("POST", "/api/workflows/"+id+"/triggers", obj{"kind": "schedule", "config": obj{"interval_seconds": 3600}})
		fixture.Want(t, r, http.StatusCreated)

		// Refusals. Another workspace's project is an unknown project.
		theirs := f.Project(t, f.Outsider, "Theirs")
		before := f.workflowCount(t)
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "unknown slug", Client: owner, Method: "POST", Path: "/api/workflows/templates/no-such-template", Body: obj{"project_id": f.project},
				WantStatus: 404, WantCode: "not_found"},
			{Name: "a workflow route's word as the slug", Client: owner, Method: "POST", Path: "/api/workflows/templates/runs", Body: obj{"project_id": f.project},
				WantStatus: 404, WantCode: "not_found"},
			{Name: "no project", Client: owner, Method: "POST", Path: "/api/workflows/templates/webhook-respond", Body: obj{},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "project not an id", Client: owner, Method: "POST", Path: "/api/workflows/templates/webhook-respond", Body: obj{"project_id": "nope"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown project", Client: owner, Method: "POST", Path: "/api/workflows/templates/webhook-respond",
				Body: obj{"project_id": "01930000-0000-7000-8000-000000000000"}, WantStatus: 400, WantCode: "bad_request", WantContains: []string{"no such project"}},
			{Name: "extra property", Client: owner, Method: "POST", Path: "/api/workflows/templates/webhook-respond", Body: obj{"project_id": f.project, "colour": "red"},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "name too long", Client: owner, Method: "POST", Path: "/api/workflows/templates/webhook-respond",
				Body: obj{"project_id": f.project, "name": strings.Repeat("n", 201)}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "blank name", Client: owner, Method: "POST", Path: "/api/workflows/templates/webhook-respond", Body: obj{"project_id": f.project, "name": "  "},
				WantStatus: 400, WantCode: "bad_request"},
			{Name: "anonymous list", Method: "GET", Path: "/api/workflows/templates", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous create", Method: "POST", Path: "/api/workflows/templates/webhook-respond", Body: obj{"project_id": f.project},
				WantStatus: 401, WantCode: "unauthorized"},
		})
		foreign := owner.Do("POST", "/api/workflows/templates/webhook-respond", obj{"project_id": theirs})
		unknown := owner.Do("POST", "/api/workflows/templates/webhook-respond", obj{"project_id": "01930000-0000-7000-8000-000000000000"})
		if foreign.Status != unknown.Status || string(foreign.Body) != string(unknown.Body) {
			t.Fatalf("another workspace's project answers %d %s, an unknown one %d %s", foreign.Status, foreign.Body, unknown.Status, unknown.Body)
		}
		if n := f.workflowCount(t); n != before {
			t.Fatalf("refused instantiations created %d workflows", n-before)
		}

		// A trigger that cannot be stored takes its workflow with it.
		if e == db.SQLite {
			f.Exec(t, "CREATE TRIGGER refuse_schedules BEFORE INSERT ON workflow_triggers WHEN NEW.kind = 'schedule' BEGIN SELECT RAISE(ABORT, 'refused'); END")
		} else {
			f.Exec(t, "ALTER TABLE workflow_triggers ADD CONSTRAINT refuse_schedules CHECK (kind <> 'schedule') NOT VALID")
		}
		triggersBefore := f.App.Count(t, "SELECT COUNT(*) FROM workflow_triggers")
		if r := owner.Do("POST", "/api/workflows/templates/http-health-check", obj{"project_id": f.project}); r.Status != http.StatusInternalServerError {
			t.Fatalf("a refused trigger: %d %s", r.Status, r.Body)
		}
		if n := f.workflowCount(t); n != before {
			t.Fatal("a failed instantiation left its workflow behind")
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflow_triggers"); n != triggersBefore {
			t.Fatal("a failed instantiation left triggers behind")
		}
	})
}

// waitRun polls a workflow run until done says it is as wanted.
func waitRun(t *testing.T, c *apitest.Client, id string, done func(obj) bool) obj {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.Do("GET", "/api/workflows/runs/"+id, nil)
		fixture.Want(t, r, http.StatusOK)
		m := r.Map(t)
		if done(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s", id, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
