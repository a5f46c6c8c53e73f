package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/approvals"
	"slipway/internal/dispatch"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/projects"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// The lifecycle of a task's run, as the dispatcher drives it: Start when a
// worker claims the task's job, Finish when the worker reports, Interrupted
// when the worker died or stopped. Each runs in the transaction that moves
// the job, so the task, its run, its events and the queue agree.

var _ dispatch.Handler = (*Service)(nil)

// Limits gives the caps of task jobs' concurrency keys inside the claim
// transaction: "workspace:<id>" (MAX_PARALLEL_TASKS_PER_WORKSPACE) and
// "project:<id>" (the project's max_concurrent_runs, unlimited when null).
func Limits(cfg Config, p Projects) jobs.Limits {
	workspaceCap := cfg.WorkspaceCap
	if workspaceCap <= 0 {
		workspaceCap = 3
	}
	return jobs.Limits{
		"workspace": func(context.Context, db.Queryer, string) (int, bool, error) { return workspaceCap, true, nil },
		"project": func(ctx context.Context, q db.Queryer, id string) (int, bool, error) {
			n, err := p.MaxConcurrentRuns(ctx, q, id)
			if err != nil || n == nil {
				return 0, false, err
			}
			return *n, true, nil
		},
	}
}

// work is what a run of a task needs, resolved from its project and
// profile; fail says why it cannot run.
type work struct {
	agent   *workport.AgentWork
	autodev bool
	fail    string
}

// failure is the message of an error that fails the task (what the task
// names is wrong or gone), rather than one a later attempt may not meet.
func failure(err error) (string, bool) {
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code != apperr.CodeDatabase && ae.Code != apperr.CodeInternal {
		return ae.Message, true
	}
	return "", false
}

// prepare resolves the project and profile of a task into agent work; q
// reads what the run's model needs (the claim's transaction, or the pool).
func (s *Service) prepare(ctx context.Context, q db.Queryer, t *Task) (*work, error) {
	r, err := s.projects.Repository(ctx, t.WorkspaceID, t.ProjectID)
	if errors.Is(err, apperr.ErrNotFound) {
		return &work{fail: "the project no longer exists"}, nil
	}
	if err != nil {
		if msg, ok := failure(err); ok {
			return &work{fail: "the project cannot be read: " + msg}, nil
		}
		return nil, err
	}
	profile, err := s.projects.ProfileByName(ctx, t.WorkspaceID, t.AgentProfile)
	if err != nil {
		if msg, ok := failure(err); ok {
			return &work{fail: msg}, nil
		}
		return nil, err
	}
	base, model, apiKey := profile.BaseURL, firstNonEmpty(t.Config.Model, profile.Model), profile.APIKey
	switch {
	case profile.AgentType != protocol.AgentLLM:
	case profile.ResourceID != "" && s.models == nil:
		return &work{fail: "agent profile " + profile.Name + " names a model resource, and this server has no resources"}, nil
	case profile.ResourceID != "":
		// The workspace's own model: its address and key, keyless when
		// it has none (a model server on the team's network).
		if base, model, apiKey, err = s.models.Model(ctx, q, t.WorkspaceID, profile.ResourceID, model); err != nil {
			if msg, ok := failure(err); ok {
				return &work{fail: "agent profile " + profile.Name + ": " + msg}, nil
			}
			return nil, err
		}
	case apiKey == "" && strings.TrimRight(base, "/") == s.cfg.LLMBase:
		// The instance's key goes to its one provider and nowhere else.
		if apiKey = s.cfg.LLMKey; apiKey == "" {
			return &work{fail: fmt.Sprintf("no API key for profile %s: give the profile an api_key or set LLM_PROVIDER_API_KEY", profile.Name)}, nil
		}
	case apiKey == "":
		return &work{fail: fmt.Sprintf("no API key for profile %s: give the profile an api_key or an openai_compatible resource (LLM_PROVIDER_API_KEY is sent only to %s)", profile.Name, s.cfg.LLMBase)}, nil
	}
	var ask []string
	if s.autonomy != nil {
		level, err := s.autonomy.AutonomyLevel(ctx, t.WorkspaceID)
		if err != nil {
			return nil, err
		}
		ask = approvals.AskTools(profile.AgentType, level)
	}
	timeout := s.cfg.DefaultTimeout
	if t.Config.TimeoutMinutes > 0 {
		timeout = time.Duration(t.Config.TimeoutMinutes) * time.Minute
	}
	secrets := r.Credentials.Secrets()
	for _, k := range []string{apiKey, s.cfg.LLMKey} {
		if k != "" {
			secrets = append(secrets, k)
		}
	}
	a := &workport.AgentWork{
		TaskID:    t.ID,
		ProjectID: t.ProjectID,
		Repo: workport.Repo{URL: r.Project.RepoURL, Username: r.Credentials.Username, Token: r.Credentials.Token,
			SSHPrivateKey: r.Credentials.SSHPrivateKey, DefaultBranch: r.Project.DefaultBranch, Branch: t.Branch},
		Image: firstNonEmpty(profile.Image, r.Project.AgentImage, s.cfg.DefaultImage),
		Start: protocol.Start{Type: protocol.InStart, AgentType: profile.AgentType, Prompt: t.Prompt, Instructions: profile.Instructions,
			Model: model, Effort: t.Config.Effort, BaseURL: base, APIKey: apiKey,
			CommandTemplate: profile.CommandTemplate, AskTools: ask},
		AgentProfile:  profile.Name,
		Timeout:       timeout,
		CommitMessage: t.Title + "\n\nTask: " + t.ID + "\nAgent profile: " + profile.Name,
		Secrets:       secrets,
	}
	return &work{agent: a, autodev: r.Project.Autodev}, nil
}

