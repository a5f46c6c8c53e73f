package billing

import (
	"context"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// maxActiveOverrides bounds the grants in force, which every replica keeps
// in memory.
const maxActiveOverrides = 10000

// Grant records an override, audited. A known feature's value must fit it
// (a count or a flag); the scope's workspace and user must exist.
func (s *Service) Grant(ctx context.Context, u *actor.User, in OverrideCreate) (*Override, error) {
	v, err := ParseValue(in.Value.raw)
	if err != nil {
		return nil, apperr.BadRequest("value: %v", err)
	}
	if f := FeatureOf(in.Feature); f != nil {
		if err := f.fits(v); err != nil {
			return nil, apperr.BadRequest("value: %v", err)
		}
	}
	reason, err := text.Name("reason", in.Reason, 500)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		return nil, apperr.BadRequest("expires_at must be in the future")
	}
	o := &Override{ID: ids.New(), Feature: in.Feature, Value: v, Reason: reason, Status: OverrideActive, CreatedBy: &u.ID, CreatedAt: now}
	if in.ExpiresAt != nil {
		at := in.ExpiresAt.UTC()
		o.ExpiresAt = &at
	}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		if in.WorkspaceID != "" {
			org, err := workspaceOrganization(ctx, tx, in.WorkspaceID)
			if err != nil {
				return err
			}
			if org == "" || !ids.Valid(in.WorkspaceID) {
				return apperr.BadRequest("workspace_id: no such workspace")
			}
			o.WorkspaceID = &in.WorkspaceID
		}
		if in.UserID != "" {
			ok, err := userExists(ctx, tx, in.UserID)
			if err != nil {
				return err
			}
			if !ok {
				return apperr.BadRequest("user_id: no such user")
			}
			o.UserID = &in.UserID
		}
		o.Scope = scopeOf(o.WorkspaceID, o.UserID)
		n, err := countActiveOverrides(ctx, tx, now)
		if err != nil {
			return err
		}
		if n >= maxActiveOverrides {
			return apperr.BadRequest("at most %d overrides may be in force; revoke some first", maxActiveOverrides)
		}
		if err := insertOverride(ctx, tx, o); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, now, u.ID, "override.grant", "override", o.ID, nil, o); err != nil {
			return err
		}
		s.changed(tx)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return o, nil
}

// Revoke stamps an override revoked (the row stays), audited. Revoking one
// already revoked is a conflict.
func (s *Service) Revoke(ctx context.Context, u *actor.User, id string) (*Override, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("override")
	}
	var out *Override
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		now := s.clock.Now()
		before, err := getOverride(ctx, tx, id, s.db.Dialect.ForUpdate(), now)
		if err != nil {
			return err
		}
		if before.Status == OverrideRevoked {
			return apperr.New(apperr.CodeConflict, "the override is already revoked")
		}
		if err := revokeOverride(ctx, tx, id, u.ID, now); err != nil {
			return err
		}
		after, err := getOverride(ctx, tx, id, "", now)
		if err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, now, u.ID, "override.revoke", "override", id, before, after); err != nil {
			return err
		}
		s.changed(tx)
		out = after
		return nil
	})
	return out, err
}

// OverrideFilter narrows the overrides board.
type OverrideFilter struct {
	Feature string `query:"feature" maxLength:"100"`
	Scope   string `query:"scope" enum:"global,workspace,user,user_in_workspace,"`
	Status  string `query:"status" enum:"active,revoked,expired,"`
}

// OverridesBoard is a page of overrides, newest first by default, with
// facets feature, scope and status; q searches feature and reason.
func (s *Service) OverridesBoard(ctx context.Context, q board.Query, f OverrideFilter) (*board.Board[Override], error) {
	rows, total, facets, err := overridesPage(ctx, s.db, q, f, s.clock.Now())
	if err != nil {
		return nil, err
	}
	return board.New(q, rows, total, facets), nil
}
