package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"slipway/internal/dispatch"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
	"slipway/internal/runs"
	"slipway/internal/workport"
)

// CodeJob runs a code node's script through the worker port: the node
// waits on the job, a worker claims it as script work, and its finish
// records the node's outcome.
const CodeJob = "workflow_code"

// Code node defaults.
const (
	codeTimeout     = 5 * time.Minute
	codeMaxAttempts = 3 // a script whose worker died runs again, at most this often
)

type codePayload struct {
	RunID string `json:"run_id"`
}

// Scripts finds the saved scripts code nodes name (config.script_id).
type Scripts interface {
	// Current is a script's current language and source (ErrNotFound when
	// there is no such script in the workspace).
	Current(ctx context.Context, q db.Queryer, workspaceID, id string) (language, source string, err error)
}

// scriptOf is what a code node runs: its own source, a saved script, or a
// node type's script (a 400-class error when there is no such script or
// node type in the workspace).
func (e *Engine) scriptOf(ctx context.Context, q db.Queryer, workspaceID string, c CodeConfig) (language, source string, err error) {
	if c.Source != "" {
		return c.Language, c.Source, nil
	}
	if e.scripts == nil {
		return "", "", apperr.BadRequest("saved scripts are not available here: give the node its source")
	}
	scriptID := c.ScriptID
	if c.NodeType != "" {
		t, err := getNodeType(ctx, q, "workspace_id = $1 AND slug = $2", workspaceID, c.NodeType)
		if errors.Is(err, apperr.ErrNotFound) {
			return "", "", apperr.BadRequest("node type %q does not exist", c.NodeType)
		}
		if err != nil {
			return "", "", err
		}
		scriptID = *t.ScriptID
	}
	language, source, err = e.scripts.Current(ctx, q, workspaceID, scriptID)
	if errors.Is(err, apperr.ErrNotFound) {
		return "", "", apperr.BadRequest("script %s does not exist (any more)", scriptID)
	}
	return language, source, err
}

// CodeFiles reads the files mounted read-only into code runs: a code
// node's own files ($SLIPWAY_FILES) and the workspace's code library
// ($SLIPWAY_LIB).
type CodeFiles interface {
	// Files are the files of a code node of a workflow (none is no error).
	Files(ctx context.Context, q db.Queryer, workspaceID, workflowID, nodeKey string) ([]workport.ScriptFile, error)
	// Library is the workspace's code library.
	Library(ctx context.Context, q db.Queryer, workspaceID string) ([]workport.ScriptFile, error)
}

// startCode parks a code node on a job of its own, in the node's
// transition: the node waits on a job that exists, or on none.
func (e *Engine) startCode(ctx context.Context, tx *db.Tx, st *runState, s step, o *outcome) error {
	c, err := decodeConfig[CodeConfig](s.node.Config)
	if err != nil {
		*o = failed("config: %v", err)
		return nil
	}
	if _, _, err := e.scriptOf(ctx, tx, st.run.WorkspaceID, c); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code != apperr.CodeInternal && ae.Code != apperr.CodeDatabase {
			*o = failed("%s", ae.Message)
			return nil
		}
		return err
	}
	for name, id := range c.Resources {
		if !envName.MatchString(name) || strings.HasPrefix(name, "SLIPWAY_") {
			*o = failed("resources: %q is not a variable name for a script (A-Z, 0-9 and _, not starting SLIPWAY_)", name)
			return nil
		}
		if e.resources == nil {
			*o = failed("%v", errNoResources)
			return nil
		}
		_, _, found, err := e.resources.Materialize(ctx, tx, st.run.WorkspaceID, id)
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code == apperr.CodeBadRequest {
			*o = failed("resources: %s", ae.Message)
			return nil
		}
		if err != nil {
			return err
		}
		if !found {
			*o = failed("resources: resource %s (%s) not found in this workspace", id, name)
			return nil
		}
	}
	_, err = e.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: CodeJob, WorkspaceID: st.run.WorkspaceID, Ref: s.nr.ID, MaxAttempts: codeMaxAttempts,
		Payload: codePayload{RunID: st.run.ID}})
	if errors.Is(err, jobs.ErrDuplicate) {
		return nil // the node's job is there already
	}
	return err
}

// cancelCode stops the script of a stopped code node, in a transaction of
// its own after the run's (a script's finish locks its job and then the
// run, so a run's transition never waits on a job row). A cancel lost to a
// crash here costs only the script's time: its result finds the node
// stopped and is dropped.
func (e *Engine) cancelCode(workspaceID, nodeRunID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.db.Tx(ctx, func(tx *db.Tx) error {
		_, err := e.queue.Cancel(ctx, tx, workspaceID, CodeJob, nodeRunID)
		return err
	})
	if err != nil {
		e.log.Error("cancelling the script of a stopped code node failed", "node_run_id", nodeRunID, "err", err)
	}
}

// envName is a variable name a code node's resource may take.
var envName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)

// Code returns the dispatch handler of code jobs.
func (e *Engine) Code() dispatch.Handler { return codeHandler{e} }

