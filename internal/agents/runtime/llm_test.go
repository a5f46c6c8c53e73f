package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/agents/protocol"
)

// seenRequest is what the fake model server recorded of one request.
type seenRequest struct {
	Auth string
	Path string
	Body struct {
		Model      string `json:"model"`
		ToolChoice string `json:"tool_choice"`
		Tools      []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
}

// fakeModel is an OpenAI-compatible chat-completions server that answers
// request n (1-based) with reply(n, request).
type fakeModel struct {
	mu    sync.Mutex
	reqs  []seenRequest
	reply func(n int, req seenRequest, w http.ResponseWriter, r *http.Request)
	srv   *httptest.Server
}

func newFakeModel(t *testing.T, reply func(n int, req seenRequest, w http.ResponseWriter, r *http.Request)) *fakeModel {
	f := &fakeModel{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req seenRequest
		req.Auth, req.Path = r.Header.Get("Authorization"), r.URL.Path
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req.Body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		n := len(f.reqs)
		f.mu.Unlock()
		f.reply(n, req, w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.reqs...)
}

// scripted answers request n with replies[n-1] (status 200), and the last
// reply for any later request.
func scripted(replies ...string) func(int, seenRequest, http.ResponseWriter, *http.Request) {
	return func(n int, _ seenRequest, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[min(n, len(replies))-1])
	}
}

type call struct{ id, name, args string }

// completion is a chat-completions response body with usage
// (prompt, completion) and the given text and tool calls.
func completion(text string, prompt, completionTokens int, calls ...call) string {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if text != "" {
		msg["content"] = text
	}
	if len(calls) > 0 {
		var tcs []tc
		for _, c := range calls {
			tcs = append(tcs, tc{ID: c.id, Type: "function", Function: fn{Name: c.name, Arguments: c.args}})
		}
		msg["tool_calls"] = tcs
	}
	b, _ := json.Marshal(map[string]any{
		"id": "cmpl-1", "object": "chat.completion", "model": "test-model-2025",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "tool_calls"}},
		"usage":   map[string]int{"prompt_tokens": prompt, "completion_tokens": completionTokens, "total_tokens": prompt + completionTokens},
	})
	return string(b)
}

func llmStart(dir, url string) protocol.Start {
	return protocol.Start{Type: protocol.InStart, AgentType: protocol.AgentLLM, Prompt: "Greet slipway instead of the world.",
		Instructions: "Keep the greeting short.", Model: "test-model", BaseURL: url + "/v1/", APIKey: "test-key", WorkDir: dir}
}

// events decodes the output lines (result excluded) by type.
func events(t *testing.T, lines []string) (types []string, byType map[string][]map[string]any) {
	t.Helper()
	byType = map[string][]map[string]any{}
	for _, l := range lines[:len(lines)-1] {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("the llm agent wrote a line that is not JSON: %q", l)
		}
		typ, _ := m["type"].(string)
		types = append(types, typ)
		byType[typ] = append(byType[typ], m)
	}
	return types, byType
}

