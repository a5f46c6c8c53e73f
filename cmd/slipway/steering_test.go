package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// scriptedModel is a local chat-completions server that answers each task
// (told apart by its prompt) from its own script: reply n of a prompt's
// conversation is script(n).
type scriptedModel struct {
	mu    sync.Mutex
	calls map[string]int
	srv   *httptest.Server
}

func newScriptedModel(t *testing.T, scripts map[string]func(n int, w http.ResponseWriter, r *http.Request)) *scriptedModel {
	m := &scriptedModel{calls: map[string]int{}}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		prompt := ""
		if len(req.Messages) > 1 {
			prompt = req.Messages[1].Content
		}
		m.mu.Lock()
		m.calls[prompt]++
		n := m.calls[prompt]
		m.mu.Unlock()
		script, ok := scripts[prompt]
		if !ok {
			http.Error(w, "no script for "+prompt, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		script(n, w, r)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedModel) count(prompt string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[prompt]
}

func toolCompletion(id, tool, args string) string {
	b, _ := json.Marshal(map[string]any{"id": "c", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": "",
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": tool, "arguments": args}}}}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "cost": 0.01}})
	return string(b)
}

type apiApproval struct {
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
}

func (c *apiClient) pending() []apiApproval {
	var out []apiApproval
	if err := json.Unmarshal([]byte(c.get("/api/tool-approvals/pending")), &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// TestSteeringARemoteAgent: an llm agent on a remote runner (real
// processes) asks approval before bash and waits; the hub is killed with
// kill -9 and restarted while it waits; the approval decided afterwards
// reaches the agent through the runner, which runs the call and publishes
// the change. Another agent on the runner is interrupted mid model call and
// goes on with the message it is sent.
func TestSteeringARemoteAgent(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const approvePrompt, steerPrompt = "Write approved.txt", "Think, then do as told"
		held := make(chan struct{}, 1)
		model := newScriptedModel(t, map[string]func(int, http.ResponseWriter, *http.Request){
			approvePrompt: func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					io.WriteString(w, toolCompletion("call_1", "bash", `{"command":"echo approved > approved.txt"}`))
					return
				}
				io.WriteString(w, toolCompletion("call_2", "finish", `{"summary":"wrote it"}`))
			},
			steerPrompt: func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					held <- struct{}{}
					select {
					case <-r.Context().Done():
					case <-time.After(time.Minute):
					}
					return
				}
				io.WriteString(w, toolCompletion("call_9", "finish", `{"summary":"did as told"}`))
			},
		})
		dir := t.TempDir()
		port := freePort(t)
		s := startServer(t, e, dir, "SERVICE_HUB_MODE=true", "SERVICE_AGENT_EXECUTION=fleet_only", "SERVICE_WORKER_LEASE_SECS=20",
			"SERVICE_AGENT_BACKEND=process", "SERVER_PORT="+port)
		s.c.post("/api/agent-profiles", fmt.Sprintf(`{"name":"steered","agent_type":"llm","model":"test-model","base_url":%q,"api_key":"test-key"}`,
			model.srv.URL+"/v1"), 201)
		var wss []struct {
			ID string `json:"id"`
		}
		json.Unmarshal([]byte(s.c.get("/api/workspaces")), &wss)
		s.c.do("PUT", "/api/workspaces/"+wss[0].ID+"/autonomy", `{"level":20}`, 200)
		_, token := s.c.createRunner("far")
		startRunner(t, filepath.Join(dir, "runner"), s.p.url(""), token)
		eventually(t, 10*time.Second, "the runner is online", func() bool { return s.c.runners()["far"].Status == "online" })

		id := s.c.id(s.c.post("/api/tasks", fmt.Sprintf(`{"project_id":%q,"prompt":%q,"agent_profile":"steered"}`, s.project, approvePrompt), 201))
		eventually(t, 30*time.Second, "the agent asks for approval", func() bool { return len(s.c.pending()) == 1 })
		if st := s.c.task(id).Status; st != "needs_input" {
			t.Fatalf("task %s while it waits for approval", st)
		}
		if got := s.c.ranOn(id); len(got) != 1 || !strings.HasPrefix(got[0], "runner@") {
			t.Fatalf("ran on %v", got)
		}

		// The hub dies and comes back while the agent waits on the runner.
		if err := s.p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		s.p.wait(t)
		s.restart(t)
		pending := s.c.pending()
		if len(pending) != 1 || pending[0].TaskID != id || pending[0].Tool != "bash" {
			t.Fatalf("pending after the restart: %+v", pending)
		}
		s.c.post("/api/tool-approvals/"+pending[0].ID+"/decide", `{"verdict":"approve"}`, 200)
		s.c.waitAll([]string{id}, time.Minute, "done")
		evs := s.c.events(id)
		if n := successfulResults(evs); n != 1 {
			t.Fatalf("%d successful results:\n%s", n, eventsText(evs))
		}
		if n := model.count(approvePrompt); n != 2 {
			t.Fatalf("%d model calls, want 2 (the agent ran once, across the hub's restart):\n%s", n, eventsText(evs))
		}
		var task struct {
			PR *struct {
				FilesChanged int `json:"files_changed"`
			} `json:"pr"`
			CostUSD float64 `json:"cost_usd"`
		}
		json.Unmarshal([]byte(s.c.get("/api/tasks/"+id)), &task)
		if task.PR == nil || task.PR.FilesChanged != 1 || task.CostUSD < 0.019 {
			t.Fatalf("task after approval: %+v\n%s", task, eventsText(evs))
		}

		// Interrupt and intervene, through the runner.
		steer := s.c.id(s.c.post("/api/tasks", fmt.Sprintf(`{"project_id":%q,"prompt":%q,"agent_profile":"steered"}`, s.project, steerPrompt), 201))
		select {
		case <-held:
		case <-time.After(30 * time.Second):
			t.Fatal("the second agent never called the model")
		}
		s.c.post("/api/tasks/"+steer+"/interrupt", "", 200)
		eventually(t, 20*time.Second, "the interrupted agent waits", func() bool { return s.c.task(steer).Status == "needs_input" })
		msg := s.c.id(s.c.post("/api/tasks/"+steer+"/intervene", `{"text":"Stop thinking and finish."}`, 201))
		s.c.waitAll([]string{steer}, time.Minute, "done")
		var m struct {
			Status string `json:"status"`
		}
		json.Unmarshal([]byte(s.c.get("/api/agent/messages/"+msg)), &m)
		if m.Status != "delivered" {
			t.Fatalf("message %s", m.Status)
		}
		conv := s.c.get("/api/agent/conversations/" + steer + "/messages")
		if !strings.Contains(conv, "Stop thinking and finish.") {
			t.Fatalf("conversation: %s", conv)
		}
	})
}

// freePort is a loopback port free now (a restarted hub comes back on it).
func freePort(t *testing.T) string {
	t.Helper()
	// Below the kernel's ephemeral range (32768–60999): a port the kernel
	// hands out for ":0" (every other server these tests start) is never
	// one of these, so the port stays free between this check and the
	// server's bind.
	for range 100 {
		port := 20000 + rand.IntN(10000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return strconv.Itoa(port)
	}
	t.Fatal("no free port between 20000 and 30000")
	return ""
}
