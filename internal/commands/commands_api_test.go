package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/apitest"
	"slipway/internal/commands"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/proposals"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/workflows"
)

type obj = map[string]any

func outcome(t *testing.T, r *apitest.Response) commands.Outcome {
	t.Helper()
	fixture.Want(t, r, http.StatusOK)
	var o commands.Outcome
	r.JSON(t, &o)
	return o
}

func countTasks(t *testing.T, f *fixture.API) int {
	t.Helper()
	var n int
	if err := f.App.DB.R.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCommandsAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		ws := owner.DefaultWorkspace()
		project := f.Project(t, owner, "Alpha Project")
		blocked, working := f.BlockedProject(t, owner, "Blocked")
		r := owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": "Nightly build",
			"nodes": []obj{{"key": "t", "kind": "transform", "config": obj{"expression": "1 + 1"}}}, "edges": []obj{}})
		fixture.Want(t, r, http.StatusCreated)
		workflow := r.Map(t)["id"].(string)
		// A member who is not an admin of the owner's workspace.
		f.Exec(t, `INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)`,
			ws, outsider.ID, time.Now().UTC())
		m := *outsider
		m.Workspace = ws
		member := &m

		// The registry, by role.
		r = owner.Do("GET", "/api/commands", nil)
		fixture.Want(t, r, http.StatusOK)
		var descs []commands.Descriptor
		r.JSON(t, &descs)
		var words []string
		for _, d := range descs {
			words = append(words, d.Word)
		}
		if strings.Join(words, " ") != "new cancel rerun approve reject run tasks autonomy" {
			t.Fatalf("an admin's commands: %v", words)
		}
		var first []json.RawMessage
		json.Unmarshal(r.Body, &first)
		if keys := apitest.ObjectKeys(t, first[0]); strings.Join(keys, ",") != "word,aliases,category,description_i18n,scope,surfaces,params" {
			t.Fatalf("descriptor fields %v", keys)
		}
		if d := descs[0]; d.Category != "tasks" || d.Scope != "project" || fmt.Sprint(d.Surfaces) != "[api]" || d.Params[0].Kind != "ref" ||
			d.Params[0].RefKind != "project" || d.Params[0].Options.Provider != "projects" || d.Params[4].Options.Kind != "static" {
			t.Fatalf("new's descriptor %+v", d)
		}
		r = member.Do("GET", "/api/commands", nil)
		fixture.Want(t, r, http.StatusOK)
		if strings.Contains(string(r.Body), `"word":"autonomy"`) || !strings.Contains(string(r.Body), `"word":"cancel"`) {
			t.Fatalf("a member's commands: %s", r.Body)
		}

		// A pending approval to approve.
		var job string
		if err := f.App.DB.R.QueryRow(`SELECT id FROM jobs WHERE ref_id = $1`, working).Scan(&job); err != nil {
			t.Fatal(err)
		}
		run := f.Run(t, ws, blocked, working, "", runs.Running, 1, time.Now().UTC())
		approval := ""
		for _, id := range []string{"c1", "c2"} {
			if err := f.App.DB.Tx(context.Background(), func(tx *db.Tx) error {
				a, _, err := f.App.Server.Services.Approvals.Request(context.Background(), tx, ws, working, run, job,
					protocol.ApprovalRequest{ID: id, Tool: "bash", Arguments: json.RawMessage(`{"command":"make deploy"}`)})
				if approval == "" {
					approval = a.ID
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		fixture.Want(t, owner.Do("POST", "/api/agent-profiles", obj{"name": "modelled", "agent_type": "llm", "model": "gpt-test-model",
			"base_url": "http://127.0.0.1:1/v1"}), http.StatusCreated)
		queued := f.Task(t, owner, project, "echo queued", nil)
		done := f.Task(t, owner, project, "echo done", nil)
		f.SetStatus(t, done.ID, tasks.StatusDone)

		// Options.
		optionCases := []struct{ provider, q, want, not string }{
			{"projects", "", "Alpha Project", ""},
			{"projects", "alpha", "Alpha Project", "Blocked"},
			{"projects", "ALPHA", "Alpha Project", "Blocked"},
			{"agents", "", `"value":"shell"`, ""},
			{"agents", "sHe", `"value":"shell"`, `"value":"coder"`},
			{"efforts", "", `"value":"medium"`, ""},
			{"recent_tasks", "queued", queued.ID, done.ID},
			{"workflows", "night", workflow, ""},
			{"pending_approvals", "deploy", approval, ""},
			{"models", "gpt", `"value":"gpt-test-model"`, ""},
		}
		for _, oc := range optionCases {
			r := owner.Do("GET", "/api/commands/options/"+oc.provider+"?q="+oc.q, nil)
			fixture.Want(t, r, http.StatusOK)
			if !strings.Contains(string(r.Body), oc.want) || (oc.not != "" && strings.Contains(string(r.Body), oc.not)) {
				t.Errorf("options %s?q=%s: %s", oc.provider, oc.q, r.Body)
			}
		}
		for range 22 {
			f.Task(t, owner, project, "filler", nil)
		}
		r = owner.Do("GET", "/api/commands/options/recent_tasks", nil)
		var choices []commands.Choice
		r.JSON(t, &choices)
		if len(choices) != commands.MaxChoices {
			t.Fatalf("%d choices, want the cap %d", len(choices), commands.MaxChoices)
		}
		r = outsider.Do("GET", "/api/commands/options/projects", nil)
		if strings.Contains(string(r.Body), "Alpha Project") {
			t.Fatalf("another workspace's projects are offered: %s", r.Body)
		}

		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous list", Method: "GET", Path: "/api/commands", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous options", Method: "GET", Path: "/api/commands/options/projects", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous resolve with a bad body is 401", Method: "POST", Path: "/api/commands/new/resolve", Body: obj{"args": 5}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous invoke", Method: "POST", Path: "/api/commands/new/invoke", Body: obj{}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "unregistered provider", Client: owner, Method: "GET", Path: "/api/commands/options/secrets", WantStatus: 404, WantCode: "not_found"},
			{Name: "unknown word", Client: owner, Method: "POST", Path: "/api/commands/explode/resolve", Body: obj{}, WantStatus: 404, WantCode: "not_found"},
			{Name: "role-hidden word", Client: member, Method: "POST", Path: "/api/commands/autonomy/resolve", Body: obj{"args": obj{"level": 5}}, WantStatus: 404, WantCode: "not_found"},
			{Name: "role-hidden word, invoked", Client: member, Method: "POST", Path: "/api/commands/autonomy/invoke", Body: obj{"args": obj{"level": 100}}, WantStatus: 404, WantCode: "not_found"},
			{Name: "args not an object", Client: owner, Method: "POST", Path: "/api/commands/new/resolve", Body: obj{"args": []int{1}}, WantStatus: 400, WantCode: "bad_request"},
		})

		// Resolve: every outcome.
		resolveCases := []struct {
			name, word string
			args       obj
			status     string
			param      string
			check      func(t *testing.T, o commands.Outcome)
		}{
			{"nothing given asks for the project with its choices", "new", nil, "need_param", "project", func(t *testing.T, o commands.Outcome) {
				if o.FreeText == nil || *o.FreeText || o.DescriptionI18n != "cmd.new.param.project" || o.Options == nil || len(*o.Options) != 2 {
					t.Fatalf("%+v", o)
				}
			}},
			{"then the prompt, free text", "new", obj{"project": project}, "need_param", "prompt", func(t *testing.T, o commands.Outcome) {
				if o.FreeText == nil || !*o.FreeText || o.Options == nil || len(*o.Options) != 0 {
					t.Fatalf("%+v", o)
				}
			}},
			{"ready", "new", obj{"project": project, "prompt": "fix it", "effort": "HIGH"}, "ready", "", func(t *testing.T, o commands.Outcome) {
				if o.Input.Word != "new" || o.Input.Args["project"] != project || o.Input.Args["effort"] != "high" {
					t.Fatalf("%+v", o.Input)
				}
			}},
			{"a project by its name", "task", obj{"project": "alpha project", "prompt": "x"}, "ready", "", func(t *testing.T, o commands.Outcome) {
				if o.Input.Word != "new" || o.Input.Args["project"] != project {
					t.Fatalf("%+v", o.Input)
				}
			}},
			{"an unknown project", "new", obj{"project": ids.New(), "prompt": "x"}, "invalid", "project", func(t *testing.T, o commands.Outcome) {
				if !strings.Contains(o.Hint, "no project") {
					t.Fatalf("%+v", o)
				}
			}},
			{"a bad effort", "new", obj{"project": project, "prompt": "x", "effort": "extreme"}, "invalid", "effort", func(t *testing.T, o commands.Outcome) {
				if o.Value != "extreme" || o.Hint != "effort must be one of low, medium, high" {
					t.Fatalf("%+v", o)
				}
			}},
			{"an unknown agent", "new", obj{"project": project, "prompt": "x", "agent": "ghost"}, "invalid", "agent", nil},
			{"an unknown parameter", "new", obj{"project": project, "prompt": "x", "colour": "red"}, "invalid", "colour", func(t *testing.T, o commands.Outcome) {
				if !strings.Contains(o.Hint, "project, prompt, agent, model, effort") {
					t.Fatalf("%+v", o)
				}
			}},
			{"control characters in free text", "new", obj{"project": project, "prompt": "a\x1b[31m"}, "invalid", "prompt", nil},
			{"a number for text", "new", obj{"project": project, "prompt": 42}, "invalid", "prompt", nil},
			{"out of range", "tasks", obj{"limit": 0}, "invalid", "limit", func(t *testing.T, o commands.Outcome) {
				if o.Hint != "limit must be a whole number from 1 to 50" {
					t.Fatalf("%+v", o)
				}
			}},
			{"not a number", "tasks", obj{"limit": "many"}, "invalid", "limit", nil},
			{"a number as text", "tasks", obj{"limit": "5"}, "ready", "", nil},
			{"optional left out", "tasks", nil, "ready", "", nil},
			{"an alias", "stop", nil, "need_param", "task", func(t *testing.T, o commands.Outcome) {
				if o.Options == nil || len(*o.Options) == 0 {
					t.Fatalf("no task choices: %+v", o)
				}
			}},
			{"another workspace's task", "cancel", obj{"task": ids.New()}, "invalid", "task", nil},
		}
		for _, rc := range resolveCases {
			t.Run("resolve "+rc.name, func(t *testing.T) {
				body := obj{}
				if rc.args != nil {
					body["args"] = rc.args
				}
				o := outcome(t, owner.Do("POST", "/api/commands/"+rc.word+"/resolve", body))
				if o.Status != rc.status || o.Param != rc.param {
					t.Fatalf("outcome %+v, want %s %s", o, rc.status, rc.param)
				}
				if rc.check != nil {
					rc.check(t, o)
				}
			})
		}
		theirs := f.Task(t, outsider, f.Project(t, outsider, "Theirs"), "echo theirs", nil)
		if o := outcome(t, owner.Do("POST", "/api/commands/cancel/resolve", obj{"args": obj{"task": theirs.ID}})); o.Status != "invalid" {
			t.Fatalf("another workspace's task resolved: %+v", o)
		}

		// Invoke: guidance runs nothing; ready runs.
		before := countTasks(t, f)
		for _, args := range []obj{{"project": project}, {"project": project, "prompt": "x", "effort": "extreme"}} {
			if o := outcome(t, owner.Do("POST", "/api/commands/new/invoke", obj{"args": args})); o.Status == "executed" {
				t.Fatalf("an incomplete invoke ran: %+v", o)
			}
		}
		if n := countTasks(t, f); n != before {
			t.Fatal("an incomplete invoke created a task")
		}
		o := outcome(t, owner.Do("POST", "/api/commands/new/invoke", obj{"args": obj{"project": blocked, "prompt": "echo from a command"}}))
		if o.Status != "executed" || o.Invocation.Word != "new" || o.Plan == nil || !strings.Contains(o.Plan.Text, "queued") || o.Plan.Media == nil {
			t.Fatalf("invoke new: %+v", o)
		}
		if countTasks(t, f) != before+1 {
			t.Fatal("invoke new created no task")
		}
		cancel := o.Plan.Affordances[0].Action
		if cancel.Word != "cancel" {
			t.Fatalf("affordances %+v", o.Plan.Affordances)
		}
		// The affordance replays as it is.
		o = outcome(t, owner.Do("POST", "/api/commands/"+cancel.Word+"/invoke", obj{"args": cancel.Args}))
		if o.Status != "executed" || fixture.GetTask(t, owner, cancel.Args["task"]).Status != tasks.StatusCancelled {
			t.Fatalf("replayed cancel: %+v", o)
		}
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "cancelling it again is the action's own refusal", Client: owner, Method: "POST", Path: "/api/commands/cancel/invoke",
				Body: obj{"args": cancel.Args}, WantStatus: 409, WantCode: "conflict"},
		})
		o = outcome(t, owner.Do("POST", "/api/commands/rerun/invoke", obj{"args": cancel.Args}))
		if o.Status != "executed" || countTasks(t, f) != before+2 {
			t.Fatalf("rerun: %+v", o)
		}
		o = outcome(t, owner.Do("POST", "/api/commands/approve/invoke", obj{"args": obj{"approval": approval}}))
		if o.Status != "executed" || !strings.Contains(o.Plan.Text, "approved") {
			t.Fatalf("approve: %+v", o)
		}
		if o := outcome(t, owner.Do("POST", "/api/commands/reject/resolve", obj{"args": obj{"approval": approval}})); o.Status != "invalid" {
			t.Fatalf("a decided approval still resolves: %+v", o)
		}
		o = outcome(t, owner.Do("POST", "/api/commands/run/invoke", obj{"args": obj{"workflow": "nightly build"}}))
		if o.Status != "executed" || !strings.Contains(o.Plan.Text, "started") || o.Invocation.Args["workflow"] != workflow {
			t.Fatalf("run: %+v", o)
		}
		o = outcome(t, owner.Do("POST", "/api/commands/tasks/invoke", obj{"args": obj{"limit": 3}}))
		if o.Status != "executed" || strings.Count(o.Plan.Text, "\n") != 2 || len(o.Plan.Affordances) != 3 {
			t.Fatalf("tasks: %+v", o)
		}
		o = outcome(t, owner.Do("POST", "/api/commands/autonomy/invoke", obj{"args": obj{"level": 15}}))
		if o.Status != "executed" {
			t.Fatalf("autonomy: %+v", o)
		}
		r = owner.Do("GET", "/api/workspaces/"+ws+"/autonomy", nil)
		if !strings.Contains(string(r.Body), `"level":15`) {
			t.Fatalf("autonomy after the command: %s", r.Body)
		}
	})
}