func TestLLMMultiStepEdit(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greeting.txt"), []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := newFakeModel(t, scripted(
		completion("Let me look around.", 100, 10, call{"c1", "list_dir", `{"path":"."}`}),
		completion("", 200, 20, call{"c2", "read_file", `{"path":"greeting.txt"}`}),
		completion("", 300, 30, call{"c3", "edit_file", `{"path":"greeting.txt","old_string":"world","new_string":"slipway"}`}),
		completion("", 400, 40, call{"c4", "bash", `{"command":"cat greeting.txt"}`}),
		completion("Done.", 500, 50, call{"c5", "finish", `{"summary":"The greeting now says hello slipway."}`}),
	))
	code, lines, res, _ := runToEnd(t, llmStart(dir, model.srv.URL))
	if code != 0 || res.Status != protocol.ResultSuccess || res.Summary != "The greeting now says hello slipway." {
		t.Fatalf("exit %d, result %+v\n%s", code, res, strings.Join(lines, "\n"))
	}

	data, _ := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	if string(data) != "hello slipway\n" {
		t.Errorf("greeting.txt is %q", data)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "greeting.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("edit_file changed the mode to %v", fi.Mode().Perm())
	}

	types, ev := events(t, lines)
	want := []string{
		"cost", "message", "tool_call", "tool_result",
		"cost", "tool_call", "tool_result",
		"cost", "tool_call", "tool_result",
		"cost", "tool_call", "tool_result",
		"cost", "message", "tool_call", "tool_result",
	}
	if strings.Join(types, ",") != strings.Join(want, ",") {
		t.Fatalf("event sequence\n got %v\nwant %v", types, want)
	}
	for i, c := range ev["cost"] {
		n := float64(i + 1)
		if c["model"] != "test-model-2025" || c["prompt_tokens"] != 100*n || c["completion_tokens"] != 10*n || c["total_tokens"] != 110*n {
			t.Errorf("cost event %d: %v", i+1, c)
		}
	}
	if m := ev["message"][0]; m["role"] != "assistant" || m["text"] != "Let me look around." {
		t.Errorf("message event: %v", m)
	}
	wantCalls := []struct{ id, name, output string }{
		{"c1", "list_dir", "greeting.txt\n"},
		{"c2", "read_file", "hello world\n"},
		{"c3", "edit_file", "edited greeting.txt"},
		{"c4", "bash", "hello slipway\n[exit code 0]"},
		{"c5", "finish", "The greeting now says hello slipway."},
	}
	for i, w := range wantCalls {
		tc, tr := ev["tool_call"][i], ev["tool_result"][i]
		if tc["id"] != w.id || tc["name"] != w.name || tr["id"] != w.id || tr["name"] != w.name || tr["ok"] != true {
			t.Errorf("call %d: tool_call %v, tool_result %v", i+1, tc, tr)
		}
		if out, _ := tr["output"].(string); !strings.HasPrefix(out, w.output) {
			t.Errorf("call %d output %q, want prefix %q", i+1, out, w.output)
		}
	}
	if args, _ := ev["tool_call"][2]["arguments"].(map[string]any); args["old_string"] != "world" {
		t.Errorf("tool_call arguments are not the model's object: %v", ev["tool_call"][2])
	}

	reqs := model.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	first := reqs[0]
	if first.Path != "/v1/chat/completions" || first.Auth != "Bearer test-key" || first.Body.Model != "test-model" || first.Body.ToolChoice != "auto" {
		t.Errorf("first request: path %q auth %q model %q tool_choice %q", first.Path, first.Auth, first.Body.Model, first.Body.ToolChoice)
	}
	var names []string
	for _, tool := range first.Body.Tools {
		if tool.Type != "function" || tool.Function.Parameters["type"] != "object" {
			t.Errorf("tool %+v is not a function with an object schema", tool)
		}
		names = append(names, tool.Function.Name)
	}
	if got := strings.Join(names, ","); got != "bash,read_file,write_file,edit_file,list_dir,delegate,propose,finish" {
		t.Errorf("tools offered: %s", got)
	}
	msgs := first.Body.Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" || msgs[1].Content != "Greet slipway instead of the world." {
		t.Fatalf("first request messages: %+v", msgs)
	}
	if !strings.Contains(msgs[0].Content, "Keep the greeting short.") || !strings.Contains(msgs[0].Content, dir) || !strings.Contains(msgs[0].Content, "finish") {
		t.Errorf("system prompt lacks the instructions, the workdir or finish:\n%s", msgs[0].Content)
	}
	// Each later request carries the previous assistant turn and its tool result.
	for i := 1; i < len(reqs); i++ {
		m := reqs[i].Body.Messages
		asst, tool := m[len(m)-2], m[len(m)-1]
		w := wantCalls[i-1]
		if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != w.id || asst.ToolCalls[0].Function.Name != w.name {
			t.Errorf("request %d: assistant turn %+v", i+1, asst)
		}
		if tool.Role != "tool" || tool.ToolCallID != w.id || !strings.HasPrefix(tool.Content, w.output) {
			t.Errorf("request %d: tool message %+v, want output prefix %q", i+1, tool, w.output)
		}
	}
}

