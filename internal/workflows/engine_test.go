package workflows_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"slipway/internal/fixture"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/workflows"
)

// engine is a stack (queue, dispatcher, worker, engine) with a project and
// a member to own runs.
type engine struct {
	*fixture.Stack
	project string
	user    *actor.User
}

func newEngine(t testing.TB, e db.Engine) *engine {
	return newEngineWith(t, fixture.StackConfig{Engine: e, Backend: "process"})
}

// newEngineOn is newEngine with agents and scripts run by the backend.
func newEngineOn(t testing.TB, e db.Engine, backend string) *engine {
	return newEngineWith(t, fixture.StackConfig{Engine: e, Backend: backend})
}

func newEngineWith(t testing.TB, cfg fixture.StackConfig) *engine {
	cfg.Lease = 2 * time.Second
	s := fixture.NewStack(t, cfg)
	p, _ := s.Project(false, nil)
	u := &actor.User{ID: ids.New(), Approved: true}
	now := time.Now().UTC()
	if _, err := s.DB.W.Exec(`INSERT INTO users (id, email, display_name, approved, created_at, updated_at) VALUES ($1, $2, 'u', TRUE, $3, $3)`,
		u.ID, u.ID+"@example.com", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.W.Exec(`INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'admin', $3)`,
		s.WS.ID, u.ID, now); err != nil {
		t.Fatal(err)
	}
	return &engine{Stack: s, project: p.ID, user: u}
}

type n = workflows.NodeInput
type e = workflows.EdgeInput

func node(key, kind string, config map[string]any, parent ...string) n {
	out := n{Key: key, Kind: kind, Config: config}
	if len(parent) > 0 {
		out.ParentNodeKey = &parent[0]
	}
	return out
}

func edge(src, handle, dst string) e { return e{Source: src, SourceHandle: handle, Target: dst} }

func (g *engine) workflow(t testing.TB, nodes []n, edges []e, tune ...func(*workflows.Input)) *workflows.Workflow {
	t.Helper()
	in := workflows.Input{ProjectID: g.project, Name: "wf " + t.Name(), Nodes: nodes, Edges: edges}
	for _, f := range tune {
		f(&in)
	}
	w, err := g.Workflows.Create(context.Background(), g.WS, in)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (g *engine) run(t testing.TB, w *workflows.Workflow, input string) string {
	t.Helper()
	id, err := g.Workflows.StartRun(context.Background(), g.WS, g.user, w.ID, json.RawMessage(input), nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// wait polls a run until cond holds.
func (g *engine) wait(t *testing.T, runID string, what string, cond func(*workflows.RunView) bool) *workflows.RunView {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := g.Workflows.GetRun(context.Background(), g.WS, runID)
		if err != nil {
			t.Fatal(err)
		}
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(v, "", "  ")
			t.Fatalf("run %s never got %s:\n%s", runID, what, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *engine) finished(t *testing.T, runID string) *workflows.RunView {
	t.Helper()
	return g.wait(t, runID, "finished", func(v *workflows.RunView) bool {
		return v.Status == workflows.RunSucceeded || v.Status == workflows.RunFailed || v.Status == workflows.RunCancelled
	})
}

func waitingAt(key string) func(*workflows.RunView) bool {
	return func(v *workflows.RunView) bool {
		for _, w := range v.WaitingOn {
			if w == key {
				return true
			}
		}
		return false
	}
}

// states maps frame/key to status (and handle when fired).
func states(v *workflows.RunView) map[string]string {
	out := map[string]string{}
	for _, nr := range v.Nodes {
		k := nr.Key
		if nr.Frame != "" {
			k = nr.Frame + "/" + k
		}
		s := nr.Status
		if nr.Handle != "" {
			s += ":" + nr.Handle
		}
		out[k] = s
	}
	return out
}

func wantStates(t *testing.T, v *workflows.RunView, want map[string]string) {
	t.Helper()
	got := states(v)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("node %s: %q, want %q (all: %v)", k, got[k], w, got)
		}
	}
}

func jsonEq(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("output %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if string(ga) != string(gb) {
		t.Errorf("output %s, want %s", ga, gb)
	}
}

func TestEngineChainAndDiamond(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		w := g.workflow(t, []n{
			node("a", "transform", map[string]any{"expression": "input.x + 1"}),
			node("b", "transform", map[string]any{"expression": "nodes.a.output * 2"}),
			node("c", "transform", map[string]any{"expression": "nodes.a.output * 3"}),
			node("d", "transform", map[string]any{"mapping": map[string]any{"sum": "nodes.b.output + nodes.c.output", "item": "nodes.a.output"}}),
			node("done", "end", map[string]any{"output": "nodes.d.output"}),
		}, []e{edge("a", "", "b"), edge("a", "", "c"), edge("b", "", "d"), edge("c", "", "d"), edge("d", "", "done")})
		v := g.finished(t, g.run(t, w, `{"x": 4}`))
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("run %s: %s", v.Status, v.Error)
		}
		jsonEq(t, v.Output, `{"sum": 25, "item": 5}`)
		wantStates(t, v, map[string]string{"a": "succeeded:out", "b": "succeeded:out", "c": "succeeded:out", "d": "succeeded:out", "done": "succeeded"})
		for _, nr := range v.Nodes {
			if nr.Attempt != 1 {
				t.Errorf("node %s ran %d times", nr.Key, nr.Attempt)
			}
		}
		// The run's events tell the story in order.
		evs, err := g.Runs.Events(context.Background(), g.WS, v.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var trail []string
		for _, ev := range evs {
			var p map[string]any
			_ = json.Unmarshal(ev.Payload, &p)
			if ev.EventType == "run" {
				trail = append(trail, "run:"+p["status"].(string))
			}
		}
		if strings.Join(trail, " ") != "run:queued run:running run:succeeded" {
			t.Errorf("run events %v", trail)
		}
	})
}

func TestEngineBranchSkipAndJoin(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		w := g.workflow(t, []n{
			node("check", "gate", map[string]any{"condition": "input.big"}),
			node("yes", "transform", map[string]any{"expression": "'big'"}),
			node("no", "transform", map[string]any{"expression": "'small'"}),
			node("after_no", "transform", map[string]any{"expression": "'only when small'"}),
			node("join", "transform", map[string]any{"expression": "nodes.yes.output ?? nodes.no.output"}),
		}, []e{edge("check", "true", "yes"), edge("check", "false", "no"), edge("no", "", "after_no"), edge("yes", "", "join"), edge("after_no", "", "join")})
		v := g.finished(t, g.run(t, w, `{"big": true}`))
		wantStates(t, v, map[string]string{"check": "succeeded:true", "yes": "succeeded:out", "no": "skipped", "after_no": "skipped", "join": "succeeded:out"})
		jsonEq(t, v.Output, `"big"`)
		v = g.finished(t, g.run(t, w, `{"big": false}`))
		wantStates(t, v, map[string]string{"check": "succeeded:false", "yes": "skipped", "no": "succeeded:out", "after_no": "succeeded:out", "join": "succeeded:out"})
		jsonEq(t, v.Output, `"small"`)

		// A failure without an error branch fails the run; with one, the
		// branch runs.
		w = g.workflow(t, []n{
			node("bad", "transform", map[string]any{"expression": "input.missing.field"}),
			node("rescue", "transform", map[string]any{"expression": "nodes.bad.output.error"}),
			node("never", "transform", map[string]any{"expression": "1"}),
		}, []e{edge("bad", "error", "rescue"), edge("bad", "out", "never")})
		v = g.finished(t, g.run(t, w, `{}`))
		if v.Status != workflows.RunSucceeded {
			t.Fatalf("handled failure: run %s %s", v.Status, v.Error)
		}
		wantStates(t, v, map[string]string{"bad": "failed:error", "rescue": "succeeded:out", "never": "skipped"})
		w = g.workflow(t, []n{node("bad", "transform", map[string]any{"expression": "input.missing.field"}), node("next", "transform", map[string]any{"expression": "1"})},
			[]e{edge("bad", "", "next")})
		v = g.finished(t, g.run(t, w, `{}`))
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, `node "bad" failed`) {
			t.Fatalf("unhandled failure: run %s %q", v.Status, v.Error)
		}

		// imap_ack in a run no email started fails, saying so.
		w = g.workflow(t, []n{node("q", "imap_ack", map[string]any{"resource_id": ids.New()})}, nil)
		v = g.finished(t, g.run(t, w, `{}`))
		if v.Status != workflows.RunFailed || !strings.Contains(v.Error, `not started by an email trigger`) {
			t.Fatalf("imap_ack without an email: run %s %q", v.Status, v.Error)
		}
	})
}

