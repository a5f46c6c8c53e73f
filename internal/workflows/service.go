package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/runs"
)

// Projects is what workflows need of projects.
type Projects interface {
	Exists(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error)
}

// Service implements workflows and their runs.
type Service struct {
	db       *db.DB
	clock    clock.Clock
	runs     *runs.Service
	engine   *Engine
	projects Projects
}

// NewService builds the workflows service over an engine.
func NewService(d *db.DB, clk clock.Clock, r *runs.Service, e *Engine, p Projects) *Service {
	return &Service{db: d, clock: clk, runs: r, engine: e, projects: p}
}

func cleanName(raw string) (string, error) { return text.Name("name", raw, 200) }

func (s *Service) checkProject(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	if !ids.Valid(id) {
		return apperr.BadRequest("project_id must be a project id")
	}
	ok, err := s.projects.Exists(ctx, q, workspaceID, id)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.BadRequest("project_id: no such project in this workspace")
	}
	return nil
}

// maxSafeInteger is the largest integer the Workflow object carries
// (JavaScript's safe integers).
const maxSafeInteger = 1<<53 - 1

func checkCap(max *int64) error {
	if max != nil && (*max < 1 || *max > maxSafeInteger) {
		return apperr.BadRequest("max_concurrent_runs must be between 1 and %d, or null for unlimited", int64(maxSafeInteger))
	}
	return nil
}

// Create validates and stores a workflow.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, in Input) (*Workflow, error) {
	return s.create(ctx, nil, ws, in)
}

// CreateTx validates and stores a workflow in tx, for callers that add to
// it in the same transaction (a template's triggers).
func (s *Service) CreateTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, in Input) (*Workflow, error) {
	return s.create(ctx, tx, ws, in)
}

// create is Create in tx, or in a transaction of its own when tx is nil.
func (s *Service) create(ctx context.Context, tx *db.Tx, ws *actor.Workspace, in Input) (*Workflow, error) {
	name, err := cleanName(in.Name)
	if err != nil {
		return nil, err
	}
	if err := checkCap(in.MaxConcurrentRuns); err != nil {
		return nil, err
	}
	g, err := buildGraph(in, nil, ids.New)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	w := &Workflow{ID: ids.New(), ProjectID: in.ProjectID, Name: name, CreatedAt: now, MaxConcurrentRuns: in.MaxConcurrentRuns, workspaceID: ws.ID}
	w.setGraph(g)
	if err := checkExportable(w); err != nil {
		return nil, err
	}
	err = s.inTx(ctx, tx, func(tx *db.Tx) error {
		if err := s.checkProject(ctx, tx, ws.ID, in.ProjectID); err != nil {
			return err
		}
		if err := s.checkNodeTypes(ctx, tx, ws.ID, g); err != nil {
			return err
		}
		return insertWorkflow(ctx, tx, w, now)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Get reads a workflow of the workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Workflow, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow")
	}
	return getWorkflow(ctx, s.db.R, ws.ID, id)
}

// GetTx reads a workflow of the workspace in tx, which sees what tx wrote.
func (s *Service) GetTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, id string) (*Workflow, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow")
	}
	return getWorkflow(ctx, tx, ws.ID, id)
}

// inTx runs fn in tx, or in a transaction of its own when tx is nil.
func (s *Service) inTx(ctx context.Context, tx *db.Tx, fn func(tx *db.Tx) error) error {
	if tx != nil {
		return fn(tx)
	}
	return s.db.Tx(ctx, fn)
}

// List lists a project's workflows (all the workspace's without one),
// newest first.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, projectID string) ([]Workflow, error) {
	if projectID == "" {
		return listWorkflows(ctx, s.db.R, "workspace_id = $1 ORDER BY created_at DESC, id DESC", ws.ID)
	}
	if !ids.Valid(projectID) {
		return nil, apperr.BadRequest("project_id must be a project id")
	}
	return listWorkflows(ctx, s.db.R, "workspace_id = $1 AND project_id = $2 ORDER BY created_at DESC, id DESC", ws.ID, projectID)
}

