package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/executor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/projects"
	"slipway/internal/repo"
)

// ExecConfig is what running an agent on this server needs.
type ExecConfig struct {
	// AgentBinary is a statically linked slipway binary, mounted read-only
	// into agent containers as AgentPath ("" when none is available: the
	// docker backend then cannot run built-in agents).
	AgentBinary  string
	DefaultImage string // SERVICE_AGENT_IMAGE
	LLMKey       string // LLM_PROVIDER_API_KEY
	Limits       executor.Limits
	Labels       map[string]string
	// ExtraSecrets are redacted from every event (instance-wide keys).
	ExtraSecrets []string
}

// In-container paths.
const (
	WorkspacePath = "/workspace"
	AgentPath     = "/usr/local/bin/slipway"
)

// Commit identity of agent work.
const (
	AuthorName  = "Slipway Agent"
	AuthorEmail = "agent@slipway.invalid"
)

// outcome is how an execution ended.
type outcome struct {
	status   string // task status to move to
	runState string
	exitCode *int
	err      string // for the task's error field
	pr       *PullRequest
}

// execute runs one claimed task to its end. It never returns an error: every
// failure becomes the task's failed status with a message and an event.
func (d *Dispatcher) execute(ctx context.Context, t *Task) {
	s := d.svc
	now := s.clock.Now()
	attempt, _ := countRuns(ctx, s.db.R, t.ID)
	run := &Run{ID: ids.New(), Kind: "task", Status: RunRunning, WorkspaceID: t.WorkspaceID, ProjectID: &t.ProjectID,
		TaskID: &t.ID, Attempt: attempt + 1, Backend: d.backend.Name(), CreatedAt: now}
	if err := s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := insertRun(ctx, tx, run); err != nil {
			return err
		}
		return s.event(ctx, tx, t.ID, &run.ID, EventStatus, statusPayload(StatusQueued, StatusRunning, "claimed by "+d.cfg.Owner))
	}); err != nil {
		d.log.Error("starting a run failed", "task_id", t.ID, "err", err)
		d.finish(ctx, t, run, outcome{status: StatusFailed, runState: RunFailed, err: "could not record the run: " + err.Error()}, nil)
		return
	}

	timeout := d.cfg.DefaultTimeout
	if t.Config.TimeoutMinutes > 0 {
		timeout = time.Duration(t.Config.TimeoutMinutes) * time.Minute
	}
	runCtx, cancelTimeout := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancelTimeout()

	// The lease keeps the task ours while it runs; a cancel made through
	// another replica shows up here as the task's status.
	leaseCtx, stopLease := context.WithCancel(ctx)
	defer stopLease()
	go d.keepLease(leaseCtx, t.ID)

	r, o := d.prepareAndRun(runCtx, t, run, timeout)
	d.finish(ctx, t, run, o, r)
}

var errTimeout = errors.New("timeout")

func (d *Dispatcher) keepLease(ctx context.Context, taskID string) {
	tick := time.NewTicker(min(d.cfg.Lease/3, 5*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			status, err := renewLease(ctx, d.svc.db.W, taskID, d.cfg.Owner, d.svc.clock.Now().Add(d.cfg.Lease))
			if err != nil {
				if ctx.Err() == nil {
					d.log.Warn("renewing a task lease failed", "task_id", taskID, "err", err)
				}
				continue
			}
			if status == StatusCancelled {
				d.kill(taskID)
			}
		}
	}
}

