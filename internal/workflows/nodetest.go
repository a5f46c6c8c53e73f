package workflows

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

// NodeTest is one node run alone with sample data: the editor's "test this
// node". The node is the one the editor holds, saved or not.
type NodeTest struct {
	Node    NodeInput                  `json:"node" doc:"The node to test, as the editor holds it (its parent_node_key is ignored)"`
	Input   json.RawMessage            `json:"input,omitempty" doc:"Sample run input (expressions: input)"`
	Trigger json.RawMessage            `json:"trigger,omitempty" doc:"Sample trigger data (expressions: trigger)"`
	Nodes   map[string]json.RawMessage `json:"nodes,omitempty" maxProperties:"200" doc:"Sample outputs of other nodes by key (expressions: nodes.<key>.output)"`
	Item    json.RawMessage            `json:"item,omitempty" doc:"Sample loop item, for a node inside a loop (expressions: item; index is 0)"`
}

// NodeTestResult is how the node went. Nothing of it is stored.
type NodeTestResult struct {
	TestID     string          `json:"test_id,omitempty" format:"uuid" doc:"A code node's test: poll GET /api/workflows/{id}/node-tests/{test_id}; its logs are the events of run test_id"`
	Status     string          `json:"status" enum:"queued,running,succeeded,failed,waiting"`
	Handle     string          `json:"handle" doc:"The handle it fires, when it succeeded"`
	Output     json.RawMessage `json:"output" nullable:"true" doc:"Its output, as a run would record it"`
	Error      string          `json:"error" doc:"Why it failed"`
	Waits      string          `json:"waits,omitempty" doc:"For the kinds that wait in a run (human, wait_event, loop, agent): what it would wait on; nothing is started"`
	DurationMS int64           `json:"duration_ms"`
}

// nodeTestTimeout bounds a test whatever its node's own timeouts say.
const nodeTestTimeout = time.Minute

// TestNode runs one node of a workflow alone with sample data, the way a
// run would run it (an http_request or notify_webhook node really sends
// its request, under the same outbound rules), and stores nothing. Kinds
// that wait in a run say what they would wait on instead of waiting.
func (s *Service) TestNode(ctx context.Context, ws *actor.Workspace, id string, in NodeTest) (*NodeTestResult, error) {
	w, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	samples := map[string]json.RawMessage{"input": in.Input, "trigger": in.Trigger, "item": in.Item}
	for k, v := range in.Nodes {
		samples["nodes."+k] = v
	}
	total := 0
	for name, v := range samples {
		if len(v) == 0 {
			continue
		}
		if !json.Valid(v) {
			return nil, apperr.BadRequest("%s must be JSON", name)
		}
		total += len(v)
	}
	if total > maxInputBytes {
		return nil, apperr.BadRequest("the samples are larger than %d bytes together", maxInputBytes)
	}
	node := in.Node
	node.ID, node.ParentNodeKey, node.Position = "", nil, nil
	// The nodes it reads are stand-ins holding their samples, so the config
	// is checked as a save checks it (a reference to no node is refused).
	nodesIn := []NodeInput{node}
	for k := range in.Nodes {
		if k != node.Key {
			nodesIn = append(nodesIn, NodeInput{Key: k, Kind: "transform", Config: map[string]any{"expression": "null"}})
		}
	}
	g, err := buildGraph(Input{Name: "test", Nodes: nodesIn}, nil, ids.New)
	if err != nil {
		return nil, err
	}
	if err := s.checkNodeTypes(ctx, s.db.R, ws.ID, g); err != nil {
		return nil, err
	}
	n := g.Node(node.Key)
	nodes := map[string]any{}
	for k, v := range in.Nodes {
		nodes[k] = map[string]any{"output": decode(v), "status": NodeSucceeded, "handle": HandleOut, "error": ""}
	}
	now := s.clock.Now()
	run := &runRow{ID: ids.New(), WorkspaceID: ws.ID, ProjectID: w.ProjectID, WorkflowID: w.ID, Input: in.Input, CreatedAt: now}
	env := map[string]any{
		"input":   decode(in.Input),
		"trigger": decode(in.Trigger),
		"nodes":   nodes,
		"run":     map[string]any{"id": run.ID, "workflow_id": w.ID, "project_id": w.ProjectID, "created_at": now.Format(time.RFC3339)},
		"env":     map[string]any{},
	}
	if len(in.Item) > 0 {
		env["item"], env["index"] = decode(in.Item), 0
	}
	tctx, cancel := context.WithTimeout(ctx, nodeTestTimeout)
	defer cancel()
	start := time.Now()
	res, err := s.engine.Try(tctx, run, n, env)
	if err != nil {
		return nil, err
	}
	if res.TestID == "" {
		res.DurationMS = time.Since(start).Milliseconds()
	}
	return &res, nil
}

