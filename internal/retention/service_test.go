package retention_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/retention"
)

// rig inserts the rows of runs, tasks, workflow runs and scripts directly
// (as their services leave them), with times from a fake clock.
type rig struct {
	t       testing.TB
	db      *db.DB
	clock   *clock.Fake
	ws      string // a workspace
	project string
	flow    string // a workflow
	script  string // a saved script; its runs write to its log
	q       db.Queryer
	logSeq  map[string]int
	runSeq  map[string]int
	// graph, graphID: workflow runs carry their graph, or name a stored
	// version of it (migration 00016).
	graph, graphID bool
}

var now = time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)

func newRig(t testing.TB, e db.Engine) *rig {
	t.Helper()
	d := dbtest.New(t, e)
	r := &rig{t: t, db: d, clock: clock.NewFake(now), ws: ids.New(), q: d.W, logSeq: map[string]int{}, runSeq: map[string]int{}}
	org := ids.New()
	r.project, r.flow, r.script = ids.New(), ids.New(), ids.New()
	r.exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", org, now)
	r.exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3)", r.ws, org, now)
	r.exec(`INSERT INTO projects (id, workspace_id, name, repo_url, default_branch, provider, created_at, updated_at)
		VALUES ($1, $2, 'p', 'file:///repo', 'main', 'local', $3, $3)`, r.project, r.ws, now)
	r.exec(`INSERT INTO workflows (id, workspace_id, project_id, name, graph, created_at, updated_at) VALUES ($1, $2, $3, 'w', $4, $5, $5)`,
		r.flow, r.ws, r.project, []byte(`{"nodes":[],"edges":[]}`), now)
	r.exec(`INSERT INTO scripts (id, workspace_id, name, slug, language, source, version, created_at, updated_at)
		VALUES ($1, $2, 's', 's', 'sh', 'echo', 1, $3, $3)`, r.script, r.ws, now)
	r.log(r.script)
	_, err := d.W.Exec("SELECT graph FROM workflow_runs WHERE 1 = 0")
	r.graph = err == nil
	_, err = d.W.Exec("SELECT graph_id FROM workflow_runs WHERE 1 = 0")
	r.graphID = err == nil
	return r
}