// Start implements dispatch.Handler: the task moves to running with a new
// run, inside the claim's transaction. A task that is no longer queued
// (cancelled, deleted) drops its job; one that cannot run (its profile or
// project is gone, no API key) fails at once with a run that says why.
func (s *Service) Start(ctx context.Context, tx *db.Tx, j *jobs.Job, w dispatch.WorkerInfo) (*workport.Assignment, error) {
	t, err := getTask(ctx, tx, j.WorkspaceID, j.Ref)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t.Status != StatusQueued || t.Held {
		return nil, nil
	}
	wk, err := s.prepare(ctx, tx, t)
	if err != nil {
		return nil, err
	}
	if _, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, StatusQueued, StatusRunning, ""); err != nil {
		return nil, err
	}
	run, err := s.runs.Start(ctx, tx, runs.NewRun{Kind: runs.KindTask, WorkspaceID: t.WorkspaceID, LogID: t.ID, ProjectID: t.ProjectID,
		TaskID: t.ID, JobID: j.ID, Backend: w.Backend})
	if err != nil {
		return nil, err
	}
	evs := []runs.NewEvent{s.value(EventStatus, statusPayload(StatusQueued, StatusRunning, "claimed by "+w.ID))}
	if wk.agent != nil {
		evs = append(evs, s.value(EventRun, map[string]any{"run_id": run.ID, "attempt": run.Attempt, "backend": w.Backend,
			"image": wk.agent.Image, "agent_profile": wk.agent.AgentProfile, "agent_type": wk.agent.Start.AgentType}))
	}
	if err := s.event(ctx, tx, t, run.ID, evs...); err != nil {
		return nil, err
	}
	if wk.fail != "" {
		t.Status = StatusRunning
		if err := s.end(ctx, tx, t, run.ID, StatusFailed, runs.Failed, nil, wk.fail); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return &workport.Assignment{
		Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: t.WorkspaceID, RunID: run.ID},
		Work:  workport.WorkAgent,
		Agent: wk.agent,
	}, nil
}