func TestEngineLoops(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		for _, mode := range []string{"sequential", "parallel"} {
			t.Run(mode, func(t *testing.T) {
				w := g.workflow(t, []n{
					node("each", "loop", map[string]any{"items": "input.items", "mode": mode, "parallelism": 2}),
					node("times", "transform", map[string]any{"expression": "item * 10 + index"}, "each"),
					node("label", "transform", map[string]any{"expression": "'n' + string(nodes.times.output)"}, "each"),
					node("total", "transform", map[string]any{"expression": "nodes.each.output"}),
				}, []e{edge("times", "", "label"), edge("each", "", "total")})
				v := g.finished(t, g.run(t, w, `{"items": [1, 2, 3]}`))
				if v.Status != workflows.RunSucceeded {
					t.Fatalf("run %s: %s", v.Status, v.Error)
				}
				jsonEq(t, v.Output, `["n10", "n21", "n32"]`)
				wantStates(t, v, map[string]string{"each": "succeeded:out", "each[0]/times": "succeeded:out", "each[2]/label": "succeeded:out"})
				// An empty list runs no iteration; a failing iteration fails the loop.
				v = g.finished(t, g.run(t, w, `{"items": []}`))
				jsonEq(t, v.Output, `[]`)
				v = g.finished(t, g.run(t, w, `{"items": [1, "x"]}`))
				if v.Status != workflows.RunFailed || !strings.Contains(v.Error, "iteration 1") {
					t.Fatalf("failing iteration: run %s %q", v.Status, v.Error)
				}
			})
		}
	})
}

