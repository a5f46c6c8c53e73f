package tenancy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Members of organizations and of workspaces. Every statement names the
// organization or the workspace it is about.

func memberRow(ctx context.Context, q db.Queryer, orgID, userID string) (*MemberView, error) {
	var m MemberView
	err := q.QueryRowContext(ctx, `SELECT u.id, u.email, u.display_name, m.role, m.created_at, m.suspended_at
		FROM organization_members m JOIN users u ON u.id = m.user_id
		WHERE m.organization_id = $1 AND m.user_id = $2`, orgID, userID).
		Scan(&m.UserID, &m.Email, &m.DisplayName, &m.Role, db.UTC(&m.JoinedAt), db.NullUTC(&m.SuspendedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("member")
	}
	if err != nil {
		return nil, fmt.Errorf("tenancy: member: %w", err)
	}
	m.Status = MemberActive
	if m.SuspendedAt != nil {
		m.Status = MemberSuspended
	}
	return &m, nil
}

func activeOwners(ctx context.Context, q db.Queryer, orgID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM organization_members WHERE organization_id = $1 AND role = 'owner' AND suspended_at IS NULL`,
		orgID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("tenancy: owners: %w", err)
	}
	return n, nil
}

func setOrgRole(ctx context.Context, tx *db.Tx, orgID, userID, role string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE organization_members SET role = $3 WHERE organization_id = $1 AND user_id = $2`, orgID, userID, role); err != nil {
		return fmt.Errorf("tenancy: set role: %w", err)
	}
	return nil
}

// setSuspendedAt suspends a member (at) or reactivates them (nil).
func setSuspendedAt(ctx context.Context, tx *db.Tx, orgID, userID string, at *time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE organization_members SET suspended_at = $3 WHERE organization_id = $1 AND user_id = $2`,
		orgID, userID, at); err != nil {
		return fmt.Errorf("tenancy: suspend: %w", err)
	}
	return nil
}

// removeFromOrganization takes a member out of the organization and out of
// every workspace of it.
func removeFromOrganization(ctx context.Context, tx *db.Tx, orgID, userID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM workspace_members WHERE user_id = $1
		AND workspace_id IN (SELECT id FROM workspaces WHERE organization_id = $2)`, userID, orgID); err != nil {
		return fmt.Errorf("tenancy: offboard: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM organization_members WHERE organization_id = $1 AND user_id = $2`, orgID, userID); err != nil {
		return fmt.Errorf("tenancy: offboard: %w", err)
	}
	return nil
}

// orgMembers lists an organization's members, oldest first.
func orgMembers(ctx context.Context, q db.Queryer, orgID string) ([]MemberView, error) {
	rows, err := q.QueryContext(ctx, `SELECT u.id, u.email, u.display_name, m.role, m.created_at, m.suspended_at
		FROM organization_members m JOIN users u ON u.id = m.user_id
		WHERE m.organization_id = $1 ORDER BY m.created_at, u.id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("tenancy: members board: %w", err)
	}
	defer rows.Close()
	var all []MemberView
	for rows.Next() {
		var m MemberView
		if err := rows.Scan(&m.UserID, &m.Email, &m.DisplayName, &m.Role, db.UTC(&m.JoinedAt), db.NullUTC(&m.SuspendedAt)); err != nil {
			return nil, fmt.Errorf("tenancy: members board: %w", err)
		}
		m.Status = MemberActive
		if m.SuspendedAt != nil {
			m.Status = MemberSuspended
		}
		all = append(all, m)
	}
	return all, rows.Err()
}

func workspaceMembers(ctx context.Context, q db.Queryer, wsID string) ([]WorkspaceMember, error) {
	rows, err := q.QueryContext(ctx, `SELECT u.id, u.email, u.display_name, m.role, m.created_at
		FROM workspace_members m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY m.created_at, u.id`, wsID)
	if err != nil {
		return nil, fmt.Errorf("tenancy: workspace members: %w", err)
	}
	defer rows.Close()
	out := []WorkspaceMember{}
	for rows.Next() {
		var m WorkspaceMember
		if err := rows.Scan(&m.UserID, &m.Email, &m.DisplayName, &m.Role, db.UTC(&m.JoinedAt)); err != nil {
			return nil, fmt.Errorf("tenancy: workspace members: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func lastWorkspaceOwner(ctx context.Context, q db.Queryer, wsID, userID string) (bool, error) {
	var owners, isOwner int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN user_id = $2 THEN 1 END) FROM workspace_members
		WHERE workspace_id = $1 AND role = 'owner'`, wsID, userID).Scan(&owners, &isOwner)
	if err != nil {
		return false, fmt.Errorf("tenancy: workspace owners: %w", err)
	}
	return isOwner == 1 && owners == 1, nil
}

// workspaceRole is a user's role in a workspace; ErrNoRows when they are
// not a member.
func workspaceRole(ctx context.Context, q db.Queryer, wsID, userID string) (string, error) {
	var role string
	err := q.QueryRowContext(ctx, `SELECT role FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, wsID, userID).Scan(&role)
	return role, err
}

// upsertWorkspaceMember adds a member to a workspace with a role, or
// changes their role.
func upsertWorkspaceMember(ctx context.Context, tx *db.Tx, wsID, userID, role string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role`, wsID, userID, role, now); err != nil {
		return fmt.Errorf("tenancy: set workspace member: %w", err)
	}
	return nil
}

func deleteWorkspaceMember(ctx context.Context, tx *db.Tx, wsID, userID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, wsID, userID); err != nil {
		return fmt.Errorf("tenancy: remove workspace member: %w", err)
	}
	return nil
}
