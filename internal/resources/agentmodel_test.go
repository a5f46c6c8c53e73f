package resources_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/tasks"
)

// chatServer is an OpenAI-compatible model that edits a repository: it
// writes NOTE.md, then finishes. It keeps the model and the key each
// request named.
type chatServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []string // "model key"
	// hold, when set, keeps each request until it is closed, telling
	// arrived first.
	hold, arrived chan struct{}
}

func newChatServer(t *testing.T) *chatServer {
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		s.mu.Lock()
		s.calls = append(s.calls, req.Model+" "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		hold, arrived := s.hold, s.arrived
		s.mu.Unlock()
		if hold != nil {
			arrived <- struct{}{}
			<-hold
		}
		name, args := "write_file", `{"path": "NOTE.md", "content": "written by the team's model\n"}`
		if len(req.Messages) > 2 { // the write's result came back
			name, args = "finish", `{"summary": "added NOTE.md"}`
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "model": req.Model, "choices": []map[string]any{{"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
				"id": "call_" + name, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(s.Close)
	return s
}

// holdCalls keeps the requests from now on until the returned release.
func (s *chatServer) holdCalls() (arrived <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.arrived = make(chan struct{}), make(chan struct{}, 10)
	hold := s.hold
	return s.arrived, func() {
		s.mu.Lock()
		s.hold = nil
		s.mu.Unlock()
		close(hold)
	}
}

func (s *chatServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// TestProfileUsesModelResource: an llm agent profile names an
// openai_compatible resource of its workspace; its tasks call the
// resource's base URL with its key and default model (or the profile's),
// the key reaches no event and no answer, the resource's usage lists the
// profile, its max_concurrent_uses holds the tasks back, and once it is
// deleted the profile's task fails saying so. Only the workspace's own
// openai_compatible resources are accepted.
func TestProfileUsesModelResource(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const key = "sk-team-model-key-5150"
		model := newChatServer(t)
		f := fixture.NewAPI(t, e)
		f.App.Remember(key)
		c := f.Owner
		project := f.Project(t, c, "Docs")
		res := create(t, c, obj{"name": "Team model", "kind": "openai_compatible", "config": obj{"base_url": model.URL + "/v1", "model": "team-default"}, "secret": key})
		web := create(t, c, obj{"name": "Web", "kind": "http", "config": obj{"base_url": "https://x.example"}})
		theirs := create(t, f.Outsider, obj{"name": "Theirs", "kind": "openai_compatible", "config": obj{"base_url": "https://y.example/v1", "model": "m"}})

		for _, bad := range []struct {
			body  obj
			words []string
		}{
			{obj{"name": "p", "agent_type": "llm", "resource_id": web.ID}, []string{`"Web" is a http resource`, "openai_compatible"}},
			{obj{"name": "p", "agent_type": "llm", "resource_id": theirs.ID}, []string{"no resource " + theirs.ID + " in this workspace"}},
			{obj{"name": "p", "agent_type": "llm", "resource_id": "00000000-0000-4000-8000-000000000000"}, []string{"no resource", "in this workspace"}},
			{obj{"name": "p", "agent_type": "shell", "resource_id": res.ID}, []string{"only an llm profile"}},
			{obj{"name": "p", "agent_type": "llm", "resource_id": res.ID, "base_url": model.URL}, []string{"either resource_id or base_url"}},
		} {
			fixture.WantError(t, c.Do("POST", "/api/agent-profiles", bad.body), http.StatusBadRequest, "bad_request", bad.words...)
		}
		r := c.Do("POST", "/api/agent-profiles", obj{"name": "team", "agent_type": "llm", "resource_id": res.ID})
		fixture.Want(t, r, http.StatusCreated)
		var profile struct {
			ID         string `json:"id"`
			ResourceID string `json:"resource_id"`
			BaseURL    string `json:"base_url"`
			HasAPIKey  bool   `json:"has_api_key"`
		}
		r.JSON(t, &profile)
		if profile.ResourceID != res.ID || profile.BaseURL != "" || profile.HasAPIKey {
			t.Fatalf("the profile = %s", r.Body)
		}
		r = c.Do("GET", "/api/resources/"+res.ID+"/usage", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"profiles":[{"profile_id":"`+profile.ID+`","name":"team"}]`) {
			t.Fatalf("the usage does not list the profile: %s", r.Body)
		}

		// A task with the profile runs on the resource's model with its key.
		task := fixture.AwaitTask(t, c, f.Task(t, c, project, "Add a note.", obj{"agent_profile": "team", "hold": false}).ID)
		if task.Status != tasks.StatusDonePR && task.Status != tasks.StatusDone {
			t.Fatalf("the task %s: %s", task.Status, task.Error)
		}
		if calls := model.seen(); len(calls) != 2 || calls[0] != "team-default "+key {
			t.Fatalf("the model saw %q", calls)
		}
		events := c.Do("GET", "/api/tasks/"+task.ID+"/events", nil)
		if !strings.Contains(string(events.Body), "NOTE.md") || strings.Contains(string(events.Body), key) {
			t.Fatalf("the events: %s", events.Body)
		}
		// The profile's model wins over the resource's default.
		fixture.Want(t, c.Do("PUT", "/api/agent-profiles/"+profile.ID, obj{"model": "profile-model"}), http.StatusOK)
		fixture.AwaitTask(t, c, f.Task(t, c, project, "Another note.", obj{"agent_profile": "team", "hold": false}).ID)
		if calls := model.seen(); len(calls) != 4 || calls[2] != "profile-model "+key {
			t.Fatalf("the model saw %q", calls)
		}

		// With max_concurrent_uses 1, a second task of the profile waits in
		// the queue while the first one is talking to the model.
		fixture.Want(t, c.Do("PATCH", "/api/resources/"+res.ID+"/concurrency", obj{"max_concurrent_uses": 1}), http.StatusOK)
		arrived, release := model.holdCalls()
		first := f.Task(t, c, project, "First.", obj{"agent_profile": "team", "hold": false})
		<-arrived
		second := f.Task(t, c, project, "Second.", obj{"agent_profile": "team", "hold": false})
		time.Sleep(time.Second) // a claim takes milliseconds: the second would be running by now
		if got := fixture.GetTask(t, c, second.ID); got.Status != tasks.StatusQueued {
			release()
			t.Fatalf("with the one use taken the second task is %s", got.Status)
		}
		release()
		for _, id := range []string{first.ID, second.ID} {
			if got := fixture.AwaitTask(t, c, id); got.Status == tasks.StatusFailed {
				t.Fatalf("a held-back task failed: %s", got.Error)
			}
		}

		// Deleted, the resource fails the profile's next task, saying why.
		fixture.Want(t, c.Do("DELETE", "/api/resources/"+res.ID, nil), http.StatusOK)
		gone := fixture.AwaitTask(t, c, f.Task(t, c, project, "Once more.", obj{"agent_profile": "team", "hold": false}).ID)
		if gone.Status != tasks.StatusFailed || !strings.Contains(gone.Error, "agent profile team: no resource "+res.ID+" in this workspace") {
			t.Fatalf("with the resource gone the task is %s: %q", gone.Status, gone.Error)
		}
		if n := len(model.seen()); n != 8 {
			t.Fatalf("the model had %d calls", n)
		}
		if where := f.App.Holding(t, key); len(where) > 0 {
			t.Fatalf("the database holds the key in %v", where)
		}
	})
}

// TestInstanceKeyGoesOnlyToItsProvider: LLM_PROVIDER_API_KEY is sent to
// LLM_PROVIDER_BASE_URL and nowhere else: a profile pointing elsewhere
// without its own key fails before any call, instead of handing a
// tenant's server the instance's key; a command agent (a command line
// the tenant wrote) never gets it.
func TestInstanceKeyGoesOnlyToItsProvider(t *testing.T) {
	const instanceKey = "sk-instance-key-8080"
	model := newChatServer(t)
	attacker := newChatServer(t)
	f := fixture.NewAPI(t, db.SQLite, "LLM_PROVIDER_API_KEY", instanceKey, "LLM_PROVIDER_BASE_URL", model.URL+"/v1/")
	c := f.Owner
	project := f.Project(t, c, "Docs")
	fixture.Want(t, c.Do("POST", "/api/agent-profiles", obj{"name": "elsewhere", "agent_type": "llm", "model": "m", "base_url": attacker.URL + "/v1"}), http.StatusCreated)
	fixture.Want(t, c.Do("POST", "/api/agent-profiles", obj{"name": "provider", "agent_type": "llm", "model": "m", "base_url": model.URL + "/v1"}), http.StatusCreated)

	got := fixture.AwaitTask(t, c, f.Task(t, c, project, "Add a note.", obj{"agent_profile": "elsewhere", "hold": false}).ID)
	if got.Status != tasks.StatusFailed || !strings.Contains(got.Error, "LLM_PROVIDER_API_KEY is sent only to "+model.URL+"/v1") {
		t.Fatalf("the keyless profile pointing elsewhere: %s %q", got.Status, got.Error)
	}
	if calls := attacker.seen(); len(calls) != 0 {
		t.Fatalf("the other server was called: %q", calls)
	}
	got = fixture.AwaitTask(t, c, f.Task(t, c, project, "Add a note.", obj{"agent_profile": "provider", "hold": false}).ID)
	if got.Status == tasks.StatusFailed {
		t.Fatalf("the provider's profile failed: %s", got.Error)
	}
	if calls := model.seen(); len(calls) == 0 || calls[0] != "m "+instanceKey {
		t.Fatalf("the provider saw %q", calls)
	}

	fixture.Want(t, c.Do("POST", "/api/agent-profiles", obj{"name": "cli", "agent_type": "command", "command_template": `echo "key length [${#SLIPWAY_API_KEY}]" {prompt}`}), http.StatusCreated)
	got = fixture.AwaitTask(t, c, f.Task(t, c, project, "go", obj{"agent_profile": "cli", "hold": false}).ID)
	if events := c.Do("GET", "/api/tasks/"+got.ID+"/events", nil); got.Status == tasks.StatusFailed || !strings.Contains(string(events.Body), "key length [0] go") {
		t.Fatalf("the command agent (%s %q) printed: %s", got.Status, got.Error, events.Body)
	}
}