func TestLLMFailures(t *testing.T) {
	always := func(body string) func(int, seenRequest, http.ResponseWriter, *http.Request) { return scripted(body) }
	status := func(code int, body string) func(int, seenRequest, http.ResponseWriter, *http.Request) {
		return func(_ int, _ seenRequest, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, body)
		}
	}
	listDir := completion("", 100, 0, call{"c", "list_dir", `{}`})
	tests := []struct {
		name     string
		reply    func(int, seenRequest, http.ResponseWriter, *http.Request)
		start    func(*protocol.Start)
		wantErr  []string
		requests int
	}{
		{name: "body is not JSON", reply: always("<html>gateway</html>"), requests: 1,
			wantErr: []string{"model call failed", "not valid JSON", "<html>gateway</html>"}},
		{name: "no choices", reply: always(`{"id":"x","choices":[]}`), requests: 1,
			wantErr: []string{"model call failed", "no choices"}},
		{name: "error object instead of choices", reply: always(`{"error":{"message":"model is overloaded"}}`), requests: 1,
			wantErr: []string{"model is overloaded"}},
		{name: "tool arguments are not JSON", reply: always(completion("", 1, 1, call{"c1", "read_file", `{"path": "a.txt"`})), requests: 1,
			wantErr: []string{"malformed model output", "tool call c1 (read_file)", "not valid JSON"}},
		{name: "tool arguments are not an object", reply: always(completion("", 1, 1, call{"c1", "bash", `["ls"]`})), requests: 1,
			wantErr: []string{"malformed model output", "not a JSON object"}},
		{name: "unknown tool", reply: always(completion("", 1, 1, call{"c1", "delete_repository", `{}`})), requests: 1,
			wantErr: []string{"malformed model output", `unknown tool "delete_repository"`}},
		{name: "HTTP 400 is not retried", reply: status(400, `{"error":{"message":"unknown model test-model"}}`), requests: 1,
			wantErr: []string{"HTTP 400", "unknown model test-model"}},
		{name: "HTTP 401 is not retried", reply: status(401, `{"error":"bad key"}`), requests: 1,
			wantErr: []string{"HTTP 401", "bad key"}},
		{name: "HTTP 500 is retried twice", reply: status(500, "upstream exploded"), requests: 3,
			wantErr: []string{"HTTP 500", "upstream exploded", "gave up after 3 attempts"}},
		{name: "HTTP 429 is retried twice", reply: status(429, `{"error":{"message":"slow down"}}`), requests: 3,
			wantErr: []string{"HTTP 429", "slow down"}},
		{name: "over the iteration limit", reply: always(listDir), start: func(s *protocol.Start) { s.MaxIterations = 3 }, requests: 3,
			wantErr: []string{"iteration limit reached: 3 model calls without finish"}},
		{name: "default iteration limit", reply: always(listDir), requests: defaultMaxIterations,
			wantErr: []string{"iteration limit reached: 30 model calls"}},
		{name: "over the token budget", reply: always(listDir), start: func(s *protocol.Start) { s.MaxTokensTotal = 250 }, requests: 3,
			wantErr: []string{"token budget exhausted: 300 tokens used, max_tokens_total is 250"}},
		{name: "replies without tool calls", reply: always(completion("I think it is fine.", 1, 1)), requests: maxIdleReplies,
			wantErr: []string{"3 times in a row without calling a tool"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model := newFakeModel(t, tc.reply)
			start := llmStart(t.TempDir(), model.srv.URL)
			if tc.start != nil {
				tc.start(&start)
			}
			code, lines, res, _ := runToEnd(t, start)
			if code != 1 || res.Status != protocol.ResultFailure {
				t.Fatalf("exit %d, result %+v", code, res)
			}
			t.Logf("error: %s", res.Error)
			for _, s := range tc.wantErr {
				if !strings.Contains(res.Error, s) {
					t.Errorf("error %q does not contain %q", res.Error, s)
				}
			}
			if strings.Contains(strings.Join(lines, "\n"), "test-key") {
				t.Errorf("the API key appears in the output")
			}
			if n := len(model.requests()); n != tc.requests {
				t.Errorf("%d model requests, want %d", n, tc.requests)
			}
		})
	}
}

