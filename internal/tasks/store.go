package tasks

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
	"slipway/internal/platform/ids"
)

// Workspace-scoped reads take the workspace id and filter on it: a task of
// another workspace reads exactly like a missing one. The dispatcher's
// queries are instance-wide by nature (they pick work for every workspace)
// and say so.

const taskColumns = `id, workspace_id, project_id, title, prompt, agent_profile, config, notes, status, held, branch, error, pr,
	created_by, created_at, updated_at, started_at, finished_at`

func scanTask(row interface{ Scan(...any) error }) (*Task, error) {
	var t Task
	var config string
	var pr *string
	err := row.Scan(&t.ID, &t.WorkspaceID, &t.ProjectID, &t.Title, &t.Prompt, &t.AgentProfile, &config, &t.Notes, &t.Status,
		&t.Held, &t.Branch, &t.Error, &pr, &t.CreatedBy, db.UTC(&t.CreatedAt), db.UTC(&t.UpdatedAt), db.NullUTC(&t.StartedAt),
		db.NullUTC(&t.FinishedAt))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(config), &t.Config); err != nil {
		return nil, fmt.Errorf("tasks: config of %s: %w", t.ID, err)
	}
	if pr != nil {
		t.PR = &PullRequest{}
		if err := json.Unmarshal([]byte(*pr), t.PR); err != nil {
			return nil, fmt.Errorf("tasks: pr of %s: %w", t.ID, err)
		}
	}
	return &t, nil
}

func getTask(ctx context.Context, q db.Queryer, workspaceID, id string) (*Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM tasks WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("task")
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: get: %w", err)
	}
	return t, nil
}

// getTaskAnyWorkspace is for the executor, which works for every workspace.
func getTaskAnyWorkspace(ctx context.Context, q db.Queryer, id string) (*Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM tasks WHERE id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("task")
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: get: %w", err)
	}
	return t, nil
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func insertTask(ctx context.Context, q db.Queryer, t *Task, now time.Time) error {
	cfg, err := jsonText(t.Config)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO tasks (id, workspace_id, project_id, title, prompt, agent_profile, config, notes, status,
		held, branch, created_by, queued_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $13)`,
		t.ID, t.WorkspaceID, t.ProjectID, t.Title, t.Prompt, t.AgentProfile, cfg, t.Notes, t.Status, t.Held, t.Branch, t.CreatedBy, now)
	if err != nil {
		return fmt.Errorf("tasks: insert: %w", err)
	}
	return nil
}

// setStatus moves a task from one status to another only if it is still in
// from (compare-and-set); it reports whether it moved. errText, when not
// empty, becomes the task's error.
func setStatus(ctx context.Context, q db.Queryer, id, from, to, errText string, now time.Time) (bool, error) {
	set := "status = $3, updated_at = $4"
	args := []any{id, from, to, now}
	switch {
	case to == StatusQueued:
		set += ", queued_at = $4, started_at = NULL, finished_at = NULL, lease_owner = '', lease_until = NULL"
		errText = "" // a fresh start clears the last error
		set += ", error = ''"
	case Terminal(to):
		set += ", finished_at = $4, lease_owner = '', lease_until = NULL"
	}
	if errText != "" {
		args = append(args, errText)
		set += ", error = $5"
	}
	res, err := q.ExecContext(ctx, "UPDATE tasks SET "+set+" WHERE id = $1 AND status = $2", args...)
	if err != nil {
		return false, fmt.Errorf("tasks: status: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func updateTaskFields(ctx context.Context, q db.Queryer, workspaceID, id string, set map[string]any, now time.Time) error {
	var cols []string
	args := []any{workspaceID, id, now}
	for col, v := range set {
		args = append(args, v)
		cols = append(cols, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	_, err := q.ExecContext(ctx, "UPDATE tasks SET "+strings.Join(cols, ", ")+", updated_at = $3 WHERE workspace_id = $1 AND id = $2", args...)
	if err != nil {
		return fmt.Errorf("tasks: update: %w", err)
	}
	return nil
}

func deleteTask(ctx context.Context, q db.Queryer, workspaceID, id string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM tasks WHERE workspace_id = $1 AND id = $2", workspaceID, id); err != nil {
		return fmt.Errorf("tasks: delete: %w", err)
	}
	return nil
}

// ListFilter narrows GET /api/tasks.
type ListFilter struct {
	Status    string `query:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	ProjectID string `query:"project_id" format:"uuid"`
	Q         string `query:"q" maxLength:"200" doc:"Search title and prompt"`
	Limit     int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset    int    `query:"offset" minimum:"0" default:"0"`
}

