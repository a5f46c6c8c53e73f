package workflows

import (
	"context"
	"errors"
	"time"

	"slipway/internal/platform/apperr"
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

// Service implements workflows and their runs, one concept a file:
// definitions (definitions.go), runs (running.go), human gates (gates.go)
// and the YAML form (yaml_apply.go); the engine runs what they start.
type Service struct {
	db       *db.DB
	clock    clock.Clock
	runs     *runs.Service
	engine   Runner
	projects Projects
	scripts  Scripts // nil: code nodes name no saved script
	quota    Quota   // the plan's workflows.max; nil: no limit
}

// NewService builds the workflows service over an engine (scripts may be
// nil, as for the engine).
func NewService(d *db.DB, clk clock.Clock, r *runs.Service, e Runner, p Projects, scripts Scripts, quota Quota) *Service {
	return &Service{db: d, clock: clk, runs: r, engine: e, projects: p, scripts: scripts, quota: quota}
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

// inTx runs fn in tx, or in a transaction of its own when tx is nil.
func (s *Service) inTx(ctx context.Context, tx *db.Tx, fn func(tx *db.Tx) error) error {
	if tx != nil {
		return fn(tx)
	}
	return s.db.Tx(ctx, fn)
}

var errDryRun = errors.New("workflows: dry run")

// ProjectDeleting stops and removes the project's workflow runs (the rows
// go with the project; their logs and tasks need telling). They are found
// through the project's workflows (workflow_runs_workflow): no index leads
// from a project to its finished runs.
func (s *Service) ProjectDeleting(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	if err := s.dropRuns(ctx, tx, workspaceID, "workflow_id IN (SELECT id FROM workflows WHERE workspace_id = $1 AND project_id = $2)", projectID); err != nil {
		return err
	}
	wfs, err := projectWorkflows(ctx, tx, workspaceID, projectID)
	if err != nil {
		return err
	}
	for _, id := range wfs {
		if err := s.runs.DeleteLog(ctx, tx, workspaceID, id); err != nil { // its node tests
			return err
		}
	}
	return nil
}

// CapChanged starts the project's queued runs its new cap lets through.
func (s *Service) CapChanged(ctx context.Context, tx *db.Tx, workspaceID, projectID string) error {
	return s.engine.Admit(ctx, tx, workspaceID, projectID)
}

var boardSort = map[string]string{"name": "name", "created_at": "created_at"}

// runWaitPoll is WaitRun's fallback when no notification arrives.
const runWaitPoll = time.Second
