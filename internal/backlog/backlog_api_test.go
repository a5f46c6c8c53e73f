package backlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"slipway/internal/apitest"
	"slipway/internal/backlog"
	"slipway/internal/fixture"
	"slipway/internal/forge/github/githubtest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

type obj = map[string]any

// importRepo makes a GitHub resource and imports acme/web as a project.
func importRepo(t *testing.T, f *fixture.API, gh *githubtest.Server) string {
	t.Helper()
	cfg := gh.Config()
	r := f.Owner.Do("POST", "/api/resources", obj{"name": "GitHub", "kind": "github", "config": obj{"base_url": cfg.BaseURL}, "secret": cfg.Token})
	fixture.Want(t, r, http.StatusCreated)
	f.App.Remember(cfg.Token)
	r = f.Owner.Do("POST", "/api/projects/sync_import", obj{"resource_id": r.Map(t)["id"], "repositories": []string{"acme/web"}})
	fixture.Want(t, r, http.StatusOK)
	var out struct{ Projects []struct{ ID string } }
	r.JSON(t, &out)
	return out.Projects[0].ID
}

func board(t *testing.T, c *apitest.Client, project string) backlog.Board {
	t.Helper()
	r := c.Do("GET", "/api/projects/"+project+"/backlog/board", nil)
	fixture.Want(t, r, http.StatusOK)
	var b backlog.Board
	r.JSON(t, &b)
	return b
}

func column(b backlog.Board, state string) backlog.Column {
	for _, c := range b.Columns {
		if c.State == state {
			return c
		}
	}
	return backlog.Column{}
}

// watch subscribes a WebSocket to the backlog topic of c's workspace.
func watch(t *testing.T, c *apitest.Client) <-chan string {
	t.Helper()
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(c.URL(), "http")+"/api/realtime",
		&websocket.DialOptions{HTTPHeader: http.Header{"Cookie": {c.CookieHeader()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	sub, _ := json.Marshal(obj{"op": "subscribe", "sub": "b", "stream": "backlog"})
	if err := ws.Write(context.Background(), websocket.MessageText, sub); err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1000)
	subscribed := make(chan struct{})
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				close(out)
				return
			}
			var m struct{ Type, Topic, ID string }
			json.Unmarshal(b, &m)
			switch {
			case m.Type == "subscribed":
				close(subscribed)
			case m.Type == "changed" && m.Topic == "backlog":
				out <- m.ID
			case m.Type == "reset":
				out <- "*" // hints were lost (a slow reader): anything may have changed
			}
		}
	}()
	// Hints are heard from the subscription on: wait for it.
	select {
	case <-subscribed:
	case <-time.After(20 * time.Second):
		t.Fatal("the socket's subscription was not confirmed")
	}
	return out
}

// heard waits until the socket hears a change about id.
func heard(t *testing.T, ch <-chan string, id string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatal("the socket closed")
			}
			if got == id || got == "*" {
				return
			}
		case <-deadline:
			t.Fatalf("no change about %s on the socket", id)
		}
	}
}