func TestLLMNudgesAfterATextReply(t *testing.T) {
	model := newFakeModel(t, scripted(
		completion("All done, I believe.", 1, 1),
		completion("", 1, 1, call{"f", "finish", `{"summary":"ok"}`}),
	))
	_, _, res, _ := runToEnd(t, llmStart(t.TempDir(), model.srv.URL))
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	m := model.requests()[1].Body.Messages
	if last := m[len(m)-1]; last.Role != "user" || last.Content != nudge || m[len(m)-2].Content != "All done, I believe." {
		t.Errorf("second request does not end with the reply and the nudge: %+v", m)
	}
}

func TestLLMRetriesThenSucceeds(t *testing.T) {
	model := newFakeModel(t, func(n int, _ seenRequest, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		default:
			io.WriteString(w, completion("", 5, 5, call{"f", "finish", `{"summary":"third time lucky"}`}))
		}
	})
	code, _, res, _ := runToEnd(t, llmStart(t.TempDir(), model.srv.URL))
	if code != 0 || res.Summary != "third time lucky" || len(model.requests()) != 3 {
		t.Fatalf("exit %d, result %+v, %d requests", code, res, len(model.requests()))
	}
}

func TestLLMCostUSD(t *testing.T) {
	body := `{"model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"list_dir","arguments":"{}"}}]}}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"cost":0.75}}`
	model := newFakeModel(t, scripted(body))
	start := llmStart(t.TempDir(), model.srv.URL)
	start.MaxCostUSD = 1
	_, lines, res, _ := runToEnd(t, start)
	if !strings.Contains(res.Error, "cost budget exhausted: $1.5000 reported, max_cost_usd is $1.0000") || len(model.requests()) != 2 {
		t.Fatalf("result %+v after %d requests", res, len(model.requests()))
	}
	_, ev := events(t, lines)
	if c := ev["cost"][0]; c["cost_usd"] != 0.75 || c["total_tokens"] != 15.0 {
		t.Errorf("cost event %v", c)
	}
}

func TestLLMPathEscapeIsRefused(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(base, "secret.txt"), []byte("top secret"), 0o644)
	model := newFakeModel(t, scripted(
		completion("", 1, 1,
			call{"r1", "read_file", `{"path":"../secret.txt"}`},
			call{"r2", "write_file", `{"path":"` + filepath.Join(base, "planted.txt") + `","content":"x"}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"could not read it"}`}),
	))
	_, lines, res, _ := runToEnd(t, llmStart(dir, model.srv.URL))
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	_, ev := events(t, lines)
	for i, want := range []string{"escapes the workspace", "outside the workspace"} {
		tr := ev["tool_result"][i]
		if tr["ok"] != false || !strings.Contains(tr["output"].(string), want) {
			t.Errorf("tool_result %v, want a refusal saying %q", tr, want)
		}
	}
	if strings.Contains(strings.Join(lines, "\n"), "top secret") {
		t.Error("the secret file was read")
	}
	if _, err := os.Stat(filepath.Join(base, "planted.txt")); err == nil {
		t.Error("a file was written outside the workspace")
	}
	m := model.requests()[1].Body.Messages
	if tool := m[len(m)-2]; tool.ToolCallID != "r1" || !strings.Contains(tool.Content, "escapes the workspace") {
		t.Errorf("the refusal was not fed back to the model: %+v", tool)
	}
}

