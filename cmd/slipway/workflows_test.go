package main

// Real-process test of the workflow engine: kill -9 of the server with
// runs in flight, then a restart, on both databases.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// receiver is an HTTP endpoint the workflows call: it counts deliveries per
// Idempotency-Key (one key per node run) and answers slowly enough for a
// kill to land while requests are in flight.
type receiver struct {
	mu         sync.Mutex
	deliveries map[string]int    // key -> times delivered
	path       map[string]string // key -> request path
	total      int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	rc.mu.Lock()
	rc.deliveries[key]++
	rc.path[key] = r.URL.Path
	rc.total++
	rc.mu.Unlock()
	select {
	case <-time.After(120 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
}

func (rc *receiver) snapshot() (map[string]int, map[string]string, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	d, p := map[string]int{}, map[string]string{}
	for k, v := range rc.deliveries {
		d[k] = v
	}
	for k, v := range rc.path {
		p[k] = v
	}
	return d, p, rc.total
}

// testServer is a slipway serve process with the admin signed in and a project.
type testServer struct {
	p       *proc
	c       *apiClient
	dir     string
	env     []string
	project string
}

// startServer starts a server on engine in dir/server with extra settings.
func startServer(t *testing.T, engine db.Engine, dir string, extra ...string) *testServer {
	t.Helper()
	s := &testServer{dir: filepath.Join(dir, "server"), env: append(append(databaseEnv(t, engine), "SERVICE_INITIAL_ADMIN_EMAILS=root@example.test",
		"SERVICE_ARGON2_MEMORY_KIB=64", "SERVICE_ARGON2_TIME=1", "SERVICE_SHUTDOWN_LB_DELAY_SECS=0"), extra...)}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.p = start(t, s.dir, s.env...)
	s.p.waitReady(t)
	s.c = signIn(t, s.p, true)
	s.project = s.c.id(s.c.post("/api/projects", `{"name":"demo","repo_url":"`+bareRepo(t, dir)+`"}`, 201))
	return s
}

// restart starts the server again on its data dir and database (after a
// kill) and points the client at it.
func (s *testServer) restart(t *testing.T) *proc {
	t.Helper()
	s.p = start(t, s.dir, s.env...)
	s.p.waitReady(t)
	s.c.base = s.p.url("")
	return s.p
}

type apiRun struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Output json.RawMessage
	Nodes  []struct {
		Key     string `json:"key"`
		Frame   string `json:"frame"`
		Status  string `json:"status"`
		Attempt int    `json:"attempt"`
		Output  json.RawMessage
	} `json:"nodes"`
}

func (c *apiClient) workflowRun(id string) apiRun {
	c.t.Helper()
	var r apiRun
	if err := json.Unmarshal([]byte(c.get("/api/workflows/runs/"+id)), &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// TestCrashWithWorkflowsRunning: the server is killed with SIGKILL while
// workflow runs are mid-way (HTTP calls in flight, loops half done), and
// started again: every run completes, every node of every run finished
// exactly once (one succeeded event each, one delivery key each), and only
// the calls in flight at the kill were delivered again, under their key.
func TestCrashWithWorkflowsRunning(t *testing.T) {
	t.Parallel()
	for _, engine := range []db.Engine{db.SQLite, db.Postgres} {
		t.Run(string(engine), func(t *testing.T) {
			if engine == db.Postgres {
				dbtest.RequirePostgres(t)
			}
			crashWithWorkflowsRunning(t, engine)
			crashWithScriptsRunning(t, engine)
		})
	}
}

func crashWithWorkflowsRunning(t *testing.T, engine db.Engine) {
	dir := t.TempDir()
	rc := &receiver{deliveries: map[string]int{}, path: map[string]string{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s := startServer(t, engine, dir, "SERVICE_WORKFLOW_HTTP_ALLOW_PRIVATE=true")
	p, c, project := s.p, s.c, s.project

	// fetch → each item (parallel, 2 at a time): call → count → notify → script → done.
	call := func(key, path, parent string) map[string]any {
		n := map[string]any{"key": key, "kind": "http_request", "config": map[string]any{"method": "POST", "url": srv.URL + path,
			"body": `{"run":"{{ run.id }}"}`}}
		if parent != "" {
			n["parent_node_key"] = parent
		}
		return n
	}
	nodes := []map[string]any{
		{"key": "start", "kind": "transform", "config": map[string]any{"expression": "input.items"}},
		call("fetch", "/fetch/{{ input.n }}", ""),
		{"key": "each", "kind": "loop", "config": map[string]any{"items": "nodes.start.output", "mode": "parallel", "parallelism": 2}},
		call("call", "/item/{{ input.n }}/{{ item }}", "each"),
		{"key": "count", "kind": "transform", "config": map[string]any{"expression": "len(nodes.each.output)"}},
		{"key": "notify", "kind": "notify_webhook", "config": map[string]any{"url": srv.URL + "/notify/{{ input.n }}",
			"payload": "{'count': nodes.count.output}"}},
		{"key": "script", "kind": "code", "config": map[string]any{"source": "sleep 0.2; echo '{\"ok\": true}'"}},
		{"key": "done", "kind": "end", "config": map[string]any{"output": "nodes.script.output.result.ok ? nodes.count.output : -1"}},
	}
	edges := []map[string]string{{"source": "start", "target": "fetch"}, {"source": "fetch", "target": "each"},
		{"source": "each", "target": "count"}, {"source": "count", "target": "notify"}, {"source": "notify", "target": "script"}, {"source": "script", "target": "done"}}
	body, _ := json.Marshal(map[string]any{"project_id": project, "name": "crash", "nodes": nodes, "edges": edges})
	workflow := c.id(c.post("/api/workflows", string(body), 201))

	const runs, items = 12, 4
	perRun := 2 + items // fetch, notify and one call per item
	var runIDs []string
	for i := 0; i < runs; i++ {
		out := c.post("/api/workflows/"+workflow+"/runs", fmt.Sprintf(`{"input":{"n":%d,"items":[1,2,3,4]}}`, i), 201)
		var r struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.RunID == "" {
			t.Fatalf("start run: %s %v", out, err)
		}
		runIDs = append(runIDs, r.RunID)
	}
	// Mid-way: about a third of the calls made.
	eventually(t, time.Minute, "a third of the calls arrive", func() bool {
		_, _, total := rc.snapshot()
		return total >= runs*perRun/3
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	before, _, _ := rc.snapshot()
	if len(before) >= runs*perRun {
		t.Fatalf("every call was made before the kill (%d): the test does not crash mid-run", len(before))
	}

	p = s.restart(t)
	eventually(t, 2*time.Minute, "every run finishes", func() bool {
		for _, id := range runIDs {
			if s := c.workflowRun(id).Status; s == "queued" || s == "running" {
				return false
			}
		}
		return true
	})

	for i, id := range runIDs {
		r := c.workflowRun(id)
		if r.Status != "succeeded" || string(r.Output) != fmt.Sprint(items) {
			t.Fatalf("run %d: %s %q output %s", i, r.Status, r.Error, r.Output)
		}
		if len(r.Nodes) != 7+items {
			t.Fatalf("run %d has %d node runs, want %d", i, len(r.Nodes), 7+items)
		}
		// One succeeded event per node run, none for anything else.
		var evs []apiEvent
		if err := json.Unmarshal([]byte(c.get("/api/runs/"+id+"/events?limit=1000")), &evs); err != nil {
			t.Fatal(err)
		}
		succeeded := map[string]int{}
		for _, e := range evs {
			var p struct{ Node, Frame, Status string }
			if e.Type == "node" && json.Unmarshal(e.Payload, &p) == nil && p.Status == "succeeded" {
				succeeded[p.Frame+"/"+p.Node]++
			}
		}
		for _, n := range r.Nodes {
			if n.Status != "succeeded" || succeeded[n.Frame+"/"+n.Key] != 1 {
				t.Fatalf("run %d node %s/%s: %s, succeeded %d times\n%s", i, n.Frame, n.Key, n.Status, succeeded[n.Frame+"/"+n.Key], eventsText(evs))
			}
		}
	}

	// Every call was made under its own key, and only those in flight at the
	// kill (delivered before it) came again.
	after, paths, _ := rc.snapshot()
	if len(after) != runs*perRun {
		t.Fatalf("%d distinct delivery keys, want %d", len(after), runs*perRun)
	}
	seen := map[string]bool{}
	repeated := 0
	for key, n := range after {
		if seen[paths[key]] {
			t.Fatalf("two keys for one call %s", paths[key])
		}
		seen[paths[key]] = true
		if n > 1 {
			repeated++
			if before[key] == 0 || n > 2 {
				t.Fatalf("call %s delivered %d times (%d before the kill)", paths[key], n, before[key])
			}
		}
	}
	t.Logf("%d of %d calls made before the kill; %d in flight then and delivered again under their key", len(before), runs*perRun, repeated)
	if strings.Contains(p.logs(), "level=ERROR") {
		t.Fatalf("errors after the restart:\n%s", p.logs())
	}
}

// crashWithScriptsRunning: the server is killed while code nodes' scripts
// run. After the restart each script runs again (scripts are at least
// once: the same idempotency key, a second script run after a failed
// one), and each node still settles once.
func crashWithScriptsRunning(t *testing.T, engine db.Engine) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	if err := os.MkdirAll(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	// The scripts leave marks outside their directories, which a sandbox
	// forbids: no sandbox (the admin's own workspace may run code then).
	s := startServer(t, engine, dir, "SERVICE_AGENT_BACKEND=process", "SERVICE_PROCESS_SANDBOX=off")
	p, c, project := s.p, s.c, s.project
	script := "echo \"$SLIPWAY_IDEMPOTENCY_KEY\" >> " + marks + "/started\nsleep 1.5\necho '{\"n\": 7}'"
	body, _ := json.Marshal(map[string]any{"project_id": project, "name": "scripts", "nodes": []map[string]any{
		{"key": "work", "kind": "code", "config": map[string]any{"source": script}},
		{"key": "done", "kind": "end", "config": map[string]any{"output": "nodes.work.output.result.n"}},
	}, "edges": []map[string]string{{"source": "work", "target": "done"}}})
	workflow := c.id(c.post("/api/workflows", string(body), 201))
	const runs = 3
	var runIDs []string
	for i := 0; i < runs; i++ {
		var r struct {
			RunID string `json:"run_id"`
		}
		if err := json.Unmarshal([]byte(c.post("/api/workflows/"+workflow+"/runs", `{}`, 201)), &r); err != nil {
			t.Fatal(err)
		}
		runIDs = append(runIDs, r.RunID)
	}
	started := func() []string {
		b, _ := os.ReadFile(filepath.Join(marks, "started"))
		return strings.Fields(string(b))
	}
	eventually(t, time.Minute, "every script starts", func() bool { return len(started()) == runs })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)

	p = s.restart(t)
	eventually(t, time.Minute, "every run finishes", func() bool {
		for _, id := range runIDs {
			if s := c.workflowRun(id).Status; s == "queued" || s == "running" {
				return false
			}
		}
		return true
	})
	times := map[string]int{}
	for _, key := range started() {
		times[key]++
	}
	if len(times) != runs {
		t.Fatalf("scripts ran under %d keys, want %d: %v", len(times), runs, started())
	}
	for key, n := range times {
		if n != 2 {
			t.Fatalf("the script of node run %s started %d times, want 2 (once before the kill, once after)", key, n)
		}
	}
	for i, id := range runIDs {
		r := c.workflowRun(id)
		if r.Status != "succeeded" || string(r.Output) != "7" {
			t.Fatalf("run %d: %s %q output %s", i, r.Status, r.Error, r.Output)
		}
		var tree struct {
			Children []struct{ Kind, Status, Error string } `json:"children"`
		}
		if err := json.Unmarshal([]byte(c.get("/api/runs/"+id)), &tree); err != nil {
			t.Fatal(err)
		}
		var statuses []string
		for _, ch := range tree.Children {
			statuses = append(statuses, ch.Kind+":"+ch.Status)
		}
		if fmt.Sprint(statuses) != "[script:failed script:succeeded]" {
			t.Fatalf("run %d's script runs: %v %+v", i, statuses, tree.Children)
		}
		var evs []apiEvent
		if err := json.Unmarshal([]byte(c.get("/api/runs/"+id+"/events?limit=1000")), &evs); err != nil {
			t.Fatal(err)
		}
		settled := 0
		for _, e := range evs {
			var p struct{ Node, Status string }
			if e.Type == "node" && json.Unmarshal(e.Payload, &p) == nil && p.Node == "work" && (p.Status == "succeeded" || p.Status == "failed") {
				settled++
			}
		}
		if settled != 1 {
			t.Fatalf("run %d: the code node settled %d times\n%s", i, settled, eventsText(evs))
		}
	}
}
