package tasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every statement names the task's workspace: a task of another workspace
// reads, and is changed, exactly like a missing one. Updates return the row
// they wrote.

const taskColumns = `id, workspace_id, project_id, title, prompt, agent_profile, config, notes, status, held, branch, error, pr,
	created_by, created_at, updated_at, started_at, finished_at, parent_task_id, group_id, cost_usd`

// listColumns is taskColumns for the list queries, with the timestamps as
// the dialect reads them fastest; built once per dialect.
func listColumns(d db.Dialect) string {
	if c, ok := listColumnsOf.Load(d); ok {
		return c.(string)
	}
	c := strings.NewReplacer("created_at,", d.TimeColumn("created_at")+",", "updated_at,", d.TimeColumn("updated_at")+",",
		"started_at,", d.TimeColumn("started_at")+",", "finished_at,", d.TimeColumn("finished_at")+",").Replace(taskColumns)
	listColumnsOf.Store(d, c)
	return c
}

var listColumnsOf sync.Map // db.Dialect → string

// taskRow scans rows of taskColumns. Its destinations are built once per
// statement, not once per row: a page of 20 tasks otherwise allocated them
// 20 times, the largest share of a list request's garbage.
type taskRow struct {
	t      Task
	config string
	pr     *string
	dest   []any
}

func newTaskRow() *taskRow {
	r := &taskRow{}
	t := &r.t
	r.dest = []any{&t.ID, &t.WorkspaceID, &t.ProjectID, &t.Title, &t.Prompt, &t.AgentProfile, &r.config, &t.Notes, &t.Status,
		&t.Held, &t.Branch, &t.Error, &r.pr, &t.CreatedBy, db.UTC(&t.CreatedAt), db.UTC(&t.UpdatedAt), db.NullUTC(&t.StartedAt),
		db.NullUTC(&t.FinishedAt), &t.ParentTaskID, &t.GroupID, &t.CostUSD}
	return r
}

// scan reads the row into *into.
func (r *taskRow) scan(row interface{ Scan(...any) error }, into *Task) error {
	if err := row.Scan(r.dest...); err != nil {
		return err
	}
	// r.t's Config and PR stay zero: they are decoded into *into (not
	// into a local copy, which the decoder's pointer would move to the
	// heap: one allocation per row).
	*into = r.t
	if r.config != "{}" { // most tasks take the defaults
		if err := json.Unmarshal([]byte(r.config), &into.Config); err != nil {
			return fmt.Errorf("tasks: config of %s: %w", into.ID, err)
		}
	}
	if r.pr != nil {
		into.PR = &PullRequest{}
		if err := json.Unmarshal([]byte(*r.pr), into.PR); err != nil {
			return fmt.Errorf("tasks: pr of %s: %w", into.ID, err)
		}
		if into.PR.State == "" { // recorded before pull requests had states
			into.PR.State = prState(into.PR)
		}
	}
	return nil
}

// one scans the single row a statement returned; no row is ErrNotFound.
func one(row *sql.Row, op string) (*Task, error) {
	t := &Task{}
	err := newTaskRow().scan(row, t)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("task")
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: %s: %w", op, err)
	}
	return t, nil
}

