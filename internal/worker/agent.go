package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/executor"
	"slipway/internal/platform/redact"
	"slipway/internal/repo"
	"slipway/internal/workport"
)

// In-container paths.
const (
	WorkspacePath = "/workspace"
	AgentPath     = "/usr/local/bin/slipway"
)

// Labels every agent carries besides the instance label.
const (
	LabelTask = "service.task"
	LabelRun  = "service.run"
	LabelJob  = "service.job"
)

var errTimeout = errors.New("timeout")

// execution is one assignment being worked on.
type execution struct {
	w      *Worker
	a      workport.Assignment
	cancel context.CancelCauseFunc
	nudge  chan struct{} // the agent's inbox has lines: renew the lease now to get them

	mu    sync.Mutex
	input *agentInput // the running agent's stdin, nil while none runs
	after int64       // the last inbox line handed to the agent
}

// agentInput feeds inbox lines to a running agent's stdin, in order, from
// one goroutine (a slow reader never blocks the lease renewals).
type agentInput struct {
	ch     chan []byte
	closed bool
}

func newExecution(w *Worker, a workport.Assignment, cancel context.CancelCauseFunc) *execution {
	return &execution{w: w, a: a, cancel: cancel, nudge: make(chan struct{}, 1), after: a.InboxAfter}
}

// poke asks for a lease renewal now (new inbox lines).
func (e *execution) poke() {
	select {
	case e.nudge <- struct{}{}:
	default:
	}
}

// delivered is the last inbox line handed to the agent.
func (e *execution) delivered() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.after
}

// deliver hands inbox lines to the running agent. Lines that cannot be
// handed over now (no agent runs yet, its queue is full) come again with
// the next renewal.
func (e *execution) deliver(lines []workport.InboxLine) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.input == nil {
		return
	}
	for _, l := range lines {
		if l.Seq <= e.after {
			continue
		}
		select {
		case e.input.ch <- append(append([]byte(nil), l.Line...), '\n'):
			e.after = l.Seq
		default:
			return
		}
	}
}

func (e *execution) attach(in *agentInput) {
	e.mu.Lock()
	if !in.closed {
		e.input = in
	}
	e.mu.Unlock()
	e.poke() // lines posted before the agent started
}

func (e *execution) detach(in *agentInput) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.input == in {
		e.input = nil
	}
	if !in.closed {
		in.closed = true
		close(in.ch)
	}
}

func (e *execution) run(ctx context.Context) {
	a, w := e.a, e.w
	ctx, span := e.startSpan(ctx)
	defer span.End()
	// What the work reports goes under its span, also once ctx ended (a
	// cancel, a shutdown: the result still has to be told).
	report := context.WithoutCancel(ctx)
	log := w.log.With("job_id", a.Lease.JobID, "run_id", a.Lease.RunID)
	if w.cfg.Admit != nil {
		if err := w.cfg.Admit(ctx, a.Lease.WorkspaceID); err != nil {
			log.Warn("work refused", "err", err)
			r := workport.Result{Outcome: workport.Failed, Error: err.Error()}
			ended(span, r)
			w.finish(report, a.Lease, r)
			return
		}
	}
	var secrets []string
	var cleanup func(context.Context) error
	var do func(context.Context, *eventWriter, *redact.Redactor) workport.Result
	switch {
	case a.Work == workport.WorkAgent && a.Agent != nil:
		secrets, do = a.Agent.Secrets, e.agent
		if a.Resume != nil {
			do = e.resume
		}
		// The worktree goes before the lease is given back: once it is, the
		// work may be claimed again (here too) and get a worktree at the
		// same path.
		cleanup = func(ctx context.Context) error { return w.git.RemoveWorktree(ctx, a.Agent.ProjectID, a.Agent.TaskID) }
	case a.Work == workport.WorkScript && a.Script != nil:
		secrets, do = a.Script.Secrets, e.script
		cleanup = func(context.Context) error {
			if e.a.Lease.RunID == "" {
				return nil // held work without a run: nothing was written
			}
			return os.RemoveAll(e.scratch())
		}
	default:
		log.Error("assignment of an unknown kind of work", "work", a.Work)
		r := workport.Result{Outcome: workport.Failed, Error: fmt.Sprintf("this worker cannot do %q work", a.Work)}
		ended(span, r)
		w.finish(report, a.Lease, r)
		return
	}
	red := redact.New(secrets...)
	var after int64
	if a.Resume != nil {
		after = a.Resume.BatchSeq
	}
	events := newEventWriter(report, w.port, a.Lease, red, after, w.cfg.Output)
	defer context.AfterFunc(ctx, events.abandon)()

	keepCtx, stopKeeping := context.WithCancel(untraced(ctx))
	go e.keepLease(keepCtx)

	started := time.Now()
	r := do(ctx, events, red)
	stopKeeping()
	if err := events.Close(); err != nil {
		log.Error("some events could not be stored", "err", err)
	}
	if err := cleanup(context.WithoutCancel(ctx)); err != nil {
		log.Warn("cleaning up after the work failed", "err", err)
	}
	ended(span, r)
	if events.Lost() || errors.Is(context.Cause(ctx), causeLeaseLost) {
		log.Warn("the work's lease was lost (rescued or closed elsewhere); its result is not reported")
		return
	}
	w.finish(report, a.Lease, r)
	log.Info("work ended", "work", a.Work, "outcome", r.Outcome, "backend", w.backend.Name(),
		"duration", time.Since(started).Round(time.Millisecond))
}

