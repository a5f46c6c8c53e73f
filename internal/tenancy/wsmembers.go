package tenancy

import (
	"context"
	"fmt"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Workspace membership: who works in a workspace, as owner (its creator, or
// whom an owner makes one), admin or member. Managed by the workspace's
// owners and admins and by the organization's owners and admins; a
// workspace admin manages admins and members, never owners. Only members of
// the organization join its workspaces. The last owner of a workspace
// stays (an organization owner or admin may still delete the workspace).

// WorkspaceAdmin reports whether a workspace role administers the
// workspace (owner or admin).
func WorkspaceAdmin(role string) bool { return role == RoleOwner || role == RoleAdmin }

// WorkspaceMember is a member of a workspace.
type WorkspaceMember struct {
	UserID      string    `json:"user_id" format:"uuid"`
	Email       string    `json:"email" format:"email"`
	DisplayName string    `json:"display_name"`
	Role        string    `json:"role" enum:"owner,admin,member"`
	JoinedAt    time.Time `json:"joined_at"`
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

// WorkspaceMembers lists a workspace's members (anyone who may see it).
func (s *Service) WorkspaceMembers(ctx context.Context, u *actor.User, wsID string) ([]WorkspaceMember, error) {
	if !ids.Valid(wsID) {
		return nil, apperr.NotFound("workspace")
	}
	if _, _, err := workspaceVisible(ctx, s.db.R, wsID, u.ID); err != nil {
		return nil, err
	}
	return workspaceMembers(ctx, s.db.R, wsID)
}

// wsManager is the caller's power over a workspace: manage reports which
// target roles it may manage.
func (s *Service) wsManager(ctx context.Context, tx *db.Tx, u *actor.User, wsID string) (*Workspace, map[string]bool, error) {
	if !ids.Valid(wsID) {
		return nil, nil, apperr.NotFound("workspace")
	}
	w, orgRole, err := workspaceVisible(ctx, tx, wsID, u.ID)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case orgRole == RoleOwner || orgRole == RoleAdmin || w.Role == RoleOwner:
		return w, map[string]bool{RoleOwner: true, RoleAdmin: true, RoleMember: true}, nil
	case w.Role == RoleAdmin:
		return w, map[string]bool{RoleAdmin: true, RoleMember: true}, nil
	}
	return w, map[string]bool{}, nil
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

// SetWorkspaceMember adds a member of the organization to the workspace
// with a role, or changes their role.
func (s *Service) SetWorkspaceMember(ctx context.Context, u *actor.User, wsID, userID, role string) (*WorkspaceMember, error) {
	if role != RoleOwner && role != RoleAdmin && role != RoleMember {
		return nil, apperr.BadRequest("role must be owner, admin or member")
	}
	var out *WorkspaceMember
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		w, may, err := s.wsManager(ctx, tx, u, wsID)
		if err != nil {
			return err
		}
		if !ids.Valid(userID) {
			return apperr.NotFound("member")
		}
		target, err := memberRow(ctx, tx, w.OrganizationID, userID)
		if err != nil {
			return err // not a member of the organization: not found
		}
		if target.SuspendedAt != nil {
			return apperr.New(apperr.CodeConflict, "the member is suspended in the organization")
		}
		var current string
		_ = tx.QueryRowContext(ctx, `SELECT role FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, wsID, userID).Scan(&current)
		if !may[role] || (current != "" && !may[current]) {
			return apperr.New(apperr.CodeForbidden, "you may not make someone a workspace %s here", role)
		}
		if current == RoleOwner && role != RoleOwner {
			if last, err := lastWorkspaceOwner(ctx, tx, wsID, userID); err != nil || last {
				if err != nil {
					return err
				}
				return apperr.New(apperr.CodeConflict, "the workspace's last owner cannot be demoted")
			}
		}
		now := s.clock.Now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role`, wsID, userID, role, now); err != nil {
			return fmt.Errorf("tenancy: set workspace member: %w", err)
		}
		ms, err := workspaceMembers(ctx, tx, wsID)
		if err != nil {
			return err
		}
		for i := range ms {
			if ms[i].UserID == userID {
				out = &ms[i]
			}
		}
		s.changed(tx)
		var before any
		if current != "" {
			before = map[string]string{"role": current}
		}
		return audit.Record(ctx, tx, now, u.ID, "workspace.member", "workspace_member", wsID+"/"+userID, before, out)
	})
	return out, err
}

// RemoveWorkspaceMember takes someone out of a workspace (or lets them
// leave it); the last owner stays.
func (s *Service) RemoveWorkspaceMember(ctx context.Context, u *actor.User, wsID, userID string) error {
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		_, may, err := s.wsManager(ctx, tx, u, wsID)
		if err != nil {
			return err
		}
		if !ids.Valid(userID) {
			return apperr.NotFound("member")
		}
		var current string
		if err := tx.QueryRowContext(ctx, `SELECT role FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, wsID, userID).Scan(&current); err != nil {
			return apperr.NotFound("member")
		}
		if userID != u.ID && !may[current] {
			return apperr.New(apperr.CodeForbidden, "you may not remove a workspace %s here", current)
		}
		if last, err := lastWorkspaceOwner(ctx, tx, wsID, userID); err != nil || last {
			if err != nil {
				return err
			}
			return apperr.New(apperr.CodeConflict, "the workspace's last owner cannot leave it; make someone else an owner first")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM workspace_members WHERE workspace_id = $1 AND user_id = $2`, wsID, userID); err != nil {
			return fmt.Errorf("tenancy: remove workspace member: %w", err)
		}
		s.changed(tx)
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "workspace.member.remove", "workspace_member", wsID+"/"+userID,
			map[string]string{"role": current}, nil)
	})
}
