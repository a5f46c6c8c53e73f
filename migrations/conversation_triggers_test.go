package migrations_test

import (
	"context"
	"testing"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/migrations"
)

// TestConversationTriggersCarryData: 00042 rebuilds the triggers and the
// backlog on SQLite (and alters them on PostgreSQL); a trigger with a
// remembered delivery and a forge card with its routing decision come
// through whole, the card as a forge card, and the new kinds and
// conversation cards are accepted.
func TestConversationTriggersCarryData(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.Empty(t, e)
		if _, err := d.NewMigrations(before(t, 41), nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		exec := executor(t, d)
		ws, project, now := seedProject(exec)
		workflow, trigger, item, dispatch := ids.New(), ids.New(), ids.New(), ids.New()
		exec(`INSERT INTO workflows (id, workspace_id, project_id, name, graph, created_at, updated_at) VALUES ($1, $2, $3, 'w', '{}', $4, $4)`,
			workflow, ws, project, now)
		exec(`INSERT INTO workflow_triggers (id, workspace_id, workflow_id, kind, enabled, config, token_hash, created_at, updated_at)
			VALUES ($1, $2, $3, 'webhook', true, '{}', 'h', $4, $4)`, trigger, ws, workflow, now)
		exec(`INSERT INTO webhook_deliveries (trigger_id, delivery_id, received_at) VALUES ($1, 'd-1', $2)`, trigger, now)
		exec(`INSERT INTO backlog_items (id, workspace_id, project_id, issue_number, title, body, url, labels, state, priority, created_at, updated_at)
			VALUES ($1, $2, $3, 7, 'Fix it', 'b', 'https://x/7', '[]', 'ready', 1024, $4, $4)`, item, ws, project, now)
		exec(`INSERT INTO backlog_dispatches (id, workspace_id, item_id, decision, detail, created_at) VALUES ($1, $2, $3, 'held', 'cap', $4)`,
			dispatch, ws, item, now)

		if _, err := d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil {
			t.Fatal(err)
		}
		var deliveries, dispatches int
		var source, state string
		var number int64
		if err := d.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE trigger_id = $1 AND delivery_id = 'd-1'`, trigger).Scan(&deliveries); err != nil {
			t.Fatal(err)
		}
		if err := d.R.QueryRowContext(ctx, `SELECT source, issue_number, state FROM backlog_items WHERE id = $1`, item).Scan(&source, &number, &state); err != nil {
			t.Fatal(err)
		}
		if err := d.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM backlog_dispatches WHERE item_id = $1`, item).Scan(&dispatches); err != nil {
			t.Fatal(err)
		}
		if deliveries != 1 || dispatches != 1 || source != "forge" || number != 7 || state != "ready" {
			t.Fatalf("after the upgrade: deliveries %d, dispatches %d, card %s #%d %s", deliveries, dispatches, source, number, state)
		}
		// The new kinds and a conversation card; a forge card needs its
		// issue and a conversation card has none; a message is one card.
		exec(`INSERT INTO workflow_triggers (id, workspace_id, workflow_id, kind, enabled, config, token_hash, created_at, updated_at)
			VALUES ($1, $2, $3, 'intercom', true, '{}', 'h2', $4, $4)`, ids.New(), ws, workflow, now)
		card := `INSERT INTO backlog_items (id, workspace_id, project_id, source, issue_number, external_id, title, body, url, labels, state, priority,
			created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 't', 'b', '', '[]', 'inbox', 1, $7, $7)`
		exec(card, ids.New(), ws, project, "conversation", nil, "intercom:a:part:1", now)
		for _, bad := range [][]any{
			{ids.New(), ws, project, "conversation", nil, "intercom:a:part:1", now}, // the same message again
			{ids.New(), ws, project, "conversation", 8, "intercom:a:part:2", now},   // a conversation card with an issue
			{ids.New(), ws, project, "forge", nil, nil, now},                        // a forge card without one
		} {
			if _, err := d.W.ExecContext(ctx, card, bad...); err == nil {
				t.Fatalf("accepted %v", bad)
			}
		}
		if _, err := d.W.ExecContext(ctx, `INSERT INTO workflow_triggers (id, workspace_id, workflow_id, kind, enabled, config, created_at, updated_at)
			VALUES ($1, $2, $3, 'carrier_pigeon', true, '{}', $4, $4)`, ids.New(), ws, workflow, now); err == nil {
			t.Fatal("an unknown kind was accepted")
		}
	})
}