// interveneMidCall sends the agent a message and waits until it has queued
// it (the model call in flight answers after that).
func interveneMidCall(r *agentRun, note string) {
	b, _ := json.Marshal(protocol.Message{Type: protocol.InMessage, Text: note})
	io.WriteString(r.stdin, string(b)+"\n")
	deadline := time.Now().Add(safety)
	for !strings.Contains(r.stderr.String(), "intervention queued") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLLMIntervention(t *testing.T) {
	const note = "Also keep the trailing newline, please."
	var r *agentRun
	ready := make(chan struct{})
	model := newFakeModel(t, func(n int, _ seenRequest, w http.ResponseWriter, _ *http.Request) {
		<-ready
		if n == 1 {
			// The human intervenes while the first call is in flight.
			interveneMidCall(r, note)
			io.WriteString(w, completion("", 1, 1, call{"c1", "list_dir", `{}`}))
			return
		}
		io.WriteString(w, completion("", 1, 1, call{"f", "finish", `{"summary":"noted"}`}))
	})
	r = startAgent(t, llmStart(t.TempDir(), model.srv.URL))
	close(ready)
	_, _, res := r.wait()
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	reqs := model.requests()
	for _, m := range reqs[0].Body.Messages {
		if m.Content == note {
			t.Fatal("the intervention reached a request sent before it")
		}
	}
	m := reqs[1].Body.Messages
	if last := m[len(m)-1]; last.Role != "user" || last.Content != note || m[len(m)-2].Role != "tool" {
		t.Errorf("second request does not end with the tool result and the intervention: %+v", m)
	}
}

func TestLLMInterruptDuringModelCall(t *testing.T) {
	arrived := make(chan struct{})
	var once sync.Once
	finish := completion("", 1, 1, call{"f", "finish", `{"summary":"done after the interrupt"}`})
	model := newFakeModel(t, func(n int, _ seenRequest, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			once.Do(func() { close(arrived) })
			<-r.Context().Done() // hold the call until the client gives up
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, finish)
	})
	r := startAgent(t, llmStart(t.TempDir(), model.srv.URL))
	select {
	case <-arrived:
	case <-time.After(safety):
		t.Fatal("no model request")
	}
	// The interrupt stops the step, not the run: the agent waits for a
	// message and asks the model again with it.
	r.sendJSON(protocol.Interrupt{Type: protocol.InInterrupt})
	waitFor(t, "stdout", r.stdout, `"type":"waiting"`)
	if n := len(model.requests()); n != 1 {
		t.Fatalf("%d requests before the message; an interrupted call must not be retried on its own", n)
	}
	r.sendJSON(protocol.Message{Type: protocol.InMessage, Text: "Just finish, please."})
	code, lines, res := r.wait()
	if code != 0 || res.Summary != "done after the interrupt" {
		t.Fatalf("exit %d, result %+v", code, res)
	}
	types, _ := events(t, lines)
	if fmt.Sprint(types) != "[waiting cost tool_call tool_result]" {
		t.Errorf("events %v", types)
	}
	reqs := model.requests()
	last := reqs[len(reqs)-1].Body.Messages
	if m := last[len(last)-1]; m.Role != "user" || m.Content != "Just finish, please." {
		t.Errorf("the second model call does not end with the message: %+v", m)
	}
}

