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
	// Nodes are the run's node runs packed in its row (a run written once,
	// see packNodes); nil: they are rows of node_runs.
	Nodes json.RawMessage
}

const runColumns = `id, workspace_id, project_id, workflow_id, log_id, created_by, status, graph_id, input, trigger_data, trigger_body_is_input,
	output, error, created_at, started_at, finished_at, nodes`

func scanRunRow(row interface{ Scan(...any) error }) (*runRow, error) {
	var r runRow
	var input, trigger, output, nodes []byte
	err := row.Scan(&r.ID, &r.WorkspaceID, &r.ProjectID, &r.WorkflowID, &r.LogID, &r.CreatedBy, &r.Status, &r.GraphID, &input, &trigger,
		&r.TriggerBodyIsInput, &output, &r.Error, db.UTC(&r.CreatedAt), db.NullUTC(&r.StartedAt), db.NullUTC(&r.FinishedAt), &nodes)
	if err != nil {
		return nil, err
	}
	if nodes != nil {
		r.Nodes = nodes
	}
	r.Input, r.Trigger = input, trigger
	if output != nil {
		r.Output = output
	}
	return &r, nil
}

// getRunRow reads a run of the workspace (an engine path names the
// workspace of the job it works).
func getRunRow(ctx context.Context, q db.Queryer, workspaceID, id string) (*runRow, error) {
	r, err := scanRunRow(q.QueryRowContext(ctx, "SELECT "+runColumns+" FROM workflow_runs WHERE workspace_id = $1 AND id = $2", workspaceID, id))
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
func lockRun(ctx context.Context, tx *db.Tx, workspaceID, id string, now time.Time) (*runRow, error) {
	r, err := scanRunRow(tx.QueryRowContext(ctx, "UPDATE workflow_runs SET updated_at = $3 WHERE workspace_id = $1 AND id = $2 RETURNING "+runColumns,
		workspaceID, id, now))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("workflow run")
	}
	if err != nil {
		return nil, fmt.Errorf("workflows: lock run: %w", err)
	}
	return r, nil
}

// lockRunNodes is lockRun followed by the run's node runs, read after the
// lock (so as its previous holder committed them), in one round trip.
func lockRunNodes(ctx context.Context, tx *db.Tx, workspaceID, id string, now time.Time) (*runRow, []*nodeRun, error) {
	var r *runRow
	var nodes []*nodeRun
	err := tx.Pipe(ctx,
		db.Query{SQL: "UPDATE workflow_runs SET updated_at = $3 WHERE workspace_id = $1 AND id = $2 RETURNING " + runColumns,
			Args: []any{workspaceID, id, now}, Scan: func(rows db.Rows) (err error) {
				if rows.Next() {
					r, err = scanRunRow(rows)
					return err
				}
				return rows.Err()
			}},
		db.Query{SQL: "SELECT " + nodeColumns + " FROM node_runs WHERE run_id = $1 ORDER BY seq", Args: []any{id}, Scan: func(rows db.Rows) error {
			for rows.Next() {
				n, err := scanNodeRun(rows)
				if err != nil {
					return err
				}
				nodes = append(nodes, n)
			}
			return rows.Err()
		}})
	if err != nil {
		return nil, nil, fmt.Errorf("workflows: lock run: %w", err)
	}
	if r == nil {
		return nil, nil, apperr.NotFound("workflow run")
	}
	if r.Nodes != nil {
		nodes, err = unpackNodes(r)
	}
	return r, nodes, err
}

// nodesOf reads a run's node runs: packed in its row, or its node_runs
// rows.
func nodesOf(ctx context.Context, q db.Queryer, r *runRow) ([]*nodeRun, error) {
	if r.Nodes != nil {
		return unpackNodes(r)
	}
	return listNodeRuns(ctx, q, r.ID)
}

