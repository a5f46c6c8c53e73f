package conversations_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/conversations"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
	"slipway/internal/tasks"
)

func inboxLines(t *testing.T, f *fixture.API, taskID string) []string {
	t.Helper()
	rows, err := f.App.DB.R.Query(`SELECT i.line FROM agent_inbox i JOIN jobs j ON j.id = i.job_id WHERE j.ref_id = $1 ORDER BY i.seq`, taskID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func send(t *testing.T, c *apitest.Client, taskID, text string) conversations.AgentMessage {
	t.Helper()
	r := c.Do("POST", "/api/agent/messages", map[string]any{"task_id": taskID, "text": text})
	fixture.Want(t, r, http.StatusCreated)
	var m conversations.AgentMessage
	r.JSON(t, &m)
	return m
}

func TestAgentMessagesAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		project, working := f.BlockedProject(t, owner, "Steered")
		queued := f.Task(t, owner, project, "true", map[string]any{"hold": false})
		held := f.Task(t, owner, project, "true", nil)
		done := f.Task(t, owner, project, "true", nil)
		f.SetStatus(t, done.ID, tasks.StatusDone)

		m := send(t, owner, working, "Please also update the README.")
		if m.Status != conversations.StatusQueued || m.Role != "user" || m.ConversationID != working || m.AuthorID == nil {
			t.Fatalf("message %+v", m)
		}
		if lines := inboxLines(t, f, working); len(lines) != 1 || lines[0] != `{"role":"user","seq":1,"text":"Please also update the README.","type":"message"}` {
			t.Fatalf("inbox %v", lines)
		}
		var intervened bool
		for _, ev := range fixture.Events(t, owner, working, "") {
			if ev.EventType == tasks.EventIntervention && fixture.Payload(t, ev)["message_id"] == m.ID {
				intervened = true
			}
		}
		if !intervened {
			t.Fatal("no intervention event on the task")
		}
		// A queued task's agent gets it when it starts.
		q := send(t, owner, queued.ID, "Start with the tests.")
		// The intervene action is the same, on the task's path.
		r := owner.Do("POST", "/api/tasks/"+working+"/intervene", map[string]any{"text": "And the changelog."})
		fixture.Want(t, r, http.StatusCreated)

		// The agent's own messages join the conversation as they arrive.
		run := f.Run(t, owner.DefaultWorkspace(), project, working, "", runs.Running, 1, time.Now().UTC())
		ctx := context.Background()
		if _, err := f.App.Server.Services.Runs.AppendBatch(ctx, owner.DefaultWorkspace(), run, 1, []runs.NewEvent{
			{Type: "message", Payload: []byte(`{"type":"message","role":"assistant","text":"On it."}`), At: time.Now().UTC()},
			{Type: "message", Payload: []byte(`{"type":"message","role":"stderr","text":"npm WARN"}`), At: time.Now().UTC()},
		}); err != nil {
			t.Fatal(err)
		}
		r = owner.Do("GET", "/api/agent/conversations/"+working+"/messages", nil)
		fixture.Want(t, r, http.StatusOK)
		var conv []conversations.AgentMessage
		r.JSON(t, &conv)
		if len(conv) != 3 || conv[0].ID != m.ID || conv[1].Text != "And the changelog." || conv[2].Role != "assistant" || conv[2].Text != "On it." {
			t.Fatalf("conversation %+v", conv)
		}
		r = owner.Do("GET", "/api/agent/messages?role=user", nil)
		fixture.Want(t, r, http.StatusOK)
		var all []conversations.AgentMessage
		r.JSON(t, &all)
		if len(all) != 3 || all[len(all)-1].ID != m.ID {
			t.Fatalf("messages, newest first: %+v", all)
		}

		// Cancel while queued: withdrawn from the inbox; twice is refused.
		r = owner.Do("POST", "/api/agent/messages/"+q.ID+"/cancel", nil)
		fixture.Want(t, r, http.StatusOK)
		if len(inboxLines(t, f, queued.ID)) != 0 {
			t.Fatal("a cancelled message is still in the inbox")
		}
		// A message the worker has taken cannot be cancelled.
		f.Exec(t, `UPDATE agent_inbox SET taken_at = $2 WHERE message_id = $1`, m.ID, time.Now().UTC())

		long := strings.Repeat("x", conversations.MaxText+1)
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "anonymous send with a bad body is 401", Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"text": 5}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous list", Method: "GET", Path: "/api/agent/messages", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous intervene", Method: "POST", Path: "/api/tasks/" + working + "/intervene", Body: map[string]any{"text": "hi"}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous interrupt", Method: "POST", Path: "/api/tasks/" + working + "/interrupt", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "empty text", Client: owner, Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"task_id": working, "text": "  "}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "control characters", Client: owner, Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"task_id": working, "text": "a\x1bb"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "too long", Client: owner, Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"task_id": working, "text": long}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "missing task id", Client: owner, Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"text": "hi"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown task", Client: owner, Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"task_id": ids.New(), "text": "hi"}, WantStatus: 404, WantCode: "not_found"},
			{Name: "a finished task", Client: owner, Method: "POST", Path: "/api/tasks/" + done.ID + "/intervene", Body: map[string]any{"text": "hi"}, WantStatus: 409, WantCode: "conflict"},
			{Name: "a held task has no agent yet", Client: owner, Method: "POST", Path: "/api/tasks/" + held.ID + "/intervene", Body: map[string]any{"text": "hi"}, WantStatus: 409, WantCode: "conflict"},
			{Name: "interrupt a finished task", Client: owner, Method: "POST", Path: "/api/tasks/" + done.ID + "/interrupt", WantStatus: 409, WantCode: "conflict"},
			{Name: "cancel again", Client: owner, Method: "POST", Path: "/api/agent/messages/" + q.ID + "/cancel", WantStatus: 400, WantCode: "bad_request", WantContains: []string{"cancelled"}},
			{Name: "cancel a delivered message", Client: owner, Method: "POST", Path: "/api/agent/messages/" + m.ID + "/cancel", WantStatus: 400, WantCode: "bad_request", WantContains: []string{"already been handed"}},
			{Name: "get", Client: owner, Method: "GET", Path: "/api/agent/messages/" + m.ID, WantStatus: 200, WantContains: []string{m.ID}},
			{Name: "send to another workspace's task", Client: outsider, Method: "POST", Path: "/api/agent/messages", Body: map[string]any{"task_id": working, "text": "hi"},
				WantStatus: 404, WantCode: "not_found", WantContains: []string{`"task not found"`}},
			{Name: "the outsider lists none of them", Client: outsider, Method: "GET", Path: "/api/agent/messages", WantStatus: 200, WantNotContains: []string{m.ID, working}},
		})

		// A task that ends withdraws what its agent never took.
		late := send(t, owner, queued.ID, "Too late.")
		fixture.Want(t, owner.Do("POST", "/api/tasks/"+queued.ID+"/cancel", nil), http.StatusOK)
		r = owner.Do("GET", "/api/agent/messages/"+late.ID, nil)
		if !strings.Contains(string(r.Body), `"status":"cancelled"`) {
			t.Fatalf("a message of an ended task: %s", r.Body)
		}

		// Interrupt a working task: the agent is told, the task stays.
		r = owner.Do("POST", "/api/tasks/"+working+"/interrupt", nil)
		fixture.Want(t, r, http.StatusOK)
		lines := inboxLines(t, f, working)
		if lines[len(lines)-1] != `{"type":"interrupt"}` {
			t.Fatalf("inbox %v", lines)
		}
		if got := fixture.GetTask(t, owner, working); got.Status != tasks.StatusRunning {
			t.Fatalf("the interrupted task is %s", got.Status)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "get message", Method: "GET", Path: "/api/agent/messages/{id}",
				Create: func(t *testing.T, c *apitest.Client) string { return send(t, c, working, "tenancy").ID }},
			{Name: "cancel message", Method: "POST", Path: "/api/agent/messages/{id}/cancel",
				Create: func(t *testing.T, c *apitest.Client) string { return send(t, c, working, "tenancy").ID }},
			{Name: "conversation", Method: "GET", Path: "/api/agent/conversations/{id}/messages",
				Create: func(t *testing.T, c *apitest.Client) string { return working }},
			{Name: "intervene", Method: "POST", Path: "/api/tasks/{id}/intervene", Body: map[string]any{"text": "hi"},
				Create: func(t *testing.T, c *apitest.Client) string { return working }},
			{Name: "interrupt", Method: "POST", Path: "/api/tasks/{id}/interrupt",
				Create: func(t *testing.T, c *apitest.Client) string { return working }},
		})
	})
}