// keepLease extends the lease while the work runs and stops the work when
// the hub says so. The first renewal, at once, tells the hub the work is
// here (started). A worker that cannot renew for a whole lease stops the
// work itself: the hub has given it up by then (never a zombie).
func (e *execution) keepLease(ctx context.Context) {
	// Four renewals per lease: a renewal delayed by a busy machine or a slow
	// database still comes well before the lease runs out.
	every := max(e.a.TTL/4, 200*time.Millisecond)
	if e.a.TTL <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	renewed := time.Now()
	for {
		d, err := e.w.port.Extend(ctx, e.a.Lease, e.delivered())
		switch {
		case errors.Is(err, workport.ErrLeaseLost):
			e.cancel(causeLeaseLost)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			e.w.log.Warn("extending a lease failed", "job_id", e.a.Lease.JobID, "err", err)
			if e.a.TTL > 0 && time.Since(renewed) > e.a.TTL {
				e.w.log.Error("the lease could not be renewed for its whole term; stopping the work", "job_id", e.a.Lease.JobID)
				e.cancel(causeLeaseLost)
				return
			}
		case d.Cancel:
			renewed = time.Now()
			e.cancel(causeCancelled)
		default:
			renewed = time.Now()
			e.deliver(d.Inbox)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-e.nudge:
		}
	}
}

func gitMessage(doing string, err error) string {
	var ge *repo.Error
	if errors.As(err, &ge) {
		return doing + " failed: " + ge.Output
	}
	return doing + " failed: " + err.Error()
}

// remote is where an agent's work is fetched from and pushed to.
func remote(a *workport.AgentWork) repo.Remote {
	return repo.Remote{URL: strings.TrimPrefix(a.Repo.URL, "file://"), Username: a.Repo.Username, Token: a.Repo.Token,
		SSHPrivateKey: a.Repo.SSHPrivateKey}
}

func failed(red *redact.Redactor, format string, args ...any) workport.Result {
	return workport.Result{Outcome: workport.Failed, Error: red.Text(fmt.Sprintf(format, args...))}
}