// Resume implements dispatch.Handler: the work of a job a restarted worker
// still holds, with what its run recorded.
func (s *Service) Resume(ctx context.Context, j *jobs.Job) (*workport.Assignment, error) {
	a := &workport.Assignment{Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID},
		Work: workport.WorkAgent, Agent: &workport.AgentWork{TaskID: j.Ref}, Resume: &workport.Resume{}}
	t, err := getTask(ctx, s.db.R, j.WorkspaceID, j.Ref)
	if errors.Is(err, apperr.ErrNotFound) {
		return a, nil // reported interrupted; the job goes away with nothing to run
	}
	if err != nil {
		return nil, err
	}
	a.Agent.ProjectID = t.ProjectID
	running, err := s.runs.Running(ctx, s.db.R, t.WorkspaceID, t.ID)
	if err != nil {
		return nil, err
	}
	for _, r := range running {
		if r.JobID == j.ID {
			a.Lease.RunID, a.Resume.BatchSeq, a.Resume.Result = r.ID, r.BatchSeq, r.Result
		}
	}
	if a.Lease.RunID != "" && len(a.Resume.Result) > 0 {
		// Publishing steps the run logged before its worker stopped.
		steps, err := s.runs.Payloads(ctx, s.db.R, t.WorkspaceID, a.Lease.RunID, workport.EventGit)
		if err != nil {
			return nil, err
		}
		for _, p := range steps {
			var step struct {
				Action  string `json:"action"`
				Changed *bool  `json:"changed"`
			}
			if json.Unmarshal(p, &step) == nil && (step.Action == "push" || (step.Action == "commit" && step.Changed != nil && *step.Changed)) {
				a.Resume.Logged = append(a.Resume.Logged, step.Action)
			}
		}
	}
	if wk, err := s.prepare(ctx, s.db.R, t); err == nil && wk.agent != nil {
		a.Agent = wk.agent
	}
	return a, nil
}

// outcomes maps a worker's outcome to the task's and the run's status.
var outcomes = map[string]struct{ task, run string }{
	workport.Succeeded: {StatusDone, runs.Succeeded},
	workport.Failed:    {StatusFailed, runs.Failed},
	workport.TimedOut:  {StatusFailed, runs.Failed},
	workport.Cancelled: {StatusCancelled, runs.Cancelled},
}

// Finish implements dispatch.Handler: the run ends and the task takes the
// outcome (done, done_pr with an automatic pull request, failed), unless a
// cancel decided first: that decision stands and only the run's exit code is
// kept.
func (s *Service) Finish(ctx context.Context, tx *db.Tx, j *jobs.Job, runID string, r workport.Result) error {
	o, ok := outcomes[r.Outcome]
	if !ok {
		return fmt.Errorf("tasks: unknown outcome %q", r.Outcome)
	}
	run, err := s.runs.Get(ctx, tx, j.WorkspaceID, runID)
	if err != nil {
		return err
	}
	if run.JobID != j.ID {
		return apperr.New(apperr.CodeConflict, "run %s is not the run of job %s", runID, j.ID)
	}
	t, err := getTask(ctx, tx, j.WorkspaceID, j.Ref)
	if err != nil {
		return err
	}
	if !Active(t.Status) || runs.Terminal(run.Status) {
		if !runs.Terminal(run.Status) {
			_, err := s.runs.Finish(ctx, tx, j.WorkspaceID, runID, o.run, r.ExitCode, r.Error)
			return err
		}
		if r.ExitCode != nil {
			return s.runs.SetExitCode(ctx, tx, j.WorkspaceID, runID, *r.ExitCode)
		}
		return nil
	}
	to := o.task
	if r.Change != nil {
		wk, err := s.projects.Repository(ctx, t.WorkspaceID, t.ProjectID)
		if err != nil {
			return err
		}
		pr := &PullRequest{Provider: wk.Project.Provider, State: PRProposed, Branch: t.Branch, Base: wk.Project.DefaultBranch, Commit: r.Change.Commit,
			FilesChanged: r.Change.FilesChanged, Insertions: r.Change.Insertions, Deletions: r.Change.Deletions}
		switch {
		case wk.Project.Autodev && wk.Project.Provider == projects.ProviderLocal:
			opened := s.clock.Now()
			pr.OpenedAt, pr.State = &opened, PROpen
			to = StatusDonePR
		case wk.Project.Autodev:
			// Opened on the forge once this commits (RunPRs): the task is
			// done, and done_pr when the forge has it.
			pr.State = PROpening
			if err := addPRAction(ctx, tx, t.WorkspaceID, t.ID, s.clock.Now()); err != nil {
				return err
			}
			tx.AfterCommit(s.KickPRs)
		}
		if _, err := setPR(ctx, tx, t.WorkspaceID, t.ID, pr, s.clock.Now()); err != nil {
			return err
		}
		if err := s.event(ctx, tx, t, runID, s.value(EventPR, pr)); err != nil {
			return err
		}
	}
	return s.end(ctx, tx, t, runID, to, o.run, r.ExitCode, r.Error)
}

