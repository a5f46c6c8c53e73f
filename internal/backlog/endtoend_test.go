package backlog_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/agenttest"
	"slipway/internal/apitest"
	"slipway/internal/backlog"
	"slipway/internal/fixture"
	"slipway/internal/forge"
	"slipway/internal/forge/forgetest"
	"slipway/internal/forge/github"
	"slipway/internal/forge/github/githubtest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestBacklogEndToEnd: a repository imported from (a local) GitHub, its
// issues scanned into the backlog, one moved to ready: the agent's task
// clones and pushes over https with the resource's token (git's real
// smart HTTP, which checks it), its pull request is opened on GitHub, and
// the card waits in review. A failing check keeps it out of done (422); a
// passing one lets it through, and a merge reported by GitHub's webhook
// moves it to done. Every step is audited and heard on the socket.
func TestBacklogEndToEnd(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true", "PUBLIC_URL", "https://slipway.example")
		owner := f.Owner
		gh, bare, project := onGitHub(t, f, true, func(gh *githubtest.Server) {
			gh.AddIssue("acme/web", "Fix the readme", "echo fixed >> README.md\nexit 0", []string{"docs"})
			gh.AddIssue("acme/web", "Add a licence", "echo MIT > LICENSE\nexit 0", nil)
		})
		socket := watch(t, owner)
		base := "/api/projects/" + project + "/backlog"

		fixture.Want(t, owner.Do("POST", base+"/scan?dry_run=false", nil), http.StatusOK)
		inbox := column(board(t, owner, project), backlog.Inbox).Items
		card, second := inbox[0], inbox[1]
		heard(t, socket, project)
		fixture.Want(t, owner.Do("PATCH", base+"/items/"+card.ID, obj{"state": "ready"}), http.StatusOK)
		heard(t, socket, card.ID)

		// The task runs, pushes, and its pull request opens on GitHub.
		var d backlog.ItemDetail
		waitCard(t, owner, base, card.ID, &d, func() bool { return d.State == backlog.Review && d.PRNumber != nil })
		prs := gh.PRs("acme/web")
		if len(prs) != 1 || d.PRURL == nil || !strings.Contains(*d.PRURL, "/pull/") {
			t.Fatalf("pull requests on GitHub: %+v; card %+v", prs, d.Item)
		}
		body, labels, _ := gh.PR("acme/web", int(*d.PRNumber))
		if !strings.Contains(body, "Resolve issue #1 of acme/web") || !strings.Contains(body, "Closes #1") || len(labels) != 1 || labels[0] != "slipway" {
			t.Fatalf("the pull request's body %q, labels %v", body, labels)
		}
		task := owner.Do("GET", "/api/tasks/"+*d.TaskID, nil).Map(t)
		pr := task["pr"].(map[string]any)
		if task["status"] != "done_pr" || pr["provider"] != "github" || pr["state"] != "open" || pr["number"] != float64(*d.PRNumber) {
			t.Fatalf("the task: %v", task)
		}
		if got := agenttest.Git(t, bare, "show", task["branch"].(string)+":README.md"); !strings.Contains(got, "fixed") {
			t.Fatalf("the pushed branch's README: %q", got)
		}
		heard(t, socket, card.ID)
		sha := pr["commit"].(string)

		// Gates: a failing check keeps the card out of done.
		gh.SetCheck("acme/web", sha, "ci", forge.CheckFailure, false)
		fixture.WantError(t, owner.Do("PATCH", base+"/items/"+card.ID, obj{"state": "done"}), http.StatusUnprocessableEntity, "unprocessable", "checks failed")
		owner.Do("GET", base+"/items/"+card.ID, nil).JSON(t, &d)
		if d.State != backlog.Review || d.Gates.Green || d.Gates.Checks != "failure" || d.Gates.Task != "done_pr" {
			t.Fatalf("after the refused move: %+v", d)
		}
		gh.SetCheck("acme/web", sha, "ci", forge.CheckSuccess, false)
		owner.Do("GET", base+"/items/"+card.ID, nil).JSON(t, &d)
		if !d.Gates.Green || d.Gates.Checks != "success" {
			t.Fatalf("green gates: %+v", d.Gates)
		}

		// GitHub merges it and says so through the webhook: the card is done.
		fixture.Want(t, owner.Do("POST", "/api/projects/"+project+"/automation_setup", nil), http.StatusCreated)
		hook := gh.Hooks("acme/web")[0]
		f.App.Remember(hook.Secret)
		gh.MergePR("acme/web", int(*d.PRNumber))
		h, payload := gh.Delivery("acme/web", forgetest.DeliverySpec{Type: forge.EventPullRequest, Delivery: "merged-1", PR: int(*d.PRNumber),
			Merged: true, Closed: true, SHA: sha}, hook.Secret)
		header := []string{"X-CSRF-Token", ""}
		for k, v := range h {
			header = append(header, k, v[0])
		}
		r := f.App.Anonymous().Do("POST", strings.TrimPrefix(hook.URL, "https://slipway.example"), string(payload), header...)
		if r.Status != http.StatusOK || r.Map(t)["status"] != "accepted" {
			t.Fatalf("the delivery: %d %s", r.Status, r.Body)
		}
		waitCard(t, owner, base, card.ID, &d, func() bool { return d.State == backlog.Done })
		if d.DoneAt == nil {
			t.Fatalf("done: %+v", d.Item)
		}
		heard(t, socket, card.ID)
		if task := owner.Do("GET", "/api/tasks/"+*d.TaskID, nil).Map(t); task["pr"].(map[string]any)["state"] != "merged" {
			t.Fatalf("the task's pull request: %v", task["pr"])
		}
		// POST …/pr refreshes from the forge: merged.
		r = owner.Do("POST", "/api/tasks/"+*d.TaskID+"/pr", nil)
		if r.Status != http.StatusOK || r.Map(t)["pr"].(map[string]any)["state"] != "merged" {
			t.Fatalf("refreshed: %d %s", r.Status, r.Body)
		}

		// The second card's pull request is closed by an undo: closed on
		// GitHub, and the card blocked.
		fixture.Want(t, owner.Do("PATCH", base+"/items/"+second.ID, obj{"state": "ready"}), http.StatusOK)
		var d2 backlog.ItemDetail
		waitCard(t, owner, base, second.ID, &d2, func() bool { return d2.State == backlog.Review && d2.PRNumber != nil })
		r = owner.Do("POST", "/api/tasks/"+*d2.TaskID+"/undo", obj{"kind": "close_pr"})
		fixture.Want(t, r, http.StatusCreated)
		fixture.Want(t, owner.Do("POST", "/api/undo/"+r.Map(t)["id"].(string)+"/execute", nil), http.StatusOK)
		waitCard(t, owner, base, second.ID, &d2, func() bool { return d2.State == backlog.Blocked })
		if d2.BlockedReason == nil || !strings.Contains(*d2.BlockedReason, "closed without merging") {
			t.Fatalf("the second card: %+v", d2.Item)
		}
		for _, p := range gh.PRs("acme/web") {
			if p.Number == int(*d2.PRNumber) && p.State != "closed" {
				t.Fatalf("on GitHub the pull request is %+v", p)
			}
		}

		// Every step is audited: the scan on the project, and each of the
		// card's changes with the state it left the card in.
		var scans int
		if err := f.App.DB.R.QueryRow("SELECT COUNT(*) FROM audit_log WHERE action = 'backlog.scan' AND target_id = $1", project).Scan(&scans); err != nil || scans != 1 {
			t.Fatalf("scans audited: %d (%v)", scans, err)
		}
		var trail []string
		rows, err := f.App.DB.R.Query("SELECT action, after FROM audit_log WHERE target_id = $1 ORDER BY created_at, id", card.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a string
			var after *string
			if err := rows.Scan(&a, &after); err != nil {
				t.Fatal(err)
			}
			var it struct{ State string }
			if after != nil {
				json.Unmarshal([]byte(*after), &it)
			}
			trail = append(trail, a+"→"+it.State)
		}
		rows.Close()
		got := strings.Join(trail, " ")
		for _, step := range []string{"backlog.item.update→ready", "backlog.item.dispatch→in_progress", "→review", "backlog.item.pull_request→done"} {
			if !strings.Contains(got, step) {
				t.Fatalf("the card's audit trail lacks %q: %s", step, got)
			}
		}
		if strings.Contains(got, "→done") && strings.Index(got, "→done") < strings.Index(got, "→review") {
			t.Fatalf("the card's audit trail is out of order: %s", got)
		}
	})
}