// agent prepares the worktree, runs the agent and publishes its work.
func (e *execution) agent(ctx context.Context, ev *eventWriter, red *redact.Redactor) workport.Result {
	w, a := e.w, e.a.Agent
	if w.backend.Name() != "process" && a.Image == "" {
		return failed(red, "no agent image is configured: set SERVICE_AGENT_IMAGE, the project's agent_image or the profile's image")
	}
	if err := w.git.Sync(ctx, a.ProjectID, remote(a)); err != nil {
		return failed(red, "%s", gitMessage("fetching the repository", err))
	}
	wt, err := w.git.AddWorktree(ctx, a.ProjectID, a.TaskID, a.Repo.Branch, a.Repo.DefaultBranch)
	if err != nil {
		return failed(red, "%s", gitMessage("preparing the worktree", err))
	}
	ev.AddValue(workport.EventGit, map[string]any{"action": "worktree", "branch": a.Repo.Branch, "base": a.Repo.DefaultBranch})
	if w.cfg.AgentBinary == "" {
		return failed(red, "no statically linked slipway binary to mount into the agent container: build with CGO_ENABLED=0 or set SERVICE_AGENT_BINARY")
	}

	labels := map[string]string{LabelTask: a.TaskID, LabelRun: e.a.Lease.RunID, LabelJob: e.a.Lease.JobID}
	for k, v := range w.cfg.Labels {
		labels[k] = v
	}
	spec := executor.Spec{Name: "slipway-" + shortID(e.a.Lease.RunID), Image: a.Image, AgentType: a.Start.AgentType, Command: []string{AgentPath, "agent"},
		Mounts:  []executor.Mount{{Source: wt, Target: WorkspacePath}, {Source: w.cfg.AgentBinary, Target: AgentPath, ReadOnly: true}},
		WorkDir: WorkspacePath, Limits: w.cfg.Limits, Labels: labels, Env: a.Env}
	start := a.Start
	start.Type = protocol.InStart
	start.WorkDir = WorkspacePath
	start.Redact = a.EnvSecrets
	for k := range a.Env {
		start.EnvKeys = append(start.EnvKeys, k)
	}
	if pm, ok := w.backend.(executor.PathMapper); ok {
		start.WorkDir = pm.AgentPath(spec, WorkspacePath)
	}

	feed, err := json.Marshal(start)
	if err != nil {
		return failed(red, "encoding the start line: %v", err)
	}
	runCtx, stop := context.WithTimeoutCause(ctx, a.Timeout, errTimeout)
	defer stop()
	var result *protocol.Result
	code, _, runErr := e.runProcess(runCtx, spec, append(feed, '\n'), ev, func(line []byte, stopping bool) {
		if len(line) == 0 || line[0] != '{' {
			// Plain output (most of a flood): straight to the log, in pieces
			// of the line limit.
			ev.Line("", line)
			return
		}
		pe := protocol.ParseLine(line)
		if pe.Type == protocol.OutResult {
			if stopping {
				// A result printed while the worker stops the agent is no
				// result of the work (it would mark the run as finished
				// work, never to run again): a log line.
				ev.Line("", line)
				return
			}
			var res protocol.Result
			if json.Unmarshal(pe.Payload, &res) == nil {
				result = &res
			}
		}
		if pe.Type == workport.EventLog {
			ev.Line("", line) // plain output: in pieces of the line limit
			return
		}
		ev.Add(pe.Type, pe.Payload)
	})
	if r, ok := stopped(ctx, runCtx, ev, code, a.Timeout, "agent"); ok {
		return r
	}
	switch {
	case runErr != nil:
		return workport.Result{Outcome: workport.Failed, ExitCode: code, Error: red.Text(runErr.Error())}
	case result == nil:
		return workport.Result{Outcome: workport.Failed, ExitCode: code, Error: fmt.Sprintf("the agent exited with code %d without a result", deref(code))}
	case result.Status != protocol.ResultSuccess || deref(code) != 0:
		msg := firstNonEmpty(result.Error, result.Summary, fmt.Sprintf("the agent reported failure (exit code %d)", deref(code)))
		return workport.Result{Outcome: workport.Failed, ExitCode: code, Error: red.Text(msg)}
	}
	r := e.publish(ctx, ev, red, false)
	r.ExitCode = code
	return r
}

