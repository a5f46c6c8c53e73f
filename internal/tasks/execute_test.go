package tasks

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"slipway/internal/agenttest"
	"slipway/internal/executor"
	"slipway/internal/executor/docker"
	"slipway/internal/executor/process"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/vault"
	"slipway/internal/projects"
	"slipway/internal/repo"
)

// rig is a real task stack: database, projects, tasks, dispatcher, git and
// an execution backend, without HTTP.
type rig struct {
	t       testing.TB
	db      *db.DB
	svc     *Service
	proj    *projects.Service
	ws      *actor.Workspace
	cfg     DispatchConfig
	backend executor.Backend
	git     *repo.Git // kept across restarts of the dispatcher
	disp    *Dispatcher
	stop    func()
}

type rigOption func(*DispatchConfig)

func newRig(t testing.TB, engine db.Engine, backend string, opts ...rigOption) *rig {
	t.Helper()
	d := dbtest.New(t, engine)
	ctx := context.Background()
	now := time.Now().UTC()
	org, wsID := ids.New(), ids.New()
	if _, err := d.W.ExecContext(ctx, "INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", org, now); err != nil {
		t.Fatal(err)
	}
	if _, err := d.W.ExecContext(ctx, "INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3)", wsID, org, now); err != nil {
		t.Fatal(err)
	}
	sealer, _ := vault.NewSealer([]byte(strings.Repeat("s", 32)))
	proj := projects.NewService(d, clock.System{}, sealer)
	if err := proj.SeedProfiles(ctx, d.W, wsID, now); err != nil {
		t.Fatal(err)
	}
	svc := NewService(d, clock.System{}, proj, false)
	owner := "hub@test-" + ids.RandomHex(4)
	cfg := DispatchConfig{Owner: owner, WorkspaceCap: 3, DefaultTimeout: 2 * time.Minute, Lease: 3 * time.Second, Poll: 100 * time.Millisecond,
		Exec: ExecConfig{AgentBinary: agenttest.Binary(t), Labels: map[string]string{executor.InstanceLabel: owner}}}
	var b executor.Backend
	switch backend {
	case "process":
		b = process.New(t.TempDir())
	case "docker":
		host := agenttest.DockerHost(t)
		dk, err := docker.New(host, owner, "slipway-test-agents")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dk.Cleanup(context.Background()); dk.Close() })
		b = dk
		cfg.Exec.DefaultImage = agenttest.TestImage
		cfg.Exec.Limits = executor.Limits{MemoryBytes: 256 << 20, NanoCPUs: 1_000_000_000, PidsLimit: 128, ReadOnlyRootFS: true,
			TmpfsTmpMB: 64, TmpfsRunMB: 8, TmpfsHomeMB: 32, Network: "slipway-test-agents"}
	}
	for _, o := range opts {
		o(&cfg)
	}
	git, err := repo.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: d, svc: svc, proj: proj, ws: &actor.Workspace{ID: wsID, OrganizationID: org, Role: "admin"}, cfg: cfg, backend: b, git: git}
	r.start()
	return r
}

// start runs a dispatcher until the test ends (or stop is called).
func (r *rig) start() {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r.disp = NewDispatcher(r.svc, r.backend, r.git, r.cfg, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.disp.Run(ctx)
		close(done)
	}()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done }) }
	r.t.Cleanup(r.stop)
}

func (r *rig) project(autodev bool, creds *projects.Credentials) (*projects.Project, string) {
	r.t.Helper()
	bare := agenttest.BareRepo(r.t, nil)
	p, err := r.proj.Create(context.Background(), r.ws, projects.ProjectCreate{Name: "p-" + ids.RandomHex(3), RepoURL: bare, Autodev: autodev, Credentials: creds})
	if err != nil {
		r.t.Fatal(err)
	}
	return p, bare
}

func (r *rig) task(projectID, prompt string, cfg TaskConfig, profile ...string) *Task {
	r.t.Helper()
	in := TaskCreate{ProjectID: projectID, Prompt: prompt, Config: cfg}
	if len(profile) > 0 {
		in.AgentProfile = profile[0]
	}
	t, err := r.svc.Create(context.Background(), r.ws, nil, in)
	if err != nil {
		r.t.Fatal(err)
	}
	return t
}

