package proposals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every statement names the workspace.

const columns = `id, workspace_id, kind, title, summary, payload, target, target_id, fingerprint, task_id, proposed_by, status,
	reviewer_id, review_note, result, materialized_id, created_at, decided_at`

func scan(s interface{ Scan(...any) error }) (*Proposal, error) {
	var p Proposal
	var payload string
	var result *string
	err := s.Scan(&p.ID, &p.WorkspaceID, &p.Kind, &p.Title, &p.Summary, &payload, &p.Target, &p.targetID, &p.fingerprint, &p.TaskID,
		&p.ProposedBy, &p.Status, &p.ReviewerID, &p.ReviewNote, &result, &p.MaterializedID, db.UTC(&p.CreatedAt), db.NullUTC(&p.DecidedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("proposal")
	}
	if err != nil {
		return nil, fmt.Errorf("proposals: %w", err)
	}
	p.Payload = []byte(payload)
	if result != nil {
		p.Result = []byte(*result)
	}
	return &p, nil
}

func query(ctx context.Context, q db.Queryer, stmt string, args ...any) ([]Proposal, error) {
	rows, err := q.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("proposals: list: %w", err)
	}
	defer rows.Close()
	out := []Proposal{}
	for rows.Next() {
		p, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, rows.Err()
}

// insert stores a proposal; false when one of the same source is stored.
func insert(ctx context.Context, tx *db.Tx, p *Proposal, sourceKey string) (bool, error) {
	var result *string
	if len(p.Result) > 0 {
		r := string(p.Result)
		result = &r
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO proposals (id, workspace_id, kind, title, summary, payload, target, target_id, fingerprint,
		task_id, proposed_by, source_key, status, review_note, result, created_at, decided_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (workspace_id, source_key) DO NOTHING`,
		p.ID, p.WorkspaceID, p.Kind, p.Title, p.Summary, string(p.Payload), p.Target, p.targetID, p.fingerprint, p.TaskID, p.ProposedBy,
		sourceKey, p.Status, p.ReviewNote, result, p.CreatedAt, p.DecidedAt)
	if err != nil {
		return false, fmt.Errorf("proposals: insert: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// get reads one proposal of the workspace (lock: the dialect's FOR UPDATE
// or "").
func get(ctx context.Context, q db.Queryer, workspaceID, id, lock string) (*Proposal, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM proposals WHERE workspace_id = $1 AND id = $2`+lock, workspaceID, id))
}

// list is a page of the workspace's proposals of a status ("" any),
// newest first.
func list(ctx context.Context, q db.Queryer, workspaceID, status string, limit, offset int) ([]Proposal, error) {
	if status == "" {
		return query(ctx, q, `SELECT `+columns+` FROM proposals WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
			workspaceID, limit, offset)
	}
	return query(ctx, q, `SELECT `+columns+` FROM proposals WHERE workspace_id = $1 AND status = $2
		ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, workspaceID, status, limit, offset)
}

// listDecided is the latest decided proposals of the workspace.
func listDecided(ctx context.Context, q db.Queryer, workspaceID string, limit int) ([]Proposal, error) {
	return query(ctx, q, `SELECT `+columns+` FROM proposals WHERE workspace_id = $1 AND status <> 'pending'
		ORDER BY decided_at DESC, id DESC LIMIT $2`, workspaceID, limit)
}

// countStatus counts the workspace's proposals of a status.
func countStatus(ctx context.Context, q db.Queryer, workspaceID, status string) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM proposals WHERE workspace_id = $1 AND status = $2`, workspaceID, status).Scan(&n); err != nil {
		return 0, fmt.Errorf("proposals: count: %w", err)
	}
	return n, nil
}

// countOfTask counts the proposals a task's agents made.
func countOfTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM proposals WHERE workspace_id = $1 AND task_id = $2`, workspaceID, taskID).Scan(&n); err != nil {
		return 0, fmt.Errorf("proposals: count of a task: %w", err)
	}
	return n, nil
}

// countByStatus counts the workspace's proposals by status.
func countByStatus(ctx context.Context, q db.Queryer, workspaceID string) (map[string]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT status, COUNT(*) FROM proposals WHERE workspace_id = $1 GROUP BY status`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("proposals: counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("proposals: counts: %w", err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// decide records a pending proposal's decision (compare-and-set): false
// when it was decided already.
func decide(ctx context.Context, tx *db.Tx, p *Proposal) (bool, error) {
	var result *string
	if len(p.Result) > 0 {
		r := string(p.Result)
		result = &r
	}
	res, err := tx.ExecContext(ctx, `UPDATE proposals SET status = $3, reviewer_id = $4, review_note = $5, result = $6, materialized_id = $7,
		decided_at = $8 WHERE workspace_id = $1 AND id = $2 AND status = 'pending'`,
		p.WorkspaceID, p.ID, p.Status, p.ReviewerID, p.ReviewNote, result, p.MaterializedID, p.DecidedAt)
	if err != nil {
		return false, fmt.Errorf("proposals: decide: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