// Replace replaces a workflow's graph (and name and cap when given). Runs in
// flight keep the graph they started with.
func (s *Service) Replace(ctx context.Context, ws *actor.Workspace, id string, in Input) (*Workflow, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow")
	}
	if in.ProjectID != "" {
		return nil, apperr.BadRequest("project_id cannot change; import the workflow into the other project instead")
	}
	if err := checkCap(in.MaxConcurrentRuns); err != nil {
		return nil, err
	}
	var out *Workflow
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		out, err = s.replace(ctx, tx, ws, id, in)
		return err
	})
	return out, err
}

// replace is Replace in tx.
func (s *Service) replace(ctx context.Context, tx *db.Tx, ws *actor.Workspace, id string, in Input) (*Workflow, error) {
	var out *Workflow
	err := func() error {
		w, err := getWorkflow(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if in.Name != "" {
			if w.Name, err = cleanName(in.Name); err != nil {
				return err
			}
		}
		if in.MaxConcurrentRuns != nil {
			w.MaxConcurrentRuns = in.MaxConcurrentRuns
		}
		g, err := buildGraph(in, w.graph(), ids.New)
		if err != nil {
			return err
		}
		w.setGraph(g)
		if err := checkExportable(w); err != nil {
			return err
		}
		if err := s.checkNodeTypes(ctx, tx, ws.ID, g); err != nil {
			return err
		}
		out = w
		if err := updateWorkflow(ctx, tx, w, s.clock.Now()); err != nil {
			return err
		}
		return s.engine.admit(ctx, tx, ws.ID, w.ProjectID)
	}()
	return out, err
}

// Apply statuses: what ApplyYAML did, or with a dry run would do.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
)

var errDryRun = errors.New("workflows: dry run")

// ApplyYAML brings a project's workflow in line with a YAML document (a
// repository's copy): the workflow of the document's name is replaced when
// its graph, name or cap differs, or created when there is none. With
// dryRun nothing is written and the status says what would be done
// (validation included: a document that would fail is the same error).
func (s *Service) ApplyYAML(ctx context.Context, ws *actor.Workspace, projectID string, doc []byte, dryRun bool) (string, *Workflow, error) {
	in, err := ParseYAML(doc)
	if err != nil {
		var ae *apperr.Error
		if !errors.As(err, &ae) {
			err = apperr.BadRequest("%s", err.Error())
		}
		return "", nil, err
	}
	name, err := cleanName(in.Name)
	if err != nil {
		return "", nil, err
	}
	var status string
	var out *Workflow
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		ws2, err := listWorkflows(ctx, tx, "workspace_id = $1 AND project_id = $2 AND name = $3 ORDER BY created_at, id LIMIT 1", ws.ID, projectID, name)
		if err != nil {
			return err
		}
		if len(ws2) == 0 {
			in.ProjectID = projectID
			status = Created
			if out, err = s.create(ctx, tx, ws, in); err != nil {
				return err
			}
		} else {
			existing := &ws2[0]
			g, err := buildGraph(in, existing.graph(), ids.New)
			if err != nil {
				return err
			}
			before, _ := json.Marshal(existing.graph())
			after, _ := json.Marshal(g)
			sameCap := (existing.MaxConcurrentRuns == nil) == (in.MaxConcurrentRuns == nil) &&
				(in.MaxConcurrentRuns == nil || *in.MaxConcurrentRuns == *existing.MaxConcurrentRuns)
			if bytes.Equal(before, after) && sameCap {
				status, out = Unchanged, existing
				return nil
			}
			status = Updated
			if in.MaxConcurrentRuns == nil && existing.MaxConcurrentRuns != nil {
				// The document has no cap: the workflow loses its.
				if err := s.setCapTx(ctx, tx, ws, existing, in, &out); err != nil {
					return err
				}
			} else if out, err = s.replace(ctx, tx, ws, existing.ID, in); err != nil {
				return err
			}
		}
		if dryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	return status, out, err
}