// wait polls until the task reaches one of the statuses.
func (r *rig) wait(id string, statuses ...string) *Task {
	r.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		t, err := r.svc.Get(context.Background(), r.ws, id)
		if err != nil {
			r.t.Fatal(err)
		}
		if slices.Contains(statuses, t.Status) {
			return t
		}
		if time.Now().After(deadline) {
			evs, _ := r.svc.Events(context.Background(), r.ws, id, 0, 1000)
			r.t.Fatalf("task is %s (error %q), want %v; events:\n%s", t.Status, t.Error, statuses, dumpEvents(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *rig) events(id string) []TaskEvent {
	r.t.Helper()
	evs, err := r.svc.Events(context.Background(), r.ws, id, 0, 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

func dumpEvents(evs []TaskEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.EventType + " " + string(e.Payload) + "\n")
	}
	return b.String()
}

func types(evs []TaskEvent) []string {
	var out []string
	for _, e := range evs {
		if e.EventType != "log" { // stderr diagnostics interleave freely
			out = append(out, e.EventType)
		}
	}
	return out
}

func backends(t *testing.T, fn func(t *testing.T, backend string)) {
	t.Run("process", func(t *testing.T) { fn(t, "process") })
	t.Run("docker", func(t *testing.T) { fn(t, "docker") })
}

// TestShellTaskEndToEnd: a shell task edits a file and ends done_pr, with
// the branch pushed, the commit in the bare repository and the full ordered
// event log; on the process backend and on a real Docker engine, on both
// databases.
func TestShellTaskEndToEnd(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		dbtest.Engines(t, func(t *testing.T, e db.Engine) {
			r := newRig(t, e, backend)
			p, bare := r.project(true, nil)
			task := r.task(p.ID, "echo world >> README.md\nmkdir -p docs && echo notes > docs/notes.txt\necho edited two files", TaskConfig{})
			done := r.wait(task.ID, StatusDonePR, StatusFailed)
			if done.Status != StatusDonePR {
				t.Fatalf("status %s: %s\n%s", done.Status, done.Error, dumpEvents(r.events(task.ID)))
			}
			pr := done.PR
			if pr == nil || pr.Branch != task.Branch || pr.Base != "main" || pr.FilesChanged != 2 || pr.Insertions != 2 || pr.OpenedAt == nil {
				t.Fatalf("pr = %+v", pr)
			}
			// The branch is in the bare repository with our commit on top of main.
			if got := agenttest.Git(t, bare, "rev-parse", "refs/heads/"+task.Branch); got != pr.Commit {
				t.Fatalf("bare branch at %s, want %s", got, pr.Commit)
			}
			if got := agenttest.Git(t, bare, "show", pr.Commit+":README.md"); got != "hello\nworld" {
				t.Fatalf("README in the commit = %q", got)
			}
			if got := agenttest.Git(t, bare, "log", "-1", "--format=%an <%ae>|%s", pr.Commit); got != AuthorName+" <"+AuthorEmail+">|"+task.Title {
				t.Fatalf("commit = %q", got)
			}
			if got := agenttest.Git(t, bare, "rev-parse", "refs/heads/main"); got == pr.Commit {
				t.Fatal("main moved: the agent's work must stay on its branch")
			}
			evs := r.events(task.ID)
			for i, ev := range evs {
				if ev.SequenceNum != int32(i+1) || ev.TaskID != task.ID || ev.EventID == "" {
					t.Fatalf("event %d = %+v", i, ev)
				}
			}
			want := []string{EventStatus, EventStatus, EventRun, EventGit, "result", EventGit, EventGit, EventPR, EventStatus}
			got := slices.DeleteFunc(types(evs), func(s string) bool { return s == "message" })
			if !slices.Equal(got, want) {
				t.Fatalf("event types %v, want %v\n%s", got, want, dumpEvents(evs))
			}
			if !strings.Contains(dumpEvents(evs), "edited two files") {
				t.Fatalf("the agent's output is not in the log:\n%s", dumpEvents(evs))
			}
			runs, total, _ := r.svc.Runs(context.Background(), r.ws, RunFilter{TaskID: task.ID, Limit: 10})
			if total != 1 || runs[0].Status != RunSucceeded || runs[0].Backend != backend || deref(runs[0].ExitCode) != 0 {
				t.Fatalf("runs = %+v", runs)
			}
			if _, err := os.Stat(r.git.WorktreePath(task.ID)); !os.IsNotExist(err) {
				t.Fatal("the worktree was left behind")
			}
		})
	})
}

func TestOutcomes(t *testing.T) {
	r := newRig(t, db.SQLite, "process")
	p, bare := r.project(false, nil)

	// Nothing changed: done, no pull request to open.
	noop := r.task(p.ID, "echo looking around; ls", TaskConfig{})
	if got := r.wait(noop.ID, StatusDone, StatusFailed); got.Status != StatusDone || got.PR != nil {
		t.Fatalf("no-op task = %s %+v", got.Status, got.PR)
	}
	if _, err := r.svc.OpenPR(context.Background(), r.ws, noop.ID); err == nil || !strings.Contains(err.Error(), "changed nothing") {
		t.Fatalf("OpenPR without changes = %v", err)
	}

	// Autodev off: done with a proposal; POST …/pr opens it.
	change := r.task(p.ID, "echo more >> README.md", TaskConfig{})
	got := r.wait(change.ID, StatusDone, StatusFailed)
	if got.Status != StatusDone || got.PR == nil || got.PR.OpenedAt != nil || got.PR.Commit == "" {
		t.Fatalf("autodev-off task = %s %+v", got.Status, got.PR)
	}
	if agenttest.Git(t, bare, "rev-parse", "refs/heads/"+change.Branch) != got.PR.Commit {
		t.Fatal("the branch was not pushed")
	}
	opened, err := r.svc.OpenPR(context.Background(), r.ws, change.ID)
	if err != nil || opened.Status != StatusDonePR || opened.PR.OpenedAt == nil {
		t.Fatalf("OpenPR = %+v, %v", opened, err)
	}
	if _, err := r.svc.OpenPR(context.Background(), r.ws, change.ID); err == nil {
		t.Fatal("a pull request was opened twice")
	}

	// A failing script: failed, with the exit code in the error.
	bad := r.task(p.ID, "echo trying; exit 3", TaskConfig{})
	if got := r.wait(bad.ID, StatusFailed, StatusDone); got.Status != StatusFailed || !strings.Contains(got.Error, "3") {
		t.Fatalf("failing task = %s %q", got.Status, got.Error)
	}

	// Restart runs it again on its branch (a second run).
	if _, err := r.svc.Restart(context.Background(), r.ws, bad.ID); err != nil {
		t.Fatal(err)
	}
	r.wait(bad.ID, StatusFailed)
	if _, total, _ := r.svc.Runs(context.Background(), r.ws, RunFilter{TaskID: bad.ID, Limit: 10}); total != 2 {
		t.Fatalf("runs after restart = %d", total)
	}

	// A repository that vanished: a clear git failure.
	gone, _ := r.project(true, nil)
	repoPath := gone.RepoURL
	os.RemoveAll(repoPath)
	lost := r.task(gone.ID, "true", TaskConfig{})
	if got := r.wait(lost.ID, StatusFailed); !strings.Contains(got.Error, "fetching the repository failed") {
		t.Fatalf("error = %q", got.Error)
	}

	// A deleted profile: the launch fails saying so.
	if _, err := r.svc.Create(context.Background(), r.ws, nil, TaskCreate{ProjectID: p.ID, Prompt: "x", AgentProfile: "nope"}); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
}

func TestTimeoutKills(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		r := newRig(t, db.SQLite, backend, func(c *DispatchConfig) { c.DefaultTimeout = 2 * time.Second })
		p, _ := r.project(true, nil)
		marker := "slipway-timeout-" + ids.RandomHex(6)
		task := r.task(p.ID, "sleep 30 # "+marker, TaskConfig{})
		got := r.wait(task.ID, StatusFailed, StatusDone, StatusDonePR)
		if got.Status != StatusFailed || !strings.Contains(got.Error, "timed out") {
			t.Fatalf("status %s %q", got.Status, got.Error)
		}
		if !slices.Contains(types(r.events(task.ID)), EventTimeout) {
			t.Fatal("no timeout event")
		}
		if !strings.Contains(got.Error, "timed out after 2s") {
			t.Fatalf("error = %q", got.Error)
		}
		if backend == "docker" {
			assertNoContainers(t, r, task.ID)
		} else {
			assertNoProcess(t, marker)
		}
	})
}

