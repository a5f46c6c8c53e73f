package triggers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"slipway/internal/mailbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/tenancy"
)

// Email trigger kinds. An email_plus_address trigger owns one alias on an
// imap resource's mailbox: a message to <inbox>+<alias>@<domain> starts
// its workflow. The legacy email trigger takes every message of its
// mailbox that no alias takes; migrate-email turns it into an
// email_plus_address trigger.
const (
	KindEmail     = "email"
	KindEmailPlus = "email_plus_address"
)

func emailKind(kind string) bool { return kind == KindEmail || kind == KindEmailPlus }

// Mailboxes opens the imap resources email triggers read (the resources
// service, at wiring time).
type Mailboxes interface {
	MailboxInfo(ctx context.Context, workspaceID, resourceID string) (*mailbox.Info, error)
	OpenMailbox(ctx context.Context, workspaceID, resourceID string) (mailbox.Session, error)
}

// EmailAlias is an email_plus_address trigger's alias.
type EmailAlias struct {
	ID         string    `json:"id" format:"uuid"`
	TriggerID  string    `json:"trigger_id" format:"uuid"`
	WorkflowID string    `json:"workflow_id" format:"uuid"`
	ResourceID string    `json:"resource_id" format:"uuid" doc:"The imap resource whose mailbox receives the mail"`
	Alias      string    `json:"alias"`
	Address    string    `json:"address" doc:"inbox+alias@domain"`
	CreatedAt  time.Time `json:"created_at"`

	workspaceID string
	createdBy   *string
}

// EmailAliasPage is a page of a workspace's aliases, newest first.
type EmailAliasPage struct {
	Items []EmailAlias `json:"items"`
	Total int          `json:"total"`
}

// MailMemory is how long a handled message is remembered (the folder's
// last UID keeps it from being handled again after).
const MailMemory = 30 * 24 * time.Hour

// MaxMailboxes bounds the mailboxes a workspace's email triggers read:
// each is a connection the server keeps open.
const MaxMailboxes = 10

// Listing bounds.
const (
	DefaultAliasLimit = 50
	MaxAliasLimit     = 200
	maxUnrouted       = 100 // per mailbox
)

func checkEmailConfig(kind string, c *Config) error {
	if c.ResponseMode != "" || c.SyncTimeoutSeconds != 0 || c.Cron != "" || c.Timezone != "" || c.IntervalSeconds != 0 || len(c.Input) > 0 {
		return apperr.BadRequest("config: an %s trigger takes resource_id%s", kind, map[bool]string{true: " and alias", false: ""}[kind == KindEmailPlus])
	}
	if !ids.Valid(c.ResourceID) {
		return apperr.BadRequest("config.resource_id: an %s trigger reads an imap resource: give its id", kind)
	}
	if kind == KindEmail && c.Alias != "" {
		return apperr.BadRequest("config.alias applies to email_plus_address triggers")
	}
	if c.Alias != "" {
		a, ok := mailbox.CleanAlias(c.Alias)
		if !ok {
			return apperr.BadRequest("config.alias %q: lower-case letters, digits, dots, dashes and underscores, starting with a letter or digit, at most %d", c.Alias, mailbox.MaxAliasLen)
		}
		c.Alias = a
	}
	return nil
}

// bindMailbox checks an email trigger's mailbox and, for an
// email_plus_address trigger, gives it its alias (the one asked for, or
// one made from the workflow's name) in tx.
func (s *Service) bindMailbox(ctx context.Context, tx *db.Tx, t *Trigger, workflowName string) error {
	if s.mail == nil {
		return apperr.BadRequest("email triggers are not available on this server")
	}
	info, err := s.mail.MailboxInfo(ctx, t.workspaceID, t.Config.ResourceID)
	if err != nil {
		return err
	}
	if n, err := otherMailboxes(ctx, tx, s.db, t.workspaceID, info.ResourceID); err != nil {
		return err
	} else if n >= MaxMailboxes {
		return apperr.BadRequest("config.resource_id: a workspace's email triggers read at most %d mailboxes; this would be one more", MaxMailboxes)
	}
	if err := watchMailbox(ctx, tx, t.workspaceID, info.ResourceID, t.UpdatedAt); err != nil {
		return err
	}
	if t.Kind == KindEmail {
		t.EmailAddress = nil
		return dropAlias(ctx, tx, t.workspaceID, t.ID)
	}
	if info.Address == "" {
		return apperr.BadRequest("config.resource_id: the imap resource %q has no address: set its config.address (the mailbox's email address)", info.Name)
	}
	alias := t.Config.Alias
	if alias == "" {
		if alias, err = s.mintAlias(ctx, tx, t, mailbox.Slug(workflowName)); err != nil {
			return err
		}
	} else if taken, err := aliasTaken(ctx, tx, t.workspaceID, info.ResourceID, alias, t.ID); err != nil {
		return err
	} else if taken {
		return apperr.New(apperr.CodeConflict, "the alias %q is taken on the mailbox %q", alias, info.Name)
	}
	a := &EmailAlias{ID: ids.New(), TriggerID: t.ID, WorkflowID: t.WorkflowID, ResourceID: info.ResourceID, Alias: alias,
		Address: mailbox.PlusAddress(info.Address, alias), CreatedAt: t.UpdatedAt, workspaceID: t.workspaceID, createdBy: t.createdBy}
	if err := putAlias(ctx, tx, s.db, a); err != nil {
		return err
	}
	t.Config.Alias, t.EmailAddress = alias, &a.Address
	return nil
}