// publish commits what the agent changed, pushes the branch and measures
// the change. A branch ahead of its base with nothing new to commit is
// pushed too (pushing what the remote has is a no-op). resumed: an earlier
// process of this worker may have committed the work already and died
// before pushing it, or even removed the worktree after publishing.
func (e *execution) publish(ctx context.Context, ev *eventWriter, red *redact.Redactor, resumed bool) workport.Result {
	w, a := e.w, e.a.Agent
	var sha string
	var changed bool
	if _, err := os.Stat(w.git.WorktreePath(a.TaskID)); err == nil || !resumed {
		if sha, changed, err = w.git.Commit(ctx, a.ProjectID, a.TaskID, a.CommitMessage, workport.AuthorName, workport.AuthorEmail); err != nil {
			return failed(red, "%s", gitMessage("committing the agent's work", err))
		}
	}
	// A resumed run logs each step once: what the log shows was done before
	// the restart is done again (a no-op) without a second event.
	var logged []string
	if resumed && e.a.Resume != nil {
		logged = e.a.Resume.Logged
	}
	if !changed {
		// Nothing new to commit, yet the branch may hold the work: an
		// earlier attempt that committed and died before its commit was
		// recorded (a requeued run writes the same files again), or an
		// agent that committed itself. A branch ahead of its base is
		// published.
		head, ahead, err := w.git.Ahead(ctx, a.ProjectID, a.Repo.DefaultBranch, a.Repo.Branch)
		if err != nil {
			return failed(red, "%s", gitMessage("reading the branch", err))
		}
		if ahead > 0 {
			sha, changed = head, true
			if !slices.Contains(logged, "commit") {
				ev.AddValue(workport.EventGit, map[string]any{"action": "commit", "changed": true, "commit": sha, "committed_before": true})
			}
		}
	} else {
		ev.AddValue(workport.EventGit, map[string]any{"action": "commit", "changed": true, "commit": sha})
	}
	if !changed {
		ev.AddValue(workport.EventGit, map[string]any{"action": "commit", "changed": false})
		return workport.Result{Outcome: workport.Succeeded}
	}
	if err := w.git.Push(ctx, a.ProjectID, remote(a), a.Repo.Branch); err != nil {
		return failed(red, "%s", gitMessage("pushing the branch", err))
	}
	if !slices.Contains(logged, "push") {
		ev.AddValue(workport.EventGit, map[string]any{"action": "push", "branch": a.Repo.Branch})
	}
	files, ins, del, err := w.git.DiffStat(ctx, a.ProjectID, a.Repo.DefaultBranch, a.Repo.Branch)
	if err != nil {
		return failed(red, "%s", gitMessage("measuring the change", err))
	}
	return workport.Result{Outcome: workport.Succeeded, Change: &workport.Change{Commit: sha, FilesChanged: files, Insertions: ins, Deletions: del}}
}

// resume finishes work whose worker stopped under it: an agent that ended
// with a recorded result is never run again; its work is published from
// the worktree it left. Work without a result is reported interrupted (the
// hub runs it again or gives up).
func (e *execution) resume(ctx context.Context, ev *eventWriter, red *redact.Redactor) workport.Result {
	res, a := e.a.Resume, e.a.Agent
	if len(res.Result) == 0 {
		return workport.Result{Outcome: workport.Interrupted, Error: "the server running this task stopped"}
	}
	if res.Recovered {
		ev.AddValue(workport.EventLog, map[string]string{"line": "the agent ended while its server was down; its result was read back from the agent's container"})
		ev.Add(protocol.OutResult, res.Result)
	}
	var pr protocol.Result
	if err := json.Unmarshal(res.Result, &pr); err != nil {
		return workport.Result{Outcome: workport.Failed, ExitCode: res.ExitCode, Error: "the agent's recorded result cannot be read: " + err.Error()}
	}
	if pr.Status != protocol.ResultSuccess || (res.ExitCode != nil && *res.ExitCode != 0) {
		msg := firstNonEmpty(pr.Error, pr.Summary, "the agent reported failure")
		return workport.Result{Outcome: workport.Failed, ExitCode: res.ExitCode, Error: red.Text(msg)}
	}
	if _, err := os.Stat(e.w.git.WorktreePath(a.TaskID)); err != nil {
		// The worktree goes only after publishing: the server stopped
		// between that and reporting. What was committed is on the branch.
		ev.AddValue(workport.EventLog, map[string]string{"line": "the server restarted after publishing the agent's work; reporting it"})
	} else {
		ev.AddValue(workport.EventLog, map[string]string{"line": "the server restarted after the agent finished; publishing its work"})
	}
	r := e.publish(ctx, ev, red, true)
	r.ExitCode = res.ExitCode
	return r
}