// assertNoProcess waits until no process's command line holds marker.
func assertNoProcess(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := ""
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(b), marker) {
				if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
					continue // a zombie has ended; only its parent has not reaped it
				}
				found = e.Name()
			}
		}
		if found == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s (%s) outlived its task", found, marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCancelStopsARunningAgent(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		r := newRig(t, db.SQLite, backend)
		p, _ := r.project(true, nil)
		marker := "slipway-cancel-" + ids.RandomHex(6)
		task := r.task(p.ID, "echo started; sleep 60 # "+marker, TaskConfig{})
		r.wait(task.ID, StatusRunning)
		// Wait until the agent is really up (its first output arrived).
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(dumpEvents(r.events(task.ID)), "started") {
			if time.Now().After(deadline) {
				t.Fatal("the agent never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := r.svc.Cancel(context.Background(), r.ws, task.ID, nil); err != nil {
			t.Fatal(err)
		}
		// The run ends promptly as cancelled; the task stays cancelled.
		deadline = time.Now().Add(30 * time.Second)
		for {
			runs, _, _ := r.svc.Runs(context.Background(), r.ws, RunFilter{TaskID: task.ID, Limit: 10})
			if len(runs) == 1 && runs[0].Status == RunCancelled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run = %+v", runs)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := r.wait(task.ID, StatusCancelled); got.Status != StatusCancelled {
			t.Fatal(got.Status)
		}
		if _, err := r.svc.Cancel(context.Background(), r.ws, task.ID, nil); err == nil {
			t.Fatal("cancelling a cancelled task was accepted")
		}
		if backend == "docker" {
			assertNoContainers(t, r, task.ID)
		} else {
			assertNoProcess(t, marker)
		}
	})
}

