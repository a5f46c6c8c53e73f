package tenancy

import (
	"context"
	"errors"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Managing an organization's members: roles, suspension, offboarding and
// ownership. The rules, as data (ruleFor): an owner may do everything; an
// admin may manage members and admins but never owners; a member manages
// nobody. The last owner can neither leave nor be demoted, suspended or
// removed: ownership is transferred first.

// Member statuses.
const (
	MemberActive    = "active"
	MemberSuspended = "suspended"
)

// Member management actions.
const (
	ActSetRole    = "set_role"
	ActSuspend    = "suspend"
	ActReactivate = "reactivate"
	ActOffboard   = "offboard"
)

// MayManage is the permission table: may an actor with role `actor` do
// `action` to a member whose role is `target` (for set_role, both the
// current and the new role are checked as targets)?
var MayManage = map[string]map[string]bool{
	RoleOwner:  {RoleOwner: true, RoleAdmin: true, RoleMember: true},
	RoleAdmin:  {RoleOwner: false, RoleAdmin: true, RoleMember: true},
	RoleMember: {RoleOwner: false, RoleAdmin: false, RoleMember: false},
}

// MemberView is a member as the management views show it.
type MemberView struct {
	Member
	Status      string     `json:"status" enum:"active,suspended"`
	SuspendedAt *time.Time `json:"suspended_at" nullable:"true"`
}

// memberAuditKind is the audit target kind of member changes; the target id
// is "<organization id>/<user id>", so a member's audit stays in its
// organization.
const memberAuditKind = "member"

func memberTarget(orgID, userID string) string { return orgID + "/" + userID }

// managed opens the common prologue of member management in tx: the
// caller's organization and role, and the target member (another
// organization's member, or an unknown id, is not found).
func (s *Service) managed(ctx context.Context, tx *db.Tx, u *actor.User, sel Selector, userID string) (*Organization, *MemberView, error) {
	o, err := s.organization(ctx, tx, u, sel)
	if err != nil {
		return nil, nil, err
	}
	if !ids.Valid(userID) {
		return nil, nil, apperr.NotFound("member")
	}
	m, err := memberRow(ctx, tx, o.ID, userID)
	if err != nil {
		return nil, nil, err
	}
	return o, m, nil
}

func mayManage(actorRole, targetRole, doing string) error {
	if !MayManage[actorRole][targetRole] {
		return apperr.New(apperr.CodeForbidden, "an organization %s may not %s an %s", actorRole, doing, targetRole)
	}
	return nil
}

// lastOwner refuses what would leave the organization without an active
// owner.
func lastOwner(ctx context.Context, q db.Queryer, orgID string, m *MemberView, doing string) error {
	if m.Role != RoleOwner || m.SuspendedAt != nil {
		return nil
	}
	n, err := activeOwners(ctx, q, orgID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return apperr.New(apperr.CodeConflict, "the last owner cannot be %s: transfer ownership first", doing)
	}
	return nil
}

// SetRole changes a member's organization role.
func (s *Service) SetRole(ctx context.Context, u *actor.User, sel Selector, userID, role string) (*MemberView, error) {
	if role != RoleOwner && role != RoleAdmin && role != RoleMember {
		return nil, apperr.BadRequest("role must be owner, admin or member")
	}
	var out *MemberView
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		o, m, err := s.managed(ctx, tx, u, sel, userID)
		if err != nil {
			return err
		}
		if err := mayManage(o.Role, m.Role, "change the role of"); err != nil {
			return err
		}
		if err := mayManage(o.Role, role, "make someone"); err != nil {
			return err
		}
		if role != RoleOwner {
			if err := lastOwner(ctx, tx, o.ID, m, "demoted"); err != nil {
				return err
			}
		}
		before := *m
		if err := setOrgRole(ctx, tx, o.ID, userID, role); err != nil {
			return err
		}
		m.Role = role
		out = m
		s.changed(tx)
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "member.role", memberAuditKind, memberTarget(o.ID, userID), before, m)
	})
	return out, err
}

// Suspend stops a member from acting in the organization (its workspaces
// and endpoints) until reactivated; nothing of theirs is removed.
func (s *Service) Suspend(ctx context.Context, u *actor.User, sel Selector, userID string) (*MemberView, error) {
	return s.setSuspended(ctx, u, sel, userID, true)
}

