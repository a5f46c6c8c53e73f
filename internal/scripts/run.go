package scripts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"slipway/internal/dispatch"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// RunJob runs a script on its own (POST /api/scripts/{id}/run) through the
// worker port. A script's runs are runs of kind script on an event log
// named after the script.
const RunJob = "script_run"

// Standalone script runs: their time limit and attempts.
const (
	runTimeout     = 5 * time.Minute
	runMaxAttempts = 3
	maxInputBytes  = 1 << 20
	maxListedRuns  = 50
)

// ScriptRunInput is the body of a standalone run.
type ScriptRunInput struct {
	Input json.RawMessage `json:"input,omitempty" doc:"Any JSON: the script reads {input, script} from $SLIPWAY_INPUT"`
}

// ScriptRunStarted answers a run request: the run exists once a worker takes it.
type ScriptRunStarted struct {
	RunID   string `json:"run_id" format:"uuid"`
	Version int64  `json:"version" doc:"The revision that runs"`
}

// ScriptRun is one run of a script.
type ScriptRun struct {
	ID         string          `json:"id" format:"uuid"`
	Status     string          `json:"status" enum:"running,succeeded,failed,cancelled"`
	Version    int64           `json:"version"`
	Output     json.RawMessage `json:"output" nullable:"true" doc:"The last line the script printed, as JSON (a string when it was not JSON)"`
	ExitCode   *int            `json:"exit_code" nullable:"true"`
	Error      string          `json:"error"`
	Backend    string          `json:"backend"`
	Attempt    int             `json:"attempt"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at" nullable:"true"`
}

type runPayload struct {
	ScriptID string          `json:"script_id"`
	Version  int64           `json:"version"`
	Input    json.RawMessage `json:"input"`
	// Timeout bounds a call's run (Call); zero: runTimeout.
	Timeout time.Duration `json:"timeout_ns,omitempty"`
}

// result is what a script run's row keeps as its result.
type result struct {
	Version int64           `json:"version"`
	Output  json.RawMessage `json:"output,omitempty"`
}

// Run queues a run of the script's current revision with an input.
func (s *Service) Run(ctx context.Context, ws *actor.Workspace, id string, in ScriptRunInput) (*ScriptRunStarted, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("script")
	}
	input := in.Input
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if len(input) > maxInputBytes {
		return nil, apperr.BadRequest("input is larger than %d bytes", maxInputBytes)
	}
	out := &ScriptRunStarted{RunID: ids.New()}
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		sc, err := getScript(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		out.Version = sc.Version
		if err := s.runs.EnsureLog(ctx, tx, ws.ID, sc.ID); err != nil {
			return err
		}
		_, err = s.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: RunJob, WorkspaceID: ws.ID, Ref: out.RunID, MaxAttempts: runMaxAttempts,
			Payload: runPayload{ScriptID: sc.ID, Version: sc.Version, Input: input}})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Runs lists a script's recent runs, newest first.
func (s *Service) Runs(ctx context.Context, ws *actor.Workspace, id string) ([]ScriptRun, error) {
	if _, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	}
	rs, err := s.runs.OnLog(ctx, ws.ID, id, runs.KindScript, maxListedRuns)
	if err != nil {
		return nil, err
	}
	out := make([]ScriptRun, 0, len(rs))
	for _, r := range rs {
		sr := ScriptRun{ID: r.ID, Status: r.Status, ExitCode: r.ExitCode, Error: r.Error, Backend: r.Backend, Attempt: r.Attempt,
			CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
		var res result
		if json.Unmarshal(r.Result, &res) == nil {
			sr.Version, sr.Output = res.Version, res.Output
		}
		out = append(out, sr)
	}
	return out, nil
}

// Current is a script's current language and source (workflows' code
// nodes run it).
func (s *Service) Current(ctx context.Context, q db.Queryer, workspaceID, id string) (language, source string, err error) {
	if !ids.Valid(id) {
		return "", "", apperr.NotFound("script")
	}
	sc, err := getScript(ctx, q, workspaceID, id)
	if err != nil {
		return "", "", err
	}
	return sc.Language, sc.Source, nil
}

// Library reads a workspace's code library, mounted read-only into every
// script run ($SLIPWAY_LIB).
type Library interface {
	Library(ctx context.Context, q db.Queryer, workspaceID string) ([]workport.ScriptFile, error)
}

// Runner returns the dispatch handler of standalone script runs; lib (nil:
// none) gives them the workspace's code library.
func (s *Service) Runner(lib Library) dispatch.Handler { return runner{s: s, lib: lib} }