// TestBacklog: a forge project's issues become cards through a scan (a
// dry run writes nothing; closed issues leave), members steer them within
// the allowlist (422 otherwise; done only with green gates), reorder them
// in one transaction (a foreign card 404, a done one 422, nothing changed),
// and a ready card becomes a task within the project's cap (the next one
// held, with the reason as its routing decision); a task's end moves its
// card and frees the slot for the next. Every change is audited and heard
// on the realtime socket; another workspace sees none of it.
func TestBacklog(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		owner := f.Owner
		gh := githubtest.New(t)
		gh.AddRepo("acme/web", "main", false)
		for i := 1; i <= 3; i++ {
			gh.AddIssue("acme/web", fmt.Sprintf("Issue %d", i), fmt.Sprintf("Body of %d.\n\nSecond paragraph.", i), []string{"bug"})
		}
		project := importRepo(t, f, gh)
		base := "/api/projects/" + project + "/backlog"
		socket := watch(t, owner)

		r := owner.Do("GET", base, nil)
		fixture.Want(t, r, http.StatusOK)
		if st := r.Map(t); st["scannable"] != true || st["total"] != float64(0) || st["provider"] != "github" {
			t.Fatalf("status: %s", r.Body)
		}

		// A dry run answers and writes nothing; then the scan.
		r = owner.Do("POST", base+"/scan", nil)
		fixture.Want(t, r, http.StatusOK)
		var scan backlog.ScanResult
		r.JSON(t, &scan)
		if !scan.DryRun || len(scan.Added) != 3 || column(board(t, owner, project), backlog.Inbox).Total != 0 {
			t.Fatalf("dry run: %s", r.Body)
		}
		r = owner.Do("POST", base+"/scan?dry_run=false", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &scan)
		inbox := column(board(t, owner, project), backlog.Inbox)
		if scan.DryRun || len(scan.Added) != 3 || inbox.Total != 3 || *inbox.Items[0].IssueNumber != 1 || *inbox.Items[2].IssueNumber != 3 || inbox.Items[0].Source != backlog.SourceForge {
			t.Fatalf("scan: %s; inbox %+v", r.Body, inbox)
		}
		heard(t, socket, project)
		card := func(n int) backlog.Item { return inbox.Items[n-1] }
		// Again: nothing new; a closed issue's card leaves.
		gh.CloseIssue("acme/web", 3)
		r = owner.Do("POST", base+"/scan?dry_run=false", nil)
		r.JSON(t, &scan)
		if len(scan.Added) != 0 || len(scan.Removed) != 1 || scan.Removed[0].IssueNumber != 3 {
			t.Fatalf("rescan: %s", r.Body)
		}

		// The card: body, no runs, no decision, gates not green.
		r = owner.Do("GET", base+"/items/"+card(1).ID, nil)
		fixture.Want(t, r, http.StatusOK)
		var d backlog.ItemDetail
		r.JSON(t, &d)
		if d.Body != "Body of 1.\n\nSecond paragraph." || len(d.Runs) != 0 || d.Decision.V != nil || d.Gates.Green || d.Gates.Task != "none" {
			t.Fatalf("item: %s", r.Body)
		}

		// Moves: the allowlist.
		patch := func(id string, body obj) *apitest.Response {
			return owner.Do("PATCH", base+"/items/"+id, body)
		}
		fixture.WantError(t, patch(card(1).ID, obj{"state": "review"}), http.StatusUnprocessableEntity, "unprocessable", "from inbox to review")
		fixture.WantError(t, patch(card(1).ID, obj{"state": "in_progress"}), http.StatusUnprocessableEntity, "unprocessable")
		fixture.WantError(t, patch(card(1).ID, obj{"state": "done"}), http.StatusUnprocessableEntity, "unprocessable")
		fixture.WantError(t, patch(card(1).ID, obj{"state": "sideways"}), http.StatusBadRequest, "bad_request", "state")
		r = patch(card(2).ID, obj{"state": "blocked", "blocked_reason": "needs a design"})
		fixture.Want(t, r, http.StatusOK)
		if it := r.Map(t); it["state"] != "blocked" || it["blocked_reason"] != "needs a design" {
			t.Fatalf("blocked: %s", r.Body)
		}
		heard(t, socket, card(2).ID)
		fixture.Want(t, patch(card(2).ID, obj{"state": "inbox"}), http.StatusOK)
		fixture.WantError(t, patch(card(2).ID, obj{"blocked_reason": "x\x00"}), http.StatusBadRequest, "bad_request")

		// Reorder: a foreign card 404, a done card 422, nothing changed;
		// then a plan that holds.
		prio := func(id string) float64 {
			return owner.Do("GET", base+"/items/"+id, nil).Map(t)["priority"].(float64)
		}
		p1 := prio(card(1).ID)
		fixture.WantError(t, owner.Do("PATCH", base+"/order", obj{"plan": []obj{{"item_id": card(1).ID, "priority": 1}, {"item_id": ids.New(), "priority": 2}}}),
			http.StatusNotFound, "not_found")
		f.Exec(t, "UPDATE backlog_items SET state = 'done' WHERE id = $1", card(2).ID)
		fixture.WantError(t, owner.Do("PATCH", base+"/order", obj{"plan": []obj{{"item_id": card(1).ID, "priority": 1}, {"item_id": card(2).ID, "priority": 2}}}),
			http.StatusUnprocessableEntity, "unprocessable", "done")
		if prio(card(1).ID) != p1 {
			t.Fatal("a refused plan changed a priority")
		}
		r = owner.Do("PATCH", base+"/order", obj{"plan": []obj{{"item_id": card(1).ID, "priority": -5}}})
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["updated"] != float64(1) || prio(card(1).ID) != -5 {
			t.Fatalf("reorder: %s", r.Body)
		}

		// Dispatch within a cap of one: card 1 becomes a task, card 4 waits.
		gh.AddIssue("acme/web", "Issue 4", "four", nil)
		owner.Do("POST", base+"/scan?dry_run=false", nil)
		four := column(board(t, owner, project), backlog.Inbox).Items
		var card4 backlog.Item
		for _, it := range four {
			if it.IssueNumber != nil && *it.IssueNumber == 4 {
				card4 = it
			}
		}
		fixture.Want(t, owner.Do("PATCH", "/api/projects/"+project+"/concurrency", obj{"max_concurrent_runs": 1}), http.StatusOK)
		// The project's agent profile runs its cards.
		fixture.WantError(t, owner.Do("PUT", "/api/projects/"+project, obj{"agent_profile": "nobody"}), http.StatusBadRequest, "bad_request", "agent_profile")
		fixture.Want(t, owner.Do("POST", "/api/agent-profiles", obj{"name": "careful", "agent_type": "shell"}), http.StatusCreated)
		fixture.Want(t, owner.Do("PUT", "/api/projects/"+project, obj{"agent_profile": "careful"}), http.StatusOK)
		// The slot is taken (card 2 in progress): card 4, made ready, is held.
		f.Exec(t, "UPDATE backlog_items SET state = 'in_progress' WHERE id = $1", card(2).ID)
		fixture.Want(t, patch(card4.ID, obj{"state": "ready"}), http.StatusOK)
		r = owner.Do("GET", base+"/items/"+card4.ID, nil)
		r.JSON(t, &d)
		if d.State != backlog.Ready || d.Decision.V == nil || d.Decision.V.Decision != "held" ||
			!strings.Contains(d.Decision.V.Detail, "1 card(s) in progress, its max_concurrent_runs is 1") {
			t.Fatalf("card 4 held: %s", r.Body)
		}
		// The slot frees; card 1 (first by priority) takes it, card 4 waits.
		f.Exec(t, "UPDATE backlog_items SET state = 'done' WHERE id = $1", card(2).ID)
		r = patch(card(1).ID, obj{"state": "ready"})
		fixture.Want(t, r, http.StatusOK)
		r = owner.Do("GET", base+"/items/"+card(1).ID, nil)
		r.JSON(t, &d)
		if d.TaskID == nil || len(d.Runs) != 1 || d.Decision.V == nil || d.Decision.V.Decision != "dispatched" {
			t.Fatalf("card 1 after ready: %s", r.Body)
		}
		task := *d.TaskID
		if tk := owner.Do("GET", "/api/tasks/"+task, nil).Map(t); !strings.Contains(tk["prompt"].(string), "Resolve issue #1 of acme/web") || tk["agent_profile"] != "careful" {
			t.Fatalf("the task: %v", tk)
		}
		// The task cannot reach the repository: it fails, its card is
		// blocked saying why, and card 4 takes the slot.
		deadline := time.Now().Add(60 * time.Second)
		for {
			r = owner.Do("GET", base+"/items/"+card(1).ID, nil)
			r.JSON(t, &d)
			if d.State == backlog.Blocked {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("card 1 did not move: %s", r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if d.BlockedReason == nil || !strings.Contains(*d.BlockedReason, "its task failed") || d.Runs[0].TaskStatus == nil || *d.Runs[0].TaskStatus != "failed" {
			t.Fatalf("card 1 blocked: %s", r.Body)
		}
		for {
			r = owner.Do("GET", base+"/items/"+card4.ID, nil)
			r.JSON(t, &d)
			if d.State != backlog.Ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("card 4 was not dispatched: %s", r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if d.TaskID == nil || d.Decision.V.Decision != "dispatched" {
			t.Fatalf("card 4 dispatched: %s", r.Body)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM audit_log WHERE action LIKE 'backlog.%'"); n < 8 {
			t.Fatalf("%d backlog audit entries", n)
		}

		// Another workspace: the project and its cards are unknown.
		out := f.Outsider
		for _, c := range []struct{ method, path string }{{"GET", base}, {"GET", base + "/board"}, {"GET", base + "/items/" + card(1).ID},
			{"PATCH", base + "/items/" + card(1).ID}, {"PATCH", base + "/order"}, {"POST", base + "/scan"}} {
			body := any(nil)
			switch {
			case strings.HasSuffix(c.path, "/order"):
				body = obj{"plan": []obj{{"item_id": card(1).ID, "priority": 1}}}
			case c.method == "PATCH":
				body = obj{"state": "inbox"}
			}
			if r := out.Do(c.method, c.path, body); r.Status != http.StatusNotFound {
				t.Fatalf("%s %s as an outsider: %d %s", c.method, c.path, r.Status, r.Body)
			}
		}
		// A card of another project reads as unknown under this one.
		other := f.Project(t, owner, "Local")
		fixture.WantError(t, owner.Do("GET", "/api/projects/"+other+"/backlog/items/"+card(1).ID, nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, owner.Do("POST", "/api/projects/"+other+"/backlog/scan", nil), http.StatusConflict, "conflict", "local")
	})
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return string(out), err
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
