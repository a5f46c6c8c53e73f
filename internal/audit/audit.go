// Package audit appends entries to the audit log: who did what to which
// target, with before and after snapshots. The log is append-only: this
// package has no update or delete, and nothing else writes the table.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Entry is one audit record.
type Entry struct {
	ID         string          `json:"id"`
	ActorID    *string         `json:"actor_id"`
	Action     string          `json:"action"`
	TargetKind string          `json:"target_kind"`
	TargetID   string          `json:"target_id"`
	Before     json.RawMessage `json:"before"`
	After      json.RawMessage `json:"after"`
	CreatedAt  time.Time       `json:"created_at"`
}

// Record appends an entry inside the caller's transaction, so the change and
// its audit entry commit together. before and after are marshalled to JSON
// (nil stays NULL). actorID "" means the system.
func Record(ctx context.Context, q db.Queryer, now time.Time, actorID, action, targetKind, targetID string, before, after any) error {
	b, err := snapshot(before)
	if err != nil {
		return err
	}
	a, err := snapshot(after)
	if err != nil {
		return err
	}
	var actor *string
	if actorID != "" {
		actor = &actorID
	}
	_, err = q.ExecContext(ctx, `INSERT INTO audit_log (id, actor_id, action, target_kind, target_id, before, after, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ids.New(), actor, action, targetKind, targetID, b, a, now)
	if err != nil {
		return fmt.Errorf("audit: recording %s: %w", action, err)
	}
	return nil
}

func snapshot(v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("audit: snapshot: %w", err)
	}
	s := string(b)
	return &s, nil
}

// List returns entries newest first (the admin audit board builds on it).
func List(ctx context.Context, q db.Queryer, limit int) ([]Entry, error) {
	return entries(ctx, q, `SELECT id, actor_id, action, target_kind, target_id, before, after, created_at
		FROM audit_log ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
}

// ForTarget returns the entries about one target, newest first.
func ForTarget(ctx context.Context, q db.Queryer, kind, id string, limit int) ([]Entry, error) {
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
