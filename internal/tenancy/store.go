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

// Organizations and workspaces are looked up through the caller's
// membership: every query here joins the member tables on the user id, so a
// row the caller has no access to reads exactly like a missing row.

func insertOrganization(ctx context.Context, q db.Queryer, id, name string, now time.Time) error {
	_, err := q.ExecContext(ctx, "INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, $2, $3, $3)", id, name, now)
	if err != nil {
		return fmt.Errorf("tenancy: insert organization: %w", err)
	}
	return nil
}

func insertOrgMember(ctx context.Context, q db.Queryer, orgID, userID, role string, now time.Time) error {
	_, err := q.ExecContext(ctx, "INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
		orgID, userID, role, now)
	if err != nil {
		return fmt.Errorf("tenancy: insert organization member: %w", err)
	}
	return nil
}

func insertWorkspace(ctx context.Context, q db.Queryer, id, orgID, name string, now time.Time) error {
	_, err := q.ExecContext(ctx, "INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, $3, $4)", id, orgID, name, now)
	if err != nil {
		return fmt.Errorf("tenancy: insert workspace: %w", err)
	}
	return nil
}

func insertWorkspaceMember(ctx context.Context, q db.Queryer, wsID, userID, role string, now time.Time) error {
	_, err := q.ExecContext(ctx, "INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
		wsID, userID, role, now)
	if err != nil {
		return fmt.Errorf("tenancy: insert workspace member: %w", err)
	}
	return nil
}

// orgForMember returns the organization and the caller's role in it.
func orgForMember(ctx context.Context, q db.Queryer, orgID, userID string) (*Organization, error) {
	var o Organization
	err := q.QueryRowContext(ctx, `SELECT o.id, o.name, o.created_at, m.role FROM organizations o
		JOIN organization_members m ON m.organization_id = o.id AND m.user_id = $2 AND m.suspended_at IS NULL
		WHERE o.id = $1`, orgID, userID).Scan(&o.ID, &o.Name, db.UTC(&o.CreatedAt), &o.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("organization")
	}
	if err != nil {
		return nil, fmt.Errorf("tenancy: organization: %w", err)
	}
	return &o, nil
}

func renameOrganization(ctx context.Context, q db.Queryer, orgID, name string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE organizations SET name = $1, updated_at = $2 WHERE id = $3", name, now, orgID); err != nil {
		return fmt.Errorf("tenancy: rename organization: %w", err)
	}
	return nil
}

func deleteOrganization(ctx context.Context, q db.Queryer, orgID string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM organizations WHERE id = $1", orgID); err != nil {
		return fmt.Errorf("tenancy: delete organization: %w", err)
	}
	return nil
}

func countWorkspaces(ctx context.Context, q db.Queryer, orgID string) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM workspaces WHERE organization_id = $1", orgID).Scan(&n); err != nil {
		return 0, fmt.Errorf("tenancy: count workspaces: %w", err)
	}
	return n, nil
}