func listTasks(ctx context.Context, q db.Queryer, w db.Where, orderBy string, limit, offset int) ([]Task, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks WHERE "+w.SQL, w.Args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("tasks: count: %w", err)
	}
	args := append(append([]any{}, w.Args...), limit, offset)
	rows, err := q.QueryContext(ctx, "SELECT "+taskColumns+" FROM tasks WHERE "+w.SQL+" ORDER BY "+orderBy+" LIMIT "+w.Next(1)+" OFFSET "+w.Next(2), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("tasks: list: %w", err)
	}
	defer rows.Close()
	out := []Task{}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, *t)
	}
	return out, total, rows.Err()
}

// Runs.

const runColumns = `id, kind, status, workspace_id, project_id, task_id, parent_run_id, attempt, backend, exit_code, error, created_at, finished_at`

func scanRun(row interface{ Scan(...any) error }) (*Run, error) {
	var r Run
	var exit sql.NullInt64
	err := row.Scan(&r.ID, &r.Kind, &r.Status, &r.WorkspaceID, &r.ProjectID, &r.TaskID, &r.ParentRunID, &r.Attempt, &r.Backend,
		&exit, &r.Error, db.UTC(&r.CreatedAt), db.NullUTC(&r.FinishedAt))
	if err != nil {
		return nil, err
	}
	if exit.Valid {
		n := int(exit.Int64)
		r.ExitCode = &n
	}
	return &r, nil
}

func insertRun(ctx context.Context, q db.Queryer, r *Run) error {
	_, err := q.ExecContext(ctx, `INSERT INTO runs (id, kind, status, workspace_id, project_id, task_id, parent_run_id, attempt, backend, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		r.ID, r.Kind, r.Status, r.WorkspaceID, r.ProjectID, r.TaskID, r.ParentRunID, r.Attempt, r.Backend, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("tasks: insert run: %w", err)
	}
	return nil
}

func finishRun(ctx context.Context, q db.Queryer, id, status string, exit *int, errText string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE runs SET status = $2, exit_code = $3, error = $4, finished_at = $5 WHERE id = $1 AND status = 'running'`,
		id, status, exit, errText, now)
	if err != nil {
		return fmt.Errorf("tasks: finish run: %w", err)
	}
	return nil
}

func countRuns(ctx context.Context, q db.Queryer, taskID string) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE task_id = $1", taskID).Scan(&n); err != nil {
		return 0, fmt.Errorf("tasks: count runs: %w", err)
	}
	return n, nil
}

func getRun(ctx context.Context, q db.Queryer, workspaceID, id string) (*Run, error) {
	r, err := scanRun(q.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE workspace_id = $1 AND id = $2", workspaceID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("run")
	}
	if err != nil {
		return nil, fmt.Errorf("tasks: run: %w", err)
	}
	return r, nil
}

func listRuns(ctx context.Context, q db.Queryer, w db.Where, orderBy string, limit, offset int) ([]Run, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE "+w.SQL, w.Args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("tasks: count runs: %w", err)
	}
	args := append(append([]any{}, w.Args...), limit, offset)
	rows, err := q.QueryContext(ctx, "SELECT "+runColumns+" FROM runs WHERE "+w.SQL+" ORDER BY "+orderBy+" LIMIT "+w.Next(1)+" OFFSET "+w.Next(2), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("tasks: runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, *r)
	}
	return out, total, rows.Err()
}

