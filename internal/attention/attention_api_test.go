package attention_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/attention"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

type inbox struct {
	Rows       []attention.InboxItem
	Total      int
	Actionable int
	Facets     map[string][]struct {
		Value string
		Count int
	}
}

func read(t *testing.T, c *apitest.Client, query string) inbox {
	t.Helper()
	r := c.Do("GET", "/api/inbox/board"+query, nil)
	fixture.Want(t, r, http.StatusOK)
	var b inbox
	r.JSON(t, &b)
	return b
}

func counts(b inbox) map[string]int {
	out := map[string]int{}
	for _, f := range b.Facets["source"] {
		out[f.Value] = f.Count
	}
	return out
}

func decisions(t *testing.T, c *apitest.Client) string {
	t.Helper()
	r := c.Do("GET", "/api/inbox/decisions/count", nil)
	fixture.Want(t, r, http.StatusOK)
	return strings.TrimSpace(string(r.Body))
}

// TestInbox: the union inbox holds a workspace's pending tool approval,
// the caller's waiting human gate, a pending proposal and the caller's
// unread failed-task notification, newest first, counted per source; what
// the caller can decide is counted (a member decides approvals, not
// proposals; gates are their starter's); deciding each through its own
// endpoint takes it out; another workspace's member sees nothing.
func TestInbox(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		ws := owner.DefaultWorkspace()
		member := f.App.Approved(f.Admin, "Mia Member")
		f.Exec(t, "INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)", ws, member.ID, time.Now().UTC())
		member.Workspace = ws
		project := f.Project(t, owner, "Inboxed")

		// A failed task (a notification), a pending proposal, a waiting
		// gate and a tool approval, in that order.
		failed := f.Task(t, owner, project, "exit 1", obj{"hold": false, "title": "Broken build"})
		fixture.AwaitTask(t, owner, failed.ID)
		payload, _ := json.Marshal(obj{"type": "proposal", "id": "x", "kind": "env_var", "title": "Set MODE", "payload": obj{"key": "MODE", "value": "fast"}})
		proposer := f.Task(t, owner, project, "echo '"+string(payload)+"'", obj{"hold": false})
		fixture.AwaitTask(t, owner, proposer.ID)
		r := owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Release",
			"nodes": []obj{{"key": "ask", "kind": "human", "config": obj{"message": "release?"}}}})
		fixture.Want(t, r, http.StatusCreated)
		r = owner.Do("POST", "/api/workflows/"+r.Map(t)["id"].(string)+"/runs", obj{})
		fixture.Want(t, r, http.StatusCreated)
		run := r.Map(t)["run_id"].(string)
		deadline := time.Now().Add(30 * time.Second)
		for counts(read(t, owner, ""))["gate"] == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the gate never waited")
			}
			time.Sleep(50 * time.Millisecond)
		}
		w := f.Working(t, owner, "asks")
		approval := f.Ask(t, w, "req-1", "make deploy")

		b := read(t, owner, "")
		c := counts(b)
		if c["approval"] != 1 || c["gate"] != 1 || c["proposal"] != 1 || c["notification"] != 1 || b.Total != 4 || b.Actionable != 3 || len(b.Rows) != 4 {
			t.Fatalf("the owner's inbox: %+v", b)
		}
		order := []string{}
		for _, it := range b.Rows {
			order = append(order, it.Source)
		}
		if strings.Join(order, " ") != "approval gate proposal notification" {
			t.Fatalf("not newest first: %v", order)
		}
		byKind := map[string]attention.InboxItem{}
		for _, it := range b.Rows {
			byKind[it.Source] = it
		}
		if a := byKind["approval"]; a.ID != approval || !a.Actionable || a.Title != "Approve bash?" {
			t.Fatalf("the approval: %+v", a)
		}
		if g := byKind["gate"]; g.ID != run || g.NodeKey != "ask" || g.Body != "release?" || !g.Actionable || g.Link != "/workflows/runs/"+run {
			t.Fatalf("the gate: %+v", g)
		}
		if p := byKind["proposal"]; p.Title != "Set MODE" || !p.Actionable || p.Kind != "env_var" {
			t.Fatalf("the proposal: %+v", p)
		}
		if n := byKind["notification"]; n.Kind != "run_failed" || n.Actionable || !strings.Contains(n.Title, "Broken build") {
			t.Fatalf("the notification: %+v", n)
		}
		if got := decisions(t, owner); got != "3" {
			t.Fatalf("the owner's decisions: %s", got)
		}
		// Filters and pages.
		if b := read(t, owner, "?source=gate"); b.Total != 1 || len(b.Rows) != 1 || b.Rows[0].Source != "gate" || counts(b)["approval"] != 1 {
			t.Fatalf("only gates: %+v", b)
		}
		if b := read(t, owner, "?page=2&page_size=3"); b.Total != 4 || len(b.Rows) != 1 || b.Rows[0].Source != "notification" {
			t.Fatalf("page 2 of 3: %+v", b)
		}
		fixture.WantError(t, owner.Do("GET", "/api/inbox/board?page=6&page_size=200", nil), http.StatusBadRequest, "bad_request", "newest 1000")
		fixture.WantError(t, owner.Do("GET", "/api/inbox/board?q=x", nil), http.StatusBadRequest, "bad_request")
		fixture.WantError(t, owner.Do("GET", "/api/inbox/board?source=mail", nil), http.StatusBadRequest, "bad_request")

		// A member: the approval to decide, the proposal to read only, no
		// gate (not theirs), no notification.
		mb := read(t, member, "")
		mc := counts(mb)
		if mc["approval"] != 1 || mc["gate"] != 0 || mc["proposal"] != 1 || mc["notification"] != 0 || mb.Actionable != 1 {
			t.Fatalf("the member's inbox: %+v", mb)
		}
		for _, it := range mb.Rows {
			if it.Source == "proposal" && it.Actionable {
				t.Fatalf("a member cannot decide a proposal: %+v", it)
			}
		}
		if got := decisions(t, member); got != "1" {
			t.Fatalf("the member's decisions: %s", got)
		}
		// Another workspace: nothing.
		if ob := read(t, outsider, ""); ob.Total != 0 || len(ob.Rows) != 0 || ob.Actionable != 0 {
			t.Fatalf("the outsider's inbox: %+v", ob)
		}

		// Each decided through its own endpoint leaves the inbox.
		fixture.Want(t, member.Do("POST", "/api/tool-approvals/"+approval+"/decide", obj{"verdict": "approve"}), http.StatusOK)
		fixture.Want(t, owner.Do("POST", "/api/workflows/runs/"+run+"/nodes/ask/decision", obj{"decision": "approve"}), http.StatusOK)
		fixture.Want(t, owner.Do("POST", "/api/proposals/"+byKind["proposal"].ID+"/approve", nil), http.StatusOK)
		fixture.Want(t, owner.Do("PUT", "/notifications/"+byKind["notification"].ID+"/read", nil), http.StatusOK)
		b = read(t, owner, "")
		if b.Total != 0 || b.Actionable != 0 || len(b.Rows) != 0 || decisions(t, owner) != "0" {
			t.Fatalf("after every decision: %+v", b)
		}
		// Each decision settled its notification: nothing is unread.
		r = owner.Do("GET", "/notifications", nil)
		var notes struct {
			Total  int
			Facets struct{ Unread int }
		}
		r.JSON(t, &notes)
		if notes.Total != 4 || notes.Facets.Unread != 0 {
			t.Fatalf("the owner's notifications after every decision: %s", r.Body)
		}
		fixture.WantError(t, f.App.Anonymous().Do("GET", "/api/inbox/decisions/count", nil), http.StatusUnauthorized, "unauthorized")
	})
}