type codeHandler struct{ e *Engine }

// codeNode reads a code job's node run and its run's state, without
// locking the run (a claim must not wait on a run's transition).
func (h codeHandler) codeNode(ctx context.Context, q db.Queryer, j *jobs.Job) (*runState, *nodeRun, error) {
	var p codePayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, nil, fmt.Errorf("workflows: payload of code job %s: %w", j.ID, err)
	}
	run, err := getRunRow(ctx, q, j.WorkspaceID, p.RunID)
	if err != nil {
		return nil, nil, err
	}
	g, err := h.e.Graph(ctx, q, run)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := nodesOf(ctx, q, run)
	if err != nil {
		return nil, nil, err
	}
	st, err := h.e.state(ctx, q, run, g, nodes, h.e.clock.Now())
	if err != nil {
		return nil, nil, err
	}
	for _, nr := range st.nodes {
		if nr.ID == j.Ref {
			return st, nr, nil
		}
	}
	return st, nil, nil
}

// MaxTriggerContextEnv bounds SC_TRIGGER_CONTEXT: Linux refuses to start a
// process with one environment string over 128 KiB. A larger body is the
// run's input, and the code node reads it there.
const MaxTriggerContextEnv = 96 << 10

// Start implements dispatch.Handler: a script run (a child of the workflow
// run, on its log) and the script's work, with the node's input: what its
// expressions would see ({input, trigger, nodes, run, env} and, in a loop,
// item and index). A node no longer waiting drops its job.
func (h codeHandler) Start(ctx context.Context, tx *db.Tx, j *jobs.Job, w dispatch.WorkerInfo) (*workport.Assignment, error) {
	st, nr, err := h.codeNode(ctx, tx, j)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.run.Status != RunRunning || nr == nil || nr.Status != NodeWaiting {
		return nil, nil
	}
	c, err := decodeConfig[CodeConfig](st.graph.Node(nr.Key).Config)
	if err != nil {
		return nil, err // validated when saved
	}
	env := st.env(nr.Frame)
	if c.NodeType != "" {
		env["params"] = c.Params
	}
	input, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("workflows: input of code node %s: %w", nr.Key, err)
	}
	run, err := h.e.runs.Start(ctx, tx, runs.NewRun{Kind: runs.KindScript, WorkspaceID: j.WorkspaceID, LogID: st.run.LogID,
		ProjectID: st.run.ProjectID, ParentRunID: st.run.ID, JobID: j.ID, Backend: w.Backend})
	if err != nil {
		return nil, err
	}
	// A saved script (or a node type's) runs its revision current when a
	// worker takes the node.
	lang, source, err := h.e.scriptOf(ctx, tx, j.WorkspaceID, c)
	if err != nil {
		return nil, err // a script deleted meanwhile: its delete is refused while a node or node type names it
	}
	if lang == "" {
		lang = "sh"
	}
	// The node's files and the library as they are when a worker takes
	// the node (like a saved script's source).
	var files, lib []workport.ScriptFile
	if h.e.codeFiles != nil {
		if files, err = h.e.codeFiles.Files(ctx, tx, j.WorkspaceID, st.run.WorkflowID, nr.Key); err != nil {
			return nil, err
		}
		if lib, err = h.e.codeFiles.Library(ctx, tx, j.WorkspaceID); err != nil {
			return nil, err
		}
	}
	// The files the run came with (an email's attachments), unless a
	// node file has the path.
	extra, err := runFiles(ctx, tx, j.WorkspaceID, st.run.ID)
	if err != nil {
		return nil, err
	}
	for _, f := range extra {
		if !slices.ContainsFunc(files, func(n workport.ScriptFile) bool { return n.Path == f.Path }) {
			files = append(files, f)
		}
	}
	image := c.Image
	if image == "" {
		image = h.e.cfg.ScriptImage
	}
	timeout := codeTimeout
	if c.TimeoutSeconds > 0 {
		timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	ev := map[string]any{"node": nr.Key, "script_run_id": run.ID, "attempt": j.Attempt, "language": lang, "backend": w.Backend}
	if nr.Frame != "" {
		ev["frame"] = nr.Frame
	}
	if err := h.e.runs.Append(ctx, tx, j.WorkspaceID, st.run.LogID, st.run.ID, runs.Value("script", ev, st.now)); err != nil {
		if errors.Is(err, runs.ErrRunOver) {
			// The workflow run ended since it was read: nothing to run.
			_, err = h.e.runs.Finish(ctx, tx, j.WorkspaceID, run.ID, runs.Cancelled, nil, "the workflow run ended")
			return nil, err
		}
		return nil, err
	}
	work := &workport.ScriptWork{Language: lang, Source: source, Files: files, Library: lib, Input: input, Image: image, Timeout: timeout,
		ProjectID: st.run.ProjectID, Env: map[string]string{"SLIPWAY_RUN_ID": st.run.ID, "SLIPWAY_NODE": nr.Key, "SLIPWAY_IDEMPOTENCY_KEY": nr.ID}}
	// The delivery that started the run, verbatim (a conversation's, a
	// webhook's), while it fits an environment variable.
	if body := st.run.triggerBody(); len(body) > 0 && len(body) <= MaxTriggerContextEnv {
		work.Env["SC_TRIGGER_CONTEXT"] = string(body)
	}
	// The node's resources, read now against the job's workspace (checked
	// when the node started; one deleted since is left unset).
	for name, id := range c.Resources {
		if h.e.resources == nil {
			break
		}
		value, secret, found, err := h.e.resources.Materialize(ctx, tx, j.WorkspaceID, id)
		if e, ok := apperr.As(err); ok && e.Code == apperr.CodeBadRequest {
			continue // changed since the node started: left unset
		}
		if err != nil {
			return nil, err
		}
		if found {
			work.Env[name] = value
			if secret != "" {
				work.Secrets = append(work.Secrets, secret)
			}
		}
	}
	return &workport.Assignment{
		Lease:  workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID, RunID: run.ID},
		Work:   workport.WorkScript,
		Script: work,
	}, nil
}