// prepareAndRun does the git work and runs the agent; it returns the
// project (nil if it never got that far) and the outcome.
func (d *Dispatcher) prepareAndRun(ctx context.Context, t *Task, run *Run, timeout time.Duration) (*projects.Repository, outcome) {
	s := d.svc
	fail := func(format string, args ...any) outcome {
		return outcome{status: StatusFailed, runState: RunFailed, err: fmt.Sprintf(format, args...)}
	}
	r, err := s.projects.Repository(ctx, t.WorkspaceID, t.ProjectID)
	if err != nil {
		return nil, fail("the project cannot be read: %v", err)
	}
	profile, err := s.projects.ProfileByName(ctx, t.WorkspaceID, t.AgentProfile)
	if err != nil {
		return r, fail("%v", err)
	}
	redact := NewRedactor(d.secrets(r, profile))
	log := newEventLog(s.db, s.clock, t.ID, &run.ID, redact)
	defer log.Close()

	image := firstNonEmpty(profile.Image, r.Project.AgentImage, d.cfg.Exec.DefaultImage)
	if d.backend.Name() != "process" && image == "" {
		return r, fail("no agent image is configured: set SERVICE_AGENT_IMAGE, the project's agent_image or the profile's image")
	}
	log.AddValue(EventRun, map[string]any{"run_id": run.ID, "attempt": run.Attempt, "backend": d.backend.Name(), "image": image,
		"agent_profile": profile.Name, "agent_type": profile.AgentType})

	remote := remoteOf(r)
	if err := d.git.Sync(ctx, r.Project.ID, remote); err != nil {
		return r, fail("%s", redact.Text(gitMessage("fetching the repository", err)))
	}
	wt, err := d.git.AddWorktree(ctx, r.Project.ID, t.ID, t.Branch, r.Project.DefaultBranch)
	if err != nil {
		return r, fail("%s", redact.Text(gitMessage("preparing the worktree", err)))
	}
	log.AddValue(EventGit, map[string]any{"action": "worktree", "branch": t.Branch, "base": r.Project.DefaultBranch})

	if d.cfg.Exec.AgentBinary == "" {
		return r, fail("no statically linked slipway binary to mount into the agent container: build with CGO_ENABLED=0 or set SERVICE_AGENT_BINARY")
	}
	mounts := []executor.Mount{{Source: wt, Target: WorkspacePath}, {Source: d.cfg.Exec.AgentBinary, Target: AgentPath, ReadOnly: true}}
	labels := map[string]string{"service.task": t.ID, "service.run": run.ID}
	for k, v := range d.cfg.Exec.Labels {
		labels[k] = v
	}
	spec := executor.Spec{Name: "slipway-" + shortID(run.ID), Image: image, Command: []string{AgentPath, "agent"},
		Mounts: mounts, WorkDir: WorkspacePath, Limits: d.cfg.Exec.Limits, Labels: labels}

	apiKey := profile.APIKey
	if apiKey == "" {
		apiKey = d.cfg.Exec.LLMKey
	}
	model := firstNonEmpty(t.Config.Model, profile.Model)
	workdir := WorkspacePath
	if pm, ok := d.backend.(executor.PathMapper); ok {
		workdir = pm.AgentPath(spec, WorkspacePath)
	}
	start := protocol.Start{Type: protocol.InStart, AgentType: profile.AgentType, Prompt: t.Prompt, Instructions: profile.Instructions,
		Model: model, Effort: t.Config.Effort, BaseURL: profile.BaseURL, APIKey: apiKey, CommandTemplate: profile.CommandTemplate,
		WorkDir: workdir}

	code, result, runErr := d.runAgent(ctx, spec, start, log)
	switch {
	case context.Cause(ctx) == errTimeout:
		log.AddValue(EventTimeout, map[string]any{"timeout_seconds": int(timeout / time.Second)})
		return r, outcome{status: StatusFailed, runState: RunFailed, exitCode: code, err: fmt.Sprintf("timed out after %s; the agent was stopped", timeout)}
	case errors.Is(context.Cause(ctx), causeCancelled):
		return r, outcome{status: StatusCancelled, runState: RunCancelled, exitCode: code, err: ""}
	case errors.Is(context.Cause(ctx), causeShutdown):
		return r, outcome{status: StatusQueued, runState: RunCancelled, exitCode: code, err: "the server shut down while the agent ran; it runs again"}
	case runErr != nil:
		return r, outcome{status: StatusFailed, runState: RunFailed, exitCode: code, err: redact.Text(runErr.Error())}
	case result == nil:
		return r, outcome{status: StatusFailed, runState: RunFailed, exitCode: code, err: fmt.Sprintf("the agent exited with code %d without a result", deref(code))}
	case result.Status != protocol.ResultSuccess || deref(code) != 0:
		msg := firstNonEmpty(result.Error, result.Summary, fmt.Sprintf("the agent reported failure (exit code %d)", deref(code)))
		return r, outcome{status: StatusFailed, runState: RunFailed, exitCode: code, err: redact.Text(msg)}
	}

	// Success: commit what changed, push the branch, record the proposal.
	msg := t.Title + "\n\nTask: " + t.ID + "\nAgent profile: " + profile.Name
	sha, changed, err := d.git.Commit(ctx, r.Project.ID, t.ID, msg, AuthorName, AuthorEmail)
	if err != nil {
		return r, fail("%s", redact.Text(gitMessage("committing the agent's work", err)))
	}
	if !changed {
		log.AddValue(EventGit, map[string]any{"action": "commit", "changed": false})
		return r, outcome{status: StatusDone, runState: RunSucceeded, exitCode: code}
	}
	log.AddValue(EventGit, map[string]any{"action": "commit", "changed": true, "commit": sha})
	if err := d.git.Push(ctx, r.Project.ID, remote, t.Branch); err != nil {
		return r, fail("%s", redact.Text(gitMessage("pushing the branch", err)))
	}
	log.AddValue(EventGit, map[string]any{"action": "push", "branch": t.Branch})
	files, ins, del, err := d.git.DiffStat(ctx, r.Project.ID, r.Project.DefaultBranch, t.Branch)
	if err != nil {
		return r, fail("%s", redact.Text(gitMessage("measuring the change", err)))
	}
	pr := &PullRequest{Provider: projects.ProviderLocal, Branch: t.Branch, Base: r.Project.DefaultBranch, Commit: sha,
		FilesChanged: files, Insertions: ins, Deletions: del}
	status := StatusDone
	if r.Project.Autodev {
		opened := s.clock.Now()
		pr.OpenedAt = &opened
		status = StatusDonePR
	}
	return r, outcome{status: status, runState: RunSucceeded, exitCode: code, pr: pr}
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

func gitMessage(doing string, err error) string {
	var ge *repo.Error
	if errors.As(err, &ge) {
		return doing + " failed: " + ge.Output
	}
	if errors.Is(err, repo.ErrNoBranch) {
		return doing + " failed: " + err.Error()
	}
	return doing + " failed: " + err.Error()
}

func remoteOf(r *projects.Repository) repo.Remote {
	return repo.Remote{URL: strings.TrimPrefix(r.Project.RepoURL, "file://"), Username: r.Credentials.Username,
		Token: r.Credentials.Token, SSHPrivateKey: r.Credentials.SSHPrivateKey}
}

// secrets are what must never reach stored events.
func (d *Dispatcher) secrets(r *projects.Repository, p *projects.ResolvedProfile) []string {
	out := append([]string{}, d.cfg.Exec.ExtraSecrets...)
	out = append(out, r.Credentials.Secrets()...)
	if p.APIKey != "" {
		out = append(out, p.APIKey)
	}
	if d.cfg.Exec.LLMKey != "" {
		out = append(out, d.cfg.Exec.LLMKey)
	}
	return out
}

// runAgent starts the agent, feeds it the start line, turns its output into
// events and waits for it. It stops the agent when ctx ends.
func (d *Dispatcher) runAgent(ctx context.Context, spec executor.Spec, start protocol.Start, log *eventLog) (*int, *protocol.Result, error) {
	h, err := d.backend.Start(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	defer h.Kill(context.Background())
	b, err := json.Marshal(start)
	if err != nil {
		return nil, nil, err
	}
	go func() {
		// The agent reads further control lines from stdin; it stays open
		// until the agent exits (approvals and interventions come later).
		h.Stdin().Write(append(b, '\n'))
	}()

	var (
		mu     sync.Mutex
		result *protocol.Result
		wg     sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		protocol.Lines(h.Stdout(), func(line []byte) error {
			ev := protocol.ParseLine(line)
			if ev.Type == protocol.OutResult {
				var res protocol.Result
				if json.Unmarshal(ev.Payload, &res) == nil {
					mu.Lock()
					result = &res
					mu.Unlock()
				}
			}
			log.Add(ev.Type, ev.Payload)
			return nil
		})
	}()
	go func() {
		defer wg.Done()
		protocol.Lines(h.Stderr(), func(line []byte) error {
			log.AddValue(protocol.OutLog, map[string]string{"stream": "stderr", "line": string(line)})
			return nil
		})
	}()

	exited := make(chan struct{})
	var code int
	var waitErr error
	go func() {
		code, waitErr = h.Wait(context.Background())
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		h.Kill(context.Background())
		<-exited
	}
	h.Stdin().Close()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if waitErr != nil {
		return nil, result, fmt.Errorf("waiting for the agent: %w", waitErr)
	}
	return &code, result, nil
}

// finish records the outcome: the run, the task's status (compare-and-set
// from running, so a cancel that won keeps its status), the pull request and
// the closing event; then it removes the worktree.
func (d *Dispatcher) finish(ctx context.Context, t *Task, run *Run, o outcome, r *projects.Repository) {
	s := d.svc
	ctx = context.WithoutCancel(ctx)
	now := s.clock.Now()
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := finishRun(ctx, tx, run.ID, o.runState, o.exitCode, o.err, now); err != nil {
			return err
		}
		cur, err := getTaskAnyWorkspace(ctx, tx, t.ID)
		if err != nil {
			return err
		}
		if !Active(cur.Status) {
			return nil // cancelled (or rescued) meanwhile: that decision stands
		}
		if o.pr != nil {
			b, err := json.Marshal(o.pr)
			if err != nil {
				return err
			}
			if err := updateTaskFields(ctx, tx, t.WorkspaceID, t.ID, map[string]any{"pr": string(b)}, now); err != nil {
				return err
			}
			if err := s.event(ctx, tx, t.ID, &run.ID, EventPR, o.pr); err != nil {
				return err
			}
		}
		if o.status == StatusFailed && o.err != "" {
			if err := s.event(ctx, tx, t.ID, &run.ID, EventError, map[string]string{"message": o.err}); err != nil {
				return err
			}
		}
		if _, err := setStatus(ctx, tx, t.ID, cur.Status, o.status, o.err, now); err != nil {
			return err
		}
		return s.event(ctx, tx, t.ID, &run.ID, EventStatus, statusPayload(cur.Status, o.status, o.err))
	})
	if err != nil {
		d.log.Error("recording a task's end failed", "task_id", t.ID, "err", err)
	} else {
		d.log.Info("task run ended", "task_id", t.ID, "run_id", run.ID, "attempt", run.Attempt, "backend", run.Backend,
			"status", o.status, "duration", now.Sub(run.CreatedAt).Round(time.Millisecond))
	}
	if r != nil {
		d.git.RemoveWorktree(ctx, r.Project.ID, t.ID)
	}
	if o.status == StatusQueued {
		d.Wake()
	}
}
