package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"slipway/internal/agenttest"
	"slipway/internal/conversations"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/projects"
	"slipway/internal/tasks"
)

// chatModel is a local server speaking the chat-completions protocol: it
// answers request n with reply(n, r). It listens on every interface, so an
// agent in a container reaches it through its network's gateway.
type chatModel struct {
	mu     sync.Mutex
	bodies []string
	port   int
}

func newChatModel(t *testing.T, reply func(n int, w http.ResponseWriter, r *http.Request)) *chatModel {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	m := &chatModel{port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.bodies = append(m.bodies, string(body))
		n := len(m.bodies)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		reply(n, w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

func (m *chatModel) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.bodies...)
}

// baseURL is where an agent on the backend reaches the model.
func (m *chatModel) baseURL(t *testing.T, backend string) string {
	host := "127.0.0.1"
	if backend == "docker" {
		host = agentGateway(t)
	}
	return fmt.Sprintf("http://%s:%d/v1", host, m.port)
}

// agentGateway is the host's address on the test agents' network (created
// here when no test made it yet).
func agentGateway(t *testing.T) string {
	t.Helper()
	cli, err := client.New(client.WithHost(agenttest.DockerHost(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	n, err := cli.NetworkInspect(ctx, "slipway-test-agents", client.NetworkInspectOptions{})
	if err != nil {
		// Another package's tests may create it at the same moment: a
		// failed create is fine when the network is there after it.
		_, cerr := cli.NetworkCreate(ctx, "slipway-test-agents", client.NetworkCreateOptions{Driver: "bridge"})
		if n, err = cli.NetworkInspect(ctx, "slipway-test-agents", client.NetworkInspectOptions{}); err != nil {
			t.Fatalf("create the test network: %v; inspect it: %v", cerr, err)
		}
	}
	return n.Network.IPAM.Config[0].Gateway.String()
}

// completionWith is a chat completion calling one tool.
func completionWith(id, tool, args string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "c", "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{
			"role": "assistant", "content": "",
			"tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": tool, "arguments": args}}},
		}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	return string(b)
}

// llmProfile makes an llm profile against the model and turns the
// workspace's autonomy level down so that its agent asks before bash.
func llmProfile(t *testing.T, s *fixture.Stack, m *chatModel, backend string, level int) string {
	t.Helper()
	name, typ, model, url, key := "steered", "llm", "test-model", m.baseURL(t, backend), "test-key"
	if _, err := s.Projects.CreateProfile(context.Background(), s.WS, projects.ProfileInput{Name: &name, AgentType: &typ, Model: &model,
		BaseURL: &url, APIKey: &key}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.W.Exec(`UPDATE workspaces SET autonomy_level = $2 WHERE id = $1`, s.WS.ID, level); err != nil {
		t.Fatal(err)
	}
	return name
}

// An llm agent asks before a bash call, its task waits in needs_input, and
// a member's verdict reaches it through the worker port: approved, the call
// runs and its change is published; rejected, it does not run and the task
// ends cleanly.
func TestToolApprovalReachesTheAgent(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		for _, verdict := range []string{"approve", "reject"} {
			t.Run(verdict, func(t *testing.T) {
				ctx := context.Background()
				s := stack(t, db.SQLite, backend)
				model := newChatModel(t, func(n int, w http.ResponseWriter, _ *http.Request) {
					if n == 1 {
						io.WriteString(w, completionWith("call_1", "bash", `{"command":"echo approved > approved.txt"}`))
						return
					}
					io.WriteString(w, completionWith("call_2", "finish", `{"summary":"done"}`))
				})
				profile := llmProfile(t, s, model, backend, 20)
				p, _ := s.Project(false, nil)
				task := s.Task(p.ID, "Write approved.txt", tasks.TaskConfig{}, profile)

				s.Wait(task.ID, tasks.StatusNeedsInput)
				pending, err := s.Approvals.Pending(ctx, s.WS, 0)
				if err != nil || len(pending) != 1 {
					t.Fatalf("pending approvals %+v, %v", pending, err)
				}
				a := pending[0]
				if a.Tool != "bash" || a.TaskID != task.ID || !strings.Contains(string(a.Arguments), "approved.txt") {
					t.Fatalf("approval %+v", a)
				}
				if n := len(model.requests()); n != 1 {
					t.Fatalf("the agent went on without a verdict (%d model calls)", n)
				}
				if _, err := s.Approvals.Decide(ctx, fixture.Member(t, s.DB, s.WS), a.ID, verdict); err != nil {
					t.Fatal(err)
				}
				final := s.Wait(task.ID, tasks.StatusDone, tasks.StatusFailed)
				evs := s.Events(task.ID)
				if final.Status != tasks.StatusDone {
					t.Fatalf("task %s (%s); events:\n%s", final.Status, final.Error, fixture.DumpEvents(evs))
				}
				if approved := final.PR != nil && final.PR.FilesChanged == 1; approved != (verdict == "approve") {
					t.Fatalf("verdict %s: change %+v", verdict, final.PR)
				}
				text := fixture.DumpEvents(evs)
				for _, want := range []string{`"to":"needs_input"`, `"type":"approval_request"`, `"tool":"bash"`, `"to":"running"`} {
					if !strings.Contains(text, want) {
						t.Errorf("events lack %s:\n%s", want, text)
					}
				}
				if verdict == "reject" && !strings.Contains(text, "did not approve") {
					t.Errorf("the rejected call's result is not in the log:\n%s", text)
				}
				if pending, _ := s.Approvals.Pending(ctx, s.WS, 0); len(pending) != 0 {
					t.Errorf("still pending: %+v", pending)
				}
			})
		}
	})
}