// insertRunRow writes a new run as it stands: queued, or (a run started at
// once, written after its first transition) with its status and output.
func insertRunRow(tx *db.Tx, r *runRow, now time.Time) {
	tx.Later(`INSERT INTO workflow_runs (id, workspace_id, project_id, workflow_id, log_id, created_by, status, graph_id,
		input, trigger_data, trigger_body_is_input, output, error, created_at, started_at, finished_at, updated_at, nodes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
		r.ID, r.WorkspaceID, r.ProjectID, r.WorkflowID, r.LogID, r.CreatedBy, r.Status, r.GraphID, []byte(r.Input), []byte(r.Trigger),
		r.TriggerBodyIsInput, jsonArg(r.Output), r.Error, r.CreatedAt, r.StartedAt, r.FinishedAt, now, jsonArg(r.Nodes))
}

func jsonArg(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return []byte(raw)
}

func saveRunRow(tx *db.Tx, r *runRow) {
	tx.Later(`UPDATE workflow_runs SET status = $3, output = $4, error = $5, started_at = $6, finished_at = $7
		WHERE workspace_id = $1 AND id = $2`, r.WorkspaceID, r.ID, r.Status, jsonArg(r.Output), r.Error, r.StartedAt, r.FinishedAt)
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
func saveNodeRuns(tx *db.Tx, ns []*nodeRun) {
	var fresh []*nodeRun
	for _, n := range ns {
		switch {
		case n.fresh:
			fresh = append(fresh, n)
		case n.dirty:
			tx.Later(`UPDATE node_runs SET status = $3, handle = $4, output = $5, error = $6, state = $7, attempt = $8,
				wait_event = $9, task_id = $10, started_at = $11, finished_at = $12 WHERE run_id = $1 AND id = $2`,
				n.RunID, n.ID, n.Status, n.Handle, jsonArg(n.Output), n.Error, jsonArg(n.State), n.Attempt, n.WaitEvent, n.TaskID, n.StartedAt,
				n.FinishedAt)
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
		tx.Later(b.String(), args...)
	}
}

// runsWaitingOnTask lists the runs with a node waiting on a task of the
// workspace.
func runsWaitingOnTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) ([]string, error) {
	ids, err := readIDs(ctx, q, `SELECT n.run_id FROM node_runs n JOIN workflow_runs r ON r.id = n.run_id
		WHERE r.workspace_id = $1 AND n.task_id = $2 AND n.status = 'waiting'`, workspaceID, taskID)
	if err != nil {
		return nil, fmt.Errorf("workflows: task ended: %w", err)
	}
	return ids, nil
}

// readIDs reads a statement's one text column.
func readIDs(ctx context.Context, q db.Queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// runJobPending reports whether the run's job is queued or held.
func runJobPending(ctx context.Context, tx *db.Tx, workspaceID, runID string) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM jobs WHERE workspace_id = $1 AND kind = $2 AND ref_id = $3 AND state IN ('available', 'running')",
		workspaceID, RunJob, runID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("workflows: run job: %w", err)
	}
	return true, nil
}

// queuedRun is a run waiting for admission, with its workflow's cap.
type queuedRun struct {
	id, workflow string
	max          sql.NullInt64
}

// queuedRuns lists a project's queued runs, oldest first.
func queuedRuns(ctx context.Context, tx *db.Tx, workspaceID, projectID string) ([]queuedRun, error) {
	rows, err := tx.QueryContext(ctx, `SELECT r.id, r.workflow_id, w.max_concurrent_runs FROM workflow_runs r
		JOIN workflows w ON w.id = r.workflow_id AND w.workspace_id = r.workspace_id
		WHERE r.workspace_id = $1 AND r.project_id = $2 AND r.status = 'queued' ORDER BY r.created_at, r.id LIMIT 200`, workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("workflows: admission: %w", err)
	}
	defer rows.Close()
	var out []queuedRun
	for rows.Next() {
		var q queuedRun
		if err := rows.Scan(&q.id, &q.workflow, &q.max); err != nil {
			return nil, fmt.Errorf("workflows: admission: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// projectCap reads a project's cap on running workflow runs.
func projectCap(ctx context.Context, tx *db.Tx, workspaceID, projectID string) (sql.NullInt64, error) {
	var n sql.NullInt64
	err := tx.QueryRowContext(ctx, "SELECT max_concurrent_runs FROM projects WHERE workspace_id = $1 AND id = $2", workspaceID, projectID).Scan(&n)
	if err != nil {
		return n, fmt.Errorf("workflows: admission: %w", err)
	}
	return n, nil
}

// runningByWorkflow counts a project's running runs by workflow.
func runningByWorkflow(ctx context.Context, tx *db.Tx, workspaceID, projectID string) (map[string]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT workflow_id, COUNT(*) FROM workflow_runs WHERE workspace_id = $1 AND project_id = $2
		AND status = 'running' GROUP BY workflow_id`, workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("workflows: admission: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var wf string
		var n int64
		if err := rows.Scan(&wf, &n); err != nil {
			return nil, fmt.Errorf("workflows: admission: %w", err)
		}
		out[wf] = n
	}
	return out, rows.Err()
}

// capped reports whether a workflow or its project has a cap on runs.
// startRow is what starting a run reads of its workflow: its project, its
// graph as stored, and whether it or its project has a cap.
type startRow struct {
	projectID string
	graph     []byte
	capped    bool
}

// startable reads a workflow to start a run of, in one statement (on
// PostgreSQL with the transaction's BEGIN, when it is the first).
func startable(ctx context.Context, tx *db.Tx, workspaceID, id string) (*startRow, error) {
	var r startRow
	var wmax, pmax sql.NullInt64
	var found bool
	err := tx.Pipe(ctx, db.Query{SQL: `SELECT w.project_id, w.graph, w.max_concurrent_runs, p.max_concurrent_runs FROM workflows w
		JOIN projects p ON p.id = w.project_id AND p.workspace_id = w.workspace_id
		WHERE w.workspace_id = $1 AND w.id = $2`, Args: []any{workspaceID, id}, Scan: db.ScanOne(&found, &r.projectID, &r.graph, &wmax, &pmax)})
	if err != nil {
		return nil, fmt.Errorf("workflows: get: %w", err)
	}
	if !found {
		return nil, apperr.NotFound("workflow")
	}
	r.capped = wmax.Valid || pmax.Valid
	return &r, nil
}

func capped(ctx context.Context, tx *db.Tx, workspaceID, workflowID string) (bool, error) {
	var wmax, pmax sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT w.max_concurrent_runs, p.max_concurrent_runs FROM workflows w
		JOIN projects p ON p.id = w.project_id AND p.workspace_id = w.workspace_id
		WHERE w.workspace_id = $1 AND w.id = $2`, workspaceID, workflowID).Scan(&wmax, &pmax)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // deleted with its workflow
	}
	if err != nil {
		return false, fmt.Errorf("workflows: caps: %w", err)
	}
	return wmax.Valid || pmax.Valid, nil
}

// queuedProject is a project of a workspace with queued runs.
type queuedProject struct{ ws, id string }

// projectsWithQueuedRuns lists, in every workspace, the projects with
// queued runs (the admission sweep).
func projectsWithQueuedRuns(ctx context.Context, q db.Queryer) ([]queuedProject, error) {
	rows, err := q.QueryContext(ctx, "SELECT DISTINCT workspace_id, project_id FROM workflow_runs WHERE status = 'queued'")
	if err != nil {
		return nil, fmt.Errorf("workflows: sweep: %w", err)
	}
	defer rows.Close()
	var out []queuedProject
	for rows.Next() {
		var p queuedProject
		if err := rows.Scan(&p.ws, &p.id); err != nil {
			return nil, fmt.Errorf("workflows: sweep: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func deleteWorkflow(ctx context.Context, tx *db.Tx, workspaceID, id string) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM workflows WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("workflows: delete: %w", err)
	}
	return nil
}

// projectWorkflows lists the ids of a project's workflows.
func projectWorkflows(ctx context.Context, q db.Queryer, workspaceID, projectID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT id FROM workflows WHERE workspace_id = $1 AND project_id = $2 ORDER BY id", workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("workflows: of project: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("workflows: of project: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// doomedRun is a run about to be deleted with its workflow or project.
type doomedRun struct{ id, log, status string }

// runsMatching lists the workspace's runs matching cond (over $1 =
// workspace, $2 = arg).
func runsMatching(ctx context.Context, tx *db.Tx, workspaceID, cond string, arg string) ([]doomedRun, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, log_id, status FROM workflow_runs WHERE workspace_id = $1 AND "+cond, workspaceID, arg)
	if err != nil {
		return nil, fmt.Errorf("workflows: runs to drop: %w", err)
	}
	defer rows.Close()
	var out []doomedRun
	for rows.Next() {
		var d doomedRun
		if err := rows.Scan(&d.id, &d.log, &d.status); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// countWorkflows counts the workflows w selects.
func countWorkflows(ctx context.Context, q db.Queryer, w db.Where) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM workflows WHERE "+w.SQL, w.Args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("workflows: count: %w", err)
	}
	return n, nil
}

// recentRun is a run's status and times, for the board's figures.
type recentRun struct {
	status         string
	started, ended *time.Time
}

// recentRuns reads the runs w selects that are active or finished since:
// each status through its own index (workflow_runs_queued, _active and
// _finished, whose predicates the arms repeat), so the figures read the
// runs in flight and the last day's, never every run of the workspace.
func recentRuns(ctx context.Context, d *db.DB, w db.Where, since time.Time) ([]recentRun, error) {
	cols := "SELECT status, " + d.Dialect.TimeColumn("started_at") + ", " + d.Dialect.TimeColumn("finished_at") + " FROM workflow_runs WHERE " + w.SQL
	rows, err := d.R.QueryContext(ctx, cols+" AND status = 'queued' UNION ALL "+cols+" AND status = 'running' UNION ALL "+
		cols+" AND status IN ('succeeded', 'failed', 'cancelled') AND finished_at >= "+w.Next(1),
		append(append([]any{}, w.Args...), since)...)
	if err != nil {
		return nil, fmt.Errorf("workflows: stats: %w", err)
	}
	defer rows.Close()
	var out []recentRun
	for rows.Next() {
		var r recentRun
		if err := rows.Scan(&r.status, db.NullUTC(&r.started), db.NullUTC(&r.ended)); err != nil {
			return nil, fmt.Errorf("workflows: stats: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// gate is a waiting human node with its raw state.
type gate struct {
	Approval
	state []byte
}

// waitingGates lists the human gates of a user's running runs in every
// workspace the user belongs to (and is not suspended from), oldest first.
func waitingGates(ctx context.Context, d *db.DB, userID string) ([]gate, error) {
	rows, err := d.R.QueryContext(ctx, `SELECT n.run_id, n.node_key, n.state, r.workflow_id, w.name, r.project_id, r.workspace_id, `+
		d.Dialect.TimeColumn("n.started_at")+`
		FROM node_runs n JOIN workflow_runs r ON r.id = n.run_id JOIN workflows w ON w.id = r.workflow_id
		JOIN workspace_members m ON m.workspace_id = r.workspace_id AND m.user_id = $1
		WHERE n.status = 'waiting' AND n.kind = 'human' AND r.created_by = $1 AND r.status = 'running'
		AND NOT EXISTS (SELECT 1 FROM organization_members s JOIN workspaces sw ON sw.organization_id = s.organization_id
			WHERE sw.id = r.workspace_id AND s.user_id = $1 AND s.suspended_at IS NOT NULL)
		ORDER BY n.started_at, n.id LIMIT 500`, userID)
	if err != nil {
		return nil, fmt.Errorf("workflows: approvals: %w", err)
	}
	defer rows.Close()
	var out []gate
	for rows.Next() {
		var g gate
		var since *time.Time
		if err := rows.Scan(&g.RunID, &g.NodeKey, &g.state, &g.WorkflowID, &g.WorkflowName, &g.ProjectID, &g.WorkspaceID, db.NullUTC(&since)); err != nil {
			return nil, fmt.Errorf("workflows: approvals: %w", err)
		}
		if since != nil {
			g.WaitingSince = *since
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// ownRunWorkspace returns the workspace of a run the user started, in a
// workspace the user belongs to (and is not suspended from).
func ownRunWorkspace(ctx context.Context, q db.Queryer, runID, userID string) (string, error) {
	var ws string
	err := q.QueryRowContext(ctx, `SELECT r.workspace_id FROM workflow_runs r
		JOIN workspace_members m ON m.workspace_id = r.workspace_id AND m.user_id = $2
		WHERE r.id = $1 AND r.created_by = $2
		AND NOT EXISTS (SELECT 1 FROM organization_members s JOIN workspaces sw ON sw.organization_id = s.organization_id
			WHERE sw.id = r.workspace_id AND s.user_id = $2 AND s.suspended_at IS NOT NULL)`, runID, userID).Scan(&ws)
	if errors.Is(err, sql.ErrNoRows) {
		return "", apperr.NotFound("workflow run")
	}
	if err != nil {
		return "", fmt.Errorf("workflows: decide: %w", err)
	}
	return ws, nil
}

// runsWaitingOnEvent lists the workspace's runs with a node waiting for the
// named event.
func runsWaitingOnEvent(ctx context.Context, q db.Queryer, workspaceID, name string) ([]string, error) {
	ids, err := readIDs(ctx, q, `SELECT DISTINCT n.run_id FROM node_runs n JOIN workflow_runs r ON r.id = n.run_id
		WHERE n.status = 'waiting' AND n.wait_event = $1 AND r.workspace_id = $2`, name, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("workflows: emit: %w", err)
	}
	return ids, nil
}

// RunSummary is one run in a workflow's history.
type RunSummary struct {
	ID         string     `json:"id" format:"uuid"`
	Status     string     `json:"status" enum:"queued,running,succeeded,failed,cancelled"`
	Error      string     `json:"error"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at" nullable:"true"`
	FinishedAt *time.Time `json:"finished_at" nullable:"true"`
}

// newestRuns lists a workflow's newest runs. Run ids are time-ordered
// (UUIDv7), so the newest are the greatest ids.
func newestRuns(ctx context.Context, q db.Queryer, workspaceID, workflowID string, limit int) ([]RunSummary, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, status, error, created_at, started_at, finished_at FROM workflow_runs
		WHERE workflow_id = $2 AND workspace_id = $1 ORDER BY id DESC LIMIT $3`, workspaceID, workflowID, limit)
	if err != nil {
		return nil, fmt.Errorf("workflows: runs: %w", err)
	}
	defer rows.Close()
	out := []RunSummary{}
	for rows.Next() {
		var r RunSummary
		if err := rows.Scan(&r.ID, &r.Status, &r.Error, db.UTC(&r.CreatedAt), db.NullUTC(&r.StartedAt), db.NullUTC(&r.FinishedAt)); err != nil {
			return nil, fmt.Errorf("workflows: runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