func TestEngineHumanGate(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		w := g.workflow(t, []n{
			node("ask", "human", map[string]any{"message": "ship {{ input.version }}?"}),
			node("ship", "transform", map[string]any{"expression": "'shipped'"}),
			node("stop", "end", map[string]any{"status": "failed", "message": "rejected by {{ nodes.ask.output.decided_by }}"}),
		}, []e{edge("ask", "approved", "ship"), edge("ask", "rejected", "stop")})
		ctx := context.Background()
		// Oldest gate first: the second run starts once the first waits.
		approve := g.run(t, w, `{"version": "1.2"}`)
		g.wait(t, approve, "waiting at ask", waitingAt("ask"))
		reject := g.run(t, w, `{"version": "1.3"}`)
		g.wait(t, reject, "waiting at ask", waitingAt("ask"))
		pending, err := g.Workflows.PendingApprovals(ctx, g.user)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 2 || pending[0].RunID != approve || pending[0].Message != "ship 1.2?" || pending[1].RunID != reject {
			t.Fatalf("pending approvals %+v", pending)
		}
		other := &actor.User{ID: ids.New()}
		if _, err := g.Workflows.Decide(ctx, other, approve, "", workflows.Decision{Decision: "approve"}); err == nil || !strings.Contains(err.Error(), "not_found") {
			t.Fatalf("a stranger's decision: %v", err)
		}
		if _, err := g.Workflows.Decide(ctx, g.user, approve, "", workflows.Decision{Decision: "yes"}); err == nil || !strings.Contains(err.Error(), "bad_request") {
			t.Fatalf("a bad token: %v", err)
		}
		if _, err := g.Workflows.Decide(ctx, g.user, approve, "", workflows.Decision{Decision: "approve", Comment: "go"}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Workflows.Decide(ctx, g.user, reject, "ask", workflows.Decision{Decision: "reject"}); err != nil {
			t.Fatal(err)
		}
		v := g.finished(t, approve)
		wantStates(t, v, map[string]string{"ask": "succeeded:approved", "ship": "succeeded:out", "stop": "skipped"})
		v = g.finished(t, reject)
		if v.Status != workflows.RunFailed || v.Error != "rejected by "+g.user.ID {
			t.Fatalf("rejected run: %s %q", v.Status, v.Error)
		}
		if _, err := g.Workflows.Decide(ctx, g.user, approve, "", workflows.Decision{Decision: "approve"}); err == nil || !strings.Contains(err.Error(), "bad_request") {
			t.Fatalf("a second decision: %v", err)
		}
		if pending, _ := g.Workflows.PendingApprovals(ctx, g.user); len(pending) != 0 {
			t.Fatalf("still pending: %+v", pending)
		}
	})
}

