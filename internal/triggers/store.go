package triggers

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

const columns = `id, workspace_id, workflow_id, kind, enabled, config, token_hash, sealed_secret, created_by, next_fire_at, last_fired_at,
	created_at, updated_at`

func scan(row interface{ Scan(...any) error }) (*Trigger, error) {
	var t Trigger
	var config []byte
	if err := row.Scan(&t.ID, &t.workspaceID, &t.WorkflowID, &t.Kind, &t.Enabled, &config, &t.tokenHash, &t.sealedSecret, &t.createdBy,
		db.NullUTC(&t.NextFireAt), db.NullUTC(&t.LastFiredAt), db.UTC(&t.CreatedAt), db.UTC(&t.UpdatedAt)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(config, &t.Config); err != nil {
		return nil, fmt.Errorf("triggers: config of %s: %w", t.ID, err)
	}
	t.HasSecret = t.sealedSecret != nil
	return &t, nil
}

func get(ctx context.Context, q db.Queryer, where string, args ...any) (*Trigger, error) {
	t, err := scan(q.QueryRowContext(ctx, "SELECT "+columns+" FROM workflow_triggers WHERE "+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("trigger")
	}
	if err != nil {
		return nil, fmt.Errorf("triggers: get: %w", err)
	}
	return t, nil
}

func getTrigger(ctx context.Context, q db.Queryer, workspaceID, id string) (*Trigger, error) {
	return get(ctx, q, "workspace_id = $1 AND id = $2", workspaceID, id)
}

// byTokenHash finds a webhook by its token's hash, through a statement
// kept prepared (every delivery looks one up).
func byTokenHash(ctx context.Context, d *db.DB, hash string) (*Trigger, error) {
	t, err := scan(d.QueryRowPrepared(ctx, "SELECT "+columns+" FROM workflow_triggers WHERE token_hash = $1", hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("trigger")
	}
	if err != nil {
		return nil, fmt.Errorf("triggers: get: %w", err)
	}
	return t, nil
}

func list(ctx context.Context, q db.Queryer, where string, args ...any) ([]Trigger, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+columns+" FROM workflow_triggers WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("triggers: list: %w", err)
	}
	defer rows.Close()
	out := []Trigger{}
	for rows.Next() {
		t, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("triggers: list: %w", err)
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}

func insert(ctx context.Context, q db.Queryer, t *Trigger) error {
	config, err := json.Marshal(t.Config)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, "INSERT INTO workflow_triggers ("+columns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
		t.ID, t.workspaceID, t.WorkflowID, t.Kind, t.Enabled, string(config), t.tokenHash, t.sealedSecret, t.createdBy, t.NextFireAt, t.LastFiredAt,
		t.CreatedAt, t.UpdatedAt)
	if err != nil {
		return fmt.Errorf("triggers: insert: %w", err)
	}
	return nil
}

func update(ctx context.Context, q db.Queryer, t *Trigger) error {
	config, err := json.Marshal(t.Config)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `UPDATE workflow_triggers SET enabled = $3, config = $4, token_hash = $5, sealed_secret = $6, next_fire_at = $7,
		updated_at = $8 WHERE workspace_id = $1 AND id = $2`,
		t.workspaceID, t.ID, t.Enabled, string(config), t.tokenHash, t.sealedSecret, t.NextFireAt, t.UpdatedAt)
	if err != nil {
		return fmt.Errorf("triggers: update: %w", err)
	}
	return nil
}

func remove(ctx context.Context, q db.Queryer, workspaceID, id string) (bool, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM workflow_triggers WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	if err != nil {
		return false, fmt.Errorf("triggers: delete: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// due lists enabled schedules whose next tick has come.
func due(ctx context.Context, q db.Queryer, now time.Time, limit int) ([]Trigger, error) {
	return list(ctx, q, "kind = 'schedule' AND enabled AND next_fire_at <= $1 ORDER BY next_fire_at, id LIMIT $2", now, limit)
}

// claimTick moves a schedule from the tick it read to the next one; false
// when another replica (or an edit) moved it first.
func claimTick(ctx context.Context, tx *db.Tx, t *Trigger, next, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE workflow_triggers SET next_fire_at = $4, last_fired_at = $5
		WHERE workspace_id = $1 AND id = $2 AND enabled AND next_fire_at = $3`, t.workspaceID, t.ID, *t.NextFireAt, next, now)
	if err != nil {
		return false, fmt.Errorf("triggers: claim a tick: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// recordDelivery keeps a delivery id of a trigger; false when the trigger
// has it already (a replay).
func recordDelivery(ctx context.Context, q db.Queryer, triggerID, deliveryID string, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO webhook_deliveries (trigger_id, delivery_id, received_at) VALUES ($1, $2, $3)
		ON CONFLICT (trigger_id, delivery_id) DO NOTHING`, triggerID, deliveryID, now)
	if err != nil {
		return false, fmt.Errorf("triggers: record delivery: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("triggers: record delivery: %w", err)
	}
	return n == 1, nil
}

// pruneDeliveries forgets delivery ids received before cutoff.
func pruneDeliveries(ctx context.Context, q db.Queryer, cutoff time.Time) (int, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE received_at < $1", cutoff)
	if err != nil {
		return 0, fmt.Errorf("triggers: prune deliveries: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