// childRuns returns every descendant of a run within its workspace.
func childRuns(ctx context.Context, q db.Queryer, workspaceID, parentID string) ([]Run, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+runColumns+" FROM runs WHERE workspace_id = $1 AND parent_run_id = $2 ORDER BY created_at, id",
		workspaceID, parentID)
	if err != nil {
		return nil, fmt.Errorf("tasks: child runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// Events.

// pendingEvent is an event waiting to be appended.
type pendingEvent struct {
	RunID   *string
	Type    string
	Payload []byte
	At      time.Time
}

// appendEvents stores events for a task in one transaction: it reserves
// len(evs) sequence numbers with one UPDATE … RETURNING on the task row and
// inserts the rows with a multi-row statement prepared once per call (a
// batch of 500 events is one prepare and eight executions).
func appendEvents(ctx context.Context, d *db.DB, tx *db.Tx, taskID string, evs []pendingEvent) (int32, error) {
	var last int64
	if err := tx.QueryRowContext(ctx, "UPDATE tasks SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq",
		taskID, len(evs)).Scan(&last); err != nil {
		return 0, fmt.Errorf("tasks: reserve sequence: %w", err)
	}
	first := last - int64(len(evs)) + 1
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	for start := 0; start < len(evs); {
		n := min(eventChunk, len(evs)-start)
		if n < eventChunk && len(evs) > eventChunk {
			n = 1 // the tail of a big batch goes row by row: one more statement, not one per size
		}
		st, ok := stmts[n]
		if !ok {
			var err error
			if st, err = tx.PrepareContext(ctx, insertEventsSQL(d.Dialect, n)); err != nil {
				return 0, fmt.Errorf("tasks: append events: %w", err)
			}
			stmts[n] = st
		}
		args := make([]any, 0, n*7)
		for i := start; i < start+n; i++ {
			e := evs[i]
			args = append(args, ids.New(), taskID, e.RunID, first+int64(i), e.Type, string(e.Payload), e.At)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return 0, fmt.Errorf("tasks: append events: %w", err)
		}
		start += n
	}
	return int32(last), nil
}

// eventChunk rows go in one INSERT (7 parameters each).
const eventChunk = 64

func insertEventsSQL(dialect db.Dialect, rows int) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO task_events (id, task_id, run_id, sequence_num, event_type, payload, created_at) VALUES ")
	p := 0
	for r := 0; r < rows; r++ {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := 0; c < 7; c++ {
			if c > 0 {
				sb.WriteString(", ")
			}
			p++
			sb.WriteString(dialect.Placeholder(p))
		}
		sb.WriteByte(')')
	}
	return sb.String()
}

func listEvents(ctx context.Context, q db.Queryer, col, id string, after int32, limit int) ([]TaskEvent, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, task_id, sequence_num, event_type, payload, created_at FROM task_events WHERE "+col+
		" = $1 AND sequence_num > $2 ORDER BY sequence_num LIMIT $3", id, after, limit)
	if err != nil {
		return nil, fmt.Errorf("tasks: events: %w", err)
	}
	defer rows.Close()
	out := make([]TaskEvent, 0, limit)
	for rows.Next() {
		var e TaskEvent
		var payload string
		if err := rows.Scan(&e.EventID, &e.TaskID, &e.SequenceNum, &e.EventType, &payload, db.UTC(&e.Timestamp)); err != nil {
			return nil, fmt.Errorf("tasks: events: %w", err)
		}
		e.Payload = json.RawMessage(payload)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Queue.

// claimNext takes the oldest claimable task whose workspace and project are
// under their caps and marks it running with a lease, in one transaction
// that the dialect serialises across replicas. It returns nil when nothing
// can start now. This query is instance-wide on purpose: the dispatcher
// serves every workspace.
func claimNext(ctx context.Context, d *db.DB, workspaceCap int, owner string, now time.Time, lease time.Duration) (*Task, error) {
	var claimed *Task
	err := d.Tx(ctx, func(tx *db.Tx) error {
		if err := d.Dialect.XactLock(ctx, tx.Tx, "claims"); err != nil {
			return err
		}
		var id string
		err := tx.QueryRowContext(ctx, `SELECT t.id FROM tasks t JOIN projects p ON p.id = t.project_id
			WHERE t.status = 'queued' AND NOT t.held
			  AND (SELECT COUNT(*) FROM tasks r WHERE r.workspace_id = t.workspace_id AND r.status IN ('running', 'needs_input')) < $1
			  AND (p.max_concurrent_runs IS NULL OR
			       (SELECT COUNT(*) FROM tasks r WHERE r.project_id = t.project_id AND r.status IN ('running', 'needs_input')) < p.max_concurrent_runs)
			ORDER BY t.queued_at, t.id LIMIT 1`, workspaceCap).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tasks: claim: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'running', started_at = $2, updated_at = $2, lease_owner = $3,
			lease_until = $4, error = '' WHERE id = $1 AND status = 'queued'`, id, now, owner, now.Add(lease)); err != nil {
			return fmt.Errorf("tasks: claim: %w", err)
		}
		claimed, err = getTaskAnyWorkspace(ctx, tx, id)
		return err
	})
	return claimed, err
}

// renewLease extends the lease of a task this owner runs and returns the
// task's status (the executor stops when it became cancelled).
func renewLease(ctx context.Context, q db.Queryer, id, owner string, until time.Time) (string, error) {
	var status string
	err := q.QueryRowContext(ctx, `UPDATE tasks SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND status IN ('running', 'needs_input')
		RETURNING status`, id, owner, until).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		// Not ours any more (cancelled and released, or rescued).
		err = q.QueryRowContext(ctx, "SELECT status FROM tasks WHERE id = $1", id).Scan(&status)
	}
	if err != nil {
		return "", fmt.Errorf("tasks: renew lease: %w", err)
	}
	return status, nil
}

// orphans lists running tasks whose lease expired, or that a previous
// process of this owner held (it is gone: we just started). Instance-wide.
func orphans(ctx context.Context, q db.Queryer, owner string, now time.Time, boot bool) ([]string, error) {
	cond := "lease_until < $2"
	if boot {
		cond = "(lease_until < $2 OR lease_owner = $1)"
	}
	rows, err := q.QueryContext(ctx, "SELECT id FROM tasks WHERE status IN ('running', 'needs_input') AND "+cond, owner, now)
	if err != nil {
		return nil, fmt.Errorf("tasks: orphans: %w", err)
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
