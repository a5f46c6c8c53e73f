package activity_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"slipway/internal/activity"
	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

func page(t *testing.T, c *apitest.Client, query string) activity.FeedPage {
	t.Helper()
	r := c.Do("GET", "/api/activity"+query, nil)
	fixture.Want(t, r, http.StatusOK)
	var p activity.FeedPage
	r.JSON(t, &p)
	return p
}

// TestFeed: a task started, a workflow run and a tool call decided read as
// one feed, newest first, each with who did it and its status now; pages
// follow each other without a gap or a repeat; another workspace sees none
// of it.
func TestFeed(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		project := f.Project(t, f.Owner, "demo")
		task := f.Task(t, f.Owner, project, "echo feed", map[string]any{"title": "Fix the login page"})

		r := f.Owner.Do("POST", "/api/workflows", map[string]any{"project_id": project, "name": "nightly report",
			"nodes": []map[string]any{{"key": "sum", "kind": "transform", "config": map[string]any{"expression": "1 + 1"}}}})
		fixture.Want(t, r, http.StatusCreated)
		wf := r.Map(t)["id"].(string)
		r = f.Owner.Do("POST", "/api/workflows/"+wf+"/runs", map[string]any{})
		fixture.Want(t, r, http.StatusCreated)
		run := r.Map(t)["run_id"].(string)

		// A webhook's delivery: a run a trigger started.
		r = f.Owner.Do("POST", "/api/workflows/"+wf+"/triggers", map[string]any{"kind": "webhook"})
		fixture.Want(t, r, http.StatusCreated)
		hook := r.Map(t)["receiver_url"].(string)
		f.App.Remember(r.Map(t)["token"].(string))
		r = f.App.Anonymous().Do("POST", hook[strings.Index(hook, "/api/"):], map[string]any{"n": 1})
		if r.Status >= 300 {
			t.Fatalf("delivery = %d %s", r.Status, r.Body)
		}
		hooked := r.Map(t)["run_id"].(string)

		w := f.Working(t, f.Owner, "blocked")
		approval := f.Ask(t, w, "req-1", "make deploy")
		fixture.Want(t, f.Owner.Do("POST", "/api/tool-approvals/"+approval+"/decide", map[string]any{"verdict": "reject"}), http.StatusOK)

		p := page(t, f.Owner, "")
		byID := map[string]activity.FeedItem{}
		for i, it := range p.Items {
			byID[it.ID] = it
			if i > 0 && it.At.After(p.Items[i-1].At) {
				t.Fatalf("not newest first: %+v", p.Items)
			}
		}
		if it := byID[task.ID]; it.Kind != activity.KindTask || it.Title != "Fix the login page" || it.Status != "queued" || it.Project != "demo" ||
			it.Actor == nil || it.Actor.ID != f.Owner.ID || it.Actor.Name != "Olivia Owner" {
			t.Fatalf("the task's item: %+v", it)
		}
		if it := byID[run]; it.Kind != activity.KindWorkflowRun || it.Title != "nightly report" || it.Status != "succeeded" || it.Actor == nil || it.Via != "" {
			t.Fatalf("the run's item: %+v", it)
		}
		if it := byID[hooked]; it.Kind != activity.KindWorkflowRun || it.Via != "webhook" || it.Actor == nil || it.Actor.ID != f.Owner.ID {
			t.Fatalf("the webhook run's item: %+v", it)
		}
		if it := byID[approval]; it.Kind != activity.KindApproval || it.Title != "bash" || it.Status != "rejected" || it.TaskID != w.Task ||
			it.Actor == nil || it.Actor.ID != f.Owner.ID || it.Project != "blocked" {
			t.Fatalf("the approval's item: %+v", it)
		}
		if p.Items[0].ID != approval {
			t.Fatalf("the newest item is %+v, not the decision", p.Items[0])
		}

		// Pages of one: the same items in the same order, then the end.
		var walked []string
		next := ""
		for range len(p.Items) + 1 {
			q := "?limit=1"
			if next != "" {
				q += "&before=" + next
			}
			one := page(t, f.Owner, q)
			for _, it := range one.Items {
				walked = append(walked, it.ID)
			}
			if next = one.Next; next == "" {
				break
			}
		}
		var all []string
		for _, it := range p.Items {
			all = append(all, it.ID)
		}
		if fmt.Sprint(walked) != fmt.Sprint(all) || next != "" {
			t.Fatalf("paged %v, whole %v (next %q)", walked, all, next)
		}
		fixture.Want(t, f.Owner.Do("GET", "/api/activity?before=not-a-cursor", nil), http.StatusBadRequest)
		fixture.Want(t, f.Owner.Do("GET", "/api/activity?limit=101", nil), http.StatusBadRequest)

		// Another workspace's feed holds none of it.
		for _, it := range page(t, f.Outsider, "").Items {
			if _, ok := byID[it.ID]; ok {
				t.Fatalf("the outsider sees %+v", it)
			}
		}
		if r := f.App.Anonymous().Do("GET", "/api/activity", nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("anonymous = %d", r.Status)
		}
	})
}
