package workflows

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

const nodeTypeColumns = "id, slug, name, description, category, script_id, config_schema, created_at"

func scanNodeType(row interface{ Scan(...any) error }) (*NodeType, error) {
	var t NodeType
	var id, script string
	var schema []byte
	var created time.Time
	if err := row.Scan(&id, &t.Slug, &t.Name, &t.Description, &t.Category, &script, &schema, db.UTC(&created)); err != nil {
		return nil, err
	}
	t.ID, t.ScriptID, t.ConfigSchema, t.CreatedAt = &id, &script, schema, &created
	t.Available, t.Handles = true, append([]string{}, outError...)
	return &t, nil
}

func queryNodeTypes(ctx context.Context, q db.Queryer, where string, args ...any) ([]NodeType, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+nodeTypeColumns+" FROM workflow_node_types WHERE "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("workflows: node types: %w", err)
	}
	defer rows.Close()
	var out []NodeType
	for rows.Next() {
		t, err := scanNodeType(rows)
		if err != nil {
			return nil, fmt.Errorf("workflows: node types: %w", err)
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}

func getNodeType(ctx context.Context, q db.Queryer, where string, args ...any) (*NodeType, error) {
	t, err := scanNodeType(q.QueryRowContext(ctx, "SELECT "+nodeTypeColumns+" FROM workflow_node_types WHERE "+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("node type")
	}
	if err != nil {
		return nil, fmt.Errorf("workflows: node type: %w", err)
	}
	return t, nil
}

// nodeTypeSlugTaken reports whether the workspace has a node type of slug.
func nodeTypeSlugTaken(ctx context.Context, tx *db.Tx, workspaceID, slug string) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM workflow_node_types WHERE workspace_id = $1 AND slug = $2", workspaceID, slug).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("workflows: node type slug: %w", err)
	}
	return true, nil
}

func insertNodeType(ctx context.Context, tx *db.Tx, workspaceID, id string, t *NodeType, createdBy *string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO workflow_node_types (id, workspace_id, slug, name, description, category, script_id, config_schema,
		created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
		id, workspaceID, t.Slug, t.Name, t.Description, t.Category, *t.ScriptID, string(t.ConfigSchema), createdBy, now)
	if err != nil {
		return fmt.Errorf("workflows: insert node type: %w", err)
	}
	return nil
}

func updateNodeType(ctx context.Context, tx *db.Tx, workspaceID, id string, t *NodeType, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE workflow_node_types SET slug = $3, name = $4, description = $5, category = $6, script_id = $7,
		config_schema = $8, updated_at = $9 WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id, t.Slug, t.Name, t.Description, t.Category, *t.ScriptID, string(t.ConfigSchema), now)
	if err != nil {
		return fmt.Errorf("workflows: update node type: %w", err)
	}
	return nil
}