// NodeTest reads a code node's test of a workflow of the workspace.
func (s *Service) NodeTest(ctx context.Context, ws *actor.Workspace, id, testID string) (*NodeTestResult, error) {
	if _, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	}
	if !ids.Valid(testID) {
		return nil, apperr.NotFound("node test")
	}
	return s.engine.Tried(ctx, ws.ID, id, testID)
}

// Try implements Runner.
func (e *Engine) Try(ctx context.Context, r *runRow, n *Node, env map[string]any) (NodeTestResult, error) {
	if n.Kind == "code" {
		return e.tryCode(ctx, r, n, env)
	}
	return e.try(ctx, r, n, env), nil
}

func (e *Engine) try(ctx context.Context, r *runRow, n *Node, env map[string]any) NodeTestResult {
	s := step{node: n, nr: &nodeRun{ID: ids.New(), Key: n.Key}, env: env, run: r}
	if n.Kind == "agent" {
		// A run creates a task here; a test only shows the prompt it would get.
		c, err := decodeConfig[AgentConfig](n.Config)
		if err != nil {
			return NodeTestResult{Status: NodeFailed, Error: "config: " + err.Error()}
		}
		prompt, err := e.exprs.render(ctx, c.Prompt, env)
		if err != nil {
			return NodeTestResult{Status: NodeFailed, Error: "prompt: " + err.Error()}
		}
		return NodeTestResult{Status: NodeWaiting, Waits: "a task with the prompt: " + prompt}
	}
	o := e.executeNode(ctx, s)
	res := NodeTestResult{Status: o.status, Handle: o.handle, Error: o.err}
	if o.output != nil {
		b, err := json.Marshal(o.output)
		if err != nil {
			return NodeTestResult{Status: NodeFailed, Error: "output: " + err.Error()}
		}
		if len(b) > maxOutputBytes {
			return NodeTestResult{Status: NodeFailed, Error: fmt.Sprintf("output: %d bytes, at most %d", len(b), maxOutputBytes)}
		}
		res.Output = b
	}
	if o.endRun && o.failure != "" {
		res.Status, res.Error = NodeFailed, o.failure
	}
	if o.status != NodeWaiting {
		return res
	}
	res.Handle = ""
	switch st := o.state.(type) {
	case humanState:
		res.Waits = "a person's decision on: " + st.Message
	case loopState:
		res.Output, _ = json.Marshal(st.Items) // the items it would iterate
		res.Waits = fmt.Sprintf("%d iterations of its body, %d at a time", len(st.Items), st.Parallelism)
	default:
		if o.waitEvent != "" {
			res.Waits = "the event " + o.waitEvent
			if o.timeout > 0 {
				res.Waits += fmt.Sprintf(" (or its timeout, after %s)", o.timeout)
			}
		}
	}
	return res
}

// NodeTestJob runs a code node's test: a script run, with the test's id, on
// the workflow's node-test log (whose id is the workflow's), deleted with the
// workflow. One attempt: a test interrupted says so and is not run again.
const NodeTestJob = "workflow_node_test"

// Code node tests: unfinished ones per workspace, and their time limit.
const (
	maxNodeTests       = 4
	nodeTestScriptTime = 5 * time.Minute
)

type nodeTestPayload struct {
	WorkflowID string `json:"workflow_id"`
	NodeKey    string `json:"node_key"`
	Language   string `json:"language"`
	Source     string `json:"source"`
	Image      string `json:"image"`
	Timeout    int64  `json:"timeout_seconds"`
	// Input is the script's input as text: PostgreSQL's jsonb would
	// reformat it as a JSON value, and the script reads it byte for byte.
	Input string `json:"input"`
}