func TestEngineWaitEvent(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		w := g.workflow(t, []n{
			node("hold", "wait_event", map[string]any{"event": "deploy-{{ input.env }}", "timeout_seconds": 1}),
			node("got", "transform", map[string]any{"expression": "nodes.hold.output.payload.ok"}),
			node("late", "transform", map[string]any{"expression": "'timed out'"}),
		}, []e{edge("hold", "event", "got"), edge("hold", "timeout", "late")})
		timeout := g.run(t, w, `{"env": "staging"}`)
		v := g.finished(t, timeout)
		wantStates(t, v, map[string]string{"hold": "succeeded:timeout", "late": "succeeded:out", "got": "skipped"})

		event := g.run(t, w, `{"env": "prod"}`)
		g.wait(t, event, "waiting at hold", waitingAt("hold"))
		n, err := g.Workflows.Emit(context.Background(), g.WS.ID, "deploy-staging", json.RawMessage(`{"ok": false}`))
		if err != nil || n != 0 {
			t.Fatalf("another event resumed %d (%v)", n, err)
		}
		n, err = g.Workflows.Emit(context.Background(), g.WS.ID, "deploy-prod", json.RawMessage(`{"ok": true}`))
		if err != nil || n != 1 {
			t.Fatalf("event resumed %d (%v)", n, err)
		}
		v = g.finished(t, event)
		wantStates(t, v, map[string]string{"hold": "succeeded:event", "got": "succeeded:out", "late": "skipped"})
		jsonEq(t, v.Output, `true`)
		// The timer of the resumed node never fires.
		time.Sleep(1500 * time.Millisecond)
		v, _ = g.Workflows.GetRun(context.Background(), g.WS, event)
		wantStates(t, v, map[string]string{"hold": "succeeded:event", "late": "skipped"})
	})
}

func TestEngineCancelRunningSubtree(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		var hits atomic.Int32
		gone := make(chan struct{})
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			<-r.Context().Done() // hangs until the client goes
			once.Do(func() { close(gone) })
		}))
		defer srv.Close()
		w := g.workflow(t, []n{
			node("slow", "http_request", map[string]any{"url": srv.URL, "timeout_seconds": 60}),
			node("ask", "human", nil),
			node("after", "transform", map[string]any{"expression": "1"}),
		}, []e{edge("slow", "", "after"), edge("ask", "approved", "after")})
		runID := g.run(t, w, `{}`)
		// The request must be in flight (received), not merely marked running:
		// a cancel before it is sent would stop it before it starts.
		g.wait(t, runID, "slow requested and ask waiting", func(v *workflows.RunView) bool {
			return states(v)["slow"] == "running" && states(v)["ask"] == "waiting" && hits.Load() == 1
		})
		v, err := g.Workflows.CancelRun(context.Background(), g.WS, g.user, runID)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != workflows.RunCancelled {
			t.Fatalf("cancelled run reads %s", v.Status)
		}
		wantStates(t, v, map[string]string{"slow": "cancelled", "ask": "cancelled"})
		select {
		case <-gone:
		case <-time.After(10 * time.Second):
			t.Fatal("the request in flight was not stopped")
		}
		// Idempotent; nothing moves afterwards.
		if v, err = g.Workflows.CancelRun(context.Background(), g.WS, g.user, runID); err != nil || v.Status != workflows.RunCancelled {
			t.Fatalf("second cancel: %v %v", v, err)
		}
		time.Sleep(300 * time.Millisecond)
		v, _ = g.Workflows.GetRun(context.Background(), g.WS, runID)
		wantStates(t, v, map[string]string{"slow": "cancelled", "ask": "cancelled"})
		if _, ok := states(v)["after"]; ok && states(v)["after"] != "pending" {
			t.Errorf("after moved: %v", states(v))
		}
		if hits.Load() != 1 {
			t.Errorf("the slow request was sent %d times", hits.Load())
		}
	})
}

func TestEngineCaps(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		one := int64(1)
		w := g.workflow(t, []n{node("ask", "human", nil)}, nil, func(in *workflows.Input) { in.MaxConcurrentRuns = &one })
		first, second, third := g.run(t, w, `1`), g.run(t, w, `2`), g.run(t, w, `3`)
		g.wait(t, first, "waiting", waitingAt("ask"))
		for _, id := range []string{second, third} {
			if v, _ := g.Workflows.GetRun(context.Background(), g.WS, id); v.Status != workflows.RunQueued {
				t.Fatalf("run beyond the cap is %s", v.Status)
			}
		}
		if _, err := g.Workflows.Decide(context.Background(), g.user, first, "", workflows.Decision{Decision: "approve"}); err != nil {
			t.Fatal(err)
		}
		g.wait(t, second, "waiting", waitingAt("ask")) // in order: the second, not the third
		if v, _ := g.Workflows.GetRun(context.Background(), g.WS, third); v.Status != workflows.RunQueued {
			t.Fatalf("third run is %s while the second holds the slot", v.Status)
		}
		// Lifting the cap lets the rest through.
		if _, err := g.Workflows.SetConcurrency(context.Background(), g.WS, w.ID, nil); err != nil {
			t.Fatal(err)
		}
		g.wait(t, third, "waiting", waitingAt("ask"))
	})
}

