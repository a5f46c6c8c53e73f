package tenancy

import (
	"context"
	"database/sql"
	"encoding/json"
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
	rows, err := s.db.R.QueryContext(ctx, `SELECT `+inviteColumns+` FROM organization_invites
		WHERE organization_id = $1 AND accepted_at IS NULL AND expires_at > $2 ORDER BY created_at DESC, id DESC`, o.ID, s.clock.Now())
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
		var first string
		err := q.QueryRowContext(ctx, `SELECT id FROM workspaces WHERE organization_id = $1 ORDER BY created_at, id LIMIT 1`, orgID).Scan(&first)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return "", nil, fmt.Errorf("tenancy: first workspace: %w", err)
		}
		if first != "" {
			wsIDs = []string{first}
		}
		return role, wsIDs, nil
	}
	var out []string
	for _, id := range wsIDs {
		var n int
		if ids.Valid(id) {
			if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM workspaces WHERE id = $1 AND organization_id = $2`, id, orgID).Scan(&n); err != nil {
				return "", nil, fmt.Errorf("tenancy: invite workspace: %w", err)
			}
		}
		if n == 0 {
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
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM organization_members m JOIN users us ON us.id = m.user_id
		WHERE m.organization_id = $1 AND us.email = $2`, o.ID, email).Scan(&n); err != nil {
		return nil, "", fmt.Errorf("tenancy: invite: %w", err)
	}
	if n > 0 {
		return nil, VerdictAlreadyMember, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM organization_invites WHERE organization_id = $1 AND email = $2 AND accepted_at IS NULL
		AND expires_at <= $3`, o.ID, email, now); err != nil {
		return nil, "", fmt.Errorf("tenancy: invite: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM organization_invites WHERE organization_id = $1 AND email = $2 AND accepted_at IS NULL`,
		o.ID, email).Scan(&n); err != nil {
		return nil, "", fmt.Errorf("tenancy: invite: %w", err)
	}
	if n > 0 {
		return nil, VerdictAlreadyInvited, nil
	}
	tok, hash := token.New(InviteTokenPrefix)
	in := &IssuedInvite{Invite: Invite{ID: ids.New(), OrganizationID: o.ID, Email: email, Role: role, WorkspaceIDs: wsIDs, InvitedBy: &u.ID,
		CreatedAt: now, ExpiresAt: now.Add(s.inviteTTL)}, Token: tok, AcceptURL: s.publicURL + "/invite?token=" + tok}
	if in.WorkspaceIDs == nil {
		in.WorkspaceIDs = []string{}
	}
	b, _ := json.Marshal(in.WorkspaceIDs)
	if _, err := tx.ExecContext(ctx, `INSERT INTO organization_invites (id, organization_id, email, role, workspace_ids, token_hash, invited_by,
		created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, in.ID, o.ID, email, role, string(b), hash, u.ID, now, in.ExpiresAt); err != nil {
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
	return scanInvite(q.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM organization_invites
		WHERE organization_id = $1 AND id = $2 AND accepted_at IS NULL`, o.ID, id))
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
		if _, err := tx.ExecContext(ctx, `DELETE FROM organization_invites WHERE id = $1`, in.ID); err != nil {
			return fmt.Errorf("tenancy: revoke invite: %w", err)
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
		if _, err := tx.ExecContext(ctx, `UPDATE organization_invites SET token_hash = $2, expires_at = $3 WHERE id = $1`, in.ID, hash, in.ExpiresAt); err != nil {
			return fmt.Errorf("tenancy: resend invite: %w", err)
		}
		out = &IssuedInvite{Invite: *in, Token: tok, AcceptURL: s.publicURL + "/invite?token=" + tok}
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
		in, err := scanInvite(tx.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM organization_invites
			WHERE token_hash = $1 AND accepted_at IS NULL AND expires_at > $2`, token.Hash(tok), now))
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
		res, err := tx.ExecContext(ctx, `UPDATE organization_invites SET accepted_at = $2, accepted_by = $3 WHERE id = $1 AND accepted_at IS NULL`,
			in.ID, now, u.ID)
		if err != nil {
			return fmt.Errorf("tenancy: accept invite: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err != nil {
				return err
			}
			return ErrBadInvite
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (organization_id, user_id) DO NOTHING`, in.OrganizationID, u.ID, in.Role, now); err != nil {
			return fmt.Errorf("tenancy: accept invite: %w", err)
		}
		for _, ws := range in.WorkspaceIDs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
				SELECT id, $2, 'member', $3 FROM workspaces WHERE id = $1 AND organization_id = $4
				ON CONFLICT (workspace_id, user_id) DO NOTHING`, ws, u.ID, now, in.OrganizationID); err != nil {
				return fmt.Errorf("tenancy: accept invite: %w", err)
			}
		}
		s.changed(tx)
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
	rows, err := s.db.R.QueryContext(ctx, `SELECT i.email, o.name FROM organization_invites i JOIN organizations o ON o.id = i.organization_id
		WHERE i.email IN (`+strings.Join(marks, ", ")+`) ORDER BY i.created_at, i.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("tenancy: inviting organizations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e, name string
		if err := rows.Scan(&e, &name); err != nil {
			return nil, err
		}
		if !slices.Contains(out[e], name) {
			out[e] = append(out[e], name)
		}
	}
	return out, rows.Err()
}