// awaitRun polls a workflow run until done says it is where it should be.
func awaitRun(t *testing.T, c *apitest.Client, runID, what string, done func(v *workflows.RunView) bool) *workflows.RunView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := c.Do("GET", "/api/workflows/runs/"+runID, nil)
		fixture.Want(t, r, http.StatusOK)
		var v workflows.RunView
		r.JSON(t, &v)
		if done(&v) {
			return &v
		}
		if v.FinishedAt != nil || time.Now().After(deadline) {
			t.Fatalf("run %s is not %s: %s", runID, what, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCommandsDecisions: approve and reject (any command surface, a chat
// bot's as the console's) decide proposals and the human gates of workflow
// runs as well as tool approvals, through the services the web uses: the
// pending_approvals choices list all three; a proposal is applied, a stale
// one refused with the reason, a member's approval refused as the service
// refuses it; a gate is rejected and its run goes the rejected way. Another
// workspace's proposal or gate — even a gate of the caller's own run there
// — is answered as an unknown id is.
func TestCommandsDecisions(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		ws, theirWS := owner.DefaultWorkspace(), outsider.DefaultWorkspace()
		// The outsider is also a plain member of the owner's workspace;
		// member is them acting there.
		f.Exec(t, `INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'member', $3)`,
			ws, outsider.ID, time.Now().UTC())
		m := *outsider
		m.Workspace = ws
		member := &m

		// A run of each waiting at a human node.
		gated := func(c *apitest.Client, name string) string {
			t.Helper()
			project := f.Project(t, c, name+" project")
			r := c.Do("POST", "/api/workflows", obj{"project_id": project, "name": name,
				"nodes": []obj{
					{"key": "ask", "kind": "human", "config": obj{"message": "Ship {{ input.version }}?"}},
					{"key": "yes", "kind": "end", "config": obj{"output": "1"}},
					{"key": "no", "kind": "end", "config": obj{"status": "failed", "message": "rejected by {{ nodes.ask.output.decided_by }}"}},
				},
				"edges": []obj{{"source": "ask", "source_handle": "approved", "target": "yes"}, {"source": "ask", "source_handle": "rejected", "target": "no"}}})
			fixture.Want(t, r, http.StatusCreated)
			r = c.Do("POST", "/api/workflows/"+r.Map(t)["id"].(string)+"/runs", obj{"input": obj{"version": "2.0"}})
			fixture.Want(t, r, http.StatusCreated)
			run := r.Map(t)["run_id"].(string)
			awaitRun(t, c, run, "waiting at ask", func(v *workflows.RunView) bool { return slices.Contains(v.WaitingOn, "ask") })
			return run
		}
		gate, theirGate := gated(owner, "Release"), gated(outsider, "Their release")

		// Pending proposals, as an agent makes them.
		propose := func(c *apitest.Client, wsID, title, key string) string {
			t.Helper()
			line, err := json.Marshal(protocol.Proposal{Type: "proposal", ID: key, Kind: "env_var", Title: title,
				Payload: json.RawMessage(`{"key":"` + key + `","value":"on"}`)})
			if err != nil {
				t.Fatal(err)
			}
			run := &runs.Run{ID: ids.New(), WorkspaceID: wsID}
			if err := f.App.DB.Tx(ctx, func(tx *db.Tx) error {
				return f.App.Server.Services.Proposals.AgentReported(ctx, tx, run, &c.ID,
					[]runs.NewEvent{{Type: protocol.OutProposal, Payload: line, At: time.Now().UTC()}})
			}); err != nil {
				t.Fatal(err)
			}
			r := c.Do("GET", "/api/proposals?status=pending", nil)
			fixture.Want(t, r, http.StatusOK)
			var ps []proposals.Proposal
			r.JSON(t, &ps)
			for _, p := range ps {
				if p.Title == title {
					return p.ID
				}
			}
			t.Fatalf("no pending proposal %q: %s", title, r.Body)
			return ""
		}
		proposal := propose(owner, ws, "Turn on FEATURE_X", "FEATURE_X")
		stale := propose(owner, ws, "Turn on FEATURE_Y", "FEATURE_Y")
		theirProposal := propose(outsider, theirWS, "Their flag", "THEIR_FLAG")

		// The choices: the proposals and the gate, labelled, newest first;
		// nothing of another workspace, not even the caller's own gate there.
		choices := func(c *apitest.Client, q string) map[string]commands.Choice {
			t.Helper()
			r := c.Do("GET", "/api/commands/options/pending_approvals?q="+q, nil)
			fixture.Want(t, r, http.StatusOK)
			var cs []commands.Choice
			r.JSON(t, &cs)
			out := map[string]commands.Choice{}
			for _, ch := range cs {
				out[ch.Value] = ch
			}
			return out
		}
		r := owner.Do("GET", "/api/commands/options/pending_approvals", nil)
		fixture.Want(t, r, http.StatusOK)
		var ordered []commands.Choice
		r.JSON(t, &ordered)
		if len(ordered) != 3 || ordered[0].Value != stale || ordered[1].Value != proposal || ordered[2].Value != gate {
			t.Fatalf("the owner's choices, newest first: %s", r.Body)
		}
		all := choices(owner, "")
		if all[proposal].Label != "Proposal: Turn on FEATURE_X" || all[gate].Label != "Gate: Release — Ship 2.0?" {
			t.Fatalf("labels: %+v", all)
		}
		if got := choices(owner, "release"); len(got) != 1 || got[gate].Value != gate {
			t.Fatalf("filtered to the gate: %+v", got)
		}
		if got := choices(outsider, ""); len(got) != 2 || got[theirProposal].Value == "" || got[theirGate].Value == "" {
			t.Fatalf("the outsider's own choices: %+v", got)
		}
		if got := choices(member, ""); len(got) != 2 || got[proposal].Value == "" || got[stale].Value == "" {
			t.Fatalf("the member's choices in the owner's workspace (their own gate elsewhere left out; the owner's gate waits on the owner): %+v", got)
		}

		// Another workspace's id answers as an unknown one, resolved or
		// invoked, whoever asks (the member started theirGate themselves).
		unknown := ids.New()
		for _, c := range []*apitest.Client{owner, member} {
			for _, foreign := range []string{theirProposal, theirGate} {
				for _, call := range []string{"approve/resolve", "reject/resolve", "approve/invoke", "deny/invoke"} {
					got := c.Do("POST", "/api/commands/"+call, obj{"args": obj{"approval": foreign}})
					want := c.Do("POST", "/api/commands/"+call, obj{"args": obj{"approval": unknown}})
					fixture.Want(t, got, http.StatusOK)
					if o := outcome(t, got); o.Status != "invalid" || o.Param != "approval" ||
						strings.ReplaceAll(string(got.Body), foreign, "{id}") != strings.ReplaceAll(string(want.Body), unknown, "{id}") {
						t.Fatalf("%s of another workspace's %s answers unlike an unknown id:\n%s\n%s", call, foreign, got.Body, want.Body)
					}
				}
			}
		}
		if o := outcome(t, outsider.Do("POST", "/api/commands/approve/resolve", obj{"args": obj{"approval": theirGate}})); o.Status != "ready" {
			t.Fatalf("in its own workspace the gate resolves: %+v", o)
		}

		// A member may see a proposal but not decide it: the service's 403.
		if o := outcome(t, member.Do("POST", "/api/commands/approve/resolve", obj{"args": obj{"approval": proposal}})); o.Status != "ready" {
			t.Fatalf("a member's approve resolves: %+v", o)
		}
		fixture.WantError(t, member.Do("POST", "/api/commands/approve/invoke", obj{"args": obj{"approval": proposal}}), http.StatusForbidden,
			"forbidden", "only the workspace's owner or an admin decides proposals")
		status := func(id string) string {
			t.Helper()
			r := owner.Do("GET", "/api/proposals/"+id, nil)
			fixture.Want(t, r, http.StatusOK)
			return r.Map(t)["status"].(string)
		}
		if s := status(proposal); s != proposals.StatusPending {
			t.Fatalf("after a member's approve the proposal is %s", s)
		}

		// The owner approves: applied.
		o := outcome(t, owner.Do("POST", "/api/commands/allow/invoke", obj{"args": obj{"approval": proposal}}))
		if o.Status != "executed" || o.Invocation.Word != "approve" || o.Plan.Text != `Proposal "Turn on FEATURE_X" is applied.` {
			t.Fatalf("approve a proposal: %+v %+v", o, o.Plan)
		}
		if s := status(proposal); s != proposals.StatusApplied {
			t.Fatalf("the approved proposal is %s", s)
		}
		if r := owner.Do("GET", "/api/settings/env-vars", nil); !strings.Contains(string(r.Body), `"FEATURE_X"`) {
			t.Fatalf("the applied env var: %s", r.Body)
		}
		if o := outcome(t, owner.Do("POST", "/api/commands/reject/resolve", obj{"args": obj{"approval": proposal}})); o.Status != "invalid" {
			t.Fatalf("a decided proposal still resolves: %+v", o)
		}
		// A target that changed since: refused with the reason, still pending.
		fixture.Want(t, owner.Do("POST", "/api/settings/env-vars", obj{"key": "FEATURE_Y", "value": "off"}), http.StatusOK)
		fixture.WantError(t, owner.Do("POST", "/api/commands/approve/invoke", obj{"args": obj{"approval": stale}}), http.StatusConflict,
			"conflict", "stale", "FEATURE_Y was created since it was proposed")
		if s := status(stale); s != proposals.StatusPending {
			t.Fatalf("the stale proposal is %s", s)
		}
		o = outcome(t, owner.Do("POST", "/api/commands/reject/invoke", obj{"args": obj{"approval": stale}}))
		if o.Status != "executed" || o.Plan.Text != `Proposal "Turn on FEATURE_Y" is rejected.` || status(stale) != proposals.StatusRejected {
			t.Fatalf("reject a proposal: %+v %+v", o, o.Plan)
		}

		// The gate waits on the owner, who started the run: the member may
		// not decide it (it is not theirs to see), the owner rejects it.
		if o := outcome(t, member.Do("POST", "/api/commands/reject/resolve", obj{"args": obj{"approval": gate}})); o.Status != "invalid" {
			t.Fatalf("a gate waiting on someone else resolves: %+v", o)
		}
		o = outcome(t, owner.Do("POST", "/api/commands/reject/invoke", obj{"args": obj{"approval": gate}}))
		if o.Status != "executed" || o.Plan.Text != "The gate of workflow run "+gate+" (Release) is rejected." {
			t.Fatalf("reject a gate: %+v %+v", o, o.Plan)
		}
		v := awaitRun(t, owner, gate, "finished", func(v *workflows.RunView) bool { return v.FinishedAt != nil })
		if v.Status != workflows.RunFailed || v.Error != "rejected by "+owner.ID {
			t.Fatalf("the rejected run: %+v", v)
		}
		for _, n := range v.Nodes {
			if n.Key == "ask" && (n.Status != workflows.NodeSucceeded || n.Handle != "rejected") {
				t.Fatalf("the gate after the command: %+v", n)
			}
		}
		if got := choices(owner, ""); len(got) != 0 {
			t.Fatalf("decided things are still offered: %+v", got)
		}
		if o := outcome(t, owner.Do("POST", "/api/commands/approve/resolve", obj{"args": obj{"approval": gate}})); o.Status != "invalid" {
			t.Fatalf("a decided gate still resolves: %+v", o)
		}
	})
}