func TestEngineAgentNode(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		g := newEngine(t, eng)
		w := g.workflow(t, []n{
			node("build", "agent", map[string]any{"prompt": "echo building {{ input.name }} > out.txt", "title": "build {{ input.name }}"}),
			node("report", "transform", map[string]any{"expression": "nodes.build.output.status"}),
		}, []e{edge("build", "", "report")})
		v := g.finished(t, g.run(t, w, `{"name": "app"}`))
		if v.Status != workflows.RunSucceeded {
			b, _ := json.MarshalIndent(v, "", " ")
			t.Fatalf("run %s: %s\n%s", v.Status, v.Error, b)
		}
		var task *string
		for _, nr := range v.Nodes {
			if nr.Key == "build" {
				task = nr.TaskID
			}
		}
		if task == nil {
			t.Fatal("the agent node has no task")
		}
		tk, err := g.Tasks.Get(context.Background(), g.WS, *task)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Title != "build app" || !strings.Contains(tk.Prompt, "building app") {
			t.Errorf("task %q %q", tk.Title, tk.Prompt)
		}
		jsonEq(t, v.Output, `"`+tk.Status+`"`)
	})
}

// A chain longer than one transaction's batch of inline nodes runs over
// several transactions, each node once, and so does one committed node by
// node (InlineBatch 1).
func TestEngineLongChain(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, eng db.Engine) {
		for _, batch := range []int{0, 1} {
			g := newEngineWith(t, fixture.StackConfig{Engine: eng, Backend: "process", InlineBatch: batch})
			nodes, edges := chain(150)
			w := g.workflow(t, nodes, edges)
			runID := g.run(t, w, `{"x": 0}`)
			v := g.finished(t, runID)
			if v.Status != workflows.RunSucceeded || len(v.Nodes) != 150 {
				t.Fatalf("batch %d: run %s %q with %d nodes", batch, v.Status, v.Error, len(v.Nodes))
			}
			jsonEq(t, v.Output, `150`)
			evs, err := g.Runs.Events(context.Background(), g.WS, runID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			succeeded := map[string]int{}
			for _, e := range evs {
				var p struct{ Node, Status string }
				if e.EventType == "node" && json.Unmarshal(e.Payload, &p) == nil && p.Status == "succeeded" {
					succeeded[p.Node]++
				}
			}
			for _, nr := range v.Nodes {
				if succeeded[nr.Key] != 1 {
					t.Fatalf("batch %d: node %s succeeded %d times", batch, nr.Key, succeeded[nr.Key])
				}
			}
		}
	})
}

// Every saved workflow exports to a YAML document an import takes: one
// whose YAML form would be over the import's limit is refused when saved.
func TestWorkflowExportable(t *testing.T) {
	g := newEngine(t, db.SQLite)
	ctx := context.Background()
	big := func(k int) []n {
		var out []n
		for i := range k {
			out = append(out, node(fmt.Sprintf("h%d", i), "http_request", map[string]any{"url": "https://example.test/", "body": strings.Repeat("x", 400_000)}))
		}
		return out
	}
	_, err := g.Workflows.Create(ctx, g.WS, workflows.Input{ProjectID: g.project, Name: "too big", Nodes: big(3)})
	if err == nil || !strings.Contains(err.Error(), "more than the 1048576 an import takes") {
		t.Fatalf("a workflow too big to import: %v", err)
	}
	w, err := g.Workflows.Create(ctx, g.WS, workflows.Input{ProjectID: g.project, Name: "big", Nodes: big(2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Workflows.Replace(ctx, g.WS, w.ID, workflows.Input{Nodes: big(3)}); err == nil {
		t.Fatal("a replace too big to import was taken")
	}
	doc, err := g.Workflows.Export(ctx, g.WS, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := g.Workflows.Import(ctx, g.WS, g.project, doc)
	if err != nil {
		t.Fatalf("importing the export of a saved workflow (%d bytes): %v", len(doc), err)
	}
	if len(again.Nodes) != 2 {
		t.Fatalf("imported %d nodes", len(again.Nodes))
	}
}