// mintAlias finds a free alias from base: base, base-2, … base-20, then
// base and random letters.
func (s *Service) mintAlias(ctx context.Context, tx *db.Tx, t *Trigger, base string) (string, error) {
	if base == "" {
		base = "workflow"
	}
	for i := 1; i <= 21; i++ {
		a := base
		switch {
		case i == 21:
			b := make([]byte, 4)
			_, _ = rand.Read(b)
			a += "-" + hex.EncodeToString(b)
		case i > 1:
			a += "-" + strconv.Itoa(i)
		}
		taken, err := aliasTaken(ctx, tx, t.workspaceID, t.Config.ResourceID, a, t.ID)
		if err != nil {
			return "", err
		}
		if !taken {
			return a, nil
		}
	}
	return "", apperr.New(apperr.CodeConflict, "no free alias from %q on this mailbox: give config.alias", base)
}

// withAddresses shows email_plus_address triggers' addresses.
func (s *Service) withAddresses(ctx context.Context, q db.Queryer, workspaceID string, ts []Trigger) error {
	var want []string
	for _, t := range ts {
		if t.Kind == KindEmailPlus {
			want = append(want, t.ID)
		}
	}
	if len(want) == 0 {
		return nil
	}
	as, err := aliasesOf(ctx, q, workspaceID, want)
	if err != nil {
		return err
	}
	for i := range ts {
		if a, ok := as[ts[i].ID]; ok {
			ts[i].EmailAddress = &a.Address
		}
	}
	return nil
}

// MigrateEmail turns a legacy email trigger into an email_plus_address
// trigger on the same mailbox, with an alias made from its workflow's name
// (workspace admins).
func (s *Service) MigrateEmail(ctx context.Context, ws *actor.Workspace, id string) (*Trigger, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("trigger")
	}
	if !tenancy.WorkspaceAdmin(ws.Role) {
		return nil, apperr.New(apperr.CodeForbidden, "migrating an email trigger needs a workspace admin")
	}
	var out *Trigger
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTrigger(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if t.Kind != KindEmail {
			return apperr.BadRequest("only a legacy email trigger migrates; this is a %s trigger", t.Kind)
		}
		w, err := s.workflows.GetTx(ctx, tx, ws, t.WorkflowID)
		if err != nil {
			return err
		}
		t.Kind, t.Config.Alias, t.UpdatedAt = KindEmailPlus, "", s.clock.Now().UTC()
		if err := s.bindMailbox(ctx, tx, t, w.Name); err != nil {
			return err
		}
		if err := migrateKind(ctx, tx, t); err != nil {
			return err
		}
		out = t
		return update(ctx, tx, t)
	})
	return out, err
}

// EmailAlias reads an email_plus_address trigger's alias: 404 when the
// trigger is missing, another workspace's, or of another kind.
func (s *Service) EmailAlias(ctx context.Context, ws *actor.Workspace, triggerID string) (*EmailAlias, error) {
	if !ids.Valid(triggerID) {
		return nil, apperr.NotFound("email alias")
	}
	return aliasByTrigger(ctx, s.db.R, ws.ID, triggerID)
}

// EmailAliases lists a workspace's aliases, newest first; a workspace
// other than the active one is 403.
func (s *Service) EmailAliases(ctx context.Context, ws *actor.Workspace, workspaceID string, limit, offset int) (*EmailAliasPage, error) {
	if workspaceID != ws.ID {
		return nil, apperr.New(apperr.CodeForbidden, "this is not your active workspace")
	}
	limit = min(max(limit, 0), MaxAliasLimit)
	if limit == 0 {
		limit = DefaultAliasLimit
	}
	items, total, err := listAliases(ctx, s.db.R, ws.ID, limit, max(offset, 0))
	if err != nil {
		return nil, err
	}
	return &EmailAliasPage{Items: items, Total: total}, nil
}