func members(ctx context.Context, q db.Queryer, orgID string) ([]Member, error) {
	rows, err := q.QueryContext(ctx, `SELECT u.id, u.email, u.display_name, m.role, m.created_at
		FROM organization_members m JOIN users u ON u.id = m.user_id
		WHERE m.organization_id = $1 ORDER BY m.created_at, u.id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("tenancy: members: %w", err)
	}
	defer rows.Close()
	out := []Member{}
	for rows.Next() {
		var m Member
		if err := rows.Scan(&m.UserID, &m.Email, &m.DisplayName, &m.Role, db.UTC(&m.JoinedAt)); err != nil {
			return nil, fmt.Errorf("tenancy: members: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// membership returns the caller's workspace membership, or not_found.
const membershipSQL = `SELECT w.id, w.name, w.organization_id, o.name, wm.role, w.created_at
	FROM workspace_members wm
	JOIN workspaces w ON w.id = wm.workspace_id
	JOIN organizations o ON o.id = w.organization_id
	WHERE wm.workspace_id = $1 AND wm.user_id = $2
	AND NOT EXISTS (SELECT 1 FROM organization_members s WHERE s.organization_id = w.organization_id AND s.user_id = wm.user_id
		AND s.suspended_at IS NOT NULL)`

func membership(ctx context.Context, q db.Queryer, wsID, userID string) (*Workspace, error) {
	return scanMembership(q.QueryRowContext(ctx, membershipSQL, wsID, userID))
}

// membershipPrepared is membership on the reader pool through a prepared
// statement: every workspace-scoped request resolves its workspace.
func membershipPrepared(ctx context.Context, d *db.DB, wsID, userID string) (*Workspace, error) {
	return scanMembership(d.QueryRowPrepared(ctx, membershipSQL, wsID, userID))
}

func scanMembership(row *sql.Row) (*Workspace, error) {
	var w Workspace
	err := row.Scan(&w.ID, &w.Name, &w.OrganizationID, &w.OrganizationName, &w.Role, db.UTC(&w.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("workspace")
	}
	if err != nil {
		return nil, fmt.Errorf("tenancy: membership: %w", err)
	}
	return &w, nil
}

// joinedWorkspaces lists the caller's workspaces, oldest membership first.
func joinedWorkspaces(ctx context.Context, q db.Queryer, userID string) ([]Workspace, error) {
	rows, err := q.QueryContext(ctx, `SELECT w.id, w.name, w.organization_id, o.name, wm.role, w.created_at
		FROM workspace_members wm
		JOIN workspaces w ON w.id = wm.workspace_id
		JOIN organizations o ON o.id = w.organization_id
		WHERE wm.user_id = $1
		AND NOT EXISTS (SELECT 1 FROM organization_members s WHERE s.organization_id = w.organization_id AND s.user_id = wm.user_id
			AND s.suspended_at IS NOT NULL) ORDER BY wm.created_at, w.id`, userID)
	if err != nil {
		return nil, fmt.Errorf("tenancy: workspaces: %w", err)
	}
	defer rows.Close()
	out := []Workspace{}
	for rows.Next() {
		var w Workspace
		if err := rows.Scan(&w.ID, &w.Name, &w.OrganizationID, &w.OrganizationName, &w.Role, db.UTC(&w.CreatedAt)); err != nil {
			return nil, fmt.Errorf("tenancy: workspaces: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// workspaceVisible returns a workspace that the caller may see: as a
// member of the workspace or of its organization. orgRole is the caller's
// organization role ("" if none).
func workspaceVisible(ctx context.Context, q db.Queryer, wsID, userID string) (w *Workspace, orgRole string, err error) {
	var ws Workspace
	var wsRole, oRole sql.NullString
	err = q.QueryRowContext(ctx, `SELECT w.id, w.name, w.organization_id, o.name, w.created_at, wm.role, om.role
		FROM workspaces w
		JOIN organizations o ON o.id = w.organization_id
		LEFT JOIN workspace_members wm ON wm.workspace_id = w.id AND wm.user_id = $2
		LEFT JOIN organization_members om ON om.organization_id = w.organization_id AND om.user_id = $2
		WHERE w.id = $1 AND (wm.user_id IS NOT NULL OR om.user_id IS NOT NULL) AND om.suspended_at IS NULL`, wsID, userID).
		Scan(&ws.ID, &ws.Name, &ws.OrganizationID, &ws.OrganizationName, db.UTC(&ws.CreatedAt), &wsRole, &oRole)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", apperr.NotFound("workspace")
	}
	if err != nil {
		return nil, "", fmt.Errorf("tenancy: workspace: %w", err)
	}
	ws.Role = wsRole.String
	return &ws, oRole.String, nil
}

func deleteWorkspace(ctx context.Context, q db.Queryer, wsID string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM workspaces WHERE id = $1", wsID); err != nil {
		return fmt.Errorf("tenancy: delete workspace: %w", err)
	}
	return nil
}

// soleMemberOrgs lists the organizations whose only member is the user.
func soleMemberOrgs(ctx context.Context, q db.Queryer, userID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT m.organization_id FROM organization_members m
		WHERE m.user_id = $1 AND NOT EXISTS (
			SELECT 1 FROM organization_members o WHERE o.organization_id = m.organization_id AND o.user_id <> $1)`, userID)
	if err != nil {
		return nil, fmt.Errorf("tenancy: personal organizations: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// onlyAdminsIn reports whether every member of a workspace, and every
// member of its organization, is an instance admin.
func onlyAdminsIn(ctx context.Context, q db.Queryer, workspaceID string) (bool, error) {
	var only bool
	err := q.QueryRowContext(ctx, `SELECT NOT EXISTS (
		SELECT 1 FROM users u WHERE (
			u.id IN (SELECT m.user_id FROM workspace_members m WHERE m.workspace_id = $1)
			OR u.id IN (SELECT om.user_id FROM organization_members om JOIN workspaces w ON w.organization_id = om.organization_id WHERE w.id = $1))
		AND NOT (u.is_admin OR EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = u.id AND r.role = 'system_admin')))`, workspaceID).Scan(&only)
	if err != nil {
		return false, fmt.Errorf("tenancy: members of workspace: %w", err)
	}
	return only, nil
}

// autonomyLevel reads a workspace's autonomy level.
func autonomyLevel(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var level int
	if err := q.QueryRowContext(ctx, `SELECT autonomy_level FROM workspaces WHERE id = $1`, workspaceID).Scan(&level); err != nil {
		return 0, fmt.Errorf("tenancy: autonomy level: %w", err)
	}
	return level, nil
}

func setAutonomyLevel(ctx context.Context, tx *db.Tx, workspaceID string, level int) error {
	if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET autonomy_level = $2 WHERE id = $1`, workspaceID, level); err != nil {
		return fmt.Errorf("tenancy: set autonomy level: %w", err)
	}
	return nil
}