func assertNoContainers(t *testing.T, r *rig, taskID string) {
	t.Helper()
	b := r.backend.(*docker.Backend)
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := b.CountLabelled(context.Background(), "service.task="+taskID)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d container(s) of the task remain", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCapsHold: more tasks than slots wait queued and never exceed the
// workspace cap or the project cap; all of them finish.
func TestCapsHold(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newRig(t, e, "process", func(c *DispatchConfig) { c.WorkspaceCap = 2 })
		p1, _ := r.project(true, nil)
		p2, _ := r.project(true, nil)
		one := 1
		if _, err := r.proj.SetConcurrency(context.Background(), r.ws, p2.ID, &one); err != nil {
			t.Fatal(err)
		}
		var all []string
		for i := 0; i < 4; i++ {
			all = append(all, r.task(p1.ID, "sleep 0.3", TaskConfig{}).ID, r.task(p2.ID, "sleep 0.3", TaskConfig{}).ID)
		}
		maxWS, maxP2 := 0, 0
		deadline := time.Now().Add(120 * time.Second)
		for {
			var ws, p2n, finished int
			rows, err := r.db.R.Query("SELECT project_id, status FROM tasks")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var pid, st string
				rows.Scan(&pid, &st)
				if Active(st) {
					ws++
					if pid == p2.ID {
						p2n++
					}
				}
				if Terminal(st) {
					finished++
				}
			}
			rows.Close()
			maxWS, maxP2 = max(maxWS, ws), max(maxP2, p2n)
			if finished == len(all) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d finished", finished, len(all))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if maxWS > 2 || maxP2 > 1 {
			t.Fatalf("caps broken: %d running in the workspace (cap 2), %d in the capped project (cap 1)", maxWS, maxP2)
		}
		if maxWS < 2 {
			t.Fatalf("never ran two at once (max %d): the test proves nothing", maxWS)
		}
		for _, id := range all {
			if got := r.wait(id, StatusDonePR, StatusDone, StatusFailed); got.Status == StatusFailed {
				t.Fatalf("task failed: %s", got.Error)
			}
		}
	})
}