// Reactivate ends a suspension.
func (s *Service) Reactivate(ctx context.Context, u *actor.User, sel Selector, userID string) (*MemberView, error) {
	return s.setSuspended(ctx, u, sel, userID, false)
}

func (s *Service) setSuspended(ctx context.Context, u *actor.User, sel Selector, userID string, suspend bool) (*MemberView, error) {
	var out *MemberView
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		o, m, err := s.managed(ctx, tx, u, sel, userID)
		if err != nil {
			return err
		}
		doing, action := "reactivate", "member.reactivate"
		if suspend {
			doing, action = "suspend", "member.suspend"
		}
		if err := mayManage(o.Role, m.Role, doing); err != nil {
			return err
		}
		if suspend == (m.SuspendedAt != nil) {
			return apperr.New(apperr.CodeConflict, "the member is %s already", m.Status)
		}
		if !suspend { // back, the member takes a seat of the plan's users.max again
			if err := s.check(ctx, tx, o.ID, userID, "users.max"); err != nil {
				return err
			}
		}
		if suspend {
			if userID == u.ID {
				return apperr.New(apperr.CodeConflict, "you cannot suspend yourself")
			}
			if err := lastOwner(ctx, tx, o.ID, m, "suspended"); err != nil {
				return err
			}
		}
		before := *m
		now := s.clock.Now()
		var at *time.Time
		if suspend {
			at = &now
		}
		if err := setSuspendedAt(ctx, tx, o.ID, userID, at); err != nil {
			return err
		}
		m.SuspendedAt, m.Status = at, MemberActive
		if suspend {
			m.Status = MemberSuspended
		}
		out = m
		s.changed(tx)
		return audit.Record(ctx, tx, now, u.ID, action, memberAuditKind, memberTarget(o.ID, userID), before, m)
	})
	return out, err
}

// Offboard removes a member from the organization: every workspace
// membership in it goes, and the person's sessions are revoked. A member
// may leave (offboard themselves) unless they are the last owner; leaving
// keeps their sessions.
func (s *Service) Offboard(ctx context.Context, u *actor.User, sel Selector, userID string) error {
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		o, m, err := s.managed(ctx, tx, u, sel, userID)
		if err != nil {
			return err
		}
		if userID != u.ID {
			if err := mayManage(o.Role, m.Role, "offboard"); err != nil {
				return err
			}
		}
		if err := lastOwner(ctx, tx, o.ID, m, "removed"); err != nil {
			return err
		}
		if err := removeFromOrganization(ctx, tx, o.ID, userID); err != nil {
			return err
		}
		if s.react != nil && userID != u.ID { // leaving keeps your own sessions
			if err := s.react.Offboarded(ctx, tx, userID); err != nil {
				return err
			}
		}
		s.changed(tx)
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "member.offboard", memberAuditKind, memberTarget(o.ID, userID), m, nil)
	})
}

// TransferOwnership makes an active member an owner and the calling owner
// an admin.
func (s *Service) TransferOwnership(ctx context.Context, u *actor.User, sel Selector, userID string) (*Organization, error) {
	var out *Organization
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		o, m, err := s.managed(ctx, tx, u, sel, userID)
		if err != nil {
			return err
		}
		if o.Role != RoleOwner {
			return apperr.New(apperr.CodeForbidden, "only an organization owner may transfer ownership")
		}
		if userID == u.ID {
			return apperr.New(apperr.CodeConflict, "you own the organization already")
		}
		if m.SuspendedAt != nil {
			return apperr.New(apperr.CodeConflict, "a suspended member cannot take ownership; reactivate them first")
		}
		now := s.clock.Now()
		if err := setOrgRole(ctx, tx, o.ID, userID, RoleOwner); err != nil {
			return err
		}
		if err := setOrgRole(ctx, tx, o.ID, u.ID, RoleAdmin); err != nil {
			return err
		}
		s.changed(tx)
		before := *o
		o.Role = RoleAdmin
		out = o
		return audit.Record(ctx, tx, now, u.ID, "organization.transfer", "organization", o.ID, before,
			map[string]string{"owner": userID, "previous_owner": u.ID})
	})
	return out, err
}

