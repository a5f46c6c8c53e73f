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

func get(ctx context.Context, q db.Queryer, id string) (*ToolApproval, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM tool_approvals WHERE id = $1`, id))
}

// decide is the compare-and-set: it moves a pending approval to status and
// reports whether this call did it.
func decide(ctx context.Context, tx *db.Tx, id, status string, by *string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE tool_approvals SET status = $2, decided_by = $3, decided_at = $4
		WHERE id = $1 AND status = 'pending'`, id, status, by, at)
	if err != nil {
		return false, fmt.Errorf("approvals: decide: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func pendingOfTask(ctx context.Context, q db.Queryer, taskID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM tool_approvals WHERE task_id = $1 AND status = 'pending'`, taskID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("approvals: pending of task: %w", err)
	}
	return n, nil
}
