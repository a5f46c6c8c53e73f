package resources

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"slipway/internal/platform/db"
)

// The rls_provisioning_log rows: what a refresh provisioned for a resource.
// Every statement names the workspace.

const rlsColumns = "resource_id, status, role_name, schema_name, policies, secret_ref, error, provisioned_at, updated_at"

func scanRLS(row interface{ Scan(...any) error }) (*RLSStatus, string, error) {
	var st RLSStatus
	var role, schema, ref, msg sql.NullString
	if err := row.Scan(&st.ResourceID, &st.Status, &role, &schema, &st.Policies, &ref, &msg, db.NullUTC(&st.ProvisionedAt), db.NullUTC(&st.UpdatedAt)); err != nil {
		return nil, "", err
	}
	if role.Valid {
		st.RoleName = &role.String
	}
	if schema.Valid {
		st.SchemaName = &schema.String
	}
	if msg.Valid {
		st.Error = &msg.String
	}
	return &st, ref.String, nil
}

// rlsOf reads a resource's log row; nil when it has none.
func rlsOf(ctx context.Context, q db.Queryer, workspaceID, resourceID string) (*RLSStatus, string, error) {
	st, ref, err := scanRLS(q.QueryRowContext(ctx, "SELECT "+rlsColumns+" FROM rls_provisioning_log WHERE workspace_id = $1 AND resource_id = $2", workspaceID, resourceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("resources: rls status: %w", err)
	}
	return st, ref, nil
}

// saveRLS writes a resource's log row (insert or replace).
func saveRLS(ctx context.Context, tx *db.Tx, workspaceID string, st *RLSStatus, secretRef string) error {
	var ref *string
	if secretRef != "" {
		ref = &secretRef
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO rls_provisioning_log (resource_id, workspace_id, status, role_name, schema_name, policies, secret_ref, error, provisioned_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (resource_id) DO UPDATE SET status = excluded.status, role_name = excluded.role_name, schema_name = excluded.schema_name,
			policies = excluded.policies, secret_ref = excluded.secret_ref, error = excluded.error, provisioned_at = excluded.provisioned_at, updated_at = excluded.updated_at`,
		st.ResourceID, workspaceID, st.Status, st.RoleName, st.SchemaName, st.Policies, ref, st.Error, st.ProvisionedAt, st.UpdatedAt)
	return err
}

// removeRLS deletes a resource's log row.
func removeRLS(ctx context.Context, tx *db.Tx, workspaceID, resourceID string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM rls_provisioning_log WHERE workspace_id = $1 AND resource_id = $2", workspaceID, resourceID)
	return err
}

// claimsRLS reports whether a log row of the workspace names the secret.
func claimsRLS(ctx context.Context, q db.Queryer, workspaceID, secretRef string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM rls_provisioning_log WHERE workspace_id = $1 AND secret_ref = $2", workspaceID, secretRef).Scan(&n)
	return n > 0, err
}

// namespaces lists the workspace's provisioned schemas by resource name.
func namespaces(ctx context.Context, q db.Queryer, workspaceID string) ([]DBNamespace, error) {
	rows, err := q.QueryContext(ctx, `SELECT r.name, l.schema_name FROM rls_provisioning_log l
		JOIN resources r ON r.id = l.resource_id AND r.workspace_id = l.workspace_id
		WHERE l.workspace_id = $1 AND l.status = 'provisioned' AND l.schema_name IS NOT NULL ORDER BY r.name`, workspaceID)
	if err != nil {
		return nil, fmt.Errorf("resources: namespaces: %w", err)
	}
	defer rows.Close()
	out := []DBNamespace{}
	for rows.Next() {
		var n DBNamespace
		if err := rows.Scan(&n.Handle, &n.Schema); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