// UnroutedEmail is a message no trigger took, in a mailbox's unrouted
// folder.
type UnroutedEmail struct {
	mailbox.Envelope
	ResourceID string `json:"resource_id" format:"uuid"`
	Mailbox    string `json:"mailbox" doc:"The imap resource's name"`
	Alias      string `json:"alias" doc:"The alias it was sent to (no trigger has it), or empty"`
}

// MailboxError is a mailbox the unrouted listing could not read.
type MailboxError struct {
	ResourceID string `json:"resource_id" format:"uuid"`
	Mailbox    string `json:"mailbox"`
	Error      string `json:"error"`
}

// UnroutedList is the unrouted mail of a workspace's mailboxes, newest
// first, with the mailboxes that could not be read.
type UnroutedList struct {
	Items  []UnroutedEmail `json:"items"`
	Errors []MailboxError  `json:"errors"`
}

func requireAdmin(ws *actor.Workspace) error {
	if !tenancy.WorkspaceAdmin(ws.Role) {
		return apperr.New(apperr.CodeForbidden, "unrouted email is for workspace admins")
	}
	return nil
}

// Unrouted lists the mail in the unrouted folders of the workspace's
// mailboxes (read from the mail server; at most 100 per mailbox).
func (s *Service) Unrouted(ctx context.Context, ws *actor.Workspace) (*UnroutedList, error) {
	if err := requireAdmin(ws); err != nil {
		return nil, err
	}
	out := &UnroutedList{Items: []UnroutedEmail{}, Errors: []MailboxError{}}
	if s.mail == nil {
		return out, nil
	}
	boxes, err := workspaceMailboxes(ctx, s.db.R, ws.ID)
	if err != nil {
		return nil, err
	}
	for _, rid := range boxes {
		info, err := s.mail.MailboxInfo(ctx, ws.ID, rid)
		if err != nil {
			continue // no longer an imap resource of the workspace
		}
		envs, err := s.unroutedOf(ctx, ws.ID, info)
		if err != nil {
			out.Errors = append(out.Errors, MailboxError{ResourceID: rid, Mailbox: info.Name, Error: err.Error()})
			continue
		}
		for _, e := range envs {
			u := UnroutedEmail{Envelope: e, ResourceID: rid, Mailbox: info.Name}
			u.Alias = recipientAlias(info.Address, e.To)
			out.Items = append(out.Items, u)
		}
	}
	slices.SortStableFunc(out.Items, func(a, b UnroutedEmail) int { return b.Date.Compare(a.Date) })
	return out, nil
}

func recipientAlias(address string, to []string) string {
	for _, r := range to {
		if a, ok := mailbox.AliasOf(address, r); ok {
			return a
		}
	}
	return ""
}

func (s *Service) unroutedOf(ctx context.Context, workspaceID string, info *mailbox.Info) ([]mailbox.Envelope, error) {
	sess, err := s.mail.OpenMailbox(ctx, workspaceID, info.ResourceID)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if _, err := sess.Select(ctx, info.Unrouted); err != nil {
		return []mailbox.Envelope{}, nil // no unrouted folder yet: nothing unrouted
	}
	return sess.Envelopes(ctx, maxUnrouted)
}