// TestRecovery: a task left running by a server that died is put back in
// the queue with an event saying why and then completes; one interrupted
// too often fails. A graceful stop puts a running task back in the queue.
func TestRecovery(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newRig(t, e, "process")
		p, _ := r.project(true, nil)
		r.stop()

		// As if this server had crashed while running two tasks.
		ctx := context.Background()
		orphan := r.task(p.ID, "echo resumed >> README.md", TaskConfig{})
		tired := r.task(p.ID, "true", TaskConfig{})
		past := time.Now().UTC().Add(-time.Hour)
		for _, id := range []string{orphan.ID, tired.ID} {
			if _, err := r.db.W.ExecContext(ctx, "UPDATE tasks SET status = 'running', lease_owner = $2, lease_until = $3 WHERE id = $1",
				id, r.cfg.Owner, past); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < r.cfg.maxAttempts(); i++ {
			run := &Run{ID: ids.New(), Kind: "task", Status: RunRunning, WorkspaceID: r.ws.ID, ProjectID: &p.ID, TaskID: &tired.ID, Attempt: i + 1, CreatedAt: past}
			if err := insertRun(ctx, r.db.W, run); err != nil {
				t.Fatal(err)
			}
		}

		r.start() // the restart
		got := r.wait(orphan.ID, StatusDonePR, StatusFailed)
		if got.Status != StatusDonePR {
			t.Fatalf("orphan = %s %q", got.Status, got.Error)
		}
		if !strings.Contains(dumpEvents(r.events(orphan.ID)), "the server running this task stopped; it runs again") {
			t.Fatalf("no recovery event:\n%s", dumpEvents(r.events(orphan.ID)))
		}
		if got := r.wait(tired.ID, StatusFailed); !strings.Contains(got.Error, "too often") {
			t.Fatalf("tired = %q", got.Error)
		}
		runs, _, _ := r.svc.Runs(ctx, r.ws, RunFilter{TaskID: tired.ID, Limit: 10})
		for _, run := range runs {
			if run.Status == RunRunning {
				t.Fatal("a run of a rescued task is still running")
			}
		}

		// Graceful stop while an agent runs: back to the queue, then it runs
		// to the end after the next start.
		long := r.task(p.ID, "echo go; sleep 2; echo slow >> README.md", TaskConfig{})
		r.wait(long.ID, StatusRunning)
		time.Sleep(300 * time.Millisecond)
		r.stop()
		if got, _ := r.svc.Get(ctx, r.ws, long.ID); got.Status != StatusQueued {
			t.Fatalf("after a graceful stop the task is %s", got.Status)
		}
		if !strings.Contains(dumpEvents(r.events(long.ID)), "shut down") {
			t.Fatalf("no shutdown event:\n%s", dumpEvents(r.events(long.ID)))
		}
		r.start()
		if got := r.wait(long.ID, StatusDonePR, StatusFailed); got.Status != StatusDonePR {
			t.Fatalf("after the restart = %s %q", got.Status, got.Error)
		}
	})
}

// TestSecretsNeverReachEvents: credentials and keys printed by an agent are
// redacted before storage.
func TestSecretsNeverReachEvents(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const token, llmKey = "tok-SUPERSECRET-4242", "sk-instance-key-77"
		r := newRig(t, e, "process", func(c *DispatchConfig) { c.Exec.LLMKey = llmKey })
		p, _ := r.project(true, &projects.Credentials{Username: "bot", Token: token})
		task := r.task(p.ID, "echo the token is "+token+"; echo '{\"type\":\"message\",\"text\":\"key "+llmKey+"\"}'; echo "+token+" >&2; exit 1", TaskConfig{})
		got := r.wait(task.ID, StatusFailed)
		all := dumpEvents(r.events(task.ID)) + got.Error
		for _, s := range []string{token, llmKey} {
			if strings.Contains(all, s) {
				t.Fatalf("%q reached the events:\n%s", s, all)
			}
		}
		if !strings.Contains(all, Redacted) {
			t.Fatalf("nothing was redacted, so the agent's output went missing:\n%s", all)
		}
	})
}

// TestLLMTask: the built-in llm agent edits the repository through a local
// OpenAI-compatible server that scripts its tool calls.
func TestLLMTask(t *testing.T) {
	var mu sync.Mutex
	var step int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer sk-profile-key-123" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		mu.Lock()
		step++
		n := step
		mu.Unlock()
		call := func(name string, args map[string]string) map[string]any {
			a, _ := json.Marshal(args)
			return map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{
				"id": "call_" + name, "type": "function", "function": map[string]any{"name": name, "arguments": string(a)}}}}
		}
		var msg map[string]any
		switch n {
		case 1:
			msg = call("read_file", map[string]string{"path": "README.md"})
		case 2:
			msg = call("write_file", map[string]string{"path": "GREETING.md", "content": "Hello from the agent\n"})
		default:
			msg = call("finish", map[string]string{"summary": "added GREETING.md"})
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "model": "m", "choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": "tool_calls"}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer srv.Close()

	r := newRig(t, db.SQLite, "process")
	key := "sk-profile-key-123"
	name, typ, base, model := "tester", "llm", srv.URL+"/v1", "m"
	if _, err := r.proj.CreateProfile(context.Background(), r.ws, projects.ProfileInput{Name: &name, AgentType: &typ, BaseURL: &base, Model: &model, APIKey: &key}); err != nil {
		t.Fatal(err)
	}
	p, bare := r.project(true, nil)
	task := r.task(p.ID, "Add a greeting file.", TaskConfig{}, "tester")
	got := r.wait(task.ID, StatusDonePR, StatusFailed)
	if got.Status != StatusDonePR {
		t.Fatalf("%s %q\n%s", got.Status, got.Error, dumpEvents(r.events(task.ID)))
	}
	if c := agenttest.Git(t, bare, "show", got.PR.Commit+":GREETING.md"); c != "Hello from the agent" {
		t.Fatalf("GREETING.md = %q", c)
	}
	evs := dumpEvents(r.events(task.ID))
	for _, want := range []string{`"type":"tool_call"`, `"type":"tool_result"`, `"type":"cost"`} {
		if !strings.Contains(strings.ReplaceAll(evs, " ", ""), want) {
			t.Fatalf("events lack %s:\n%s", want, evs)
		}
	}
	if strings.Contains(evs, key) {
		t.Fatal("the profile's key reached the events")
	}
}

