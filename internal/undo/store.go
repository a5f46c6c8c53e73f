package undo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every statement names the action's workspace but the sweep's two, which
// serve every workspace: the actions whose grace ended and the ones a
// stopped process left executing.

const columns = `id, workspace_id, task_id, kind, status, grace_until, created_by, created_at, started_at, finished_at, result, error`

func scan(s interface{ Scan(...any) error }) (*Action, error) {
	var a Action
	err := s.Scan(&a.ID, &a.WorkspaceID, &a.TaskID, &a.Kind, &a.Status, db.UTC(&a.GraceUntil), &a.CreatedBy, db.UTC(&a.CreatedAt),
		db.NullUTC(&a.StartedAt), db.NullUTC(&a.FinishedAt), &a.Result, &a.Error)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("undo action")
	}
	if err != nil {
		return nil, fmt.Errorf("undo: %w", err)
	}
	return &a, nil
}

func list(ctx context.Context, q db.Queryer, query string, args ...any) ([]Action, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("undo: list: %w", err)
	}
	defer rows.Close()
	out := []Action{}
	for rows.Next() {
		a, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, rows.Err()
}

func get(ctx context.Context, q db.Queryer, workspaceID, id string) (*Action, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM undo_actions WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
}

func ofTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) ([]Action, error) {
	return list(ctx, q, `SELECT `+columns+` FROM undo_actions WHERE workspace_id = $1 AND task_id = $2
		ORDER BY created_at DESC, id DESC`, workspaceID, taskID)
}

// countLive counts a task's actions of a kind that did not fail.
func countLive(ctx context.Context, q db.Queryer, workspaceID, taskID, kind string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM undo_actions WHERE workspace_id = $1 AND task_id = $2 AND kind = $3
		AND status <> 'failed'`, workspaceID, taskID, kind).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("undo: %w", err)
	}
	return n, nil
}

func insert(ctx context.Context, tx *db.Tx, a *Action) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO undo_actions (id, workspace_id, task_id, kind, status, grace_until, created_by, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, a.WorkspaceID, a.TaskID, a.Kind, a.Status, a.GraceUntil, a.CreatedBy, a.CreatedAt)
	if err != nil {
		return fmt.Errorf("undo: insert: %w", err)
	}
	return nil
}

// claim is the compare-and-set from grace to executing; false when the
// action was not in its grace period any more.
func claim(ctx context.Context, q db.Queryer, workspaceID, id string, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE undo_actions SET status = 'executing', started_at = $3
		WHERE workspace_id = $1 AND id = $2 AND status = 'grace'`, workspaceID, id, now)
	if err != nil {
		return false, fmt.Errorf("undo: claim: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// finish records how a claimed action's reversal went.
func finish(ctx context.Context, tx *db.Tx, a *Action, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE undo_actions SET status = $3, finished_at = $4, result = $5, error = $6
		WHERE workspace_id = $1 AND id = $2`, a.WorkspaceID, a.ID, a.Status, now, a.Result, a.Error); err != nil {
		return fmt.Errorf("undo: record: %w", err)
	}
	return nil
}

// failStale fails, in every workspace, the actions a stopped process left
// executing since before startedBefore.
func failStale(ctx context.Context, q db.Queryer, now, startedBefore time.Time) error {
	if _, err := q.ExecContext(ctx, `UPDATE undo_actions SET status = 'failed', finished_at = $1,
		error = 'the server stopped while the undo ran; it is not run again (check the repository)'
		WHERE status = 'executing' AND started_at < $2`, now, startedBefore); err != nil {
		return fmt.Errorf("undo: sweep: %w", err)
	}
	return nil
}

// dueActions lists, in every workspace, the actions whose grace ended.
func dueActions(ctx context.Context, q db.Queryer, now time.Time) ([]Action, error) {
	return list(ctx, q, `SELECT `+columns+` FROM undo_actions WHERE status = 'grace' AND grace_until <= $1
		ORDER BY grace_until LIMIT 50`, now)
}
