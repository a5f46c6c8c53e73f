package workflows

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every query of a workspace-scoped row takes the workspace id: a workflow
// or run of another workspace reads exactly like a missing one.

const workflowColumns = `id, workspace_id, project_id, name, max_concurrent_runs, graph, created_at`

func scanWorkflow(row interface{ Scan(...any) error }) (*Workflow, error) {
	var w Workflow
	var maxRuns sql.NullInt64
	var graph []byte
	if err := row.Scan(&w.ID, &w.workspaceID, &w.ProjectID, &w.Name, &maxRuns, &graph, db.UTC(&w.CreatedAt)); err != nil {
		return nil, err
	}
	if maxRuns.Valid {
		w.MaxConcurrentRuns = &maxRuns.Int64
	}
	var g Graph
	if err := json.Unmarshal(graph, &g); err != nil {
		return nil, fmt.Errorf("workflows: graph of %s: %w", w.ID, err)
	}
	w.setGraph(&g)
	return &w, nil
}

func (w *Workflow) setGraph(g *Graph) {
	w.Nodes, w.Edges, w.Steps = g.Nodes, g.Edges, g.Steps()
	if w.Nodes == nil {
		w.Nodes = []Node{}
	}
	if w.Edges == nil {
		w.Edges = []Edge{}
	}
}

func (w *Workflow) graph() *Graph { return &Graph{Nodes: w.Nodes, Edges: w.Edges} }

func getWorkflow(ctx context.Context, q db.Queryer, workspaceID, id string) (*Workflow, error) {
	w, err := scanWorkflow(q.QueryRowContext(ctx, "SELECT "+workflowColumns+" FROM workflows WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("workflow")
	}
	if err != nil {
		return nil, fmt.Errorf("workflows: get: %w", err)
	}
	return w, nil
}

func listWorkflows(ctx context.Context, q db.Queryer, where string, args ...any) ([]Workflow, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+workflowColumns+" FROM workflows WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("workflows: list: %w", err)
	}
	defer rows.Close()
	out := []Workflow{}
	for rows.Next() {
		w, err := scanWorkflow(rows)
		if err != nil {
			return nil, fmt.Errorf("workflows: list: %w", err)
		}
		out = append(out, *w)
	}
	return out, rows.Err()
}

func insertWorkflow(ctx context.Context, q db.Queryer, w *Workflow, now time.Time) error {
	graph, err := json.Marshal(w.graph())
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO workflows (id, workspace_id, project_id, name, max_concurrent_runs, graph, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, w.ID, w.workspaceID, w.ProjectID, w.Name, w.MaxConcurrentRuns, graph, w.CreatedAt, now)
	if err != nil {
		return fmt.Errorf("workflows: insert: %w", err)
	}
	return nil
}