// stopped is the result of work whose process the worker stopped: at its
// time limit (runCtx's), or because the work was cancelled, the worker is
// shutting down or the lease was lost (ctx's cause).
func stopped(ctx, runCtx context.Context, ev *eventWriter, code *int, timeout time.Duration, what string) (workport.Result, bool) {
	switch {
	case errors.Is(context.Cause(runCtx), errTimeout):
		ev.AddValue(workport.EventTimeout, map[string]any{"timeout_seconds": int(timeout / time.Second)})
		return workport.Result{Outcome: workport.TimedOut, ExitCode: code, TimeoutSeconds: int(timeout / time.Second),
			Error: fmt.Sprintf("timed out after %s; the %s was stopped", timeout, what)}, true
	case errors.Is(context.Cause(ctx), causeCancelled):
		return workport.Result{Outcome: workport.Cancelled, ExitCode: code}, true
	case errors.Is(context.Cause(ctx), causeShutdown):
		return workport.Result{Outcome: workport.ShutDown, ExitCode: code, Error: "the server shut down while the " + what + " ran"}, true
	case errors.Is(context.Cause(ctx), causeLeaseLost):
		return workport.Result{Outcome: workport.Interrupted, ExitCode: code, Error: "the lease was lost"}, true
	}
	return workport.Result{}, false
}

// runProcess starts spec, writes feed to its stdin (which stays open until
// it exits: an agent reads control lines from it), hands every stdout line
// to out (stopping: the worker is stopping it) and logs its stderr lines,
// and waits for it; it stops the process when ctx ends. out is called from
// one goroutine. stderr is the last line the process wrote there.
func (e *execution) runProcess(ctx context.Context, spec executor.Spec, feed []byte, ev *eventWriter, out func(line []byte, stopping bool)) (code *int, stderr string, err error) {
	h, err := e.w.backend.Start(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if err := h.Kill(context.Background()); err != nil {
			e.w.log.Warn("removing an agent failed", "agent", h.ID(), "err", err)
		}
	}()
	fed := make(chan error, 1)
	in := &agentInput{ch: make(chan []byte, 64)}
	go func() {
		var err error
		if len(feed) > 0 {
			_, err = h.Stdin().Write(feed)
		}
		fed <- err
		if err == nil && len(feed) > 0 {
			e.attach(in) // an agent: it reads control lines after its start line
		}
		for line := range in.ch {
			if err == nil {
				_, err = h.Stdin().Write(line)
			}
		}
	}()

	var (
		wg   sync.WaitGroup
		errs [2]error
		// stopping is set once the worker stops the process.
		stopping atomic.Bool
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = protocol.Lines(h.Stdout(), func(line []byte) error {
			out(line, stopping.Load())
			return nil
		})
	}()
	go func() {
		defer wg.Done()
		errs[1] = protocol.Lines(h.Stderr(), func(line []byte) error {
			ev.Line("stderr", line)
			if t := strings.TrimSpace(string(line)); t != "" {
				stderr = t
			}
			return nil
		})
	}()

	exited := make(chan struct{})
	var exit int
	var waitErr error
	go func() {
		exit, waitErr = h.Wait(context.Background())
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		stopping.Store(true)
		if err := h.Kill(context.Background()); err != nil {
			e.w.log.Warn("stopping an agent failed", "agent", h.ID(), "err", err)
		}
		<-exited
	}
	e.detach(in)
	if err := h.Stdin().Close(); err != nil {
		e.w.log.Debug("closing the agent's stdin", "agent", h.ID(), "err", err)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			e.w.log.Warn("reading the agent's output", "agent", h.ID(), "err", err)
		}
	}
	if waitErr != nil {
		return nil, stderr, fmt.Errorf("waiting for the agent: %w", waitErr)
	}
	select {
	case err := <-fed:
		if err != nil && exit != 0 {
			return &exit, stderr, fmt.Errorf("sending the start line to the agent: %w", err)
		}
	default:
	}
	return &exit, stderr, nil
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func shortID(id string) string {
	// UUIDv7 ids share their leading timestamp digits; the tail is random.
	if len(id) >= 8 {
		return id[len(id)-8:]
	}
	return id
}