// unroutedMailbox finds the mailbox an unrouted message is in: the one
// named, or the workspace's only one.
func (s *Service) unroutedMailbox(ctx context.Context, ws *actor.Workspace, resourceID string) (*mailbox.Info, error) {
	if s.mail == nil {
		return nil, apperr.NotFound("unrouted email")
	}
	boxes, err := workspaceMailboxes(ctx, s.db.R, ws.ID)
	if err != nil {
		return nil, err
	}
	switch {
	case resourceID != "":
		if !slices.Contains(boxes, resourceID) {
			return nil, apperr.NotFound("unrouted email")
		}
	case len(boxes) == 1:
		resourceID = boxes[0]
	case len(boxes) == 0:
		return nil, apperr.NotFound("unrouted email")
	default:
		return nil, apperr.BadRequest("the workspace has %d mailboxes: say which with resource_id", len(boxes))
	}
	info, err := s.mail.MailboxInfo(ctx, ws.ID, resourceID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeBadRequest {
		return nil, apperr.NotFound("unrouted email")
	}
	return info, err
}

// openUnrouted opens a mailbox's unrouted folder and reads the message's
// header; 404 when it is not there.
func (s *Service) openUnrouted(ctx context.Context, ws *actor.Workspace, uid uint32, resourceID string) (mailbox.Session, *mailbox.Info, *mailbox.Email, error) {
	info, err := s.unroutedMailbox(ctx, ws, resourceID)
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err := s.mail.OpenMailbox(ctx, ws.ID, info.ResourceID)
	if err != nil {
		return nil, nil, nil, apperr.New(apperr.CodeUnprocessable, "%v", err)
	}
	if _, err := sess.Select(ctx, info.Unrouted); err != nil {
		sess.Close()
		return nil, nil, nil, apperr.NotFound("unrouted email")
	}
	raw, err := sess.Fetch(ctx, uid, 0)
	if err != nil {
		sess.Close()
		return nil, nil, nil, apperr.New(apperr.CodeUnprocessable, "%v", err)
	}
	if raw == nil {
		sess.Close()
		return nil, nil, nil, apperr.NotFound("unrouted email")
	}
	e, _ := mailbox.Read(raw)
	return sess, info, e, nil
}

// DeleteUnrouted deletes an unrouted message from the mail server.
func (s *Service) DeleteUnrouted(ctx context.Context, ws *actor.Workspace, uid uint32, resourceID string) (bool, error) {
	if err := requireAdmin(ws); err != nil {
		return false, err
	}
	sess, _, _, err := s.openUnrouted(ctx, ws, uid, resourceID)
	if err != nil {
		return false, err
	}
	defer sess.Close()
	if err := sess.Delete(ctx, uid); err != nil {
		return false, apperr.New(apperr.CodeUnprocessable, "%v", err)
	}
	return true, nil
}

// CreateAliasInput routes an unrouted message: a new alias for a
// workflow, and the message back to the inbox.
type CreateAliasInput struct {
	WorkflowID string `json:"workflow_id" format:"uuid" doc:"The workflow the alias starts"`
	Slug       string `json:"slug,omitempty" maxLength:"63" doc:"The alias (default: the one the message was sent to)"`
	ResourceID string `json:"resource_id,omitempty" maxLength:"36" doc:"The mailbox (needed when the workspace reads more than one)"`
}

// AliasCreated answers create-alias.
type AliasCreated struct {
	Trigger Trigger    `json:"trigger"`
	Alias   EmailAlias `json:"alias"`
	// Moved: the message is back in the inbox, where the poller routes it
	// to the new alias's workflow.
	Moved bool `json:"moved"`
}

// CreateAlias mints an alias for a workflow (a new email_plus_address
// trigger) and moves the unrouted message back to the inbox, where it is
// routed to it. When the move fails the trigger is removed again.
func (s *Service) CreateAlias(ctx context.Context, ws *actor.Workspace, u *actor.User, uid uint32, in CreateAliasInput) (*AliasCreated, error) {
	if err := requireAdmin(ws); err != nil {
		return nil, err
	}
	if !ids.Valid(in.WorkflowID) {
		return nil, apperr.BadRequest("workflow_id: not a workflow of this workspace")
	}
	if _, err := s.workflows.Get(ctx, ws, in.WorkflowID); err != nil {
		if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
			return nil, apperr.BadRequest("workflow_id: not a workflow of this workspace")
		}
		return nil, err
	}
	sess, info, e, err := s.openUnrouted(ctx, ws, uid, in.ResourceID)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	slug := in.Slug
	if slug == "" {
		slug = recipientAlias(info.Address, append(append(slices.Clone(e.To), e.Cc...), e.Headers["delivered-to"], e.Headers["x-original-to"]))
		if slug == "" {
			return nil, apperr.BadRequest("slug: the message was not sent to a plus address of the mailbox: give the alias")
		}
	}
	t, err := s.Create(ctx, ws, u, in.WorkflowID, CreateInput{Kind: KindEmailPlus, Config: Config{ResourceID: info.ResourceID, Alias: slug}})
	if err != nil {
		return nil, err
	}
	if err := sess.Move(ctx, uid, info.Inbox); err != nil {
		_, _ = s.Delete(context.WithoutCancel(ctx), ws, t.ID)
		return nil, apperr.New(apperr.CodeUnprocessable, "the alias was not made: moving the message back to %s failed: %v", info.Inbox, err)
	}
	a, err := s.EmailAlias(ctx, ws, t.ID)
	if err != nil {
		return nil, err
	}
	return &AliasCreated{Trigger: *t, Alias: *a, Moved: true}, nil
}
