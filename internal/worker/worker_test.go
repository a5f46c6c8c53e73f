package worker_test

// Execution tests: the whole core (tasks, runs, queue, dispatcher, worker)
// on real parts: SQLite and PostgreSQL, git, the process backend and a real
// Docker engine.

import (
	"context"
	"encoding/json"
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
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/redact"
	"slipway/internal/projects"
	"slipway/internal/repo"
	"slipway/internal/runs"
	"slipway/internal/tasks"
	"slipway/internal/worker"
	"slipway/internal/workport"
)

func backends(t *testing.T, fn func(t *testing.T, backend string)) {
	t.Run("process", func(t *testing.T) { fn(t, "process") })
	t.Run("docker", func(t *testing.T) { fn(t, "docker") })
}

func stack(t testing.TB, e db.Engine, backend string, tune ...func(*fixture.StackConfig)) *fixture.Stack {
	cfg := fixture.StackConfig{Engine: e, Backend: backend}
	for _, f := range tune {
		f(&cfg)
	}
	return fixture.NewStack(t, cfg)
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// TestShellTaskEndToEnd: a shell task edits a file and ends done_pr, with
// the branch pushed, the commit in the bare repository and the full ordered
// event log; on the process backend and on a real Docker engine, on both
// databases.
func TestShellTaskEndToEnd(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		dbtest.Engines(t, func(t *testing.T, e db.Engine) {
			s := stack(t, e, backend)
			p, bare := s.Project(true, nil)
			task := s.Task(p.ID, "echo world >> README.md\nmkdir -p docs && echo notes > docs/notes.txt\necho edited two files", tasks.TaskConfig{})
			done := s.Wait(task.ID, tasks.StatusDonePR, tasks.StatusFailed)
			if done.Status != tasks.StatusDonePR {
				t.Fatalf("status %s: %s\n%s", done.Status, done.Error, fixture.DumpEvents(s.Events(task.ID)))
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
			if got := agenttest.Git(t, bare, "log", "-1", "--format=%an <%ae>|%s", pr.Commit); got != workport.AuthorName+" <"+workport.AuthorEmail+">|"+task.Title {
				t.Fatalf("commit = %q", got)
			}
			if got := agenttest.Git(t, bare, "rev-parse", "refs/heads/main"); got == pr.Commit {
				t.Fatal("main moved: the agent's work must stay on its branch")
			}
			evs := s.Events(task.ID)
			for i, ev := range evs {
				if ev.SequenceNum != int32(i+1) || ev.TaskID != task.ID || ev.EventID == "" {
					t.Fatalf("event %d = %+v", i, ev)
				}
			}
			want := []string{tasks.EventStatus, tasks.EventStatus, tasks.EventRun, workport.EventGit, "result", workport.EventGit, workport.EventGit, tasks.EventPR, tasks.EventStatus}
			got := slices.DeleteFunc(fixture.Types(evs), func(s string) bool { return s == "message" })
			if !slices.Equal(got, want) {
				t.Fatalf("event types %v, want %v\n%s", got, want, fixture.DumpEvents(evs))
			}
			if !strings.Contains(fixture.DumpEvents(evs), "edited two files") {
				t.Fatalf("the agent's output is not in the log:\n%s", fixture.DumpEvents(evs))
			}
			rs := s.TaskRuns(task.ID)
			if len(rs) != 1 || rs[0].Status != runs.Succeeded || rs[0].Backend != backend || deref(rs[0].ExitCode) != 0 {
				t.Fatalf("runs = %+v", rs)
			}
			// The run's own events carry their own sequence, ending with the
			// terminal status.
			revs, err := s.Runs.Events(context.Background(), s.WS, rs[0].ID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for i, ev := range revs {
				if ev.SequenceNum != int32(i+1) || ev.TaskID != task.ID {
					t.Fatalf("run event %d = %+v", i, ev)
				}
			}
			if len(revs) != len(evs)-1 || revs[len(revs)-1].EventType != tasks.EventStatus {
				t.Fatalf("run events (%d, want all but the creation: %d):\n%s", len(revs), len(evs)-1, fixture.DumpEvents(revs))
			}
			if _, err := os.Stat(s.Git.WorktreePath(task.ID)); !os.IsNotExist(err) {
				t.Fatal("the worktree was left behind")
			}
			if j := s.Job(task.ID); j != nil {
				t.Fatalf("the task's job is still %s", j.State)
			}
		})
	})
}

func TestOutcomes(t *testing.T) {
	s := stack(t, db.SQLite, "process")
	p, bare := s.Project(false, nil)
	ctx := context.Background()

	// Nothing changed: done, no pull request to open.
	noop := s.Task(p.ID, "echo looking around; ls", tasks.TaskConfig{})
	if got := s.Wait(noop.ID, tasks.StatusDone, tasks.StatusFailed); got.Status != tasks.StatusDone || got.PR != nil {
		t.Fatalf("no-op task = %s %+v", got.Status, got.PR)
	}
	if _, err := s.Tasks.OpenPR(ctx, s.WS, noop.ID); err == nil || !strings.Contains(err.Error(), "changed nothing") {
		t.Fatalf("OpenPR without changes = %v", err)
	}

	// Autodev off: done with a proposal; POST …/pr opens it.
	change := s.Task(p.ID, "echo more >> README.md", tasks.TaskConfig{})
	got := s.Wait(change.ID, tasks.StatusDone, tasks.StatusFailed)
	if got.Status != tasks.StatusDone || got.PR == nil || got.PR.OpenedAt != nil || got.PR.Commit == "" {
		t.Fatalf("autodev-off task = %s %+v", got.Status, got.PR)
	}
	if agenttest.Git(t, bare, "rev-parse", "refs/heads/"+change.Branch) != got.PR.Commit {
		t.Fatal("the branch was not pushed")
	}
	opened, err := s.Tasks.OpenPR(ctx, s.WS, change.ID)
	if err != nil || opened.Status != tasks.StatusDonePR || opened.PR.OpenedAt == nil {
		t.Fatalf("OpenPR = %+v, %v", opened, err)
	}
	if _, err := s.Tasks.OpenPR(ctx, s.WS, change.ID); err == nil {
		t.Fatal("a pull request was opened twice")
	}

	// A failing script: failed, with the exit code in the error.
	bad := s.Task(p.ID, "echo trying; exit 3", tasks.TaskConfig{})
	if got := s.Wait(bad.ID, tasks.StatusFailed, tasks.StatusDone); got.Status != tasks.StatusFailed || !strings.Contains(got.Error, "exit code 3") {
		t.Fatalf("failing task = %s %q", got.Status, got.Error)
	}
	// The run and the agent's own log line record the script's code.
	if rs := s.TaskRuns(bad.ID); len(rs) != 1 || deref(rs[0].ExitCode) != 3 {
		t.Fatalf("run of exit 3 = %+v", rs)
	}
	if log := fixture.DumpEvents(s.Events(bad.ID)); !strings.Contains(log, "exit_code=3") || !strings.Contains(log, `"exit_code":3`) {
		t.Fatalf("the log does not say exit code 3:\n%s", log)
	}

	// Restart runs it again on its branch (a second run).
	if _, err := s.Tasks.Restart(ctx, s.WS, bad.ID); err != nil {
		t.Fatal(err)
	}
	s.Wait(bad.ID, tasks.StatusFailed)
	if rs := s.TaskRuns(bad.ID); len(rs) != 2 || rs[0].Attempt != 2 || rs[1].Attempt != 1 {
		t.Fatalf("runs after restart = %+v", rs)
	}

	// A repository that vanished: a clear git failure.
	gone, _ := s.Project(true, nil)
	os.RemoveAll(gone.RepoURL)
	lost := s.Task(gone.ID, "true", tasks.TaskConfig{})
	if got := s.Wait(lost.ID, tasks.StatusFailed); !strings.Contains(got.Error, "fetching the repository failed") {
		t.Fatalf("error = %q", got.Error)
	}

	// A deleted profile: the launch fails saying so.
	if _, err := s.Tasks.Create(ctx, s.WS, nil, tasks.TaskCreate{ProjectID: p.ID, Prompt: "x", AgentProfile: "nope"}); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
}

func TestTimeoutKills(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		s := stack(t, db.SQLite, backend, func(c *fixture.StackConfig) { c.Tasks.DefaultTimeout = 2 * time.Second })
		p, _ := s.Project(true, nil)
		marker := "slipway-timeout-" + ids.RandomHex(6)
		task := s.Task(p.ID, "sleep 30 # "+marker, tasks.TaskConfig{})
		got := s.Wait(task.ID, tasks.StatusFailed, tasks.StatusDone, tasks.StatusDonePR)
		if got.Status != tasks.StatusFailed || !strings.Contains(got.Error, "timed out after 2s") {
			t.Fatalf("status %s %q", got.Status, got.Error)
		}
		if !slices.Contains(fixture.Types(s.Events(task.ID)), workport.EventTimeout) {
			t.Fatal("no timeout event")
		}
		if backend == "docker" {
			assertNoContainers(t, s, task.ID)
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

func assertNoContainers(t *testing.T, s *fixture.Stack, taskID string) {
	t.Helper()
	b := s.Backend.(*docker.Backend)
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := b.CountLabelled(context.Background(), worker.LabelTask+"="+taskID)
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

// TestCancelStopsARunningAgent: the agent stops, the run ends cancelled,
// and the cancel's status event is the last event of the run and of the
// log (what the agent printed while it was being stopped is dropped).
func TestCancelStopsARunningAgent(t *testing.T) {
	backends(t, func(t *testing.T, backend string) {
		s := stack(t, db.SQLite, backend)
		p, _ := s.Project(true, nil)
		marker := "slipway-cancel-" + ids.RandomHex(6)
		// The script prints on its way out: those lines must not follow the cancel.
		task := s.Task(p.ID, "trap 'echo dying; exit 143' TERM; echo started; sleep 60 & wait # "+marker, tasks.TaskConfig{})
		s.WaitFor(task.ID, "started")
		if _, err := s.Tasks.Cancel(context.Background(), s.WS, task.ID, nil); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			rs := s.TaskRuns(task.ID)
			if len(rs) == 1 && rs[0].Status == runs.Cancelled && rs[0].ExitCode != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run = %+v", rs)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := s.Wait(task.ID, tasks.StatusCancelled); got.Status != tasks.StatusCancelled {
			t.Fatal(got.Status)
		}
		if _, err := s.Tasks.Cancel(context.Background(), s.WS, task.ID, nil); err == nil {
			t.Fatal("cancelling a cancelled task was accepted")
		}
		if backend == "docker" {
			assertNoContainers(t, s, task.ID)
		} else {
			assertNoProcess(t, marker)
		}
		time.Sleep(200 * time.Millisecond) // anything late would have arrived
		evs := s.Events(task.ID)
		last := evs[len(evs)-1]
		if last.EventType != tasks.EventStatus || fixture.Payload(t, last)["to"] != tasks.StatusCancelled {
			t.Fatalf("the cancel is not the last event:\n%s", fixture.DumpEvents(evs))
		}
		rs := s.TaskRuns(task.ID)
		revs, err := s.Runs.Events(context.Background(), s.WS, rs[0].ID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if l := revs[len(revs)-1]; l.EventType != tasks.EventStatus || fixture.Payload(t, l)["to"] != tasks.StatusCancelled {
			t.Fatalf("the cancel is not the run's last event:\n%s", fixture.DumpEvents(revs))
		}
	})
}

// TestGracefulStopRequeues: a worker stopped gracefully while its agent
// runs gives the task back to the queue, and the task's log says so once
// (it said "…; it runs again; it runs again").
func TestGracefulStopRequeues(t *testing.T) {
	s := stack(t, db.SQLite, "process")
	p, _ := s.Project(true, nil)
	task := s.Task(p.ID, `echo started; sleep 60`, tasks.TaskConfig{})
	s.WaitFor(task.ID, "started")
	s.Stop()
	s.Wait(task.ID, tasks.StatusQueued)
	dump := fixture.DumpEvents(s.Events(task.ID))
	if n := strings.Count(dump, "it runs again"); n != 1 {
		t.Fatalf("the log says %d times that the task runs again:\n%s", n, dump)
	}
	if !strings.Contains(dump, "the server shut down while the agent ran; it runs again") {
		t.Fatalf("no shutdown event in the log:\n%s", dump)
	}
}

// TestCapsHold: more tasks than slots wait queued and never exceed the
// workspace cap or the project cap; all of them finish.
func TestCapsHold(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		s := stack(t, e, "process", func(c *fixture.StackConfig) { c.Tasks.WorkspaceCap = 2 })
		p1, _ := s.Project(true, nil)
		p2, _ := s.Project(true, nil)
		one := 1
		if _, err := s.Projects.SetConcurrency(context.Background(), s.WS, p2.ID, &one); err != nil {
			t.Fatal(err)
		}
		var all []string
		for i := 0; i < 4; i++ {
			all = append(all, s.Task(p1.ID, "sleep 0.3", tasks.TaskConfig{}).ID, s.Task(p2.ID, "sleep 0.3", tasks.TaskConfig{}).ID)
		}
		maxWS, maxP2 := 0, 0
		deadline := time.Now().Add(120 * time.Second)
		for {
			var ws, p2n, finished int
			rows, err := s.DB.R.Query("SELECT project_id, status FROM tasks")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var pid, st string
				if err := rows.Scan(&pid, &st); err != nil {
					t.Fatal(err)
				}
				if tasks.Active(st) {
					ws++
					if pid == p2.ID {
						p2n++
					}
				}
				if tasks.Terminal(st) {
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
			if got := s.Wait(id, tasks.StatusDonePR, tasks.StatusDone, tasks.StatusFailed); got.Status == tasks.StatusFailed {
				t.Fatalf("task failed: %s", got.Error)
			}
		}
	})
}

// holdAsCrashed makes a queued task look like one this stack's worker was
// running when its process died: the task running with a run, its job held
// by the worker with the given attempt and an expired lease.
func holdAsCrashed(t *testing.T, s *fixture.Stack, taskID string, attempt int, result string) string {
	t.Helper()
	ctx := context.Background()
	past := time.Now().UTC().Add(-time.Hour)
	runID := ids.New()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.DB.W.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("UPDATE tasks SET status = 'running', started_at = $2 WHERE id = $1", taskID, past)
	exec(`UPDATE jobs SET state = 'running', attempt = $2, locked_by = $3, locked_until = $4 WHERE ref_id = $1 AND state = 'available'`,
		taskID, attempt, s.Cfg.Worker.ID, past)
	var jobID, projectID string
	if err := s.DB.R.QueryRow("SELECT j.id, t.project_id FROM jobs j JOIN tasks t ON t.id = j.ref_id WHERE j.ref_id = $1 AND j.state = 'running'",
		taskID).Scan(&jobID, &projectID); err != nil {
		t.Fatal(err)
	}
	var res any
	if result != "" {
		res = result
	}
	exec(`INSERT INTO runs (id, workspace_id, log_id, kind, status, project_id, task_id, job_id, attempt, backend, result, created_at)
		VALUES ($1, $2, $3, 'task', 'running', $4, $3, $5, $6, 'process', $7, $8)`, runID, s.WS.ID, taskID, projectID, jobID, attempt, res, past)
	return runID
}

// TestRecovery: work a crashed process held goes back to the queue with an
// event saying why and then completes; work interrupted too often fails; a
// run whose agent had reported its result is never run again; a graceful
// stop puts running work back in the queue without using up an attempt.
func TestRecovery(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		s := stack(t, e, "process", func(c *fixture.StackConfig) { c.Tasks.MaxAttempts = 3 })
		p, bare := s.Project(true, nil)
		s.Stop()

		// As if this worker's process had crashed while running three tasks.
		orphan := s.Task(p.ID, "echo resumed >> README.md", tasks.TaskConfig{})
		tired := s.Task(p.ID, "true", tasks.TaskConfig{})
		finished := s.Task(p.ID, "echo must-not-run-again >> README.md", tasks.TaskConfig{})
		orphanRun := holdAsCrashed(t, s, orphan.ID, 1, "")
		holdAsCrashed(t, s, tired.ID, 3, "")
		// The third's agent finished and wrote its file, then the process died
		// before publishing: its worktree is still there.
		finishedRun := holdAsCrashed(t, s, finished.ID, 1, `{"type":"result","status":"success","summary":"wrote it"}`)
		// The fourth's work was even committed, but not pushed.
		committed := s.Task(p.ID, "echo must-not-run-again-either >> README.md", tasks.TaskConfig{})
		committedRun := holdAsCrashed(t, s, committed.ID, 1, `{"type":"result","status":"success"}`)
		ctx := context.Background()
		if err := s.Git.Sync(ctx, p.ID, repo.Remote{URL: p.RepoURL}); err != nil {
			t.Fatal(err)
		}
		wt, err := s.Git.AddWorktree(ctx, p.ID, finished.ID, finished.Branch, "main")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wt, "FINISHED.md"), []byte("written before the crash\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cwt, err := s.Git.AddWorktree(ctx, p.ID, committed.ID, committed.Branch, "main")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cwt, "COMMITTED.md"), []byte("committed before the crash\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sha, changed, err := s.Git.Commit(ctx, p.ID, committed.ID, "work", workport.AuthorName, workport.AuthorEmail)
		if err != nil || !changed {
			t.Fatalf("commit: %v %v", changed, err)
		}
		// Its log shows the commit, as the crashed process logged it.
		logged := func(taskID, runID string, steps ...string) {
			t.Helper()
			var evs []runs.NewEvent
			for _, p := range steps {
				evs = append(evs, runs.NewEvent{Type: workport.EventGit, Payload: []byte(p), At: time.Now().UTC()})
			}
			if err := s.DB.Tx(ctx, func(tx *db.Tx) error { return s.Runs.Append(ctx, tx, s.WS.ID, taskID, runID, evs...) }); err != nil {
				t.Fatal(err)
			}
		}
		logged(committed.ID, committedRun, `{"action":"commit","changed":true,"commit":"`+sha+`"}`)
		// The fifth's work was committed and pushed and its worktree removed;
		// only the report was missing.
		published := s.Task(p.ID, "echo must-not-run-again-either >> README.md", tasks.TaskConfig{})
		publishedRun := holdAsCrashed(t, s, published.ID, 1, `{"type":"result","status":"success"}`)
		if _, err := s.Git.AddWorktree(ctx, p.ID, published.ID, published.Branch, "main"); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Git.WorktreePath(published.ID), "PUBLISHED.md"), []byte("published before the crash\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		psha, changed, err := s.Git.Commit(ctx, p.ID, published.ID, "work", workport.AuthorName, workport.AuthorEmail)
		if err != nil || !changed {
			t.Fatalf("commit: %v %v", changed, err)
		}
		if err := s.Git.Push(ctx, p.ID, repo.Remote{URL: p.RepoURL}, published.Branch); err != nil {
			t.Fatal(err)
		}
		logged(published.ID, publishedRun, `{"action":"commit","changed":true,"commit":"`+psha+`"}`, `{"action":"push","branch":"`+published.Branch+`"}`)
		if err := s.Git.RemoveWorktree(ctx, p.ID, published.ID); err != nil {
			t.Fatal(err)
		}
		// A worktree of work that is no longer here is removed at start.
		stray := filepath.Join(filepath.Dir(wt), ids.New())
		if err := os.MkdirAll(stray, 0o755); err != nil {
			t.Fatal(err)
		}

		s.Start() // the restart
		got := s.Wait(orphan.ID, tasks.StatusDonePR, tasks.StatusFailed)
		if got.Status != tasks.StatusDonePR {
			t.Fatalf("orphan = %s %q", got.Status, got.Error)
		}
		if !strings.Contains(fixture.DumpEvents(s.Events(orphan.ID)), "the server running this task stopped; it runs again") {
			t.Fatalf("no recovery event:\n%s", fixture.DumpEvents(s.Events(orphan.ID)))
		}
		if r, err := s.Runs.Get(ctx, nil, s.WS.ID, orphanRun); err != nil || r.Status != runs.Failed || !strings.Contains(r.Error, "stopped") {
			t.Fatalf("the interrupted run = %+v, %v", r, err)
		}
		if got := s.Wait(tired.ID, tasks.StatusFailed); !strings.Contains(got.Error, "too often") {
			t.Fatalf("tired = %q", got.Error)
		}
		for _, run := range s.TaskRuns(tired.ID) {
			if run.Status == runs.Running {
				t.Fatal("a run of a rescued task is still running")
			}
		}
		// The finished one is published from its worktree, not run again.
		got = s.Wait(finished.ID, tasks.StatusDonePR, tasks.StatusFailed)
		if got.Status != tasks.StatusDonePR || got.PR == nil {
			t.Fatalf("finished = %s %q\n%s", got.Status, got.Error, fixture.DumpEvents(s.Events(finished.ID)))
		}
		if c := agenttest.Git(t, bare, "show", got.PR.Commit+":FINISHED.md"); c != "written before the crash" {
			t.Fatalf("FINISHED.md = %q", c)
		}
		if rs := s.TaskRuns(finished.ID); len(rs) != 1 || rs[0].ID != finishedRun || rs[0].Status != runs.Succeeded {
			t.Fatalf("finished task's runs = %+v (it must not run again)", rs)
		}
		if strings.Contains(agenttest.Git(t, bare, "show", got.PR.Commit+":README.md"), "must-not-run-again") {
			t.Fatal("the finished task's agent ran again")
		}
		if _, err := os.Stat(stray); !os.IsNotExist(err) {
			t.Fatal("a stray worktree was left at start")
		}
		got = s.Wait(committed.ID, tasks.StatusDonePR, tasks.StatusFailed, tasks.StatusDone)
		if got.Status != tasks.StatusDonePR || got.PR == nil || got.PR.Commit != sha {
			t.Fatalf("committed-but-not-pushed = %s %+v %q", got.Status, got.PR, got.Error)
		}
		if agenttest.Git(t, bare, "rev-parse", "refs/heads/"+committed.Branch) != sha {
			t.Fatal("the committed work was not pushed after the restart")
		}
		// Each publishing step is in the log once: the commit from before the
		// crash, the push after it.
		steps := func(taskID string) map[string]int {
			n := map[string]int{}
			for _, ev := range s.Events(taskID) {
				var step struct {
					Action string `json:"action"`
				}
				if ev.EventType == workport.EventGit && json.Unmarshal(ev.Payload, &step) == nil {
					n[step.Action]++
				}
			}
			return n
		}
		if n := steps(committed.ID); n["commit"] != 1 || n["push"] != 1 {
			t.Fatalf("committed-but-not-pushed logged its steps %v times:\n%s", n, fixture.DumpEvents(s.Events(committed.ID)))
		}

		got = s.Wait(published.ID, tasks.StatusDonePR, tasks.StatusFailed, tasks.StatusDone)
		if got.Status != tasks.StatusDonePR || got.PR == nil || got.PR.Commit != psha || got.PR.FilesChanged != 1 {
			t.Fatalf("published-but-not-reported = %s %+v %q\n%s", got.Status, got.PR, got.Error, fixture.DumpEvents(s.Events(published.ID)))
		}
		if rs := s.TaskRuns(published.ID); len(rs) != 1 || rs[0].Status != runs.Succeeded {
			t.Fatalf("published task's runs = %+v (it must not run again)", rs)
		}
		if n := steps(published.ID); n["commit"] != 1 || n["push"] != 1 {
			t.Fatalf("published-but-not-reported logged its steps %v times:\n%s", n, fixture.DumpEvents(s.Events(published.ID)))
		}

		// Graceful stop while an agent runs: back to the queue, not charged as
		// an attempt, then it runs to the end after the next start.
		long := s.Task(p.ID, "echo go; sleep 2; echo slow >> README.md", tasks.TaskConfig{})
		s.WaitFor(long.ID, "go")
		s.Stop()
		if got, _ := s.Tasks.Get(ctx, s.WS, long.ID); got.Status != tasks.StatusQueued {
			t.Fatalf("after a graceful stop the task is %s (%s):\n%s", got.Status, got.Error, fixture.DumpEvents(s.Events(long.ID)))
		}
		if !strings.Contains(fixture.DumpEvents(s.Events(long.ID)), "shut down") {
			t.Fatalf("no shutdown event:\n%s", fixture.DumpEvents(s.Events(long.ID)))
		}
		if j := s.Job(long.ID); j == nil || j.Attempt != 0 {
			t.Fatalf("job after a graceful stop = %+v (the attempt must be given back)", j)
		}
		s.Start()
		if got := s.Wait(long.ID, tasks.StatusDonePR, tasks.StatusFailed); got.Status != tasks.StatusDonePR {
			t.Fatalf("after the restart = %s %q", got.Status, got.Error)
		}
	})
}

// TestRescueByAnotherReplica: a worker that stops extending its lease (its
// process died for good) loses its work to the rescuer: the task runs again
// on the other worker. A run whose result was recorded is not run again.
func TestRescueByAnotherReplica(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		s := stack(t, e, "process", func(c *fixture.StackConfig) { c.Lease = time.Second })
		p, _ := s.Project(true, nil)
		s.Stop()
		orphan := s.Task(p.ID, "echo again >> README.md", tasks.TaskConfig{})
		finished := s.Task(p.ID, "true", tasks.TaskConfig{})
		// Held by a worker that no longer exists ("hub@gone").
		s.Cfg.Worker.ID, s.Cfg.Worker.Slots = "hub@gone", 1
		holdAsCrashed(t, s, orphan.ID, 1, "")
		holdAsCrashed(t, s, finished.ID, 1, `{"type":"result","status":"success"}`)
		s.Cfg.Worker.ID = "hub@survivor"
		s.Start()
		if got := s.Wait(orphan.ID, tasks.StatusDonePR, tasks.StatusFailed); got.Status != tasks.StatusDonePR {
			t.Fatalf("orphan = %s %q", got.Status, got.Error)
		}
		got := s.Wait(finished.ID, tasks.StatusFailed, tasks.StatusDonePR, tasks.StatusDone)
		if got.Status != tasks.StatusFailed || !strings.Contains(got.Error, "work is lost") {
			t.Fatalf("finished elsewhere = %s %q", got.Status, got.Error)
		}
		if rs := s.TaskRuns(finished.ID); len(rs) != 1 {
			t.Fatalf("a run with a recorded result ran again: %+v", rs)
		}
		if j := s.Job(finished.ID); j != nil {
			t.Fatalf("its job is still %s", j.State)
		}
	})
}