func getTask(ctx context.Context, q db.Queryer, workspaceID, id string) (*Task, error) {
	return one(q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM tasks WHERE workspace_id = $1 AND id = $2", workspaceID, id), "get")
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func insertTask(ctx context.Context, q db.Queryer, t *Task) error {
	cfg, err := jsonText(t.Config)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO tasks (id, workspace_id, project_id, title, prompt, agent_profile, config, notes, status,
		held, branch, created_by, created_at, updated_at, parent_task_id, group_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14, $15)`,
		t.ID, t.WorkspaceID, t.ProjectID, t.Title, t.Prompt, t.AgentProfile, cfg, t.Notes, t.Status, t.Held, t.Branch, t.CreatedBy, t.CreatedAt,
		t.ParentTaskID, t.GroupID)
	if err != nil {
		return fmt.Errorf("tasks: insert: %w", err)
	}
	return nil
}

// errMoved is returned by setStatus when the task was no longer in the
// status the caller saw (someone else moved it first).
var errMoved = apperr.New(apperr.CodeConflict, "the task changed while you acted on it; reload it")

// setStatus moves a task from one status to another only if it is still in
// from (compare-and-set). errText becomes the task's error (a move to
// queued or running clears it).
func setStatus(ctx context.Context, q db.Queryer, workspaceID, id, from, to, errText string, now time.Time) (*Task, error) {
	set := "status = $4, updated_at = $5, error = $6"
	switch {
	case to == StatusQueued:
		set += ", started_at = NULL, finished_at = NULL"
		errText = ""
	case to == StatusRunning && from == StatusQueued:
		set += ", started_at = $5"
		errText = ""
	case to == StatusRunning: // back from needs_input
		errText = ""
	case Terminal(to):
		set += ", finished_at = $5"
	}
	t, err := one(q.QueryRowContext(ctx, "UPDATE tasks SET "+set+" WHERE workspace_id = $1 AND id = $2 AND status = $3 RETURNING "+taskColumns,
		workspaceID, id, from, to, now, errText), "status")
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, errMoved
	}
	return t, err
}

func setHeld(ctx context.Context, q db.Queryer, workspaceID, id string, held bool, now time.Time) (*Task, error) {
	return one(q.QueryRowContext(ctx, "UPDATE tasks SET held = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2 RETURNING "+taskColumns,
		workspaceID, id, held, now), "hold")
}

func setConfig(ctx context.Context, q db.Queryer, workspaceID, id string, c TaskConfig, now time.Time) (*Task, error) {
	cfg, err := jsonText(c)
	if err != nil {
		return nil, err
	}
	return one(q.QueryRowContext(ctx, "UPDATE tasks SET config = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2 RETURNING "+taskColumns,
		workspaceID, id, cfg, now), "config")
}

func setNotes(ctx context.Context, q db.Queryer, workspaceID, id, notes string, now time.Time) (*Task, error) {
	return one(q.QueryRowContext(ctx, "UPDATE tasks SET notes = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2 RETURNING "+taskColumns,
		workspaceID, id, notes, now), "notes")
}

func setTitle(ctx context.Context, q db.Queryer, workspaceID, id, title string, now time.Time) (*Task, error) {
	return one(q.QueryRowContext(ctx, "UPDATE tasks SET title = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2 RETURNING "+taskColumns,
		workspaceID, id, title, now), "title")
}

// setPR records (or, with nil, clears) the task's pull request.
func setPR(ctx context.Context, q db.Queryer, workspaceID, id string, pr *PullRequest, now time.Time) (*Task, error) {
	var text *string
	if pr != nil {
		b, err := jsonText(pr)
		if err != nil {
			return nil, err
		}
		text = &b
	}
	return one(q.QueryRowContext(ctx, "UPDATE tasks SET pr = $3, updated_at = $4 WHERE workspace_id = $1 AND id = $2 RETURNING "+taskColumns,
		workspaceID, id, text, now), "pull request")
}

func deleteTask(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM tasks WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("tasks: delete: %w", err)
	}
	return nil
}

// taskIDs lists the ids of a project's tasks.
func taskIDs(ctx context.Context, q db.Queryer, workspaceID, projectID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT id FROM tasks WHERE workspace_id = $1 AND project_id = $2", workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("tasks: of project: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("tasks: of project: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ListFilter narrows GET /api/tasks.
type ListFilter struct {
	Status    string `query:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	ProjectID string `query:"project_id" format:"uuid"`
	Q         string `query:"q" maxLength:"200" doc:"Search title and prompt"`
	Limit     int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset    int    `query:"offset" minimum:"0" default:"0"`
}

// taskVersion is the version of a workspace's tasks (0 before its first
// task): every change to one of them moves it (migration 00024).
func taskVersion(ctx context.Context, d *db.DB, workspaceID string) (int64, error) {
	var v int64
	err := d.QueryRowPrepared(ctx, "SELECT version FROM task_versions WHERE workspace_id = $1", workspaceID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("tasks: version: %w", err)
	}
	return v, nil
}

// listTasks reads a page and the total. The page is read first, one row
// longer than asked: when that row is not there, the total follows from
// the page and the COUNT is skipped (every last page, and every list that
// fits in one). Both statements are prepared once per text and reused: list
// endpoints are hot, and SQLite would otherwise parse and plan them on every
// request.
func listTasks(ctx context.Context, d *db.DB, w db.Where, orderBy string, limit, offset int) ([]Task, int, error) {
	// The limit is written into the text, not bound: SQLite plans with a
	// bound LIMIT's value and so prepares such a statement again on every
	// execution (a tenth of a list request's time). Limits are bounded
	// (1-500), so the texts stay few.
	args := append(append([]any{}, w.Args...), offset)
	rows, err := d.QueryPrepared(ctx, "SELECT "+listColumns(d.Dialect)+" FROM tasks WHERE "+w.SQL+" ORDER BY "+orderBy+
		" LIMIT "+strconv.Itoa(limit+1)+" OFFSET "+w.Next(1), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("tasks: list: %w", err)
	}
	defer rows.Close()
	out := make([]Task, 0, min(limit, 64))
	more := false
	r := newTaskRow()
	for rows.Next() {
		if len(out) == limit {
			more = true
			break
		}
		out = append(out, Task{})
		if err := r.scan(rows, &out[len(out)-1]); err != nil {
			return nil, 0, fmt.Errorf("tasks: list: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("tasks: list: %w", err)
	}
	if err := rows.Close(); err != nil {
		return nil, 0, fmt.Errorf("tasks: list: %w", err)
	}
	if !more && (len(out) > 0 || offset == 0) {
		return out, offset + len(out), nil
	}
	var total int
	if err := d.QueryRowPrepared(ctx, "SELECT COUNT(*) FROM tasks WHERE "+w.SQL, w.Args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("tasks: count: %w", err)
	}
	return out, total, nil
}

func addCost(ctx context.Context, q db.Queryer, workspaceID, id string, usd float64) error {
	if _, err := q.ExecContext(ctx, "UPDATE tasks SET cost_usd = cost_usd + $3 WHERE workspace_id = $1 AND id = $2", workspaceID, id, usd); err != nil {
		return fmt.Errorf("tasks: add cost: %w", err)
	}
	return nil
}

// queryTasks reads the tasks of a statement selecting taskColumns.
func queryTasks(ctx context.Context, q db.Queryer, op, query string, args ...any) ([]Task, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("tasks: %s: %w", op, err)
	}
	defer rows.Close()
	r := newTaskRow()
	out := []Task{}
	for rows.Next() {
		var t Task
		if err := r.scan(rows, &t); err != nil {
			return nil, fmt.Errorf("tasks: %s: %w", op, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// childTasks lists a task's subtasks, oldest first.
func childTasks(ctx context.Context, q db.Queryer, workspaceID, parentID string) ([]Task, error) {
	return queryTasks(ctx, q, "subtasks", "SELECT "+taskColumns+" FROM tasks WHERE workspace_id = $1 AND parent_task_id = $2 ORDER BY created_at, id",
		workspaceID, parentID)
}

// profileCount is how many of a workspace's tasks of a profile are in a
// status, when one last changed and what they cost.
type profileCount struct {
	profile, status string
	n               int
	last            time.Time
	cost            float64
}

func profileCounts(ctx context.Context, d *db.DB, workspaceID string) ([]profileCount, error) {
	rows, err := d.R.QueryContext(ctx, `SELECT agent_profile, status, COUNT(*), MAX(`+d.Dialect.TimeColumn("updated_at")+`), SUM(cost_usd)
		FROM tasks WHERE workspace_id = $1 GROUP BY agent_profile, status`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("tasks: team board: %w", err)
	}
	defer rows.Close()
	var out []profileCount
	for rows.Next() {
		var c profileCount
		if err := rows.Scan(&c.profile, &c.status, &c.n, db.UTC(&c.last), &c.cost); err != nil {
			return nil, fmt.Errorf("tasks: team board: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func insertGroup(ctx context.Context, tx *db.Tx, g *Group) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO task_groups (id, workspace_id, title, created_by, created_at) VALUES ($1, $2, $3, $4, $5)`,
		g.ID, g.WorkspaceID, g.Title, g.CreatedBy, g.CreatedAt); err != nil {
		return fmt.Errorf("tasks: insert group: %w", err)
	}
	return nil
}

// getGroup reads a group of the workspace, without its tasks.
func getGroup(ctx context.Context, q db.Queryer, workspaceID, id string) (*Group, error) {
	g := &Group{Counts: map[string]int{}}
	err := q.QueryRowContext(ctx, `SELECT id, workspace_id, title, created_by, created_at FROM task_groups WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id).Scan(&g.ID, &g.WorkspaceID, &g.Title, &g.CreatedBy, db.UTC(&g.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("group")
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: group: %w", err)
	}
	return g, nil
}

// groupTasks lists a group's tasks, oldest first.
func groupTasks(ctx context.Context, q db.Queryer, workspaceID, groupID string) ([]Task, error) {
	return queryTasks(ctx, q, "group tasks", "SELECT "+taskColumns+" FROM tasks WHERE workspace_id = $1 AND group_id = $2 ORDER BY created_at, id",
		workspaceID, groupID)
}

// Pull requests to open on forges (pr_actions).

// addPRAction asks for the task's pull request to be opened (again).
func addPRAction(ctx context.Context, q db.Queryer, workspaceID, taskID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO pr_actions (task_id, workspace_id, attempts, run_at, created_at) VALUES ($1, $2, 0, $3, $3)
		ON CONFLICT (task_id) DO UPDATE SET attempts = 0, run_at = $3, last_error = NULL`, taskID, workspaceID, now)
	return err
}

// prAction is one pull request to open.
type prAction struct {
	taskID, workspaceID string
	attempts            int
}

// claimPRActions takes the due actions for lease from now: each is due
// again then unless it is finished before (a process that dies holding one
// leaves it to the next).
func claimPRActions(ctx context.Context, tx *db.Tx, d db.Dialect, now, until time.Time, limit int) ([]prAction, error) {
	rows, err := tx.QueryContext(ctx, "SELECT task_id, workspace_id, attempts FROM pr_actions WHERE run_at <= $1 ORDER BY run_at LIMIT $2"+d.SkipLocked(), now, limit)
	if err != nil {
		return nil, fmt.Errorf("tasks: pr actions: %w", err)
	}
	var out []prAction
	for rows.Next() {
		var a prAction
		if err := rows.Scan(&a.taskID, &a.workspaceID, &a.attempts); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].attempts++
		if _, err := tx.ExecContext(ctx, "UPDATE pr_actions SET run_at = $3, attempts = $4 WHERE workspace_id = $1 AND task_id = $2",
			out[i].workspaceID, out[i].taskID, until, out[i].attempts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func deletePRAction(ctx context.Context, q db.Queryer, workspaceID, taskID string) error {
	_, err := q.ExecContext(ctx, "DELETE FROM pr_actions WHERE workspace_id = $1 AND task_id = $2", workspaceID, taskID)
	return err
}

func retryPRAction(ctx context.Context, q db.Queryer, workspaceID, taskID string, at time.Time, reason string) error {
	_, err := q.ExecContext(ctx, "UPDATE pr_actions SET run_at = $3, last_error = $4 WHERE workspace_id = $1 AND task_id = $2",
		workspaceID, taskID, at, reason)
	return err
}