// end moves a running task and its run to their final statuses with the
// closing events: error (when failed with a message), then status.
func (s *Service) end(ctx context.Context, tx *db.Tx, t *Task, runID, to, runStatus string, exit *int, errText string) error {
	if to == StatusFailed && errText != "" {
		if err := s.event(ctx, tx, t, runID, s.value(EventError, map[string]string{"message": errText})); err != nil {
			return err
		}
	}
	if _, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, t.Status, to, errText); err != nil {
		return err
	}
	if err := s.event(ctx, tx, t, runID, s.value(EventStatus, statusPayload(t.Status, to, errText))); err != nil {
		return err
	}
	_, err := s.runs.Finish(ctx, tx, t.WorkspaceID, runID, runStatus, exit, errText)
	return err
}

// Interrupted implements dispatch.Handler: the task's running run ends as
// failed with the reason and the task goes back to the queue, or fails when
// it was interrupted too often. A run whose agent had already reported its
// result is finished work and never runs again: the task fails saying the
// work was lost, and the job is cancelled.
func (s *Service) Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
	t, err := getTask(ctx, tx, j.WorkspaceID, j.Ref)
	if errors.Is(err, apperr.ErrNotFound) {
		_, err = s.queue.Cancel(ctx, tx, j.WorkspaceID, JobKind, j.Ref)
		return err
	}
	if err != nil {
		return err
	}
	running, err := s.runs.Running(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil {
		return err
	}
	var result *protocol.Result
	for _, r := range running {
		if len(r.Result) > 0 {
			var res protocol.Result
			if json.Unmarshal(r.Result, &res) == nil {
				result = &res
			}
		}
		if _, err := s.runs.Finish(ctx, tx, t.WorkspaceID, r.ID, runs.Failed, nil, reason); err != nil {
			return err
		}
	}
	if !Active(t.Status) {
		// Cancelled (or finished) meanwhile: nothing to run again.
		_, err := s.queue.Cancel(ctx, tx, t.WorkspaceID, JobKind, t.ID)
		return err
	}
	to, why := StatusQueued, reason+"; it runs again"
	switch {
	case result != nil && result.Status == protocol.ResultSuccess:
		to, why = StatusFailed, reason+" after the agent had finished, before its work was published; the work is lost (restart the task to run it again)"
	case result != nil:
		to, why = StatusFailed, firstNonEmpty(result.Error, result.Summary, "the agent reported failure")
	case final && j.Attempt < j.MaxAttempts:
		to, why = StatusFailed, reason // given up at once (a runner lost started work)
	case final:
		to, why = StatusFailed, reason+", and it has been interrupted this way too often"
	}
	errText := ""
	if to == StatusFailed {
		errText = why
	}
	if result != nil {
		// The agent ended: its run is finished work and never runs again.
		if _, err := s.queue.Cancel(ctx, tx, t.WorkspaceID, JobKind, t.ID); err != nil {
			return err
		}
	}
	if _, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, t.Status, to, errText); err != nil {
		return err
	}
	return s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(t.Status, to, why)))
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