func TestLLMInterruptDuringBash(t *testing.T) {
	dir := t.TempDir()
	model := newFakeModel(t, scripted(
		completion("", 1, 1, call{"b", "bash", `{"command":"echo $$ > pgid.txt; sleep 1000 & sleep 1000"}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"ok"}`}),
	))
	r := startAgent(t, llmStart(dir, model.srv.URL))
	var pgid int
	deadline := time.Now().Add(safety)
	for pgid == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the bash tool never started; stderr:\n%s", r.stderr.String())
		}
		b, _ := os.ReadFile(filepath.Join(dir, "pgid.txt"))
		if s := strings.TrimSpace(string(b)); strings.HasSuffix(string(b), "\n") {
			pgid, _ = strconv.Atoi(s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.sendJSON(protocol.Interrupt{Type: protocol.InInterrupt})
	waitGroupGone(t, pgid) // the step's processes die at once
	waitFor(t, "stdout", r.stdout, `"type":"waiting"`)
	r.sendJSON(protocol.Message{Type: protocol.InMessage, Text: "Do not sleep; finish."})
	code, lines, res := r.wait()
	if code != 0 || res.Status != protocol.ResultSuccess {
		t.Fatalf("exit %d, result %+v", code, res)
	}
	types, ev := events(t, lines)
	if fmt.Sprint(types) != "[cost tool_call tool_result waiting cost tool_call tool_result]" {
		t.Errorf("events %v", types)
	}
	if out := ev["tool_result"][0]["output"]; out != "interrupted by the user" {
		t.Errorf("the interrupted call's result: %v", out)
	}
	// The model sees an answer for the interrupted call, then the message.
	msgs := model.requests()[1].Body.Messages
	if n := len(msgs); n < 2 || msgs[n-2].Role != "tool" || msgs[n-2].ToolCallID != "b" || msgs[n-1].Content != "Do not sleep; finish." {
		t.Errorf("second request messages: %+v", msgs)
	}
}

// askStart is an llm start line whose policy asks before bash.
func askStart(dir, url string) protocol.Start {
	s := llmStart(dir, url)
	s.AskTools = []string{"bash"}
	return s
}

func TestLLMAsksApprovalBeforeBash(t *testing.T) {
	for _, tc := range []struct {
		verdict string
		ran     bool
	}{
		{protocol.VerdictApproved, true},
		{protocol.VerdictRejected, false},
		{protocol.VerdictTimedOut, false},
	} {
		t.Run(tc.verdict, func(t *testing.T) {
			dir := t.TempDir()
			model := newFakeModel(t, scripted(
				completion("", 1, 1, call{"b1", "bash", `{"command":"echo ran > ran.txt"}`}),
				completion("", 1, 1, call{"f", "finish", `{"summary":"ok"}`}),
			))
			r := startAgent(t, askStart(dir, model.srv.URL))
			waitFor(t, "stdout", r.stdout, `"type":"approval_request"`)
			if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil {
				t.Fatal("the call ran before it was approved")
			}
			r.sendJSON(protocol.Approval{Type: protocol.InApproval, ID: "other", Verdict: protocol.VerdictApproved}) // not this call's
			r.sendJSON(protocol.Approval{Type: protocol.InApproval, ID: "b1", Verdict: tc.verdict})
			code, lines, res := r.wait()
			if code != 0 || res.Status != protocol.ResultSuccess {
				t.Fatalf("exit %d, result %+v", code, res)
			}
			_, err := os.Stat(filepath.Join(dir, "ran.txt"))
			if ran := err == nil; ran != tc.ran {
				t.Fatalf("ran = %v, want %v", ran, tc.ran)
			}
			types, ev := events(t, lines)
			if fmt.Sprint(types) != "[cost tool_call approval_request tool_result cost tool_call tool_result]" {
				t.Errorf("events %v", types)
			}
			req := ev["approval_request"][0]
			if req["id"] != "b1" || req["tool"] != "bash" || req["arguments"].(map[string]any)["command"] != "echo ran > ran.txt" {
				t.Errorf("approval request %v", req)
			}
			out := ev["tool_result"][0]["output"].(string)
			if tc.ran != !strings.Contains(out, "did not approve") {
				t.Errorf("tool result %q", out)
			}
		})
	}
}

func TestLLMAsksOnlyForPolicyTools(t *testing.T) {
	dir := t.TempDir()
	model := newFakeModel(t, scripted(
		completion("", 1, 1, call{"w", "write_file", `{"path":"a.txt","content":"x"}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"ok"}`}),
	))
	_, lines, _, _ := runToEnd(t, askStart(dir, model.srv.URL))
	if types, _ := events(t, lines); slices.Contains(types, "approval_request") {
		t.Errorf("asked for a tool outside the policy: %v", types)
	}
}

func TestLLMInterruptWhileWaitingForApproval(t *testing.T) {
	dir := t.TempDir()
	model := newFakeModel(t, scripted(
		completion("", 1, 1, call{"b1", "bash", `{"command":"echo ran > ran.txt"}`}, call{"b2", "bash", `{"command":"echo two > two.txt"}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"ok"}`}),
	))
	r := startAgent(t, askStart(dir, model.srv.URL))
	waitFor(t, "stdout", r.stdout, `"type":"approval_request"`)
	r.sendJSON(protocol.Interrupt{Type: protocol.InInterrupt})
	waitFor(t, "stdout", r.stdout, `"type":"waiting"`)
	r.sendJSON(protocol.Message{Type: protocol.InMessage, Text: "Never mind."})
	code, _, res := r.wait()
	if code != 0 || res.Status != protocol.ResultSuccess {
		t.Fatalf("exit %d, result %+v", code, res)
	}
	for _, f := range []string{"ran.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s: a call ran after the interrupt", f)
		}
	}
	msgs := model.requests()[1].Body.Messages
	var answered []string
	for _, m := range msgs {
		if m.Role == "tool" {
			answered = append(answered, m.ToolCallID)
		}
	}
	if fmt.Sprint(answered) != "[b1 b2]" {
		t.Errorf("tool answers %v; every call of the reply needs one", answered)
	}
}