// TestWorkAlreadyOnTheBranchIsPublished: a run that finds nothing new to
// commit on a branch already ahead of its base publishes the branch. That
// is the run of a task requeued after its first attempt committed and died
// before the commit was recorded (kill -9 between the two); a restarted
// task whose run writes the same files again takes the same path.
func TestWorkAlreadyOnTheBranchIsPublished(t *testing.T) {
	s := stack(t, db.SQLite, "process")
	p, bare := s.Project(true, nil)
	task := s.Task(p.ID, "echo same > SAME.md", tasks.TaskConfig{})
	first := s.Wait(task.ID, tasks.StatusDonePR, tasks.StatusDone, tasks.StatusFailed)
	if first.Status != tasks.StatusDonePR {
		t.Fatalf("first run: %s %s", first.Status, first.Error)
	}
	if _, err := s.Tasks.Restart(context.Background(), s.WS, task.ID); err != nil {
		t.Fatal(err)
	}
	s.WaitFor(task.ID, `"reason":"restarted"`)
	again := s.Wait(task.ID, tasks.StatusDonePR, tasks.StatusDone, tasks.StatusFailed)
	if again.Status != tasks.StatusDonePR || again.PR == nil || again.PR.Commit != first.PR.Commit || again.PR.FilesChanged != 1 {
		t.Fatalf("the run with nothing new: %s, pr %+v: %s\n%s", again.Status, again.PR, again.Error, fixture.DumpEvents(s.Events(task.ID)))
	}
	if got := agenttest.Git(t, bare, "show", again.PR.Commit+":SAME.md"); got != "same" {
		t.Fatalf("SAME.md on the pushed branch = %q", got)
	}
	if !strings.Contains(fixture.DumpEvents(s.Events(task.ID)), `"committed_before":true`) {
		t.Fatalf("the commit event does not say it was there before:\n%s", fixture.DumpEvents(s.Events(task.ID)))
	}
}