// tx runs fn with every insert of the rig in one transaction (bulk data).
func (r *rig) tx(fn func()) {
	r.t.Helper()
	err := r.db.Tx(context.Background(), func(tx *db.Tx) error {
		r.q = tx
		defer func() { r.q = r.db.W }()
		fn()
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) exec(query string, args ...any) {
	r.t.Helper()
	if _, err := r.q.ExecContext(context.Background(), query, args...); err != nil {
		r.t.Fatalf("%s: %v", strings.Fields(query)[0:3], err)
	}
}

func (r *rig) count(query string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.db.W.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *rig) log(id string) {
	r.t.Helper()
	r.exec("INSERT INTO event_logs (id, workspace_id, created_at) VALUES ($1, $2, $3)", id, r.ws, now)
}

// ago is a time d before the clock's start.
func ago(d time.Duration) *time.Time {
	t := now.Add(-d)
	return &t
}

const day = 24 * time.Hour

// run inserts a run: finished (status succeeded, failed, cancelled) at
// finished, or running when finished is nil.
func (r *rig) run(kind, log, task, parent string, finished *time.Time, status ...string) string {
	r.t.Helper()
	id := ids.New()
	st := "running"
	created := now.Add(-time.Hour)
	if finished != nil {
		st, created = "succeeded", finished.Add(-time.Hour)
	}
	if len(status) > 0 {
		st = status[0]
	}
	r.exec(`INSERT INTO runs (id, workspace_id, log_id, kind, status, project_id, task_id, parent_run_id, attempt, created_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10)`, id, r.ws, log, kind, st, r.project, nullable(task), nullable(parent), created, finished)
	return id
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// events appends n events to a log, as written by run (none: the log's
// own), each with a payload of about size bytes.
func (r *rig) events(log, run string, n, size int) {
	r.t.Helper()
	payload := `{"line":"` + strings.Repeat("x", size) + `"}`
	for range n {
		r.logSeq[log]++
		var runID, runSeq any
		if run != "" {
			r.runSeq[run]++
			runID, runSeq = run, r.runSeq[run]
		}
		r.exec(`INSERT INTO run_events (id, log_id, log_seq, run_id, run_seq, event_type, payload, created_at) VALUES ($1, $2, $3, $4, $5, 'log', $6, $7)`,
			ids.New(), log, r.logSeq[log], runID, runSeq, payload, now)
	}
}

// task inserts a task in status, finished at finished, with parent as its
// parent task ("": none), and its log.
func (r *rig) task(status string, finished *time.Time, parent string) string {
	r.t.Helper()
	id := ids.New()
	r.exec(`INSERT INTO tasks (id, workspace_id, project_id, title, prompt, agent_profile, status, created_at, updated_at, finished_at, parent_task_id)
		VALUES ($1, $2, $3, 't', 'p', 'shell', $4, $5, $5, $6, $7)`, id, r.ws, r.project, status, now.Add(-90*day), finished, nullable(parent))
	r.log(id)
	return id
}

// workflowRun inserts a workflow run in status (finished at finished) with
// its runs row and its log, and returns the run's id and its log's.
func (r *rig) workflowRun(status string, finished *time.Time) (id, log string) {
	r.t.Helper()
	log = ids.New()
	r.log(log)
	runStatus := map[string]string{"queued": "running", "running": "running"}[status]
	if runStatus == "" {
		runStatus = status
	}
	id = r.run("workflow", log, "", "", finished, runStatus)
	cols, vals, args := "", "", []any{id, r.ws, r.project, r.flow, log, status, now.Add(-90 * day), finished}
	if r.graph {
		cols, vals, args = ", graph", ", $9", append(args, []byte(`{"nodes":[],"edges":[]}`))
	}
	if r.graphID { // a version's id; no key ties it to one
		cols, vals, args = cols+", graph_id", vals+", $"+strconv.Itoa(len(args)+1), append(args, ids.New())
	}
	r.exec(`INSERT INTO workflow_runs (id, workspace_id, project_id, workflow_id, log_id, status, input, trigger_data, created_at, finished_at,
		updated_at`+cols+`) VALUES ($1, $2, $3, $4, $5, $6, 'null', 'null', $7, $8, $7`+vals+`)`, args...)
	return id, log
}

func (r *rig) nodeRun(run, key, status, task string) {
	r.t.Helper()
	r.exec(`INSERT INTO node_runs (id, run_id, node_key, kind, status, task_id, seq, created_at) VALUES ($1, $2, $3, 'code', $4, $5, 1, $6)`,
		ids.New(), run, key, status, nullable(task), now)
}

func (r *rig) exists(table, col, id string) bool {
	r.t.Helper()
	return r.count("SELECT COUNT(*) FROM "+table+" WHERE "+col+" = $1", id) > 0
}

func (r *rig) pass(s *retention.Service) retention.Pruned {
	r.t.Helper()
	p, err := s.Pass(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// TestPrune: old finished runs of each kind go with their events (a
// workflow run with its node runs, child runs and log; a script run; a
// finished task's runs, the task and its own events staying); recent ones,
// running ones and old ones that live work still needs stay, until the
// clock moves past them too.
func TestPrune(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newRig(t, e)
		old, recent := ago(40*day), ago(5*day)

		// Workflow runs.
		wOld, wOldLog := r.workflowRun("succeeded", old)
		child := r.run("script", wOldLog, "", wOld, old, "failed")
		r.nodeRun(wOld, "a", "succeeded", "")
		r.nodeRun(wOld, "b", "failed", "")
		r.events(wOldLog, wOld, 3, 10)
		r.events(wOldLog, child, 4, 10)
		wRecent, wRecentLog := r.workflowRun("failed", recent)
		r.events(wRecentLog, wRecent, 2, 10)
		wRunning, wRunningLog := r.workflowRun("running", nil)
		r.events(wRunningLog, wRunning, 2, 10)
		wQueued, _ := r.workflowRun("queued", nil)
		wLiveChild, wLiveChildLog := r.workflowRun("cancelled", old)
		liveChild := r.run("script", wLiveChildLog, "", wLiveChild, nil) // its code job still runs
		r.events(wLiveChildLog, liveChild, 2, 10)
		wOldChild, wOldChildLog := r.workflowRun("succeeded", old)
		recentChild := r.run("script", wOldChildLog, "", wOldChild, recent)
		liveTask := r.task("running", nil, "")
		wLiveTask, _ := r.workflowRun("failed", old)
		r.nodeRun(wLiveTask, "agent", "cancelled", liveTask) // its task did not stop
		wJob, wJobLog := r.workflowRun("succeeded", old)
		jobChild := r.run("script", wJobLog, "", wJob, old) // old, but its parent stays
		r.exec(`INSERT INTO jobs (id, kind, workspace_id, ref_id, state, max_attempts, run_at, created_at)
			VALUES ($1, 'workflow_run', $2, $3, 'running', 3, $4, $4)`, ids.New(), r.ws, wJob, now)

		// Runs today's code does not make, which a cascade would take
		// along: a running run on a workflow run's log that is not its
		// child, and a running child on another log.
		wStranger, wStrangerLog := r.workflowRun("succeeded", old)
		stranger := r.run("script", wStrangerLog, "", "", nil)
		wFarChild, _ := r.workflowRun("succeeded", old)
		farChild := r.run("script", r.script, "", wFarChild, nil)
		wUnsettled, _ := r.workflowRun("failed", old)
		r.nodeRun(wUnsettled, "gate", "waiting", "")

		// Standalone script runs.
		sOld := r.run("script", r.script, "", "", old)
		r.events(r.script, sOld, 5, 10)
		sRecent := r.run("script", r.script, "", "", recent)
		r.events(r.script, sRecent, 1, 10)
		sRunning := r.run("script", r.script, "", "", nil)

		// Tasks.
		tOld := r.task("done_pr", old, "")
		r.events(tOld, "", 2, 10) // the task's own: created, queued
		tOldRuns := []string{r.run("task", tOld, tOld, "", ago(41*day), "failed"), r.run("task", tOld, tOld, "", old)}
		r.events(tOld, tOldRuns[0], 3, 10)
		r.events(tOld, tOldRuns[1], 3, 10)
		tCancelled := r.task("cancelled", old, "")
		tCancelledRun := r.run("task", tCancelled, tCancelled, "", old, "cancelled")
		tParentRun := r.task("done", old, "")
		parentRun := r.run("task", tParentRun, tParentRun, "", old) // a run with a child (none has one today)
		childOfRun := r.run("script", tParentRun, "", parentRun, nil)
		tRecent := r.task("failed", recent, "")
		tRecentRun := r.run("task", tRecent, tRecent, "", old, "failed") // an old attempt of a task that ended lately
		tRestarted := r.task("queued", nil, "")
		tRestartedRun := r.run("task", tRestarted, tRestarted, "", old)
		r.events(tRestarted, tRestartedRun, 2, 10)
		tWaiting := r.task("needs_input", nil, "")
		tWaitingRun := r.run("task", tWaiting, tWaiting, "", old, "failed")
		parent := r.task("running", nil, "")
		tSubtask := r.task("done", old, parent)
		tSubtaskRun := r.run("task", tSubtask, tSubtask, "", old)
		wWaits, _ := r.workflowRun("running", nil)
		tWaitedOn := r.task("done", old, "")
		tWaitedOnRun := r.run("task", tWaitedOn, tWaitedOn, "", old)
		r.nodeRun(wWaits, "agent", "waiting", tWaitedOn)

		eventsBefore := r.count("SELECT COUNT(*) FROM run_events")
		s := retention.New(r.db, r.clock, 30, nil)
		p := r.pass(s)
		want := retention.Pruned{WorkflowRuns: 1, NodeRuns: 2, ChildRuns: 1, ScriptRuns: 1, TaskRuns: 3, Events: 3 + 4 + 5 + 3 + 3}
		p.FreedPages = 0
		if p != want {
			t.Errorf("pruned %+v, want %+v", p, want)
		}
		if got := r.count("SELECT COUNT(*) FROM run_events"); got != eventsBefore-int(want.Events) {
			t.Errorf("%d events left of %d, want %d", got, eventsBefore, eventsBefore-int(want.Events))
		}

		gone := map[string][2]string{
			"old workflow run":            {"workflow_runs", wOld},
			"its runs row":                {"runs", wOld},
			"its child run":               {"runs", child},
			"its node runs":               {"node_runs/run_id", wOld},
			"its log":                     {"event_logs", wOldLog},
			"its events":                  {"run_events/log_id", wOldLog},
			"old script run":              {"runs", sOld},
			"old script run's events":     {"run_events/run_id", sOld},
			"old task's runs":             {"runs", tOldRuns[0]},
			"old task's second run":       {"runs", tOldRuns[1]},
			"old task's runs' events":     {"run_events/run_id", tOldRuns[1]},
			"old cancelled task's run":    {"runs", tCancelledRun},
			"old task's first run events": {"run_events/run_id", tOldRuns[0]},
		}
		kept := map[string][2]string{
			"recent workflow run":                 {"workflow_runs", wRecent},
			"recent workflow run's events":        {"run_events/log_id", wRecentLog},
			"running workflow run":                {"workflow_runs", wRunning},
			"running workflow run's events":       {"run_events/log_id", wRunningLog},
			"queued workflow run":                 {"workflow_runs", wQueued},
			"workflow run with a running child":   {"workflow_runs", wLiveChild},
			"its running child":                   {"runs", liveChild},
			"its running child's events":          {"run_events/run_id", liveChild},
			"workflow run with a recent child":    {"workflow_runs", wOldChild},
			"its recent child":                    {"runs", recentChild},
			"workflow run whose task still runs":  {"workflow_runs", wLiveTask},
			"its node run":                        {"node_runs/run_id", wLiveTask},
			"workflow run with a live job":        {"workflow_runs", wJob},
			"old child of a kept workflow run":    {"runs", jobChild},
			"workflow run with a stranger":        {"workflow_runs", wStranger},
			"the stranger on its log":             {"runs", stranger},
			"workflow run with a far child":       {"workflow_runs", wFarChild},
			"its far child":                       {"runs", farChild},
			"workflow run with a node to settle":  {"workflow_runs", wUnsettled},
			"an old run with a child":             {"runs", parentRun},
			"its child":                           {"runs", childOfRun},
			"recent script run":                   {"runs", sRecent},
			"recent script run's events":          {"run_events/run_id", sRecent},
			"running script run":                  {"runs", sRunning},
			"the script's log":                    {"event_logs", r.script},
			"old task":                            {"tasks", tOld},
			"old task's log":                      {"event_logs", tOld},
			"old task's own events":               {"run_events/log_id", tOld},
			"old run of a recently ended task":    {"runs", tRecentRun},
			"old run of a restarted task":         {"runs", tRestartedRun},
			"its events":                          {"run_events/run_id", tRestartedRun},
			"old run of a task waiting for input": {"runs", tWaitingRun},
			"old run of a live task's subtask":    {"runs", tSubtaskRun},
			"old run of a task a node waits on":   {"runs", tWaitedOnRun},
		}
		check := func(what map[string][2]string, want bool) {
			t.Helper()
			for name, w := range what {
				table, col, _ := strings.Cut(w[0], "/")
				if col == "" {
					col = "id"
				}
				if got := r.exists(table, col, w[1]); got != want {
					t.Errorf("%s: present %v, want %v", name, got, want)
				}
			}
		}
		check(gone, false)
		check(kept, true)
		if n := r.count("SELECT COUNT(*) FROM run_events WHERE log_id = $1 AND run_id IS NULL", tOld); n != 2 {
			t.Errorf("the old task keeps %d of its own events, want 2", n)
		}

		// A second pass finds nothing more; thirty days on, the recent
		// ones have aged too.
		if p := r.pass(s); p.Runs() != 0 || p.Events != 0 {
			t.Errorf("second pass pruned %+v", p)
		}
		r.clock.Advance(30 * day)
		p = r.pass(s)
		if p.WorkflowRuns != 2 || p.ScriptRuns != 1 || p.TaskRuns != 1 { // wRecent and wOldChild; sRecent; tRecentRun
			t.Errorf("a month later pruned %+v", p)
		}
		for name, id := range map[string]string{"recent workflow run": wRecent, "workflow run with a recent child": wOldChild,
			"recent child": recentChild, "recent script run": sRecent, "recently ended task's run": tRecentRun} {
			if r.exists("runs", "id", id) {
				t.Errorf("a month later the %s is still there", name)
			}
		}
		for name, id := range map[string]string{"running child": liveChild, "running script run": sRunning, "restarted task's run": tRestartedRun,
			"live subtask's run": tSubtaskRun, "waited-on task's run": tWaitedOnRun} {
			if !r.exists("runs", "id", id) {
				t.Errorf("a month later the %s is gone", name)
			}
		}
	})
}

// TestZeroKeepsForever: SERVICE_RUN_RETENTION_DAYS=0 prunes nothing,
// however old.
func TestZeroKeepsForever(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newRig(t, e)
		old := ago(3650 * day)
		w, wLog := r.workflowRun("succeeded", old)
		r.events(wLog, w, 2, 10)
		sc := r.run("script", r.script, "", "", old)
		r.events(r.script, sc, 2, 10)
		task := r.task("done", old, "")
		tr := r.run("task", task, task, "", old)
		r.events(task, tr, 2, 10)
		p := r.pass(retention.New(r.db, r.clock, 0, nil))
		if p != (retention.Pruned{}) {
			t.Errorf("pruned %+v", p)
		}
		if n := r.count("SELECT COUNT(*) FROM runs"); n != 3 {
			t.Errorf("%d runs left, want 3", n)
		}
		if n := r.count("SELECT COUNT(*) FROM run_events"); n != 6 {
			t.Errorf("%d events left, want 6", n)
		}
		// The same rows go with a retention.
		if p := r.pass(retention.New(r.db, r.clock, 1, nil)); p.Runs() != 3 || p.Events != 6 {
			t.Errorf("with a day's retention pruned %+v", p)
		}
	})
}

// TestBatches: a backlog larger than one batch of runs, and than one chunk
// of events, goes in one pass.
func TestBatches(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		r := newRig(t, e)
		old := ago(60 * day)
		const scripts, flows, tasks = 1201, 501, 502
		var keep string
		r.tx(func() {
			for range scripts {
				r.events(r.script, r.run("script", r.script, "", "", old), 5, 1)
			}
			for range flows {
				w, log := r.workflowRun("succeeded", old)
				r.events(log, w, 1, 1)
			}
			for range tasks {
				task := r.task("done", old, "")
				r.events(task, r.run("task", task, task, "", old), 1, 1)
			}
			keep = r.run("script", r.script, "", "", ago(day))
		})
		p := r.pass(retention.New(r.db, r.clock, 30, nil))
		want := retention.Pruned{WorkflowRuns: flows, ScriptRuns: scripts, TaskRuns: tasks, Events: 5*scripts + flows + tasks}
		p.FreedPages = 0
		if p != want {
			t.Errorf("pruned %+v, want %+v", p, want)
		}
		if n := r.count("SELECT COUNT(*) FROM runs"); n != 1 || !r.exists("runs", "id", keep) {
			t.Errorf("%d runs left, want only the recent one", n)
		}
		if n := r.count("SELECT COUNT(*) FROM run_events"); n != 0 {
			t.Errorf("%d events left", n)
		}
		if n := r.count("SELECT COUNT(*) FROM workflow_runs"); n != 0 {
			t.Errorf("%d workflow runs left", n)
		}
	})
}