func TestLLMBashToolEnvironmentHasNoKey(t *testing.T) {
	model := newFakeModel(t, scripted(
		completion("", 1, 1, call{"b", "bash", `{"command":"env"}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"ok"}`}),
	))
	_, lines, _, _ := runToEnd(t, llmStart(t.TempDir(), model.srv.URL))
	_, ev := events(t, lines)
	out := ev["tool_result"][0]["output"].(string)
	if !strings.Contains(out, "PATH=") || strings.Contains(out, "test-key") {
		t.Errorf("bash tool environment:\n%s", out)
	}
}

func TestLLMDelegates(t *testing.T) {
	model := newFakeModel(t, scripted(
		completion("", 1, 1, call{"d", "delegate", `{"prompt":"Write the docs","agent_profile":"writer","title":"Docs"}`}, call{"e", "delegate", `{"prompt":" "}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"handed the docs off"}`}),
	))
	_, lines, res, _ := runToEnd(t, llmStart(t.TempDir(), model.srv.URL))
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	types, ev := events(t, lines)
	if fmt.Sprint(types) != "[cost tool_call subtask tool_result tool_call tool_result cost tool_call tool_result]" {
		t.Fatalf("events %v", types)
	}
	if st := ev["subtask"][0]; st["prompt"] != "Write the docs" || st["agent_profile"] != "writer" || st["title"] != "Docs" {
		t.Errorf("subtask line %v", st)
	}
	if r := ev["tool_result"][1]; r["ok"] != false || r["output"] != "prompt is required" {
		t.Errorf("an empty delegation: %v", r)
	}
}

