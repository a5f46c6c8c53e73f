// Package audit appends entries to the audit log: who did what to which
// target, with before and after snapshots. The log is append-only: this
// package has no update or delete, and nothing else writes the table.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
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
	return insert(ctx, q, actor, action, targetKind, targetID, b, a, now)
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
	return latest(ctx, q, limit)
}

// ForTarget returns the entries about one target, newest first.
func ForTarget(ctx context.Context, q db.Queryer, kind, id string, limit int) ([]Entry, error) {
	return aboutTarget(ctx, q, kind, id, limit)
}

// Log reads the audit log for the owner console's audit board. It has no
// update or delete: the log is append-only.
type Log struct {
	db *db.DB
}

// NewLog reads the audit log of d.
func NewLog(d *db.DB) *Log { return &Log{db: d} }

// AuditEntry is one row of the audit board: an entry with its actor's email.
type AuditEntry struct {
	Entry
	ActorEmail *string `json:"actor_email" doc:"The actor's email; null for the system or a deleted account"`
}

// BoardInput is the audit board's query: the shared board query and the
// action and target kind filters.
type BoardInput struct {
	board.Query
	Action     string `query:"action" maxLength:"200" doc:"Only entries with this action"`
	TargetKind string `query:"target_kind" maxLength:"200" doc:"Only entries about this kind of target"`
}

// Board is a page of the audit log: q matches the action, the target kind,
// the target id and the actor's email; sort on created_at (default, newest
// first), action or target (kind, then id). The action and target_kind
// facets each count under q and the other filter.
func (l *Log) Board(ctx context.Context, in BoardInput) (*board.Board[AuditEntry], error) {
	rows, total, facets, err := boardPage(ctx, l.db, in)
	if err != nil {
		return nil, err
	}
	return board.New(in.Query, rows, total, facets), nil
}