// setCapTx replaces a workflow and clears its cap (a replace keeps a cap it
// is not given).
func (s *Service) setCapTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, existing *Workflow, in Input, out **Workflow) error {
	w, err := s.replace(ctx, tx, ws, existing.ID, in)
	if err != nil {
		return err
	}
	w.MaxConcurrentRuns = nil
	if err := updateWorkflow(ctx, tx, w, s.clock.Now()); err != nil {
		return err
	}
	*out = w
	return s.engine.admit(ctx, tx, ws.ID, w.ProjectID)
}

// SetConcurrency sets or clears a workflow's cap; queued runs it now lets
// through start.
func (s *Service) SetConcurrency(ctx context.Context, ws *actor.Workspace, id string, max *int64) (*Workflow, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow")
	}
	if err := checkCap(max); err != nil {
		return nil, err
	}
	var out *Workflow
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		w, err := getWorkflow(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		w.MaxConcurrentRuns = max
		if err := updateWorkflow(ctx, tx, w, s.clock.Now()); err != nil {
			return err
		}
		out = w
		return s.engine.admit(ctx, tx, ws.ID, w.ProjectID)
	})
	return out, err
}

// Delete removes a workflow with its runs: runs in flight are stopped
// (their tasks cancelled) first.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) (bool, error) {
	if !ids.Valid(id) {
		return false, nil
	}
	deleted := false
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		w, err := getWorkflow(ctx, tx, ws.ID, id)
		if errors.Is(err, apperr.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.dropRuns(ctx, tx, ws.ID, "workflow_id = $2", w.ID); err != nil {
			return err
		}
		if err := deleteWorkflow(ctx, tx, ws.ID, w.ID); err != nil {
			return err
		}
		deleted = true
		return s.engine.admit(ctx, tx, ws.ID, w.ProjectID)
	})
	return deleted, err
}

// dropRuns cancels the runs matching cond (over $1 = workspace, $2) and
// deletes them with their event logs, in tx.
func (s *Service) dropRuns(ctx context.Context, tx *db.Tx, workspaceID, cond string, arg string) error {
	all, err := runsMatching(ctx, tx, workspaceID, cond, arg)
	if err != nil {
		return err
	}
	for _, d := range all {
		if d.status == RunRunning || d.status == RunQueued {
			if _, err := s.engine.transitionTx(ctx, tx, workspaceID, d.id, nil, func(_ *db.Tx, st *runState) error {
				st.finish(RunCancelled, nil, "the workflow was deleted")
				return nil
			}); err != nil {
				return err
			}
		}
		if err := s.runs.DeleteLog(ctx, tx, workspaceID, d.log); err != nil {
			return err
		}
	}
	return nil
}

// ProjectDeleting stops and removes the project's workflow runs (the rows
// go with the project; their logs and tasks need telling).
func (s *Service) ProjectDeleting(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	return s.dropRuns(ctx, tx, workspaceID, "project_id = $2", projectID)
}

// CapChanged starts the project's queued runs its new cap lets through.
func (s *Service) CapChanged(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	return s.engine.admit(ctx, tx, workspaceID, projectID)
}

// BoardInput filters the workflows board.
type BoardInput struct {
	board.Query
	ProjectID string `query:"project_id" doc:"Only this project's workflows"`
}

var boardSort = map[string]string{"name": "name", "created_at": "created_at"}

// Board is a page of workflows with a project facet.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*board.Board[Workflow], error) {
	orderBy, err := in.OrderBy(boardSort, "created_at", "desc", "id")
	if err != nil {
		return nil, err
	}
	f := db.NewWhere("workspace_id = ?", ws.ID)
	if in.Q != "" {
		if err := text.CheckName("q", in.Q); err != nil {
			return nil, err
		}
		f = f.And(s.db.Dialect.ILike("name", "?"), "%"+db.EscapeLike(in.Q)+"%")
	}
	projects, err := db.CountBy(ctx, s.db.R, "workflows", "project_id", f)
	if err != nil {
		return nil, err
	}
	if in.ProjectID != "" {
		if !ids.Valid(in.ProjectID) {
			return nil, apperr.BadRequest("project_id must be a project id")
		}
		f = f.And("project_id = ?", in.ProjectID)
	}
	total, err := countWorkflows(ctx, s.db.R, f)
	if err != nil {
		return nil, err
	}
	args := append(append([]any{}, f.Args...), in.PageSize, in.Offset())
	rows, err := listWorkflows(ctx, s.db.R, f.SQL+" ORDER BY "+orderBy+" LIMIT "+f.Next(1)+" OFFSET "+f.Next(2), args...)
	if err != nil {
		return nil, err
	}
	facet := make([]board.Facet, 0, len(projects))
	for id, n := range projects {
		facet = append(facet, board.Facet{Value: id, Label: id, Count: n})
	}
	return board.New(in.Query, rows, total, map[string][]board.Facet{"project_id": facet}), nil
}

