package proposals_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/proposals"
)

type obj = map[string]any

// line is a proposal line as an agent prints it (a shell agent's stdout
// line is a protocol line when it is one).
func line(t *testing.T, id, kind, title, targetID string, payload any) string {
	t.Helper()
	p, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(obj{"type": "proposal", "id": id, "kind": kind, "title": title, "summary": "because " + title,
		"target_id": targetID, "payload": json.RawMessage(p)})
	if err != nil {
		t.Fatal(err)
	}
	// printf, not echo: dash's echo turns the JSON's \n escapes into
	// line breaks.
	return "printf '%s\\n' '" + strings.ReplaceAll(string(b), "'", `'\''`) + "'"
}

func list(t *testing.T, c *apitest.Client, query string) []proposals.Proposal {
	t.Helper()
	r := c.Do("GET", "/api/proposals"+query, nil)
	fixture.Want(t, r, http.StatusOK)
	var out []proposals.Proposal
	r.JSON(t, &out)
	return out
}

func byTitle(ps []proposals.Proposal) map[string]proposals.Proposal {
	out := map[string]proposals.Proposal{}
	for _, p := range ps {
		out[p.Title] = p
	}
	return out
}

// TestProposals: an agent proposes a workflow, an env var and something
// no kind knows; the workspace's admins hear of the pending ones, a
// member may read but not decide; twenty concurrent approvals apply the
// workflow exactly once (audited with what it made); an env var changed
// since it was proposed is refused as stale, then rejected with a note;
// another workspace sees none of it.
func TestProposals(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		ws := owner.DefaultWorkspace()
		project := f.Project(t, owner, "Proposing")
		member := f.App.Approved(f.Admin, "Mia Member")
		f.Exec(t, "INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)", ws, member.ID, time.Now().UTC())
		member.Workspace = ws

		wfBody := obj{"project_id": project, "name": "Nightly digest",
			"nodes": []obj{{"key": "sum", "kind": "transform", "config": obj{"expression": "1 + 1"}}}}
		prompt := strings.Join([]string{
			line(t, "p1", "workflow", "Add a nightly digest", "", wfBody),
			line(t, "p1", "workflow", "Add a nightly digest", "", wfBody), // resent: one proposal
			line(t, "p2", "env_var", "Set FEATURE_X", "", obj{"key": "FEATURE_X", "value": "on"}),
			line(t, "p3", "spaceship", "Launch", "", obj{"to": "mars"}),
			line(t, "p4", "env_var", "Sneak a secret", "", obj{"key": "TOKEN", "value": "s3cret", "is_secret": true}),
			"exit 0",
		}, "\n")
		task := f.Task(t, owner, project, prompt, obj{"hold": false, "title": "Tidy up"})
		if got := fixture.AwaitTask(t, owner, task.ID); got.Status != "done" && got.Status != "done_pr" {
			t.Fatalf("the proposing task ended %s", got.Status)
		}

		all := list(t, owner, "")
		if len(all) != 4 {
			t.Fatalf("%d proposals, want 4: %+v", len(all), all)
		}
		p := byTitle(all)
		wf, env, ship, secret := p["Add a nightly digest"], p["Set FEATURE_X"], p["Launch"], p["Sneak a secret"]
		if wf.Status != proposals.StatusPending || wf.Kind != "workflow" || wf.TaskID == nil || *wf.TaskID != task.ID ||
			wf.ProposedBy == nil || *wf.ProposedBy != owner.ID || wf.Target != "project:"+project+":new_workflow" || wf.Summary != "because Add a nightly digest" {
			t.Fatalf("the workflow proposal: %+v", wf)
		}
		if env.Status != proposals.StatusPending || env.Target != "env_var:global:FEATURE_X" {
			t.Fatalf("the env var proposal: %+v", env)
		}
		if ship.Status != proposals.StatusRejected || ship.ReviewNote == nil || !strings.Contains(*ship.ReviewNote, "kind must be one of backlog_item, env_var, repo_change, resource, workflow") {
			t.Fatalf("an unknown kind is recorded refused: %+v", ship)
		}
		if secret.Status != proposals.StatusRejected || !strings.Contains(*secret.ReviewNote, "secret env var cannot be proposed") {
			t.Fatalf("a secret is recorded refused: %+v", secret)
		}
		if pend := list(t, owner, "?status=pending"); len(pend) != 2 {
			t.Fatalf("pending: %+v", pend)
		}
		if r := owner.Do("GET", "/api/proposals/count", nil); strings.TrimSpace(string(r.Body)) != "2" {
			t.Fatalf("count: %s", r.Body)
		}
		// limit is clamped, not refused; offset pages.
		if got := list(t, owner, "?limit=100000"); len(got) != 4 {
			t.Fatalf("a clamped limit: %d", len(got))
		}
		if got := list(t, owner, "?limit=1&offset=1"); len(got) != 1 || got[0].ID != all[1].ID {
			t.Fatalf("limit 1 offset 1: %+v", got)
		}
		for i := 1; i < len(all); i++ {
			if all[i].CreatedAt.After(all[i-1].CreatedAt) {
				t.Fatalf("not newest first: %+v", all)
			}
		}
		var board proposals.ProposalBoard
		r := owner.Do("GET", "/api/proposals/board", nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &board)
		if len(board.Pending) != 2 || len(board.Decided) != 2 || board.Counts["pending"] != 2 || board.Counts["rejected"] != 2 || board.Counts["applied"] != 0 {
			t.Fatalf("the board: %s", r.Body)
		}

		// The owner (the workspace's admin) is notified of the pending two.
		r = owner.Do("GET", "/notifications?source=proposal", nil)
		var notes struct{ Total int }
		r.JSON(t, &notes)
		if notes.Total != 2 {
			t.Fatalf("proposal notifications: %s", r.Body)
		}
		r = member.Do("GET", "/notifications?source=proposal", nil)
		r.JSON(t, &notes)
		if notes.Total != 0 {
			t.Fatalf("a member is not asked to decide: %s", r.Body)
		}

		// A member reads but does not decide; another workspace sees nothing.
		fixture.Want(t, member.Do("GET", "/api/proposals/"+wf.ID, nil), http.StatusOK)
		fixture.WantError(t, member.Do("POST", "/api/proposals/"+wf.ID+"/approve", nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, member.Do("POST", "/api/proposals/"+wf.ID+"/reject", obj{"note": "no"}), http.StatusForbidden, "forbidden")
		fixture.WantError(t, outsider.Do("GET", "/api/proposals/"+wf.ID, nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, outsider.Do("GET", "/api/proposals/"+ids.New(), nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, outsider.Do("POST", "/api/proposals/"+wf.ID+"/approve", nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, outsider.Do("POST", "/api/proposals/"+wf.ID+"/reject", nil), http.StatusNotFound, "not_found")
		if got := list(t, outsider, ""); len(got) != 0 {
			t.Fatalf("the outsider lists %+v", got)
		}
		// The tenancy table: another workspace's proposal is exactly an
		// unknown one (a decided one, so the owner's own requests after
		// each case change nothing).
		decidedID := func(*testing.T, *apitest.Client) string { return secret.ID }
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "get", Method: "GET", Path: "/api/proposals/{id}", Create: decidedID},
			{Name: "approve", Method: "POST", Path: "/api/proposals/{id}/approve", Create: decidedID},
			{Name: "reject", Method: "POST", Path: "/api/proposals/{id}/reject", Body: obj{"note": "no"}, Create: decidedID},
		})
		if r := outsider.Do("GET", "/api/proposals/count", nil); strings.TrimSpace(string(r.Body)) != "0" {
			t.Fatalf("the outsider's count: %s", r.Body)
		}

		// Twenty approvals at once: one applies it, the others find it
		// applied.
		if won := apitest.Race(t, 20, http.StatusOK, http.StatusConflict, func() int {
			return owner.Do("POST", "/api/proposals/"+wf.ID+"/approve", nil).Status
		}); won != 1 {
			t.Fatalf("%d approvals won", won)
		}
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+wf.ID+"/approve", nil), http.StatusConflict, "conflict", "applied already")
		var applied proposals.Proposal
		owner.Do("GET", "/api/proposals/"+wf.ID, nil).JSON(t, &applied)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM workflows WHERE workspace_id = $1 AND name = 'Nightly digest'", ws); n != 1 {
			t.Fatalf("%d workflows made", n)
		}
		if applied.Status != proposals.StatusApplied || applied.MaterializedID == nil || applied.ReviewerID == nil || *applied.ReviewerID != owner.ID {
			t.Fatalf("applied: %+v", applied)
		}
		var made struct{ ID, Name string }
		json.Unmarshal(applied.Result, &made)
		if made.ID != *applied.MaterializedID || made.Name != "Nightly digest" {
			t.Fatalf("the apply result: %s", applied.Result)
		}
		fixture.Want(t, owner.Do("GET", "/api/workflows/"+made.ID, nil), http.StatusOK)
		entries := f.App.AuditEntries(t, "proposal.approve", wf.ID)
		if len(entries) != 1 || entries[0].ActorID != owner.ID || entries[0].Before["status"] != "pending" ||
			entries[0].After["status"] != "applied" || entries[0].After["materialized_id"] != made.ID {
			t.Fatalf("the approval's audit: %+v", entries)
		}

		// The env var changed since it was proposed: refused, stays pending.
		fixture.Want(t, owner.Do("POST", "/api/settings/env-vars", obj{"key": "FEATURE_X", "value": "off"}), http.StatusOK)
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+env.ID+"/approve", nil), http.StatusConflict, "conflict",
			"stale", "FEATURE_X was created since it was proposed")
		if got := list(t, owner, "?status=pending"); len(got) != 1 || got[0].ID != env.ID {
			t.Fatalf("the stale proposal is still pending: %+v", got)
		}
		r = owner.Do("POST", "/api/proposals/"+env.ID+"/reject", obj{"note": "we turned it off on purpose"})
		fixture.Want(t, r, http.StatusOK)
		var rejected proposals.Proposal
		r.JSON(t, &rejected)
		if rejected.Status != proposals.StatusRejected || rejected.ReviewNote == nil || *rejected.ReviewNote != "we turned it off on purpose" {
			t.Fatalf("rejected: %+v", rejected)
		}
		entries = f.App.AuditEntries(t, "proposal.reject", env.ID)
		if len(entries) != 1 || entries[0].After["note"] != "we turned it off on purpose" || entries[0].Before["status"] != "pending" {
			t.Fatalf("the rejection's audit: %+v", entries)
		}
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+env.ID+"/approve", nil), http.StatusConflict, "conflict", "rejected already")
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+env.ID+"/reject", nil), http.StatusConflict, "conflict", "rejected already")
		r = owner.Do("GET", "/api/settings/env-vars", nil)
		if !strings.Contains(string(r.Body), `"value":"off"`) {
			t.Fatalf("the env var kept its value: %s", r.Body)
		}

		// Bad input: a note with control characters, an unknown status.
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+ship.ID+"/reject", obj{"note": "a\x00b"}), http.StatusBadRequest, "bad_request")
		fixture.WantError(t, owner.Do("GET", "/api/proposals?status=maybe", nil), http.StatusBadRequest, "bad_request", "status")
		fixture.WantError(t, f.App.Anonymous().Do("GET", "/api/proposals", nil), http.StatusUnauthorized, "unauthorized")
	})
}