func TestLLMProposes(t *testing.T) {
	model := newFakeModel(t, scripted(
		completion("", 1, 1, call{"p", "propose", `{"kind":"env_var","title":"Set MODE","summary":"faster","payload":{"key":"MODE","value":"fast"}}`},
			call{"q", "propose", `{"kind":"env_var","title":" "}`}),
		completion("", 1, 1, call{"f", "finish", `{"summary":"proposed MODE"}`}),
	))
	_, lines, res, _ := runToEnd(t, llmStart(t.TempDir(), model.srv.URL))
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	types, ev := events(t, lines)
	if fmt.Sprint(types) != "[cost tool_call proposal tool_result tool_call tool_result cost tool_call tool_result]" {
		t.Fatalf("events %v", types)
	}
	p := ev["proposal"][0]
	if p["id"] != "p" || p["kind"] != "env_var" || p["title"] != "Set MODE" || p["summary"] != "faster" || p["payload"].(map[string]any)["key"] != "MODE" {
		t.Errorf("proposal line %v", p)
	}
	if r := ev["tool_result"][1]; r["ok"] != false || r["output"] != "title and payload are required" {
		t.Errorf("an empty proposal: %v", r)
	}
}

// A message that arrives while the model call is in flight and whose reply
// is finish is not left unread: finish is held back, the model reads the
// message in the next call, and only then may the run end.
func TestLLMFinishWaitsForAMessage(t *testing.T) {
	const note = "Before you finish: also add a CHANGELOG line."
	var r *agentRun
	ready := make(chan struct{})
	model := newFakeModel(t, func(n int, _ seenRequest, w http.ResponseWriter, _ *http.Request) {
		<-ready
		if n == 1 {
			interveneMidCall(r, note)
		}
		io.WriteString(w, completion("", 1, 1, call{fmt.Sprintf("f%d", n), "finish", `{"summary":"done"}`}))
	})
	r = startAgent(t, llmStart(t.TempDir(), model.srv.URL))
	close(ready)
	_, _, res := r.wait()
	if res.Status != protocol.ResultSuccess {
		t.Fatalf("result %+v", res)
	}
	reqs := model.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2: the first finish is held back for the message", len(reqs))
	}
	m := reqs[1].Body.Messages
	if last := m[len(m)-1]; last.Role != "user" || last.Content != note {
		t.Fatalf("the second call does not carry the message: %+v", last)
	}
	if held := m[len(m)-2]; held.Role != "tool" || held.ToolCallID != "f1" || !strings.Contains(held.Content, "not finished") {
		t.Fatalf("the held finish is not answered: %+v", held)
	}
}

// TestLLMKeepsSecretsFromTheModel: a secret the start line names (the
// run's secret env vars) and a token-shaped value never reach the model,
// though a file and a command print them.
func TestLLMKeepsSecretsFromTheModel(t *testing.T) {
	dir := t.TempDir()
	const secret = "s3cr3t-env-value-4711"
	const token = "ghp_0123456789abcdefghijABCDEFGHIJ0123"
	if err := os.WriteFile(filepath.Join(dir, "config.txt"), []byte("password="+secret+"\ntoken="+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := newFakeModel(t, scripted(
		completion("", 10, 1, call{"c1", "read_file", `{"path":"config.txt"}`}),
		completion("", 10, 1, call{"c2", "bash", `{"command":"echo ` + secret + `"}`}),
		completion("Done.", 10, 1, call{"c3", "finish", `{"summary":"read it"}`}),
	))
	start := llmStart(dir, model.srv.URL)
	start.Prompt = "Check the config."
	start.Redact = []string{secret}
	if code, lines, res, _ := runToEnd(t, start); code != 0 || res.Status != protocol.ResultSuccess {
		t.Fatalf("exit %d, result %+v\n%s", code, res, strings.Join(lines, "\n"))
	}
	reqs := model.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	all, _ := json.Marshal(reqs)
	if strings.Contains(string(all), secret) || strings.Contains(string(all), token) {
		t.Fatalf("the model saw a secret: %s", all)
	}
	if !strings.Contains(string(all), "password=[REDACTED]") || !strings.Contains(string(all), "token=[REDACTED]") {
		t.Fatalf("the model did not get the redacted file: %s", all)
	}
}