// Stats sums up a workspace's (or a project's) workflows.
type Stats struct {
	ActiveRuns         int      `json:"active_runs" doc:"Runs queued or running"`
	Workflows          int      `json:"workflows"`
	SuccessRate24h     *float64 `json:"success_rate_24h" nullable:"true" doc:"Percent of the runs finished in the last 24 hours that succeeded; null when none finished"`
	Failed24h          int      `json:"failed_24h"`
	AvgDurationSeconds *float64 `json:"avg_duration_seconds" nullable:"true" doc:"Mean duration of the runs finished in the last 24 hours"`
}

// Stats computes the board's header figures.
func (s *Service) Stats(ctx context.Context, ws *actor.Workspace, projectID string) (*Stats, error) {
	scope, args := "workspace_id = $1", []any{ws.ID}
	if projectID != "" {
		if !ids.Valid(projectID) {
			return nil, apperr.BadRequest("project_id must be a project id")
		}
		scope, args = scope+" AND project_id = $2", append(args, projectID)
	}
	var st Stats
	var err error
	if st.Workflows, err = countWorkflows(ctx, s.db.R, db.Where{SQL: scope, Args: args}); err != nil {
		return nil, err
	}
	recent, err := recentRuns(ctx, s.db, db.Where{SQL: scope, Args: args}, s.clock.Now().Add(-24*time.Hour))
	if err != nil {
		return nil, err
	}
	var succeeded, finished int
	var total time.Duration
	for _, r := range recent {
		status, started, ended := r.status, r.started, r.ended
		switch status {
		case RunQueued, RunRunning:
			st.ActiveRuns++
			continue
		case RunSucceeded:
			succeeded++
		case RunFailed:
			st.Failed24h++
		}
		if status != RunCancelled && started != nil && ended != nil {
			finished++
			total += ended.Sub(*started)
		}
	}
	if n := succeeded + st.Failed24h; n > 0 {
		rate := float64(succeeded) * 100 / float64(n)
		st.SuccessRate24h = &rate
	}
	if finished > 0 {
		avg := total.Seconds() / float64(finished)
		st.AvgDurationSeconds = &avg
	}
	return &st, nil
}

// maxInputBytes caps a run's input.
const maxInputBytes = 1 << 20

// StartRun queues a run of a workflow with an input (any JSON; null when
// absent); caps decide when it starts.
func (s *Service) StartRun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string, input, trigger json.RawMessage) (string, error) {
	var createdBy *string
	if u != nil {
		createdBy = &u.ID
	}
	var runID string
	err := s.db.Tx(ctx, func(tx *db.Tx) (err error) {
		started, err := s.StartRunTx(ctx, tx, ws.ID, createdBy, id, input, trigger)
		if err == nil {
			runID = started.ID
		}
		return err
	})
	return runID, err
}