// tryCode queues a code node's test: its script (its own, a saved one's or
// a node type's current revision) with the samples as its input.
func (e *Engine) tryCode(ctx context.Context, r *runRow, n *Node, env map[string]any) (NodeTestResult, error) {
	c, err := decodeConfig[CodeConfig](n.Config)
	if err != nil {
		return NodeTestResult{}, apperr.BadRequest("config: %v", err)
	}
	lang, source, err := e.scriptOf(ctx, e.db.R, r.WorkspaceID, c)
	if err != nil {
		return NodeTestResult{}, err
	}
	if lang == "" {
		lang = "sh"
	}
	if c.NodeType != "" {
		env["params"] = c.Params
	}
	input, err := json.Marshal(env)
	if err != nil {
		return NodeTestResult{}, apperr.BadRequest("samples: %v", err)
	}
	timeout := nodeTestScriptTime
	if c.TimeoutSeconds > 0 && time.Duration(c.TimeoutSeconds)*time.Second < timeout {
		timeout = time.Duration(c.TimeoutSeconds) * time.Second
	}
	image := c.Image
	if image == "" {
		image = e.cfg.ScriptImage
	}
	testID := ids.New()
	err = e.db.Tx(ctx, func(tx *db.Tx) error {
		// Counted in the transaction that adds one; on PostgreSQL two tests
		// queued at once may both pass, which bounds the count at twice.
		queued, err := e.queue.CountUnfinished(ctx, tx, r.WorkspaceID, NodeTestJob)
		if err != nil {
			return err
		}
		if queued >= maxNodeTests {
			return apperr.New(apperr.CodeTooManyRequests, "%d code node tests are already queued or running in this workspace; wait for one to end", queued)
		}
		if err := e.runs.EnsureLog(ctx, tx, r.WorkspaceID, r.WorkflowID); err != nil {
			return err
		}
		_, err = e.queue.Enqueue(ctx, tx, jobs.NewJob{Kind: NodeTestJob, WorkspaceID: r.WorkspaceID, Ref: testID, MaxAttempts: 1,
			Payload: nodeTestPayload{WorkflowID: r.WorkflowID, NodeKey: n.Key, Language: lang, Source: source, Image: image,
				Timeout: int64(timeout / time.Second), Input: string(input)}})
		return err
	})
	if err != nil {
		return NodeTestResult{}, err
	}
	return NodeTestResult{TestID: testID, Status: "queued"}, nil
}

// Tried implements Runner.
func (e *Engine) Tried(ctx context.Context, workspaceID, workflowID, testID string) (*NodeTestResult, error) {
	run, err := e.runs.Get(ctx, nil, workspaceID, testID)
	if errors.Is(err, apperr.ErrNotFound) {
		// Not taken by a worker yet, or no such test.
		job, err := e.queue.Unfinished(ctx, e.db.R, workspaceID, NodeTestJob, testID)
		if err != nil {
			return nil, err
		}
		if job == "" {
			return nil, apperr.NotFound("node test")
		}
		j, err := e.queue.Get(ctx, job)
		if err != nil {
			return nil, err
		}
		var p nodeTestPayload
		if json.Unmarshal(j.Payload, &p) != nil || p.WorkflowID != workflowID {
			return nil, apperr.NotFound("node test")
		}
		return &NodeTestResult{TestID: testID, Status: "queued"}, nil
	}
	if err != nil {
		return nil, err
	}
	if run.LogID != workflowID || run.Kind != runs.KindScript {
		return nil, apperr.NotFound("node test")
	}
	res := &NodeTestResult{TestID: testID, Status: run.Status, Error: run.Error}
	switch run.Status {
	case runs.Running:
		return res, nil
	case runs.Succeeded:
		res.Handle = HandleOut
	case runs.Cancelled:
		res.Status = NodeFailed
		if res.Error == "" {
			res.Error = "the script was cancelled"
		}
	}
	res.Output, _ = json.Marshal(map[string]any{"exit_code": run.ExitCode, "result": decode(run.Result), "script_run_id": run.ID})
	if run.FinishedAt != nil {
		res.DurationMS = run.FinishedAt.Sub(run.CreatedAt).Milliseconds()
	}
	return res, nil
}

// NodeTests returns the dispatch handler of code node tests.
func (e *Engine) NodeTests() dispatch.Handler { return nodeTestHandler{e} }

type nodeTestHandler struct{ e *Engine }

