package tenancy

import (
	"context"
	"errors"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Access answers other domains' questions about workspaces straight from
// the database: who may act in one, and its policies.
type Access struct{ DB *db.DB }

// CanAccess reports whether the user is a member of the workspace (or of
// its organization).
func (a Access) CanAccess(ctx context.Context, userID, workspaceID string) (bool, error) {
	_, _, err := workspaceVisible(ctx, a.DB.R, workspaceID, userID)
	if errors.Is(err, apperr.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// MemberEmails are the addresses of the workspace's members.
func (a Access) MemberEmails(ctx context.Context, workspaceID string) ([]string, error) {
	ms, err := workspaceMembers(ctx, a.DB.R, workspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Email)
	}
	return out, nil
}

// Members are the workspace's members, read through q (a reaction's
// transaction).
func (a Access) Members(ctx context.Context, q db.Queryer, workspaceID string) ([]WorkspaceMember, error) {
	return workspaceMembers(ctx, q, workspaceID)
}

// WorkspaceAdmins are the ids of the workspace's owners and admins, read
// through q (a reaction's transaction).
func (a Access) WorkspaceAdmins(ctx context.Context, q db.Queryer, workspaceID string) ([]string, error) {
	ms, err := workspaceMembers(ctx, q, workspaceID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if WorkspaceAdmin(m.Role) {
			out = append(out, m.UserID)
		}
	}
	return out, nil
}

// AutonomyLevel is the workspace's autonomy level (0 to 100): how much its
// agents may do without asking.
func (a Access) AutonomyLevel(ctx context.Context, workspaceID string) (int, error) {
	return autonomyLevel(ctx, a.DB.R, workspaceID)
}

// Autonomy is a workspace's autonomy setting.
type Autonomy struct {
	Level int `json:"level" minimum:"0" maximum:"100" doc:"0 to 100: at 30 or below the built-in llm agent asks before bash, at 10 or below also before writing or editing files"`
}

// Autonomy reads a workspace's autonomy level (any member).
func (s *Service) Autonomy(ctx context.Context, u *actor.User, id string) (*Autonomy, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workspace")
	}
	if _, _, err := workspaceVisible(ctx, s.db.R, id, u.ID); err != nil {
		return nil, err
	}
	level, err := Access{DB: s.db}.AutonomyLevel(ctx, id)
	return &Autonomy{Level: level}, err
}

// SetAutonomy sets a workspace's autonomy level (its admin, or the
// organization's owner or admin). Tasks started afterwards follow it.
func (s *Service) SetAutonomy(ctx context.Context, u *actor.User, id string, level int) (*Autonomy, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("workspace")
	}
	if level < 0 || level > 100 {
		return nil, apperr.BadRequest("level must be between 0 and 100")
	}
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		w, orgRole, err := workspaceVisible(ctx, tx, id, u.ID)
		if err != nil {
			return err
		}
		if !WorkspaceAdmin(w.Role) && orgRole != RoleOwner && orgRole != RoleAdmin {
			return apperr.New(apperr.CodeForbidden, "only the workspace's owner or admin or the organization's owner or admin may change its autonomy level")
		}
		before, err := autonomyLevel(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := setAutonomyLevel(ctx, tx, id, level); err != nil {
			return err
		}
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "workspace.autonomy", "workspace", id, Autonomy{before}, Autonomy{level})
	})
	if err != nil {
		return nil, err
	}
	return &Autonomy{Level: level}, nil
}