type runner struct {
	s   *Service
	lib Library
}

// Start implements dispatch.Handler: the run (with the id its request was
// answered with; a retry gets a new one) and the script's work, with the
// revision the request named. A script deleted meanwhile drops its job.
func (h runner) Start(ctx context.Context, tx *db.Tx, j *jobs.Job, w dispatch.WorkerInfo) (*workport.Assignment, error) {
	var p runPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, fmt.Errorf("scripts: payload of job %s: %w", j.ID, err)
	}
	rev, err := getRevision(ctx, tx, j.WorkspaceID, p.ScriptID, p.Version)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	id := j.Ref
	if j.Attempt > 1 {
		id = ids.New() // the first attempt's run keeps the id and says how it ended
	}
	run, err := h.s.runs.Start(ctx, tx, runs.NewRun{ID: id, Kind: runs.KindScript, WorkspaceID: j.WorkspaceID, LogID: p.ScriptID, JobID: j.ID,
		Backend: w.Backend})
	if err != nil {
		return nil, err
	}
	res, _ := json.Marshal(result{Version: p.Version})
	if err := h.s.runs.RecordResult(ctx, tx, j.WorkspaceID, run.ID, res); err != nil {
		return nil, err
	}
	input, _ := json.Marshal(map[string]any{"input": p.Input, "script": map[string]any{"id": p.ScriptID, "version": p.Version}})
	timeout := runTimeout
	if p.Timeout > 0 && p.Timeout < timeout {
		timeout = p.Timeout
	}
	var lib []workport.ScriptFile
	if h.lib != nil {
		if lib, err = h.lib.Library(ctx, tx, j.WorkspaceID); err != nil {
			return nil, err
		}
	}
	return &workport.Assignment{
		Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID, RunID: run.ID},
		Work:  workport.WorkScript,
		Script: &workport.ScriptWork{Language: rev.Language, Source: rev.Source, Library: lib, Input: input, Image: h.s.image, Timeout: timeout,
			Env: map[string]string{"SLIPWAY_RUN_ID": run.ID, "SLIPWAY_IDEMPOTENCY_KEY": j.Ref}},
	}, nil
}

// Resume implements dispatch.Handler: a script is not resumed; its worker
// reports it interrupted and it runs again.
func (h runner) Resume(ctx context.Context, j *jobs.Job) (*workport.Assignment, error) {
	a := &workport.Assignment{Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID},
		Work: workport.WorkScript, Script: &workport.ScriptWork{}, Resume: &workport.Resume{}}
	if r, err := h.running(ctx, h.s.db.R, j); err != nil {
		return nil, err
	} else if r != nil {
		a.Lease.RunID, a.Resume.BatchSeq = r.ID, r.BatchSeq
	}
	return a, nil
}

// running is the running run of a job, or nil.
func (h runner) running(ctx context.Context, q db.Queryer, j *jobs.Job) (*runs.Run, error) {
	var p runPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, fmt.Errorf("scripts: payload of job %s: %w", j.ID, err)
	}
	return h.s.runs.RunningOfJob(ctx, q, j.WorkspaceID, p.ScriptID, j.ID)
}

// Finish implements dispatch.Handler: the run ends with the script's
// outcome and keeps its output.
func (h runner) Finish(ctx context.Context, tx *db.Tx, j *jobs.Job, runID string, r workport.Result) error {
	status, ok := dispatch.RunStatus(r.Outcome)
	if !ok {
		return fmt.Errorf("scripts: unknown outcome %q", r.Outcome)
	}
	var p runPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return fmt.Errorf("scripts: payload of job %s: %w", j.ID, err)
	}
	res, _ := json.Marshal(result{Version: p.Version, Output: r.Output})
	if err := h.s.runs.RecordResult(ctx, tx, j.WorkspaceID, runID, res); err != nil {
		return err
	}
	_, err := h.s.runs.Finish(ctx, tx, j.WorkspaceID, runID, status, r.ExitCode, r.Error)
	return err
}

// Interrupted implements dispatch.Handler: the run ends failed with the
// reason; the job runs again unless this was its last attempt.
func (h runner) Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
	r, err := h.running(ctx, tx, j)
	if err != nil || r == nil {
		return err
	}
	_, err = h.s.runs.Finish(ctx, tx, j.WorkspaceID, r.ID, runs.Failed, nil, reason)
	return err
}