// TestProposalStaleWorkflow: a proposal to replace a workflow refuses
// once the workflow was edited, and applies while it was not.
func TestProposalStaleWorkflow(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		project := f.Project(t, owner, "Replacing")
		mk := func(name string) string {
			r := owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": name,
				"nodes": []obj{{"key": "a", "kind": "transform", "config": obj{"expression": "1"}}}})
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		edited, kept := mk("Edited"), mk("Kept")
		replacement := obj{"nodes": []obj{{"key": "a", "kind": "transform", "config": obj{"expression": "2"}}}}
		prompt := line(t, "r1", "workflow", "Replace Edited", edited, replacement) + "\n" + line(t, "r2", "workflow", "Replace Kept", kept, replacement) +
			"\n" + line(t, "r3", "workflow", "Replace a ghost", ids.New(), replacement) + "\nexit 0"
		task := f.Task(t, owner, project, prompt, obj{"hold": false})
		fixture.AwaitTask(t, owner, task.ID)
		p := byTitle(list(t, owner, ""))
		if p["Replace a ghost"].Status != proposals.StatusRejected || !strings.Contains(*p["Replace a ghost"].ReviewNote, "not found") {
			t.Fatalf("a proposal for a workflow that does not exist: %+v", p["Replace a ghost"])
		}
		fixture.Want(t, owner.Do("PUT", "/api/workflows/"+edited, obj{"name": "Edited by hand",
			"nodes": []obj{{"key": "a", "kind": "transform", "config": obj{"expression": "3"}}}}), http.StatusOK)
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+p["Replace Edited"].ID+"/approve", nil), http.StatusConflict, "conflict",
			"stale", "edited since it was proposed")
		r := owner.Do("POST", "/api/proposals/"+p["Replace Kept"].ID+"/approve", nil)
		fixture.Want(t, r, http.StatusOK)
		r = owner.Do("GET", "/api/workflows/"+kept, nil)
		if !strings.Contains(string(r.Body), `"expression":"2"`) {
			t.Fatalf("the replaced workflow: %s", r.Body)
		}
	})
}