// MemberWorkspaces lists a member's workspaces in the organization with
// their role there (any member may look).
func (s *Service) MemberWorkspaces(ctx context.Context, u *actor.User, sel Selector, userID string) ([]Workspace, error) {
	o, err := s.organization(ctx, s.db.R, u, sel)
	if err != nil {
		return nil, err
	}
	if !ids.Valid(userID) {
		return nil, apperr.NotFound("member")
	}
	if _, err := memberRow(ctx, s.db.R, o.ID, userID); err != nil {
		return nil, err
	}
	all, err := joinedWorkspaces(ctx, s.db.R, userID)
	if err != nil {
		return nil, err
	}
	out := []Workspace{}
	for _, w := range all {
		if w.OrganizationID == o.ID {
			out = append(out, w)
		}
	}
	return out, nil
}

// MemberAudit lists the audit of a member's changes in the organization,
// newest first (owner or admin).
func (s *Service) MemberAudit(ctx context.Context, u *actor.User, sel Selector, userID string) ([]audit.Entry, error) {
	o, err := s.manager(ctx, s.db.R, u, sel, "read a member's audit")
	if err != nil {
		return nil, err
	}
	if !ids.Valid(userID) {
		return nil, apperr.NotFound("member")
	}
	if _, err := memberRow(ctx, s.db.R, o.ID, userID); errors.Is(err, apperr.ErrNotFound) {
		// A former member's audit stays readable while entries exist.
		entries, err := audit.ForTarget(ctx, s.db.R, memberAuditKind, memberTarget(o.ID, userID), 200)
		if err == nil && len(entries) == 0 {
			return nil, apperr.NotFound("member")
		}
		return entries, err
	} else if err != nil {
		return nil, err
	}
	return audit.ForTarget(ctx, s.db.R, memberAuditKind, memberTarget(o.ID, userID), 200)
}

// MembersBoardInput filters the members board.
type MembersBoardInput struct {
	board.Query
	Role   string `query:"role" enum:"owner,admin,member,"`
	Status string `query:"status" enum:"active,suspended,"`
}

// MembersBoard is a page of the organization's members with role and
// status facets; q matches name or email.
func (s *Service) MembersBoard(ctx context.Context, u *actor.User, sel Selector, in MembersBoardInput) (*board.Board[MemberView], error) {
	o, err := s.organization(ctx, s.db.R, u, sel)
	if err != nil {
		return nil, err
	}
	all, err := orgMembers(ctx, s.db.R, o.ID)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(strings.TrimSpace(in.Q))
	roles := map[string]int{RoleOwner: 0, RoleAdmin: 0, RoleMember: 0}
	statuses := map[string]int{MemberActive: 0, MemberSuspended: 0}
	var kept []MemberView
	for _, m := range all {
		if q != "" && !strings.Contains(strings.ToLower(m.DisplayName), q) && !strings.Contains(m.Email, q) {
			continue
		}
		if in.Status == "" || in.Status == m.Status {
			roles[m.Role]++
		}
		if in.Role == "" || in.Role == m.Role {
			statuses[m.Status]++
		}
		if (in.Role == "" || in.Role == m.Role) && (in.Status == "" || in.Status == m.Status) {
			kept = append(kept, m)
		}
	}
	if in.PageSize <= 0 {
		in.PageSize = 50
	}
	if in.Page <= 0 {
		in.Page = 1
	}
	start := min(in.Offset(), len(kept))
	end := min(start+in.PageSize, len(kept))
	facets := map[string][]board.Facet{
		"role": {{Value: RoleOwner, Label: "Owner", Count: roles[RoleOwner]}, {Value: RoleAdmin, Label: "Admin", Count: roles[RoleAdmin]},
			{Value: RoleMember, Label: "Member", Count: roles[RoleMember]}},
		"status": {{Value: MemberActive, Label: "Active", Count: statuses[MemberActive]}, {Value: MemberSuspended, Label: "Suspended", Count: statuses[MemberSuspended]}},
	}
	return board.New(in.Query, kept[start:end], len(kept), facets), nil
}
