package workflows

import (
	"context"
	"errors"
	"time"

	"slipway/internal/billing"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

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
		if s.quota != nil {
			if err := s.quota.Check(ctx, tx, billing.Subject{OrganizationID: ws.OrganizationID, WorkspaceID: ws.ID}, "workflows.max", 1); err != nil {
				return err
			}
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
		return s.engine.Admit(ctx, tx, ws.ID, w.ProjectID)
	}()
	return out, err
}

// Apply statuses: what ApplyYAML did, or with a dry run would do.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
)

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
	return s.engine.Admit(ctx, tx, ws.ID, w.ProjectID)
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
		return s.engine.Admit(ctx, tx, ws.ID, w.ProjectID)
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
		if err := s.runs.DeleteLog(ctx, tx, ws.ID, w.ID); err != nil { // its node tests
			return err
		}
		if err := deleteWorkflow(ctx, tx, ws.ID, w.ID); err != nil {
			return err
		}
		deleted = true
		return s.engine.Admit(ctx, tx, ws.ID, w.ProjectID)
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
			if _, err := s.engine.Cancel(ctx, tx, workspaceID, d.id, "the workflow was deleted"); err != nil {
				return err
			}
		}
		if err := s.runs.DeleteLog(ctx, tx, workspaceID, d.log); err != nil {
			return err
		}
	}
	return nil
}

// BoardInput filters the workflows board.
type BoardInput struct {
	board.Query
	ProjectID string `query:"project_id" doc:"Only this project's workflows"`
}

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