// TestSQLiteGivesSpaceBack: after pruning megabytes of events the SQLite
// file shrinks (auto_vacuum=INCREMENTAL, incremental_vacuum after the
// pass), once the WAL is checkpointed.
func TestSQLiteGivesSpaceBack(t *testing.T) {
	r := newRig(t, db.SQLite)
	task := r.task("failed", ago(31*day), "")
	run := r.run("task", task, task, "", ago(31*day), "failed")
	r.tx(func() { r.events(task, run, 4000, 2000) }) // about 8 MB
	size := func() int64 {
		t.Helper()
		if _, err := r.db.W.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(r.db.Target.Path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	if before < 8<<20 {
		t.Fatalf("the database is only %d bytes", before)
	}
	p := r.pass(retention.New(r.db, r.clock, 30, nil))
	after := size()
	t.Logf("%d bytes before, %d after; %d pages freed", before, after, p.FreedPages)
	if p.Events != 4000 || p.FreedPages == 0 {
		t.Errorf("pruned %+v", p)
	}
	if after > before-6<<20 {
		t.Errorf("the file went from %d to %d bytes: the space was not given back", before, after)
	}
}

// TestGivesWayToLocks: on PostgreSQL a pass that meets a run locked by
// another transaction (a user deleting its task) gives up after a short
// wait instead of holding on, and prunes it at a later pass.
func TestGivesWayToLocks(t *testing.T) {
	dbtest.RequirePostgres(t)
	r := newRig(t, db.Postgres)
	task := r.task("done", ago(40*day), "")
	run := r.run("task", task, task, "", ago(40*day))
	r.events(task, run, 3, 10)
	ctx := context.Background()
	user, err := r.db.W.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer user.Rollback() //nolint:errcheck // released below, or at the end
	if _, err := user.ExecContext(ctx, "SELECT id FROM runs WHERE id = $1 FOR UPDATE", run); err != nil {
		t.Fatal(err)
	}
	s := retention.New(r.db, r.clock, 30, nil)
	start := time.Now()
	bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := s.Pass(bounded); err == nil {
		t.Error("a pass over a locked run succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the pass waited %s for the lock", d)
	}
	if !r.exists("runs", "id", run) || r.count("SELECT COUNT(*) FROM run_events WHERE run_id = $1", run) != 3 {
		t.Error("the locked run lost rows")
	}
	if err := user.Rollback(); err != nil {
		t.Fatal(err)
	}
	if p := r.pass(s); p.TaskRuns != 1 || p.Events != 3 {
		t.Errorf("once the lock went, pruned %+v", p)
	}
}
