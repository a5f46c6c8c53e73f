package tenancy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/platform/token"
)

// Invites: an owner or admin invites an email address into the
// organization with a role (and workspaces to join). The invite's token is
// single-use, expires, and is kept only as a hash; it is shown once, when
// the invite is made or resent (mail delivery comes with the mail outbox).
// Accepting needs a signed-in account with the invited address; it joins
// the organization, but an account not yet approved stays pending until an
// instance admin approves it.

// InviteTokenPrefix names invite tokens.
const InviteTokenPrefix = "sinv_"

// DefaultInviteTTL is how long an invite stays valid.
const DefaultInviteTTL = 7 * 24 * time.Hour

// MaxBulkInvites bounds a bulk invite.
const MaxBulkInvites = 100

// Invite is a pending invite (never its token).
type Invite struct {
	ID             string    `json:"id" format:"uuid"`
	OrganizationID string    `json:"organization_id" format:"uuid"`
	Email          string    `json:"email" format:"email"`
	Role           string    `json:"role" enum:"admin,member"`
	WorkspaceIDs   []string  `json:"workspace_ids" doc:"Workspaces joined on acceptance"`
	InvitedBy      *string   `json:"invited_by" nullable:"true" format:"uuid"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// IssuedInvite is an invite with its token, answered once.
type IssuedInvite struct {
	Invite
	Token     string `json:"token" doc:"Shown once: the invitee accepts with it"`
	AcceptURL string `json:"accept_url" doc:"Where the invitee accepts (relative when PUBLIC_URL is unset)"`
}

// InviteInput invites one address.
type InviteInput struct {
	Email        string   `json:"email" maxLength:"254"`
	Role         string   `json:"role,omitempty" enum:"admin,member" doc:"Default member"`
	WorkspaceIDs []string `json:"workspace_ids,omitempty" maxItems:"50" doc:"Workspaces of the organization to join; default: its first workspace"`
}

// BulkInviteInput invites several addresses with one role.
type BulkInviteInput struct {
	Emails       []string `json:"emails" minItems:"1" maxItems:"100"`
	Role         string   `json:"role,omitempty" enum:"admin,member" doc:"Default member"`
	WorkspaceIDs []string `json:"workspace_ids,omitempty" maxItems:"50"`
}

// Verdicts of a bulk invite.
const (
	VerdictInvited         = "invited"
	VerdictAlreadyMember   = "already_member"
	VerdictAlreadyInvited  = "already_invited"
	VerdictInvalid         = "invalid"
	VerdictDuplicateInList = "duplicate"
)

// BulkVerdict is the outcome for one address.
type BulkVerdict struct {
	Email   string        `json:"email"`
	Verdict string        `json:"verdict" enum:"invited,already_member,already_invited,invalid,duplicate"`
	Reason  string        `json:"reason,omitempty"`
	Invite  *IssuedInvite `json:"invite,omitempty" doc:"The invite made, with its token (shown once)"`
}

// Accepted is the answer of accepting an invite.
type Accepted struct {
	OrganizationID string `json:"organization_id" format:"uuid"`
}

// ErrBadInvite refuses a token that is unknown, used or expired (one
// answer for all three).
var ErrBadInvite = apperr.BadRequest("this invite is not valid: it is unknown, already used or expired")

// Mailer queues a templated mail in a transaction (package mail).
type Mailer interface {
	Queue(ctx context.Context, tx *db.Tx, to, key string, vars map[string]string) error
}

// mailInvite queues the invite's mail, inside tx.
func (s *Service) mailInvite(ctx context.Context, tx *db.Tx, o *Organization, u *actor.User, in *IssuedInvite) error {
	if s.mailer == nil {
		return nil
	}
	inviter := u.DisplayName
	if inviter == "" {
		inviter = u.Email
	}
	return s.mailer.Queue(ctx, tx, in.Email, "invite", map[string]string{"inviter": inviter, "organization": o.Name, "role": in.Role,
		"link": in.AcceptURL, "expires": in.ExpiresAt.Format("2 January 2006 15:04 MST")})
}

// tellInvited tells the account of an invited address (when there is
// one) of its invite, inside tx.
func (s *Service) tellInvited(ctx context.Context, tx *db.Tx, o *Organization, u *actor.User, in *Invite) error {
	if s.react == nil {
		return nil
	}
	uid, err := userIDByEmail(ctx, tx, in.Email)
	if err != nil || uid == "" {
		return err
	}
	inviter := u.DisplayName
	if inviter == "" {
		inviter = u.Email
	}
	return s.react.Invited(ctx, tx, uid, InviteNote{InviteID: in.ID, Organization: o.Name, Inviter: inviter, Role: in.Role, Email: in.Email,
		ExpiresAt: in.ExpiresAt})
}

// settled tells the other domains an invite is answered, inside tx.
func (s *Service) settled(ctx context.Context, tx *db.Tx, inviteID string) error {
	if s.react == nil {
		return nil
	}
	return s.react.InviteSettled(ctx, tx, inviteID)
}

// manager is the selected organization when the caller is its owner or
// admin.
func (s *Service) manager(ctx context.Context, q db.Queryer, u *actor.User, sel Selector, doing string) (*Organization, error) {
	o, err := s.organization(ctx, q, u, sel)
	if err != nil {
		return nil, err
	}
	if o.Role != RoleOwner && o.Role != RoleAdmin {
		return nil, apperr.New(apperr.CodeForbidden, "only an organization owner or admin may %s", doing)
	}
	return o, nil
}

// Invites lists the organization's pending invites, newest first (owner or
// admin).
func (s *Service) Invites(ctx context.Context, u *actor.User, sel Selector) ([]Invite, error) {
	o, err := s.manager(ctx, s.db.R, u, sel, "see its invites")
	if err != nil {
		return nil, err
	}
	return pendingInvites(ctx, s.db.R, o.ID, s.clock.Now())
}

// inviteTarget checks what an invite joins: the role and workspaces of the
// organization (default: its first workspace).
func inviteTarget(ctx context.Context, q db.Queryer, orgID, role string, wsIDs []string) (string, []string, error) {
	if role == "" {
		role = RoleMember
	}
	if role != RoleAdmin && role != RoleMember {
		return "", nil, apperr.BadRequest("role must be admin or member (ownership is transferred, not invited)")
	}
	if len(wsIDs) == 0 {
		first, err := firstWorkspace(ctx, q, orgID)
		if err != nil {
			return "", nil, err
		}
		if first != "" {
			wsIDs = []string{first}
		}
		return role, wsIDs, nil
	}
	var out []string
	for _, id := range wsIDs {
		ok := false
		if ids.Valid(id) {
			var err error
			if ok, err = workspaceOfOrganization(ctx, q, orgID, id); err != nil {
				return "", nil, err
			}
		}
		if !ok {
			return "", nil, apperr.BadRequest("workspace_ids: %q is not a workspace of this organization", text.Clip(id, 64))
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return role, out, nil
}

// issue stores a new invite for an address, inside tx; an expired one for
// the same address goes first. It reports the verdict when the address is
// a member or has a pending invite already.
func (s *Service) issue(ctx context.Context, tx *db.Tx, o *Organization, u *actor.User, email, role string, wsIDs []string) (*IssuedInvite, string, error) {
	now := s.clock.Now()
	member, err := isMemberByEmail(ctx, tx, o.ID, email)
	if err != nil {
		return nil, "", err
	}
	if member {
		return nil, VerdictAlreadyMember, nil
	}
	invited, err := pendingInviteFor(ctx, tx, o.ID, email, now)
	if err != nil {
		return nil, "", err
	}
	if invited {
		return nil, VerdictAlreadyInvited, nil
	}
	tok, hash := token.New(InviteTokenPrefix)
	in := &IssuedInvite{Invite: Invite{ID: ids.New(), OrganizationID: o.ID, Email: email, Role: role, WorkspaceIDs: wsIDs, InvitedBy: &u.ID,
		CreatedAt: now, ExpiresAt: now.Add(s.inviteTTL)}, Token: tok, AcceptURL: s.linkBase(ctx) + "/invite?token=" + tok}
	if in.WorkspaceIDs == nil {
		in.WorkspaceIDs = []string{}
	}
	if err := insertInvite(ctx, tx, &in.Invite, hash); err != nil {
		if s.db.Dialect.IsUniqueViolation(err) {
			return nil, VerdictAlreadyInvited, nil
		}
		return nil, "", fmt.Errorf("tenancy: insert invite: %w", err)
	}
	if err := audit.Record(ctx, tx, now, u.ID, "organization.invite", "invite", in.ID, nil, in.Invite); err != nil {
		return nil, "", err
	}
	if err := s.mailInvite(ctx, tx, o, u, in); err != nil {
		return nil, "", err
	}
	if err := s.tellInvited(ctx, tx, o, u, &in.Invite); err != nil {
		return nil, "", err
	}
	return in, VerdictInvited, nil
}

// CreateInvite invites one address (owner or admin).
func (s *Service) CreateInvite(ctx context.Context, u *actor.User, sel Selector, in InviteInput) (*IssuedInvite, error) {
	email, err := text.Email(in.Email)
	if err != nil {
		return nil, err
	}
	var out *IssuedInvite
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		o, err := s.manager(ctx, tx, u, sel, "invite people")
		if err != nil {
			return err
		}
		role, wsIDs, err := inviteTarget(ctx, tx, o.ID, in.Role, in.WorkspaceIDs)
		if err != nil {
			return err
		}
		issued, verdict, err := s.issue(ctx, tx, o, u, email, role, wsIDs)
		switch {
		case err != nil:
			return err
		case verdict == VerdictAlreadyMember:
			return apperr.New(apperr.CodeConflict, "%s is already a member of the organization", email)
		case verdict == VerdictAlreadyInvited:
			return apperr.New(apperr.CodeConflict, "%s has a pending invite; resend it instead", email)
		}
		out = issued
		return nil
	})
	return out, err
}

// BulkInvite invites several addresses, with a verdict for each; the
// addresses that can be invited are, in one transaction.
func (s *Service) BulkInvite(ctx context.Context, u *actor.User, sel Selector, in BulkInviteInput) ([]BulkVerdict, error) {
	if len(in.Emails) == 0 || len(in.Emails) > MaxBulkInvites {
		return nil, apperr.BadRequest("emails: 1 to %d addresses", MaxBulkInvites)
	}
	var out []BulkVerdict
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		out = out[:0]
		o, err := s.manager(ctx, tx, u, sel, "invite people")
		if err != nil {
			return err
		}
		role, wsIDs, err := inviteTarget(ctx, tx, o.ID, in.Role, in.WorkspaceIDs)
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, raw := range in.Emails {
			email, err := text.Email(raw)
			if err != nil {
				out = append(out, BulkVerdict{Email: text.Clip(raw, 254), Verdict: VerdictInvalid, Reason: "not a valid address"})
				continue
			}
			if seen[email] {
				out = append(out, BulkVerdict{Email: email, Verdict: VerdictDuplicateInList})
				continue
			}
			seen[email] = true
			issued, verdict, err := s.issue(ctx, tx, o, u, email, role, wsIDs)
			if err != nil {
				return err
			}
			out = append(out, BulkVerdict{Email: email, Verdict: verdict, Invite: issued})
		}
		return nil
	})
	return out, err
}

// inviteOf reads a pending invite of the organization the caller manages;
// another organization's is not found.
func (s *Service) inviteOf(ctx context.Context, q db.Queryer, o *Organization, id string) (*Invite, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("invite")
	}
	return pendingInvite(ctx, q, o.ID, id)
}

// RevokeInvite deletes a pending invite (owner or admin).
func (s *Service) RevokeInvite(ctx context.Context, u *actor.User, sel Selector, id string) error {
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		o, err := s.manager(ctx, tx, u, sel, "revoke invites")
		if err != nil {
			return err
		}
		in, err := s.inviteOf(ctx, tx, o, id)
		if err != nil {
			return err
		}
		if err := deleteInvite(ctx, tx, in.OrganizationID, in.ID); err != nil {
			return err
		}
		if err := s.settled(ctx, tx, in.ID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "organization.invite.revoke", "invite", in.ID, in, nil)
	})
}

// ResendInvite gives a pending (or expired) invite a new token and a new
// expiry; the old token stops working.
func (s *Service) ResendInvite(ctx context.Context, u *actor.User, sel Selector, id string) (*IssuedInvite, error) {
	var out *IssuedInvite
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		o, err := s.manager(ctx, tx, u, sel, "resend invites")
		if err != nil {
			return err
		}
		in, err := s.inviteOf(ctx, tx, o, id)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		tok, hash := token.New(InviteTokenPrefix)
		in.ExpiresAt = now.Add(s.inviteTTL)
		if err := renewInvite(ctx, tx, in.OrganizationID, in.ID, hash, in.ExpiresAt); err != nil {
			return err
		}
		out = &IssuedInvite{Invite: *in, Token: tok, AcceptURL: s.linkBase(ctx) + "/invite?token=" + tok}
		if err := s.mailInvite(ctx, tx, o, u, out); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "organization.invite.resend", "invite", in.ID, nil, in)
	})
	return out, err
}

// AcceptInvite joins the signed-in account to the invite's organization
// (and its workspaces) with the invited role. The account's email must be
// the invited address. An account that is not approved yet joins too, and
// stays pending until an instance admin approves it.
func (s *Service) AcceptInvite(ctx context.Context, u *actor.User, tok string) (*Accepted, error) {
	if len(tok) < len(InviteTokenPrefix) || tok[:len(InviteTokenPrefix)] != InviteTokenPrefix || len(tok) > 200 {
		return nil, ErrBadInvite
	}
	var out *Accepted
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		now := s.clock.Now()
		in, err := inviteByToken(ctx, tx, token.Hash(tok), now)
		if errors.Is(err, apperr.ErrNotFound) {
			return ErrBadInvite
		}
		if err != nil {
			return err
		}
		if !equalFoldEmail(in.Email, u.Email) {
			return apperr.New(apperr.CodeForbidden, "this invite is for another email address; sign in with the invited account")
		}
		// Single use: the compare-and-set decides between racing accepts.
		won, err := markAccepted(ctx, tx, in.ID, u.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return ErrBadInvite
		}
		// A new member takes a seat of the plan's users.max.
		if _, err := memberRow(ctx, tx, in.OrganizationID, u.ID); errors.Is(err, apperr.ErrNotFound) {
			if err := s.check(ctx, tx, in.OrganizationID, u.ID, "users.max"); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if err := joinInvited(ctx, tx, in, u.ID, now); err != nil {
			return err
		}
		s.changed(tx)
		if err := s.settled(ctx, tx, in.ID); err != nil {
			return err
		}
		out = &Accepted{OrganizationID: in.OrganizationID}
		return audit.Record(ctx, tx, now, u.ID, "organization.invite.accept", "invite", in.ID, nil, map[string]any{"user_id": u.ID, "role": in.Role})
	})
	return out, err
}

func equalFoldEmail(a, b string) bool {
	ea, err1 := text.Email(a)
	eb, err2 := text.Email(b)
	return err1 == nil && err2 == nil && ea == eb
}

// InvitingOrganizations names, for each pending account email, the
// organizations that invited it (the admin's pending list shows them).
func (s *Service) InvitingOrganizations(ctx context.Context, emails []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(emails) == 0 {
		return out, nil
	}
	args := make([]any, len(emails))
	marks := make([]string, len(emails))
	for i, e := range emails {
		args[i], marks[i] = e, fmt.Sprintf("$%d", i+1)
	}
	pairs, err := invitingOrganizations(ctx, s.db.R, strings.Join(marks, ", "), args)
	if err != nil {
		return nil, err
	}
	for _, p := range pairs {
		if !slices.Contains(out[p[0]], p[1]) {
			out[p[0]] = append(out[p[0]], p[1])
		}
	}
	return out, nil
}
