package billing

import (
	"context"
	"fmt"

	"slipway/internal/platform/db"
)

// usage counts a feature's use within its scope's id; counted is false for a
// feature that is not a count.
func usage(ctx context.Context, q db.Queryer, feature, scopeID string) (n int64, counted bool, err error) {
	var row interface{ Scan(...any) error }
	switch feature {
	case "users.max":
		row = q.QueryRowContext(ctx, "SELECT COUNT(*) FROM organization_members WHERE organization_id = $1 AND suspended_at IS NULL", scopeID)
	case "workspaces.max":
		row = q.QueryRowContext(ctx, "SELECT COUNT(*) FROM workspaces WHERE organization_id = $1", scopeID)
	case "runners.max":
		row = q.QueryRowContext(ctx, "SELECT COUNT(*) FROM runners WHERE organization_id = $1", scopeID)
	case "workflows.max":
		row = q.QueryRowContext(ctx, "SELECT COUNT(*) FROM workflows WHERE workspace_id = $1", scopeID)
	case "apps.max":
		row = q.QueryRowContext(ctx, "SELECT COUNT(*) FROM apps WHERE workspace_id = $1", scopeID)
	case "runs.concurrent":
		row = q.QueryRowContext(ctx, "SELECT COUNT(*) FROM workflow_runs WHERE workspace_id = $1 AND status IN ('queued', 'running')", scopeID)
	default:
		return 0, false, nil
	}
	if err := row.Scan(&n); err != nil {
		return 0, false, fmt.Errorf("billing: usage of %s: %w", feature, err)
	}
	return n, true, nil
}

// lockScope takes the row lock of an organization or a workspace in tx, so
// that two transactions adding to one count check it one after the other.
func lockScope(ctx context.Context, tx *db.Tx, d db.Dialect, scope Scope, id string) error {
	query := "SELECT id FROM organizations WHERE id = $1"
	if scope == ScopeWorkspace {
		query = "SELECT id FROM workspaces WHERE id = $1"
	}
	var got string
	err := tx.QueryRowContext(ctx, query+d.ForUpdate(), id).Scan(&got)
	if err != nil {
		return fmt.Errorf("billing: lock %s: %w", scope, err)
	}
	return nil
}