// An interrupt stops the agent's model call and keeps the task, which waits
// for a message; the message (an intervention) reaches the agent, which
// goes on with it.
func TestInterruptThenIntervene(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		s := stack(t, db.SQLite, backend)
		held := make(chan struct{}, 1)
		model := newChatModel(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				held <- struct{}{}
				select { // hold the call until the agent gives up on it
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				return
			}
			io.WriteString(w, completionWith("call_2", "finish", `{"summary":"finished as told"}`))
		})
		profile := llmProfile(t, s, model, backend, 50)
		p, _ := s.Project(false, nil)
		task := s.Task(p.ID, "Think hard", tasks.TaskConfig{}, profile)
		select {
		case <-held:
		case <-time.After(90 * time.Second):
			t.Fatal("the agent never called the model")
		}
		u := fixture.Member(t, s.DB, s.WS)
		if _, err := s.Tasks.Interrupt(ctx, s.WS, u, task.ID); err != nil {
			t.Fatal(err)
		}
		s.Wait(task.ID, tasks.StatusNeedsInput)
		m, err := s.Conversations.Send(ctx, s.WS, u, task.ID, "Stop thinking and finish.")
		if err != nil {
			t.Fatal(err)
		}
		final := s.Wait(task.ID, tasks.StatusDone, tasks.StatusFailed)
		if final.Status != tasks.StatusDone {
			t.Fatalf("task %s (%s); events:\n%s", final.Status, final.Error, fixture.DumpEvents(s.Events(task.ID)))
		}
		reqs := model.requests()
		if len(reqs) != 2 || !strings.Contains(reqs[1], "Stop thinking and finish.") {
			t.Fatalf("model requests %d; the second does not carry the message", len(reqs))
		}
		got, err := s.Conversations.Get(ctx, s.WS, m.ID)
		if err != nil || got.Status != conversations.StatusDelivered {
			t.Fatalf("message %+v, %v", got, err)
		}
		text := fixture.DumpEvents(s.Events(task.ID))
		for _, want := range []string{" interrupt {", `"type":"waiting"`, " intervention {", "Stop thinking and finish."} {
			if !strings.Contains(text, want) {
				t.Errorf("events lack %s:\n%s", want, text)
			}
		}
	})
}

// The built-in agent delegates with its delegate tool: the hub queues a
// subtask of its task, which runs on its own.
func TestAgentDelegatesASubtask(t *testing.T) {
	ctx := context.Background()
	s := stack(t, db.SQLite, "process")
	model := newChatModel(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			io.WriteString(w, completionWith("d1", "delegate", `{"prompt":"echo sub > sub.txt","agent_profile":"shell","title":"Write sub.txt"}`))
			return
		}
		io.WriteString(w, completionWith("f1", "finish", `{"summary":"delegated"}`))
	})
	profile := llmProfile(t, s, model, "process", 50)
	p, _ := s.Project(false, nil)
	parent := s.Task(p.ID, "Get sub.txt written", tasks.TaskConfig{}, profile)
	s.Wait(parent.ID, tasks.StatusDone)
	var subs []tasks.Subtask
	deadline := time.Now().Add(30 * time.Second)
	for len(subs) == 0 || !tasks.Terminal(subs[0].Status) {
		if time.Now().After(deadline) {
			t.Fatalf("subtasks %+v; parent events:\n%s", subs, fixture.DumpEvents(s.Events(parent.ID)))
		}
		time.Sleep(20 * time.Millisecond)
		var err error
		if subs, err = s.Tasks.Subtasks(ctx, s.WS, parent.ID); err != nil {
			t.Fatal(err)
		}
	}
	if len(subs) != 1 || subs[0].Title != "Write sub.txt" || subs[0].AgentProfile != "shell" || subs[0].Status != tasks.StatusDone ||
		subs[0].PR == nil || subs[0].PR.FilesChanged != 1 {
		t.Fatalf("subtask %+v", subs)
	}
}