// StartRunTx starts a run in tx (a trigger's, with what fired it): it is
// queued, and admitted at once when the caps let it through, and then its
// ready inline nodes run in tx too. createdBy is who may decide its human
// gates.
func (s *Service) StartRunTx(ctx context.Context, tx *db.Tx, workspaceID string, createdBy *string, id string, input, trigger json.RawMessage) (*Started, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow")
	}
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	if len(trigger) == 0 {
		trigger = json.RawMessage("null")
	}
	if len(input) > maxInputBytes || len(trigger) > 2*maxInputBytes {
		return nil, apperr.BadRequest("input is larger than %d bytes", maxInputBytes)
	}
	if !json.Valid(input) || !json.Valid(trigger) {
		return nil, apperr.BadRequest("input must be JSON")
	}
	w, err := startable(ctx, tx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	// The run names the version of the workflow's graph it starts with
	// (stored once per workflow), so editing the workflow never changes it.
	now := s.clock.Now()
	def, err := s.engine.definition(ctx, tx, workspaceID, id, w.graph, now)
	if err != nil {
		return nil, err
	}
	graphID, g := def.graphID, def.graph
	logID := ids.New()
	if err := s.runs.CreateLog(ctx, tx, workspaceID, logID); err != nil {
		return nil, err
	}
	r, err := s.runs.Start(ctx, tx, runs.NewRun{Kind: runs.KindWorkflow, WorkspaceID: workspaceID, LogID: logID, ProjectID: w.projectID, NewLog: true})
	if err != nil {
		return nil, err
	}
	stored, bodyIsInput := storedTrigger(trigger, input)
	row := &runRow{ID: r.ID, WorkspaceID: workspaceID, ProjectID: w.projectID, WorkflowID: id, LogID: logID, Status: RunQueued, GraphID: graphID,
		Input: input, Trigger: stored, TriggerBodyIsInput: bodyIsInput, CreatedAt: now, CreatedBy: createdBy}
	// Admitted at once, it runs its first inline nodes in this transaction
	// (which records its queued event with the rest): a run of inline nodes
	// only ends here, with nothing queued for it.
	started := &Started{ID: r.ID, Status: RunQueued}
	if err := s.engine.startNew(ctx, tx, row, g, w.capped, started); err != nil {
		return nil, err
	}
	if started.Status == RunQueued {
		if err := s.runs.Append(ctx, tx, workspaceID, logID, r.ID, queuedEvent(id, now)); err != nil {
			return nil, err
		}
	}
	return started, nil
}

func queuedEvent(workflowID string, at time.Time) runs.NewEvent {
	return runs.Value("run", map[string]any{"status": RunQueued, "workflow_id": workflowID}, at)
}

