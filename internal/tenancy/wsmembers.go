package tenancy

import (
	"context"
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
		current, _ := workspaceRole(ctx, tx, wsID, userID)
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
		if err := upsertWorkspaceMember(ctx, tx, wsID, userID, role, now); err != nil {
			return err
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
		current, err := workspaceRole(ctx, tx, wsID, userID)
		if err != nil {
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
		if err := deleteWorkspaceMember(ctx, tx, wsID, userID); err != nil {
			return err
		}
		s.changed(tx)
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "workspace.member.remove", "workspace_member", wsID+"/"+userID,
			map[string]string{"role": current}, nil)
	})
}