func nodeTestOf(j *jobs.Job) (nodeTestPayload, error) {
	var p nodeTestPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return p, fmt.Errorf("workflows: payload of node test %s: %w", j.ID, err)
	}
	return p, nil
}

// Start implements dispatch.Handler: the test's script run and its work. A
// workflow deleted meanwhile drops the test.
func (h nodeTestHandler) Start(ctx context.Context, tx *db.Tx, j *jobs.Job, w dispatch.WorkerInfo) (*workport.Assignment, error) {
	p, err := nodeTestOf(j)
	if err != nil {
		return nil, err
	}
	wf, err := getWorkflow(ctx, tx, j.WorkspaceID, p.WorkflowID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	run, err := h.e.runs.Start(ctx, tx, runs.NewRun{ID: j.Ref, Kind: runs.KindScript, WorkspaceID: j.WorkspaceID, LogID: p.WorkflowID,
		ProjectID: wf.ProjectID, JobID: j.ID, Backend: w.Backend})
	if err != nil {
		return nil, err
	}
	var files, lib []workport.ScriptFile
	if h.e.codeFiles != nil {
		if files, err = h.e.codeFiles.Files(ctx, tx, j.WorkspaceID, p.WorkflowID, p.NodeKey); err != nil {
			return nil, err
		}
		if lib, err = h.e.codeFiles.Library(ctx, tx, j.WorkspaceID); err != nil {
			return nil, err
		}
	}
	return &workport.Assignment{
		Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID, RunID: run.ID},
		Work:  workport.WorkScript,
		Script: &workport.ScriptWork{Language: p.Language, Source: p.Source, Files: files, Library: lib, Input: json.RawMessage(p.Input), Image: p.Image,
			Timeout: time.Duration(p.Timeout) * time.Second,
			Env:     map[string]string{"SLIPWAY_RUN_ID": run.ID, "SLIPWAY_NODE": p.NodeKey, "SLIPWAY_IDEMPOTENCY_KEY": run.ID, "SLIPWAY_TEST": "1"}},
	}, nil
}

// Resume implements dispatch.Handler: a script is not resumed; the worker
// reports it interrupted, and a test is not run again.
func (h nodeTestHandler) Resume(ctx context.Context, j *jobs.Job) (*workport.Assignment, error) {
	a := &workport.Assignment{Lease: workport.Lease{JobID: j.ID, Worker: j.LockedBy, Attempt: j.Attempt, WorkspaceID: j.WorkspaceID},
		Work: workport.WorkScript, Script: &workport.ScriptWork{}, Resume: &workport.Resume{}}
	r, err := h.e.runs.Get(ctx, nil, j.WorkspaceID, j.Ref)
	if errors.Is(err, apperr.ErrNotFound) {
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	if r.Status == runs.Running {
		a.Lease.RunID, a.Resume.BatchSeq = r.ID, r.BatchSeq
	}
	return a, nil
}

// Finish implements dispatch.Handler: the test's run ends with the
// script's outcome and keeps its output (a workflow deleted meanwhile took
// the run with it).
func (h nodeTestHandler) Finish(ctx context.Context, tx *db.Tx, j *jobs.Job, runID string, r workport.Result) error {
	status, ok := dispatch.RunStatus(r.Outcome)
	if !ok {
		return fmt.Errorf("workflows: unknown outcome %q", r.Outcome)
	}
	if _, err := h.e.runs.Get(ctx, tx, j.WorkspaceID, runID); errors.Is(err, apperr.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if len(r.Output) > 0 {
		if err := h.e.runs.RecordResult(ctx, tx, j.WorkspaceID, runID, r.Output); err != nil {
			return err
		}
	}
	_, err := h.e.runs.Finish(ctx, tx, j.WorkspaceID, runID, status, r.ExitCode, r.Error)
	return err
}

// Interrupted implements dispatch.Handler: the test's run ends failed with
// the reason.
func (h nodeTestHandler) Interrupted(ctx context.Context, tx *db.Tx, j *jobs.Job, final bool, reason string) error {
	r, err := h.e.runs.Get(ctx, tx, j.WorkspaceID, j.Ref)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil
	}
	if err != nil || r.Status != runs.Running {
		return err
	}
	_, err = h.e.runs.Finish(ctx, tx, j.WorkspaceID, r.ID, runs.Failed, nil, reason)
	return err
}