// The autonomy level of a workspace: members read it, admins set it,
// bounded 0 to 100.
func TestAutonomyLevelAPI(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, outsider := f.Owner, f.Outsider
		ws := owner.DefaultWorkspace()
		path := "/api/workspaces/" + ws + "/autonomy"
		apitest.Run(t, f.App, []apitest.Scenario{
			{Name: "default", Client: owner, Method: "GET", Path: path, WantStatus: 200, WantContains: []string{`"level":50`}},
			{Name: "anonymous with a bad body is 401", Method: "PUT", Path: path, Body: map[string]any{"level": 900}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "above 100", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"level": 101}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "below 0", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"level": -1}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "set", Client: owner, Method: "PUT", Path: path, Body: map[string]any{"level": 20}, WantStatus: 200, WantContains: []string{`"level":20`}},
			{Name: "read back", Client: owner, Method: "GET", Path: path, WantStatus: 200, WantContains: []string{`"level":20`}},
			{Name: "another workspace is unknown", Client: outsider, Method: "PUT", Path: path, Body: map[string]any{"level": 100}, WantStatus: 404, WantCode: "not_found"},
			{Name: "unknown workspace", Client: outsider, Method: "PUT", Path: "/api/workspaces/" + ids.New() + "/autonomy", Body: map[string]any{"level": 100}, WantStatus: 404, WantCode: "not_found"},
			{Name: "unchanged by the refusals", Client: owner, Method: "GET", Path: path, WantStatus: 200, WantContains: []string{`"level":20`}},
		})
	})
}
