package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

func insert(ctx context.Context, q db.Queryer, actor *string, action, targetKind, targetID string, before, after *string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO audit_log (id, actor_id, action, target_kind, target_id, before, after, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ids.New(), actor, action, targetKind, targetID, before, after, now)
	if err != nil {
		return fmt.Errorf("audit: recording %s: %w", action, err)
	}
	return nil
}

func latest(ctx context.Context, q db.Queryer, limit int) ([]Entry, error) {
	return entries(ctx, q, `SELECT id, actor_id, action, target_kind, target_id, before, after, created_at
		FROM audit_log ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
}

func aboutTarget(ctx context.Context, q db.Queryer, kind, id string, limit int) ([]Entry, error) {
	return entries(ctx, q, `SELECT id, actor_id, action, target_kind, target_id, before, after, created_at
		FROM audit_log WHERE target_kind = $1 AND target_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`, kind, id, limit)
}

func entries(ctx context.Context, q db.Queryer, query string, args ...any) ([]Entry, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var e Entry
		var before, after *string
		if err := rows.Scan(&e.ID, &e.ActorID, &e.Action, &e.TargetKind, &e.TargetID, &before, &after, db.UTC(&e.CreatedAt)); err != nil {
			return nil, fmt.Errorf("audit: list: %w", err)
		}
		if before != nil {
			e.Before = json.RawMessage(*before)
		}
		if after != nil {
			e.After = json.RawMessage(*after)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