// TestSecretsNeverReachEvents: credentials and keys printed by an agent are
// redacted before storage.
func TestSecretsNeverReachEvents(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const token, llmKey = "tok-SUPERSECRET-4242", "sk-instance-key-77"
		s := stack(t, e, "process", func(c *fixture.StackConfig) { c.Tasks.LLMKey = llmKey })
		p, _ := s.Project(true, &projects.Credentials{Username: "bot", Token: token})
		task := s.Task(p.ID, "echo the token is "+token+"; echo '{\"type\":\"message\",\"text\":\"key "+llmKey+"\"}'; echo "+token+" >&2; exit 1", tasks.TaskConfig{})
		got := s.Wait(task.ID, tasks.StatusFailed)
		all := fixture.DumpEvents(s.Events(task.ID)) + got.Error
		for _, sec := range []string{token, llmKey} {
			if strings.Contains(all, sec) {
				t.Fatalf("%q reached the events:\n%s", sec, all)
			}
		}
		if !strings.Contains(all, redact.Redacted) {
			t.Fatalf("nothing was redacted, so the agent's output went missing:\n%s", all)
		}
	})
}

// TestLLMTask: the built-in llm agent edits the repository through a local
// OpenAI-compatible server that scripts its tool calls; without any key the
// task fails at once saying so.
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

	s := stack(t, db.SQLite, "process")
	key := "sk-profile-key-123"
	name, typ, base, model := "tester", "llm", srv.URL+"/v1", "m"
	if _, err := s.Projects.CreateProfile(context.Background(), s.WS, projects.ProfileInput{Name: &name, AgentType: &typ, BaseURL: &base, Model: &model, APIKey: &key}); err != nil {
		t.Fatal(err)
	}
	p, bare := s.Project(true, nil)
	task := s.Task(p.ID, "Add a greeting file.", tasks.TaskConfig{}, "tester")
	got := s.Wait(task.ID, tasks.StatusDonePR, tasks.StatusFailed)
	if got.Status != tasks.StatusDonePR {
		t.Fatalf("%s %q\n%s", got.Status, got.Error, fixture.DumpEvents(s.Events(task.ID)))
	}
	if c := agenttest.Git(t, bare, "show", got.PR.Commit+":GREETING.md"); c != "Hello from the agent" {
		t.Fatalf("GREETING.md = %q", c)
	}
	evs := fixture.DumpEvents(s.Events(task.ID))
	for _, want := range []string{`"type":"tool_call"`, `"type":"tool_result"`, `"type":"cost"`} {
		if !strings.Contains(strings.ReplaceAll(evs, " ", ""), want) {
			t.Fatalf("events lack %s:\n%s", want, evs)
		}
	}
	if strings.Contains(evs, key) {
		t.Fatal("the profile's key reached the events")
	}

	// The seeded coder profile has no key and the instance none either: the
	// task fails at once, before any agent or network call.
	start := time.Now()
	nokey := s.Task(p.ID, "Do something.", tasks.TaskConfig{}, "coder")
	got = s.Wait(nokey.ID, tasks.StatusFailed, tasks.StatusDone, tasks.StatusDonePR)
	if got.Status != tasks.StatusFailed || got.Error != "no API key for profile coder: give the profile an api_key or set LLM_PROVIDER_API_KEY" {
		t.Fatalf("keyless llm task = %s %q", got.Status, got.Error)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the keyless task took %s to fail", d)
	}
	if types := fixture.Types(s.Events(nokey.ID)); slices.Contains(types, workport.EventGit) {
		t.Fatalf("the keyless task prepared a worktree: %v", types)
	}
}

