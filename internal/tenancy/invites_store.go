package tenancy

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

// Invites into an organization. Every statement names the organization,
// but the acceptance's: an invite is found by its token's hash, then
// accepted by its id.

const inviteColumns = `id, organization_id, email, role, workspace_ids, invited_by, created_at, expires_at`

func scanInvite(s interface{ Scan(...any) error }) (*Invite, error) {
	var in Invite
	var ws string
	err := s.Scan(&in.ID, &in.OrganizationID, &in.Email, &in.Role, &ws, &in.InvitedBy, db.UTC(&in.CreatedAt), db.UTC(&in.ExpiresAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("invite")
	}
	if err != nil {
		return nil, fmt.Errorf("tenancy: invite: %w", err)
	}
	if err := json.Unmarshal([]byte(ws), &in.WorkspaceIDs); err != nil {
		return nil, fmt.Errorf("tenancy: invite workspaces: %w", err)
	}
	return &in, nil
}

// pendingInvites lists an organization's pending invites, newest first.
func pendingInvites(ctx context.Context, q db.Queryer, orgID string, now time.Time) ([]Invite, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+inviteColumns+` FROM organization_invites
		WHERE organization_id = $1 AND accepted_at IS NULL AND expires_at > $2 ORDER BY created_at DESC, id DESC`, orgID, now)
	if err != nil {
		return nil, fmt.Errorf("tenancy: invites: %w", err)
	}
	defer rows.Close()
	out := []Invite{}
	for rows.Next() {
		in, err := scanInvite(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *in)
	}
	return out, rows.Err()
}

// pendingInvite reads a pending invite of the organization.
func pendingInvite(ctx context.Context, q db.Queryer, orgID, id string) (*Invite, error) {
	return scanInvite(q.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM organization_invites
		WHERE organization_id = $1 AND id = $2 AND accepted_at IS NULL`, orgID, id))
}

// inviteByToken finds a pending, unexpired invite by its token's hash.
func inviteByToken(ctx context.Context, q db.Queryer, hash string, now time.Time) (*Invite, error) {
	return scanInvite(q.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM organization_invites
		WHERE token_hash = $1 AND accepted_at IS NULL AND expires_at > $2`, hash, now))
}

// firstWorkspace is the organization's oldest workspace ("" for none).
func firstWorkspace(ctx context.Context, q db.Queryer, orgID string) (string, error) {
	var first string
	err := q.QueryRowContext(ctx, `SELECT id FROM workspaces WHERE organization_id = $1 ORDER BY created_at, id LIMIT 1`, orgID).Scan(&first)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("tenancy: first workspace: %w", err)
	}
	return first, nil
}

// workspaceOfOrganization reports whether a workspace belongs to the
// organization.
func workspaceOfOrganization(ctx context.Context, q db.Queryer, orgID, id string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM workspaces WHERE id = $1 AND organization_id = $2`, id, orgID).Scan(&n); err != nil {
		return false, fmt.Errorf("tenancy: invite workspace: %w", err)
	}
	return n > 0, nil
}

// isMemberByEmail reports whether the account with the address is a
// member of the organization.
func isMemberByEmail(ctx context.Context, q db.Queryer, orgID, email string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM organization_members m JOIN users us ON us.id = m.user_id
		WHERE m.organization_id = $1 AND us.email = $2`, orgID, email).Scan(&n); err != nil {
		return false, fmt.Errorf("tenancy: invite: %w", err)
	}
	return n > 0, nil
}

// pendingInviteFor drops the address's expired invite and reports whether
// a pending one is left.
func pendingInviteFor(ctx context.Context, tx *db.Tx, orgID, email string, now time.Time) (bool, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM organization_invites WHERE organization_id = $1 AND email = $2 AND accepted_at IS NULL
		AND expires_at <= $3`, orgID, email, now); err != nil {
		return false, fmt.Errorf("tenancy: invite: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM organization_invites WHERE organization_id = $1 AND email = $2 AND accepted_at IS NULL`,
		orgID, email).Scan(&n); err != nil {
		return false, fmt.Errorf("tenancy: invite: %w", err)
	}
	return n > 0, nil
}

// insertInvite stores an invite with its token's hash; the error is the
// driver's (a unique violation: the address has a pending invite).
func insertInvite(ctx context.Context, tx *db.Tx, in *Invite, hash string) error {
	b, _ := json.Marshal(in.WorkspaceIDs)
	_, err := tx.ExecContext(ctx, `INSERT INTO organization_invites (id, organization_id, email, role, workspace_ids, token_hash, invited_by,
		created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, in.ID, in.OrganizationID, in.Email, in.Role, string(b), hash,
		in.InvitedBy, in.CreatedAt, in.ExpiresAt)
	return err
}

func deleteInvite(ctx context.Context, tx *db.Tx, orgID, id string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM organization_invites WHERE organization_id = $1 AND id = $2`, orgID, id); err != nil {
		return fmt.Errorf("tenancy: revoke invite: %w", err)
	}
	return nil
}

// renewInvite gives an invite a new token and expiry.
func renewInvite(ctx context.Context, tx *db.Tx, orgID, id, hash string, expires time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE organization_invites SET token_hash = $3, expires_at = $4 WHERE organization_id = $1 AND id = $2`,
		orgID, id, hash, expires); err != nil {
		return fmt.Errorf("tenancy: resend invite: %w", err)
	}
	return nil
}

// markAccepted is the acceptance's compare-and-set: false when another
// acceptance won.
func markAccepted(ctx context.Context, tx *db.Tx, id, userID string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE organization_invites SET accepted_at = $2, accepted_by = $3 WHERE id = $1 AND accepted_at IS NULL`,
		id, now, userID)
	if err != nil {
		return false, fmt.Errorf("tenancy: accept invite: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// joinInvited makes the user a member of the invite's organization and of
// its workspaces that are still the organization's.
func joinInvited(ctx context.Context, tx *db.Tx, in *Invite, userID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (organization_id, user_id) DO NOTHING`, in.OrganizationID, userID, in.Role, now); err != nil {
		return fmt.Errorf("tenancy: accept invite: %w", err)
	}
	for _, ws := range in.WorkspaceIDs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
			SELECT id, $2, 'member', $3 FROM workspaces WHERE id = $1 AND organization_id = $4
			ON CONFLICT (workspace_id, user_id) DO NOTHING`, ws, userID, now, in.OrganizationID); err != nil {
			return fmt.Errorf("tenancy: accept invite: %w", err)
		}
	}
	return nil
}

// invitingOrganizations lists (email, organization name) pairs of the
// invites to the addresses bound to marks (a list of placeholders).
func invitingOrganizations(ctx context.Context, q db.Queryer, marks string, args []any) ([][2]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT i.email, o.name FROM organization_invites i JOIN organizations o ON o.id = i.organization_id
		WHERE i.email IN (`+marks+`) ORDER BY i.created_at, i.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("tenancy: inviting organizations: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// userIDByEmail is the account of an address ("" when none).
func userIDByEmail(ctx context.Context, q db.Queryer, email string) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, "SELECT id FROM users WHERE email = $1", email).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("tenancy: user by email: %w", err)
	}
	return id, nil
}