func updateWorkflow(ctx context.Context, q db.Queryer, w *Workflow, now time.Time) error {
	graph, err := json.Marshal(w.graph())
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE workflows SET name = $3, max_concurrent_runs = $4, graph = $5, updated_at = $6
		WHERE workspace_id = $1 AND id = $2`, w.workspaceID, w.ID, w.Name, w.MaxConcurrentRuns, graph, now)
	if err != nil {
		return fmt.Errorf("workflows: update: %w", err)
	}
	return nil
}

// runRow is a workflow run as stored: GraphID names the version of its
// workflow's graph it runs (workflow_graphs); Trigger is its trigger as
// stored (storedTrigger: without the body when TriggerBodyIsInput).
type runRow struct {
	ID, WorkspaceID, ProjectID, WorkflowID, LogID string
	CreatedBy                                     *string
	Status                                        string
	GraphID                                       string
	Input, Trigger, Output                        json.RawMessage
	TriggerBodyIsInput                            bool
	Error                                         string
	CreatedAt                                     time.Time
	StartedAt, FinishedAt                         *time.Time
}

const runColumns = `id, workspace_id, project_id, workflow_id, log_id, created_by, status, graph_id, input, trigger_data, trigger_body_is_input,
	output, error, created_at, started_at, finished_at`

func scanRunRow(row interface{ Scan(...any) error }) (*runRow, error) {
	var r runRow
	var input, trigger, output []byte
	err := row.Scan(&r.ID, &r.WorkspaceID, &r.ProjectID, &r.WorkflowID, &r.LogID, &r.CreatedBy, &r.Status, &r.GraphID, &input, &trigger,
		&r.TriggerBodyIsInput, &output, &r.Error, db.UTC(&r.CreatedAt), db.NullUTC(&r.StartedAt), db.NullUTC(&r.FinishedAt))
	if err != nil {
		return nil, err
	}
	r.Input, r.Trigger = input, trigger
	if output != nil {
		r.Output = output
	}
	return &r, nil
}

// getRunRow reads a run; workspaceID "" reads it in whatever workspace
// (engine paths, which start from a job or a row they own).
func getRunRow(ctx context.Context, q db.Queryer, workspaceID, id string) (*runRow, error) {
	query := "SELECT " + runColumns + " FROM workflow_runs WHERE id = $1"
	args := []any{id}
	if workspaceID != "" {
		query += " AND workspace_id = $2"
		args = append(args, workspaceID)
	}
	r, err := scanRunRow(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("workflow run")
	}
	if err != nil {
		return nil, fmt.Errorf("workflows: get run: %w", err)
	}
	return r, nil
}

// lockRun takes the run's row lock for the transaction (every transition
// of a run holds it, so transitions of one run never interleave) and reads
// the run.
func lockRun(ctx context.Context, tx *db.Tx, id string, now time.Time) (*runRow, error) {
	r, err := scanRunRow(tx.QueryRowContext(ctx, "UPDATE workflow_runs SET updated_at = $2 WHERE id = $1 RETURNING "+runColumns, id, now))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("workflow run")
	}
	if err != nil {
		return nil, fmt.Errorf("workflows: lock run: %w", err)
	}
	return r, nil
}

// insertRunRow writes a new run as it stands: queued, or (a run started at
// once, written after its first transition) with its status and output.
func insertRunRow(ctx context.Context, q db.Queryer, r *runRow, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO workflow_runs (id, workspace_id, project_id, workflow_id, log_id, created_by, status, graph_id,
		input, trigger_data, trigger_body_is_input, output, error, created_at, started_at, finished_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		r.ID, r.WorkspaceID, r.ProjectID, r.WorkflowID, r.LogID, r.CreatedBy, r.Status, r.GraphID, []byte(r.Input), []byte(r.Trigger),
		r.TriggerBodyIsInput, jsonArg(r.Output), r.Error, r.CreatedAt, r.StartedAt, r.FinishedAt, now)
	if err != nil {
		return fmt.Errorf("workflows: insert run: %w", err)
	}
	return nil
}

func jsonArg(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return []byte(raw)
}

func saveRunRow(ctx context.Context, q db.Queryer, r *runRow) error {
	_, err := q.ExecContext(ctx, `UPDATE workflow_runs SET status = $2, output = $3, error = $4, started_at = $5, finished_at = $6
		WHERE id = $1`, r.ID, r.Status, jsonArg(r.Output), r.Error, r.StartedAt, r.FinishedAt)
	if err != nil {
		return fmt.Errorf("workflows: save run: %w", err)
	}
	return nil
}

// nodeRun is one node's state in one frame of a run.
type nodeRun struct {
	ID, RunID, Frame, Key, Kind, Status, Handle string
	Output                                      json.RawMessage
	Error                                       string
	State                                       json.RawMessage
	Attempt                                     int
	WaitEvent, TaskID                           *string
	Seq                                         int
	CreatedAt                                   time.Time
	StartedAt, FinishedAt                       *time.Time

	dirty, fresh bool
}

const nodeColumns = `id, run_id, frame, node_key, kind, status, handle, output, error, state, attempt, wait_event, task_id, seq,
	created_at, started_at, finished_at`

func scanNodeRun(row interface{ Scan(...any) error }) (*nodeRun, error) {
	var n nodeRun
	var output, state []byte
	err := row.Scan(&n.ID, &n.RunID, &n.Frame, &n.Key, &n.Kind, &n.Status, &n.Handle, &output, &n.Error, &state, &n.Attempt, &n.WaitEvent,
		&n.TaskID, &n.Seq, db.UTC(&n.CreatedAt), db.NullUTC(&n.StartedAt), db.NullUTC(&n.FinishedAt))
	if err != nil {
		return nil, err
	}
	if output != nil {
		n.Output = output
	}
	if state != nil {
		n.State = state
	}
	return &n, nil
}

func listNodeRuns(ctx context.Context, q db.Queryer, runID string) ([]*nodeRun, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+nodeColumns+" FROM node_runs WHERE run_id = $1 ORDER BY seq", runID)
	if err != nil {
		return nil, fmt.Errorf("workflows: node runs: %w", err)
	}
	defer rows.Close()
	var out []*nodeRun
	for rows.Next() {
		n, err := scanNodeRun(rows)
		if err != nil {
			return nil, fmt.Errorf("workflows: node runs: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// saveNodeRuns writes the new and changed node runs of a transition: new
// ones in one multi-row insert, changed ones one update each.
func saveNodeRuns(ctx context.Context, tx *db.Tx, ns []*nodeRun) error {
	var fresh []*nodeRun
	for _, n := range ns {
		switch {
		case n.fresh:
			fresh = append(fresh, n)
		case n.dirty:
			_, err := tx.ExecContext(ctx, `UPDATE node_runs SET status = $2, handle = $3, output = $4, error = $5, state = $6, attempt = $7,
				wait_event = $8, task_id = $9, started_at = $10, finished_at = $11 WHERE id = $1`,
				n.ID, n.Status, n.Handle, jsonArg(n.Output), n.Error, jsonArg(n.State), n.Attempt, n.WaitEvent, n.TaskID, n.StartedAt, n.FinishedAt)
			if err != nil {
				return fmt.Errorf("workflows: save node run: %w", err)
			}
		}
		n.fresh, n.dirty = false, false
	}
	for len(fresh) > 0 {
		batch := fresh[:min(len(fresh), 50)]
		fresh = fresh[len(batch):]
		var b strings.Builder
		b.WriteString(`INSERT INTO node_runs (id, run_id, frame, node_key, kind, status, handle, output, error, state, attempt, wait_event,
			task_id, seq, created_at, started_at, finished_at) VALUES `)
		args := make([]any, 0, len(batch)*17)
		for i, n := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for j := range 17 {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "$%d", len(args)+j+1)
			}
			b.WriteString(")")
			args = append(args, n.ID, n.RunID, n.Frame, n.Key, n.Kind, n.Status, n.Handle, jsonArg(n.Output), n.Error, jsonArg(n.State), n.Attempt,
				n.WaitEvent, n.TaskID, n.Seq, n.CreatedAt, n.StartedAt, n.FinishedAt)
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("workflows: insert node runs: %w", err)
		}
	}
	return nil
}