func (c DispatchConfig) maxAttempts() int {
	if c.MaxAttempts == 0 {
		return 3
	}
	return c.MaxAttempts
}

// TestDockerLimitsReachTheContainer inspects a running task's container:
// every AGENT_* limit, the instance label, the worktree and agent mounts.
func TestDockerLimitsReachTheContainer(t *testing.T) {
	r := newRig(t, db.SQLite, "docker")
	p, _ := r.project(true, nil)
	task := r.task(p.ID, "echo started; sleep 60", TaskConfig{})
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(dumpEvents(r.events(task.ID)), "started") {
		if time.Now().After(deadline) {
			t.Fatal("the agent never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cli, err := client.New(client.WithHost(agenttest.DockerHost(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", "service.task="+task.ID)})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("containers of the task: %d, %v", len(list.Items), err)
	}
	got, err := cli.ContainerInspect(ctx, list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, lim := got.Container.HostConfig, r.cfg.Exec.Limits
	pids := int64(0)
	if hc.PidsLimit != nil {
		pids = *hc.PidsLimit
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"memory", hc.Memory, lim.MemoryBytes},
		{"cpus", hc.NanoCPUs, lim.NanoCPUs},
		{"pids", pids, lim.PidsLimit},
		{"read-only root", hc.ReadonlyRootfs, true},
		{"network", string(hc.NetworkMode), lim.Network},
		{"tmp size", strings.Contains(hc.Tmpfs["/tmp"], "size=64m"), true},
		{"run size", strings.Contains(hc.Tmpfs["/run"], "size=8m"), true},
		{"home size", strings.Contains(hc.Tmpfs["/home/agent"], "size=32m"), true},
		{"instance label", got.Container.Config.Labels[executor.InstanceLabel], r.cfg.Owner},
		{"image", got.Container.Config.Image, agenttest.TestImage},
		{"workdir", got.Container.Config.WorkingDir, WorkspacePath},
		{"init process", hc.Init != nil && *hc.Init, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	mounts := map[string]bool{}
	for _, m := range got.Container.Mounts {
		mounts[m.Destination] = m.RW
	}
	if rw, ok := mounts[WorkspacePath]; !ok || !rw {
		t.Errorf("worktree mount: present=%v rw=%v", ok, rw)
	}
	if rw, ok := mounts[AgentPath]; !ok || rw {
		t.Errorf("agent binary mount: present=%v rw=%v (want read-only)", ok, rw)
	}
	if _, err := r.svc.Cancel(ctx, r.ws, task.ID, nil); err != nil {
		t.Fatal(err)
	}
	assertNoContainers(t, r, task.ID)
}

// TestDockerWithoutImage: no image configured anywhere fails the task with
// a message that says so.
func TestDockerWithoutImage(t *testing.T) {
	r := newRig(t, db.SQLite, "docker", func(c *DispatchConfig) { c.Exec.DefaultImage = "" })
	p, _ := r.project(true, nil)
	task := r.task(p.ID, "true", TaskConfig{})
	if got := r.wait(task.ID, StatusFailed); !strings.Contains(got.Error, "no agent image is configured") {
		t.Fatalf("error = %q", got.Error)
	}
	// An image that is not there (no registry is reachable) is just as clear.
	r2 := newRig(t, db.SQLite, "docker", func(c *DispatchConfig) { c.Exec.DefaultImage = "slipway-no-such-image:1" })
	p2, _ := r2.project(true, nil)
	task2 := r2.task(p2.ID, "true", TaskConfig{})
	if got := r2.wait(task2.ID, StatusFailed); !strings.Contains(got.Error, "not found locally") {
		t.Fatalf("error = %q", got.Error)
	}
}