// TestDockerLimitsReachTheContainer inspects a running task's container:
// every AGENT_* limit, the instance label, the worktree and agent mounts.
func TestDockerLimitsReachTheContainer(t *testing.T) {
	s := stack(t, db.SQLite, "docker")
	p, _ := s.Project(true, nil)
	task := s.Task(p.ID, "echo started; sleep 60", tasks.TaskConfig{})
	s.WaitFor(task.ID, "started")
	cli, err := client.New(client.WithHost(agenttest.DockerHost(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", worker.LabelTask+"="+task.ID)})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("containers of the task: %d, %v", len(list.Items), err)
	}
	got, err := cli.ContainerInspect(ctx, list.Items[0].ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, lim := got.Container.HostConfig, s.Cfg.Worker.Limits
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
		{"instance label", got.Container.Config.Labels[executor.InstanceLabel], s.Cfg.Worker.ID},
		{"job label", got.Container.Config.Labels[worker.LabelJob] != "", true},
		{"image", got.Container.Config.Image, agenttest.TestImage},
		{"workdir", got.Container.Config.WorkingDir, worker.WorkspacePath},
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
	if rw, ok := mounts[worker.WorkspacePath]; !ok || !rw {
		t.Errorf("worktree mount: present=%v rw=%v", ok, rw)
	}
	if rw, ok := mounts[worker.AgentPath]; !ok || rw {
		t.Errorf("agent binary mount: present=%v rw=%v (want read-only)", ok, rw)
	}
	if _, err := s.Tasks.Cancel(ctx, s.WS, task.ID, nil); err != nil {
		t.Fatal(err)
	}
	assertNoContainers(t, s, task.ID)
}

// TestDockerWithoutImage: no image configured anywhere fails the task with
// a message that says so.
func TestDockerWithoutImage(t *testing.T) {
	s := stack(t, db.SQLite, "docker", func(c *fixture.StackConfig) { c.Tasks.DefaultImage = fixture.NoImage })
	p, _ := s.Project(true, nil)
	task := s.Task(p.ID, "true", tasks.TaskConfig{})
	if got := s.Wait(task.ID, tasks.StatusFailed); !strings.Contains(got.Error, "no agent image is configured") {
		t.Fatalf("error = %q", got.Error)
	}
	// An image that is not there (no registry is reachable) is just as clear.
	s2 := stack(t, db.SQLite, "docker", func(c *fixture.StackConfig) { c.Tasks.DefaultImage = "slipway-no-such-image:1" })
	p2, _ := s2.Project(true, nil)
	task2 := s2.Task(p2.ID, "true", tasks.TaskConfig{})
	if got := s2.Wait(task2.ID, tasks.StatusFailed); !strings.Contains(got.Error, "not found locally") {
		t.Fatalf("error = %q", got.Error)
	}
}

// TestOutputBounded: an agent that prints past its run's limits has its
// output stored up to them, one output_truncated event, and its work goes
// on to the end (the commit after the flood is there); a line longer than
// the line limit is stored in pieces; on both databases.
func TestOutputBounded(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		s := stack(t, e, "process", func(c *fixture.StackConfig) {
			c.Worker.Output = worker.OutputLimits{Bytes: 256 << 10, Lines: 2000, Line: 1000}
		})
		p, bare := s.Project(true, nil)
		// One line of 2,500 characters, then 10,000 lines (about 1 MB),
		// then a change to commit.
		prompt := "head -c 2500 /dev/zero | tr '\\0' x; echo\n" +
			"i=0; while [ $i -lt 10000 ]; do echo \"line $i of the flood, padded to about a hundred bytes ................................\"; i=$((i+1)); done\n" +
			"echo after the flood >> README.md"
		task := s.Task(p.ID, prompt, tasks.TaskConfig{})
		done := s.Wait(task.ID, tasks.StatusDonePR, tasks.StatusFailed)
		evs := s.Events(task.ID)
		if done.Status != tasks.StatusDonePR {
			t.Fatalf("status %s: %s", done.Status, done.Error)
		}
		if got := agenttest.Git(t, bare, "show", done.PR.Commit+":README.md"); got != "hello\nafter the flood" {
			t.Fatalf("the work after the flood: README = %q", got)
		}
		var truncated, logs, bytes, pieces int
		for _, ev := range evs {
			switch ev.EventType {
			case worker.EventOutputTruncated:
				truncated++
			case workport.EventLog:
				logs++
				bytes += len(ev.Payload)
				var v struct {
					Line string `json:"line"`
				}
				json.Unmarshal(ev.Payload, &v)
				if len(v.Line) > 1000 {
					t.Fatalf("a stored line of %d bytes", len(v.Line))
				}
				if strings.Trim(v.Line, "x") == "" && v.Line != "" {
					pieces += len(v.Line)
				}
			}
		}
		if truncated != 1 || bytes > 256<<10 || logs > 2000 || logs < 1000 {
			t.Fatalf("%d output_truncated events, %d log events of %d bytes stored", truncated, logs, bytes)
		}
		if pieces != 2500 {
			t.Fatalf("the long line was stored as %d characters in pieces, want 2500", pieces)
		}
	})
}