// WaitRun waits until a run of the workspace has ended or d has passed,
// and returns it as it is then (ended or not).
func (s *Service) WaitRun(ctx context.Context, workspaceID, id string, d time.Duration) (*RunView, error) {
	ws := &actor.Workspace{ID: workspaceID}
	// Subscribed before the first look, so an end between the two is heard.
	sub := s.engine.bus.Subscribe(TopicRunEnded)
	defer sub.Close()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(runWaitPoll)
	defer poll.Stop()
	for {
		v, err := s.GetRun(ctx, ws, id)
		if err != nil || runEnded(v.Status) {
			return v, err
		}
	wait:
		for {
			select {
			case m := <-sub.C:
				if m.Reset || m.Payload == id {
					break wait
				}
			case <-poll.C:
				break wait
			case <-deadline.C:
				return s.GetRun(ctx, ws, id)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// runWaitPoll is WaitRun's fallback when no notification arrives.
const runWaitPoll = time.Second

func runEnded(status string) bool {
	return status == RunSucceeded || status == RunFailed || status == RunCancelled
}

// GetRun reads a run with its nodes' states.
func (s *Service) GetRun(ctx context.Context, ws *actor.Workspace, id string) (*RunView, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow run")
	}
	var v *RunView
	err := s.db.ReadTx(ctx, func(q db.Queryer) error {
		r, err := getRunRow(ctx, q, ws.ID, id)
		if err != nil {
			return err
		}
		v, err = s.viewIn(ctx, q, r)
		return err
	})
	return v, err
}

func (s *Service) view(ctx context.Context, r *runRow) (*RunView, error) {
	return s.viewIn(ctx, s.db.R, r)
}

// viewIn is view reading through q (a snapshot, with the run row read in
// it).
func (s *Service) viewIn(ctx context.Context, q db.Queryer, r *runRow) (*RunView, error) {
	g, err := s.engine.graph(ctx, q, r)
	if err != nil {
		return nil, err
	}
	nodes, err := listNodeRuns(ctx, q, r.ID)
	if err != nil {
		return nil, err
	}
	v := &RunView{ID: r.ID, RunID: r.ID, WorkflowID: r.WorkflowID, ProjectID: r.ProjectID, Status: r.Status, Input: r.Input, Output: r.Output,
		Error: r.Error, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, CreatedBy: r.CreatedBy, WorkspaceID: r.WorkspaceID,
		Nodes: []NodeRunView{}, WaitingOn: []string{}}
	seen := map[string]bool{}
	for _, n := range nodes {
		v.Nodes = append(v.Nodes, NodeRunView{Key: n.Key, Kind: n.Kind, Frame: n.Frame, Status: n.Status, Handle: n.Handle, Output: n.Output,
			Error: n.Error, Attempt: n.Attempt, TaskID: n.TaskID, StartedAt: n.StartedAt, FinishedAt: n.FinishedAt})
		if n.Frame == "" {
			seen[n.Key] = true
		}
		if n.Status == NodeWaiting && (n.Kind == "human" || n.Kind == "wait_event") {
			v.WaitingOn = append(v.WaitingOn, n.Key)
		}
	}
	for _, n := range g.FrameNodes("") {
		if !seen[n.Key] {
			v.Nodes = append(v.Nodes, NodeRunView{Key: n.Key, Kind: n.Kind, Status: "pending"})
		}
	}
	return v, nil
}

// CancelRun cancels a run and everything it started; a finished run stays
// as it is. An id of another kind of run is refused.
func (s *Service) CancelRun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*RunView, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workflow run")
	}
	if _, err := getRunRow(ctx, s.db.R, ws.ID, id); errors.Is(err, apperr.ErrNotFound) {
		if r, err := s.runs.Get(ctx, nil, ws.ID, id); err == nil && r.Kind != runs.KindWorkflow {
			return nil, apperr.BadRequest("run %s is a %s run, not a workflow run", id, r.Kind)
		}
		return nil, err
	} else if err != nil {
		return nil, err
	}
	reason := "cancelled"
	if u != nil {
		reason = "cancelled by user " + u.ID
	}
	st, err := s.engine.transition(ctx, ws.ID, id, nil, func(_ *db.Tx, st *runState) error {
		st.finish(RunCancelled, nil, reason)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.view(ctx, st.run)
}

// Approval is a human gate waiting on the caller.
type Approval struct {
	RunID        string    `json:"run_id" format:"uuid"`
	NodeKey      string    `json:"node_key"`
	Message      string    `json:"message"`
	WorkflowID   string    `json:"workflow_id" format:"uuid"`
	WorkflowName string    `json:"workflow_name"`
	ProjectID    string    `json:"project_id" format:"uuid"`
	WorkspaceID  string    `json:"workspace_id" format:"uuid"`
	WaitingSince time.Time `json:"waiting_since"`
}

// PendingApprovals lists the human gates of the caller's runs across the
// workspaces they belong to, oldest first.
func (s *Service) PendingApprovals(ctx context.Context, u *actor.User) ([]Approval, error) {
	gates, err := waitingGates(ctx, s.db, u.ID)
	if err != nil {
		return nil, err
	}
	out := []Approval{}
	for _, g := range gates {
		var hs humanState
		if json.Unmarshal(g.state, &hs) == nil {
			g.Message = hs.Message
		}
		out = append(out, g.Approval)
	}
	return out, nil
}

type humanState struct {
	Message string `json:"message"`
}

// Decision is a person's answer to a human gate.
type Decision struct {
	Decision string `json:"decision" doc:"approve or reject"`
	Comment  string `json:"comment,omitempty" maxLength:"2000"`
}

// Decide answers a human gate of a run the caller owns: by node key, or
// (nodeKey "") the run's waiting gate, the oldest when several wait.
func (s *Service) Decide(ctx context.Context, u *actor.User, runID, nodeKey string, d Decision) (*RunView, error) {
	var handle string
	switch d.Decision {
	case "approve":
		handle = HandleApproved
	case "reject":
		handle = HandleRejected
	default:
		return nil, apperr.BadRequest("decision must be approve or reject")
	}
	if err := text.CheckName("comment", d.Comment); err != nil && d.Comment != "" {
		return nil, err
	}
	if !ids.Valid(runID) {
		return nil, apperr.NotFound("workflow run")
	}
	workspaceID, err := ownRunWorkspace(ctx, s.db.R, runID, u.ID)
	if err != nil {
		return nil, err
	}
	st, err := s.engine.transition(ctx, workspaceID, runID, nil, func(_ *db.Tx, st *runState) error {
		if st.run.Status != RunRunning {
			return apperr.BadRequest("the run is %s, not waiting for a decision", st.run.Status)
		}
		var gate *nodeRun
		for _, nr := range st.nodes {
			if nr.Kind != "human" || (nodeKey != "" && nr.Key != nodeKey) {
				continue
			}
			if nr.Status == NodeWaiting && (gate == nil || nr.StartedAt.Before(*gate.StartedAt)) {
				gate = nr
			}
		}
		if gate == nil {
			if nodeKey != "" {
				if n := st.graph.Node(nodeKey); n == nil || n.Kind != "human" {
					return apperr.NotFound("human node")
				}
				return apperr.BadRequest("node %q is not waiting for a decision", nodeKey)
			}
			return apperr.BadRequest("the run is not waiting for a decision")
		}
		out := map[string]any{"decision": d.Decision, "decided_by": u.ID, "decided_at": st.now.Format(time.RFC3339)}
		if d.Comment != "" {
			out["comment"] = d.Comment
		}
		return st.apply(gate, succeed(handle, out))
	})
	if err != nil {
		return nil, err
	}
	return s.view(ctx, st.run)
}

// Emit resumes the wait_event nodes of a workspace waiting for the named
// event, with the payload as their output, and reports how many it resumed.
func (s *Service) Emit(ctx context.Context, workspaceID, name string, payload json.RawMessage) (int, error) {
	if name == "" || len(name) > 200 || strings.ContainsRune(name, 0) {
		return 0, apperr.BadRequest("event name must be 1 to 200 characters")
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if !json.Valid(payload) {
		return 0, apperr.BadRequest("event payload must be JSON")
	}
	runIDs, err := runsWaitingOnEvent(ctx, s.db.R, workspaceID, name)
	if err != nil {
		return 0, err
	}
	var ev any
	_ = json.Unmarshal(payload, &ev) // checked valid above
	n := 0
	for _, runID := range runIDs {
		_, err := s.engine.transition(ctx, workspaceID, runID, nil, func(_ *db.Tx, st *runState) error {
			if st.run.Status != RunRunning {
				return nil
			}
			for _, nr := range st.nodes {
				if nr.Kind == "wait_event" && nr.Status == NodeWaiting && nr.WaitEvent != nil && *nr.WaitEvent == name {
					if err := st.apply(nr, succeed(HandleEvent, map[string]any{"event": name, "payload": ev})); err != nil {
						return err
					}
					st.stopped = append(st.stopped, nr) // its timer goes
					n++
				}
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// checkExportable refuses a workflow whose YAML form an import would
// refuse as too large, so that every saved workflow exports and imports.
func checkExportable(w *Workflow) error {
	doc, err := ExportYAML(w)
	if err != nil {
		return err
	}
	if len(doc) > yamlMaxBytes {
		return apperr.BadRequest("the workflow's YAML form would be %d bytes, more than the %d an import takes: make it smaller", len(doc), yamlMaxBytes)
	}
	return nil
}

// Export renders a workflow as YAML.
func (s *Service) Export(ctx context.Context, ws *actor.Workspace, id string) ([]byte, error) {
	w, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return ExportYAML(w)
}

// Import creates a workflow in a project from its YAML document.
func (s *Service) Import(ctx context.Context, ws *actor.Workspace, projectID string, doc []byte) (*Workflow, error) {
	in, err := ParseYAML(doc)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, apperr.BadRequest("%s", err.Error())
	}
	in.ProjectID = projectID
	return s.Create(ctx, ws, in)
}