func waitCard(t *testing.T, c *apitest.Client, base, id string, d *backlog.ItemDetail, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		r := c.Do("GET", base+"/items/"+id, nil)
		fixture.Want(t, r, http.StatusOK)
		*d = backlog.ItemDetail{}
		r.JSON(t, d)
		if done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the card did not get there: %s", r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPullRequestOpenedOnce: a process that dies after the forge opened a
// task's pull request but before it recorded it leaves the action to open
// it due again; the next attempt finds the pull request on the forge and
// records it instead of opening a second one.
func TestPullRequestOpenedOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE", "true")
		owner := f.Owner
		gh, _, project := onGitHub(t, f, false, nil)
		cfg := gh.Config()

		// A task (autodev off): its change pushed, its pull request proposed.
		r := owner.Do("POST", "/api/tasks", obj{"project_id": project, "prompt": "echo once >> README.md"})
		fixture.Want(t, r, http.StatusCreated)
		id := r.Map(t)["id"].(string)
		var task map[string]any
		deadline := time.Now().Add(90 * time.Second)
		for {
			task = owner.Do("GET", "/api/tasks/"+id, nil).Map(t)
			if task["status"] == "done" {
				break
			}
			if time.Now().After(deadline) || task["status"] == "failed" {
				t.Fatalf("the task: %v", task)
			}
			time.Sleep(100 * time.Millisecond)
		}
		pr := task["pr"].(map[string]any)
		if pr["state"] != "proposed" || pr["provider"] != "github" || pr["number"] != nil {
			t.Fatalf("proposed: %v", pr)
		}
		// The forge opened it, and the process died before recording it:
		// the action is due, the record still says opening.
		p, err := github.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		opened, err := p.OpenPR(t.Context(), "acme/web", forge.PRInput{Title: "x", Head: pr["branch"].(string), Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		f.Exec(t, "INSERT INTO pr_actions (task_id, workspace_id, attempts, run_at, created_at) VALUES ($1, $2, 1, $3, $3)",
			id, owner.DefaultWorkspace(), time.Now().UTC().Add(-time.Second))
		prJSON := strings.Replace(mustJSON(t, pr), `"state":"proposed"`, `"state":"opening"`, 1)
		f.Exec(t, "UPDATE tasks SET pr = $2 WHERE id = $1", id, prJSON)

		deadline = time.Now().Add(30 * time.Second)
		for {
			task = owner.Do("GET", "/api/tasks/"+id, nil).Map(t)
			if task["status"] == "done_pr" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("not recorded: %v", task)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := task["pr"].(map[string]any); got["number"] != float64(opened.Number) || got["state"] != "open" {
			t.Fatalf("recorded %v, the forge opened #%d", got, opened.Number)
		}
		if prs := gh.PRs("acme/web"); len(prs) != 1 {
			t.Fatalf("%d pull requests on GitHub", len(prs))
		}
		if n := f.App.Count(t, "SELECT COUNT(*) FROM pr_actions"); n != 0 {
			t.Fatalf("%d actions left", n)
		}
	})
}

// onGitHub makes acme/web on a local GitHub (issues added by seed), backed
// by a real repository served over git's smart HTTP that checks the
// resource's token, and imports it as a project: GitHub, its repository
// and the project.
func onGitHub(t *testing.T, f *fixture.API, autodev bool, seed func(*githubtest.Server)) (*githubtest.Server, string, string) {
	t.Helper()
	gh := githubtest.New(t)
	bare := agenttest.BareRepo(t, nil)
	agenttest.Git(t, bare, "config", "http.receivepack", "true")
	remote := agenttest.HTTPSRemote(t, bare, "x-access-token", gh.Config().Token)
	// GitHub knows the branches the agent pushes to the repository.
	gh.Branches = func(repo, branch string) (string, bool) {
		out, err := gitOut(bare, "rev-parse", "--verify", "refs/heads/"+branch)
		return strings.TrimSpace(out), err == nil
	}
	gh.AddRepo("acme/web", "main", false)
	if seed != nil {
		seed(gh)
	}
	project := importRepo(t, f, gh)
	fixture.Want(t, f.Owner.Do("PUT", "/api/projects/"+project, obj{"repo_url": remote, "autodev": autodev}), http.StatusOK)
	return gh, bare, project
}
