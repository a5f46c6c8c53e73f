package approvals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

const columns = `id, workspace_id, task_id, run_id, job_id, request_id, tool, arguments, reason, status, decided_by,
	created_at, expires_at, decided_at`

func scan(s interface{ Scan(...any) error }) (*ToolApproval, error) {
	var a ToolApproval
	var args string
	err := s.Scan(&a.ID, &a.WorkspaceID, &a.TaskID, &a.RunID, &a.jobID, &a.requestID, &a.Tool, &args, &a.Reason, &a.Status,
		&a.DecidedBy, db.UTC(&a.CreatedAt), db.UTC(&a.ExpiresAt), db.NullUTC(&a.DecidedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("approval")
	}
	if err != nil {
		return nil, fmt.Errorf("approvals: %w", err)
	}
	a.Arguments = []byte(args)
	return &a, nil
}

func list(ctx context.Context, q db.Queryer, query string, args ...any) ([]ToolApproval, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("approvals: list: %w", err)
	}
	defer rows.Close()
	out := []ToolApproval{}
	for rows.Next() {
		a, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

// insert stores a pending approval; a repeated request of a run (a worker
// resending its batch) is stored once: false.
func insert(ctx context.Context, tx *db.Tx, a *ToolApproval) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO tool_approvals (id, workspace_id, task_id, run_id, job_id, request_id, tool, arguments,
		reason, status, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11)
		ON CONFLICT (run_id, request_id) DO NOTHING`,
		a.ID, a.WorkspaceID, a.TaskID, a.RunID, a.jobID, a.requestID, a.Tool, string(a.Arguments), a.Reason, a.CreatedAt, a.ExpiresAt)
	if err != nil {
		return false, fmt.Errorf("approvals: insert: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// get reads an approval of the workspace.
func get(ctx context.Context, q db.Queryer, workspaceID, id string) (*ToolApproval, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM tool_approvals WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
}

// lookup reads an approval by its id alone, in whichever workspace it is:
// a decision names only the approval, and the caller then checks that the
// user is a member of the approval's workspace.
func lookup(ctx context.Context, q db.Queryer, id string) (*ToolApproval, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM tool_approvals WHERE id = $1`, id))
}

// decide is the compare-and-set: it moves a pending approval to status and
// reports whether this call did it.
func decide(ctx context.Context, tx *db.Tx, workspaceID, id, status string, by *string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE tool_approvals SET status = $3, decided_by = $4, decided_at = $5
		WHERE workspace_id = $1 AND id = $2 AND status = 'pending'`, workspaceID, id, status, by, at)
	if err != nil {
		return false, fmt.Errorf("approvals: decide: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func pendingOfTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM tool_approvals WHERE workspace_id = $1 AND task_id = $2 AND status = 'pending'`,
		workspaceID, taskID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("approvals: pending of task: %w", err)
	}
	return n, nil
}

// supersede closes a task's pending approvals and returns their ids.
func supersede(ctx context.Context, tx *db.Tx, workspaceID, taskID string, now time.Time) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `UPDATE tool_approvals SET status = 'superseded', decided_at = $3
		WHERE workspace_id = $1 AND task_id = $2 AND status = 'pending' RETURNING id`, workspaceID, taskID, now)
	if err != nil {
		return nil, err
	}
	var closed []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		closed = append(closed, id)
	}
	return closed, errors.Join(rows.Err(), rows.Close())
}

// expiring lists the pending approvals of every workspace whose time is up, the
// oldest first (the timeout sweep).
func expiring(ctx context.Context, q db.Queryer, now time.Time) ([]ToolApproval, error) {
	return list(ctx, q, `SELECT `+columns+` FROM tool_approvals WHERE status = 'pending' AND expires_at <= $1
		ORDER BY expires_at LIMIT 100`, now)
}

func pending(ctx context.Context, q db.Queryer, workspaceID string, limit int) ([]ToolApproval, error) {
	return list(ctx, q, `SELECT `+columns+` FROM tool_approvals WHERE workspace_id = $1 AND status = 'pending'
		ORDER BY created_at DESC, id DESC LIMIT $2`, workspaceID, limit)
}

func decided(ctx context.Context, q db.Queryer, workspaceID string, limit int) ([]ToolApproval, error) {
	return list(ctx, q, `SELECT `+columns+` FROM tool_approvals WHERE workspace_id = $1 AND status <> 'pending'
		ORDER BY decided_at DESC, id DESC LIMIT $2`, workspaceID, limit)
}

func countPending(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM tool_approvals WHERE workspace_id = $1 AND status = 'pending'`, workspaceID).Scan(&n)
	return n, err
}

// countByStatus adds the workspace's approvals by status to counts.
func countByStatus(ctx context.Context, q db.Queryer, workspaceID string, counts map[string]int) error {
	rows, err := q.QueryContext(ctx, `SELECT status, COUNT(*) FROM tool_approvals WHERE workspace_id = $1 GROUP BY status`, workspaceID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return err
		}
		counts[st] = n
	}
	return rows.Err()
}