// Resume implements dispatch.Handler: a script is not resumed; the worker
// reports it interrupted and it runs again (Interrupted).
func (h codeHandler) Resume(ctx context.Context, j *jobs.Job) (*workport.Assignment, error) {
	a := &workport.Assignment{Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID},
		Work: workport.WorkScript, Script: &workport.ScriptWork{}, Resume: &workport.Resume{}}
	r, err := h.scriptRun(ctx, h.e.db.R, j)
	if err != nil {
		return nil, err
	}
	if r != nil {
		a.Lease.RunID, a.Resume.BatchSeq = r.ID, r.BatchSeq
	}
	return a, nil
}

// scriptRun is the running script run of a code job, or nil.
func (h codeHandler) scriptRun(ctx context.Context, q db.Queryer, j *jobs.Job) (*runs.Run, error) {
	var p codePayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return nil, fmt.Errorf("workflows: payload of code job %s: %w", j.ID, err)
	}
	run, err := getRunRow(ctx, q, j.WorkspaceID, p.RunID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	running, err := h.e.runs.Running(ctx, q, j.WorkspaceID, run.LogID)
	if err != nil {
		return nil, err
	}
	for i := range running {
		if running[i].JobID == j.ID {
			return &running[i], nil
		}
	}
	return nil, nil
}

// Finish implements dispatch.Handler: the script run ends, and the node,
// if it still waits on this job, succeeds with {exit_code, result,
// script_run_id} or fails with the script's error (the same output on its
// error handle).
func (h codeHandler) Finish(ctx context.Context, tx *db.Tx, j *jobs.Job, runID string, r workport.Result) error {
	status, ok := dispatch.RunStatus(r.Outcome)
	if !ok {
		return fmt.Errorf("workflows: unknown outcome %q", r.Outcome)
	}
	if _, err := h.e.runs.Finish(ctx, tx, j.WorkspaceID, runID, status, r.ExitCode, r.Error); err != nil {
		return err
	}
	var p codePayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return fmt.Errorf("workflows: payload of code job %s: %w", j.ID, err)
	}
	_, err := h.e.transitionTx(ctx, tx, j.WorkspaceID, p.RunID, nil, func(_ *db.Tx, st *runState) error {
		nr := st.nodeByID(j.Ref)
		if st.run.Status != RunRunning || nr == nil || nr.Status != NodeWaiting {
			return nil
		}
		out := map[string]any{"exit_code": r.ExitCode, "result": decode(r.Output), "script_run_id": runID}
		switch r.Outcome {
		case workport.Succeeded:
			return st.apply(nr, succeed(HandleOut, out))
		case workport.Cancelled:
			return st.apply(nr, failed("the script was cancelled"))
		}
		o := failed("%s", r.Error)
		o.output = out
		return st.apply(nr, o)
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return nil // the workflow (and its runs) went meanwhile
	}
	return err
}

// Interrupted implements dispatch.Handler: the script run ends failed with
// the reason; the job is back in the queue (the node keeps waiting), or,
// out of attempts, the node fails.
func (h codeHandler) Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
	r, err := h.scriptRun(ctx, tx, j)
	if err != nil {
		return err
	}
	if r != nil {
		if _, err := h.e.runs.Finish(ctx, tx, j.WorkspaceID, r.ID, runs.Failed, nil, reason); err != nil {
			return err
		}
	}
	if !final {
		return nil
	}
	var p codePayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return fmt.Errorf("workflows: payload of code job %s: %w", j.ID, err)
	}
	_, err = h.e.transitionTx(ctx, tx, j.WorkspaceID, p.RunID, nil, func(_ *db.Tx, st *runState) error {
		nr := st.nodeByID(j.Ref)
		if st.run.Status != RunRunning || nr == nil || nr.Status != NodeWaiting {
			return nil
		}
		return st.apply(nr, failed("the script was interrupted too often: %s", reason))
	})
	if errors.Is(err, apperr.ErrNotFound) {
		return nil
	}
	return err
}