// TestProposalsPerTaskBound: an agent that prints proposals without end
// has its task's first MaxPerTask recorded, the rest dropped.
func TestProposalsPerTaskBound(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		project := f.Project(t, f.Owner, "Chatty")
		prompt := `i=0; while [ $i -lt 130 ]; do printf '{"type":"proposal","id":"p%d","kind":"spaceship","title":"Launch %d","payload":{}}\n' $i $i; i=$((i+1)); done`
		task := f.Task(t, f.Owner, project, prompt, obj{"hold": false})
		fixture.AwaitTask(t, f.Owner, task.ID)
		if n := f.App.Count(t, "SELECT COUNT(*) FROM proposals WHERE task_id = $1", task.ID); n != proposals.MaxPerTask {
			t.Fatalf("%d proposals recorded, want %d", n, proposals.MaxPerTask)
		}
	})
}

// TestProposalKinds: an agent proposes a resource (never with a secret), a
// backlog item and a repository change; each approval makes the thing
// through its own domain, once, and audits it with what it made; a
// resource whose name was taken since it was proposed is refused as stale.
func TestProposalKinds(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner := f.Owner
		project := f.Project(t, owner, "Kinds")
		patch := "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # demo\n+Run make test before pushing.\n"
		prompt := strings.Join([]string{
			line(t, "r1", "resource", "Add the metrics API", "", obj{"kind": "http", "name": "Metrics API", "config": obj{"base_url": "https://metrics.example"}}),
			line(t, "r2", "resource", "Add a database", "", obj{"kind": "postgresql", "name": "Warehouse",
				"config": obj{"host": "db.example", "database": "dw", "user": "etl"}}),
			line(t, "r3", "resource", "Add a keyed API", "", obj{"kind": "http", "name": "Keyed", "config": obj{"base_url": "https://k.example"}, "secret": "hunter2-hunter2"}),
			line(t, "b1", "backlog_item", "Flaky login test", "", obj{"project_id": project, "title": "Fix the flaky login test",
				"body": "It fails one run in ten.", "labels": []string{"tests"}}),
			line(t, "c1", "repo_change", "Document the test step", "", obj{"project_id": project, "title": "Document make test",
				"description": "Tell contributors to run the tests.", "patch": patch}),
			line(t, "c2", "repo_change", "Not a patch", "", obj{"project_id": project, "title": "x", "description": "x", "patch": "just words"}),
			"exit 0",
		}, "\n")
		task := f.Task(t, owner, project, prompt, obj{"hold": false, "title": "Propose things"})
		fixture.AwaitTask(t, owner, task.ID)
		p := byTitle(list(t, owner, ""))
		res, db2, keyed, card, change, notPatch := p["Add the metrics API"], p["Add a database"], p["Add a keyed API"], p["Flaky login test"],
			p["Document the test step"], p["Not a patch"]
		if keyed.Status != proposals.StatusRejected || !strings.Contains(*keyed.ReviewNote, "no secret") {
			t.Fatalf("a resource with a secret is refused: %+v", keyed)
		}
		if notPatch.Status != proposals.StatusRejected || !strings.Contains(*notPatch.ReviewNote, "unified diff") {
			t.Fatalf("a patch that is none is refused: %+v", notPatch)
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM proposals WHERE payload LIKE '%hunter2%'"); n != 0 {
			t.Fatal("a refused proposal's secret was stored")
		}
		for _, pr := range []proposals.Proposal{res, db2, card, change} {
			if pr.Status != proposals.StatusPending {
				t.Fatalf("not pending: %+v (of %+v)", pr, p)
			}
		}
		approve := func(pr proposals.Proposal) proposals.Proposal {
			t.Helper()
			r := owner.Do("POST", "/api/proposals/"+pr.ID+"/approve", nil)
			fixture.Want(t, r, http.StatusOK)
			var out proposals.Proposal
			r.JSON(t, &out)
			if out.Status != proposals.StatusApplied || out.MaterializedID == nil {
				t.Fatalf("approved: %+v", out)
			}
			entries := f.App.AuditEntries(t, "proposal.approve", pr.ID)
			if len(entries) != 1 || entries[0].After["materialized_id"] != *out.MaterializedID {
				t.Fatalf("the approval's audit: %+v", entries)
			}
			return out
		}

		// The resource: made, without a secret.
		made := approve(res)
		r := owner.Do("GET", "/api/resources/"+*made.MaterializedID, nil)
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["name"] != "Metrics API" || m["has_secret"] != false || m["kind"] != "http" {
			t.Fatalf("the resource: %s", r.Body)
		}
		// A resource of the proposed name made meanwhile: stale.
		fixture.Want(t, owner.Do("POST", "/api/resources", obj{"kind": "postgresql", "name": "Warehouse",
			"config": obj{"host": "other.example", "database": "dw", "user": "etl"}}), http.StatusCreated)
		fixture.WantError(t, owner.Do("POST", "/api/proposals/"+db2.ID+"/approve", nil), http.StatusConflict, "conflict", "stale",
			"a resource named Warehouse was made since it was proposed")

		// The card: in the project's ready column, from the proposal.
		made = approve(card)
		var item struct {
			Source, State, Title string
			Labels               []string
		}
		r = owner.Do("GET", "/api/projects/"+project+"/backlog/items/"+*made.MaterializedID, nil)
		fixture.Want(t, r, http.StatusOK)
		r.JSON(t, &item)
		if item.Source != "proposal" || item.Title != "Fix the flaky login test" || len(item.Labels) != 1 || item.Labels[0] != "tests" ||
			(item.State != "ready" && item.State != "in_progress") {
			t.Fatalf("the card: %s", r.Body)
		}
		if len(f.App.AuditEntries(t, "backlog.item.propose", *made.MaterializedID)) != 1 {
			t.Fatal("the card's creation is not audited")
		}

		// The repository change: a task of the project, the patch in its
		// prompt, started by the approver.
		made = approve(change)
		got := fixture.GetTask(t, owner, *made.MaterializedID)
		if got.Title != "Document make test" || got.ProjectID != project || !strings.Contains(got.Prompt, "Run make test before pushing.") ||
			!strings.Contains(got.Prompt, "Tell contributors to run the tests.") || got.CreatedBy == nil || *got.CreatedBy != owner.ID {
			t.Fatalf("the change's task: %+v", got)
		}
	})
}
