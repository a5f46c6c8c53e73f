package tenancy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/billing"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/text"
	"slipway/internal/platform/ttlcache"
)

// Service implements organizations and workspaces.
type Service struct {
	db    *db.DB
	clock clock.Clock
	react Reactions // nil: no other domain reacts
	log   *slog.Logger
	// resolved keeps recent answers of ResolveWorkspace (every
	// workspace-scoped request asks it) for a short time. Every write to
	// workspaces, organizations or their members drops all of it, here and,
	// through the bus, on every other replica; a gap in the bus empties it
	// (see Run).
	resolved *ttlcache.Cache[actor.Workspace]
	bus      Bus // nil: a single replica

	mailer    Mailer        // invite mail; nil: the token is only in the answer
	publicURL string        // accept links start with it ("" gives relative links)
	inviteTTL time.Duration // how long an invite stays valid
	plans     Plans         // the plan's limits and subscription; nil: none
}

// Config holds tenancy's settings.
type Config struct {
	// CacheTTL bounds how long a resolved workspace is kept (0: not at all).
	CacheTTL time.Duration
	// PublicURL starts invite accept links ("" gives relative links).
	PublicURL string
	// InviteTTL is how long an invite stays valid (0: DefaultInviteTTL).
	InviteTTL time.Duration
}

// Deps are what tenancy uses of the rest. DB, Clock and Log are required.
type Deps struct {
	DB    *db.DB
	Clock clock.Clock
	Log   *slog.Logger
	// Bus carries cache invalidations between replicas (nil: one replica).
	Bus Bus
	// Mailer sends invites (nil: the token is only in the answer).
	Mailer Mailer
	// Reactions are told of workspaces created and people offboarded.
	Reactions Reactions
	// Plans enforces the organization's plan (workspaces.max, users.max)
	// and knows its subscription (nil: no limits, no subscriptions).
	Plans Plans
}

// Plans is what tenancy asks billing.
type Plans interface {
	// Check decides a plan's limit inside the transaction that adds to
	// it: quota_exceeded when adding would pass it.
	Check(ctx context.Context, tx *db.Tx, subj billing.Subject, feature string, adding int64) error
	// Paying reports whether the organization has a subscription a
	// payment provider bills, read through q.
	Paying(ctx context.Context, q db.Queryer, orgID string) (bool, error)
}

// check asks the quota, when there is one.
func (s *Service) check(ctx context.Context, tx *db.Tx, orgID, userID, feature string) error {
	if s.plans == nil {
		return nil
	}
	return s.plans.Check(ctx, tx, billing.Subject{OrganizationID: orgID, UserID: userID}, feature, 1)
}

// Bus is how replicas tell each other to forget resolved workspaces.
type Bus interface {
	Publish(ctx context.Context, topic, payload string) error
	Subscribe(topic string) *pubsub.Subscription
}

// topicMemberships carries "changed": forget every resolved workspace.
const topicMemberships = "memberships"

// Reactions are what other domains do when tenancy changes, inside the
// transaction that changes it (the composition root lists who reacts).
type Reactions interface {
	// WorkspaceCreated: a workspace exists; other domains give it what
	// every workspace starts with (e.g. default agent profiles) without
	// tenancy knowing them.
	WorkspaceCreated(ctx context.Context, q db.Queryer, workspaceID string, now time.Time) error
	// Offboarded: a person left an organization (or was removed); their
	// sessions are revoked.
	Offboarded(ctx context.Context, tx *db.Tx, userID string) error
	// Invited: an invite went to the address of an account (userID), which
	// is told; InviteSettled: an invite was accepted or revoked.
	Invited(ctx context.Context, tx *db.Tx, userID string, in InviteNote) error
	InviteSettled(ctx context.Context, tx *db.Tx, inviteID string) error
}

// InviteNote is what an invited account is told of its invite (never its
// token: the link to accept is in the invite's mail).
type InviteNote struct {
	InviteID     string
	Organization string
	Inviter      string
	Role         string
	Email        string
	ExpiresAt    time.Time
}

func (s *Service) newWorkspace(ctx context.Context, q db.Queryer, id, orgID, name, userID string, now time.Time) error {
	if err := insertWorkspace(ctx, q, id, orgID, name, now); err != nil {
		return err
	}
	if err := insertWorkspaceMember(ctx, q, id, userID, RoleOwner, now); err != nil {
		return err
	}
	if s.react != nil {
		return s.react.WorkspaceCreated(ctx, q, id, now)
	}
	return nil
}

// NewService builds the tenancy service.
func NewService(cfg Config, d Deps) *Service {
	ttl := cfg.InviteTTL
	if ttl <= 0 {
		ttl = DefaultInviteTTL
	}
	return &Service{db: d.DB, clock: d.Clock, log: d.Log, bus: d.Bus, resolved: ttlcache.New[actor.Workspace](cfg.CacheTTL, 10000),
		mailer: d.Mailer, react: d.Reactions, plans: d.Plans, publicURL: strings.TrimRight(cfg.PublicURL, "/"), inviteTTL: ttl}
}

// changed drops every resolved workspace once tx commits, here and on every
// replica. Every write that could change an answer of ResolveWorkspace (a
// membership, a workspace or an organization removed, or a role changed)
// calls it.
func (s *Service) changed(tx *db.Tx) {
	tx.AfterCommit(func() {
		s.resolved.Clear()
		if s.bus == nil { // sent even when this replica caches nothing: the others may
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.bus.Publish(ctx, topicMemberships, "changed"); err != nil {
			// The other replicas' entries expire within the cache's TTL anyway.
			s.log.Error("telling the other replicas to forget resolved workspaces failed", "err", err)
		}
	})
}

// Run applies the other replicas' invalidations to this one's cache until
// ctx ends.
func (s *Service) Run(ctx context.Context) {
	if s.bus == nil || s.resolved == nil {
		return
	}
	pubsub.Follow(ctx, s.bus.Subscribe(topicMemberships), s.resolved.Clear)
}

// DefaultWorkspaceName names the workspace every new account starts with.
const DefaultWorkspaceName = "Default"

// ProvisionPersonal creates the user's own organization with one default
// workspace, owned by the user, in the caller's transaction (auth.Tenancy).
func (s *Service) ProvisionPersonal(ctx context.Context, tx *db.Tx, userID, displayName string, now time.Time) (string, error) {
	// No changed(tx): a new user has no resolved workspaces, and no one
	// else's answer depends on the new organization.
	orgID, wsID := ids.New(), ids.New()
	if err := insertOrganization(ctx, tx, orgID, displayName+"'s organization", now); err != nil {
		return "", err
	}
	if err := insertOrgMember(ctx, tx, orgID, userID, RoleOwner, now); err != nil {
		return "", err
	}
	if err := s.newWorkspace(ctx, tx, wsID, orgID, DefaultWorkspaceName, userID, now); err != nil {
		return "", err
	}
	return wsID, nil
}

// RemovePersonal deletes the organizations whose only member is the user
// (and so their workspaces), in the caller's transaction (auth.Tenancy).
func (s *Service) RemovePersonal(ctx context.Context, tx *db.Tx, userID string) error {
	s.changed(tx)
	orgs, err := soleMemberOrgs(ctx, tx, userID)
	if err != nil {
		return err
	}
	for _, id := range orgs {
		if err := deleteOrganization(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// ErrNoWorkspace answers a workspace-scoped request of a caller who has
// joined no workspace.
var ErrNoWorkspace = apperr.New(apperr.CodeForbidden, "you have not joined any workspace")

// ResolveWorkspace picks the active workspace: the one named by the
// X-Workspace-Id header if the caller has joined it (else 403, the same for
// an unknown id), otherwise the caller's default joined workspace, otherwise
// their earliest joined one.
func (s *Service) ResolveWorkspace(ctx context.Context, u *actor.User, header string) (*actor.Workspace, error) {
	// The answer depends on the user, the header and the user's default.
	key := u.ID + " " + header + " " + u.DefaultWorkspaceID
	now := s.clock.Now()
	if w, ok := s.resolved.Get(key, now); ok {
		return &w, nil
	}
	epoch := s.resolved.Epoch()
	var w *Workspace
	var err error
	switch {
	case header != "":
		if !ids.Valid(header) {
			return nil, apperr.BadRequest("X-Workspace-Id must be a workspace id (a UUID)")
		}
		w, err = membershipPrepared(ctx, s.db, header, u.ID)
		if errors.Is(err, apperr.ErrNotFound) {
			return nil, apperr.New(apperr.CodeForbidden, "you have not joined the workspace named by X-Workspace-Id")
		}
	case u.DefaultWorkspaceID != "":
		w, err = membershipPrepared(ctx, s.db, u.DefaultWorkspaceID, u.ID)
		if errors.Is(err, apperr.ErrNotFound) {
			// Left or deleted since the session was read: use the fallback.
			w, err = s.earliestJoined(ctx, u.ID)
		}
	default:
		w, err = s.earliestJoined(ctx, u.ID)
	}
	if err != nil {
		return nil, err
	}
	aw := actor.Workspace{ID: w.ID, OrganizationID: w.OrganizationID, Role: w.Role}
	s.resolved.Put(key, aw, now, time.Time{}, epoch)
	return &aw, nil
}

func (s *Service) earliestJoined(ctx context.Context, userID string) (*Workspace, error) {
	all, err := joinedWorkspaces(ctx, s.db.R, userID)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, ErrNoWorkspace
	}
	return &all[0], nil
}

// Selector carries the request's choice of organization: X-Organization-Id,
// or else the active workspace (X-Workspace-Id or the default).
type Selector struct {
	OrganizationID string
	WorkspaceID    string
}

// ErrNotOrgMember refuses organization endpoints to non-members.
var ErrNotOrgMember = apperr.New(apperr.CodeForbidden, "you are not a member of this organization")

// organization resolves the selected organization with the caller's role.
func (s *Service) organization(ctx context.Context, q db.Queryer, u *actor.User, sel Selector) (*Organization, error) {
	orgID := sel.OrganizationID
	if orgID != "" {
		if !ids.Valid(orgID) {
			return nil, apperr.BadRequest("X-Organization-Id must be an organization id (a UUID)")
		}
	} else {
		ws, err := s.ResolveWorkspace(ctx, u, sel.WorkspaceID)
		if err != nil {
			return nil, err
		}
		orgID = ws.OrganizationID
	}
	o, err := orgForMember(ctx, q, orgID, u.ID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, ErrNotOrgMember
	}
	return o, err
}

// Organization returns the selected organization.
func (s *Service) Organization(ctx context.Context, u *actor.User, sel Selector) (*Organization, error) {
	return s.organization(ctx, s.db.R, u, sel)
}

func cleanName(field, raw string) (string, error) { return text.Name(field, raw, 100) }

// RenameOrganization renames the selected organization (owner or admin).
func (s *Service) RenameOrganization(ctx context.Context, u *actor.User, sel Selector, name string) (*Organization, error) {
	name, err := cleanName("name", name)
	if err != nil {
		return nil, err
	}
	var out *Organization
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		o, err := s.organization(ctx, tx, u, sel)
		if err != nil {
			return err
		}
		if o.Role != RoleOwner && o.Role != RoleAdmin {
			return apperr.New(apperr.CodeForbidden, "only an organization owner or admin may rename it")
		}
		now := s.clock.Now()
		if err := renameOrganization(ctx, tx, o.ID, name, now); err != nil {
			return err
		}
		before := *o
		o.Name = name
		out = o
		return audit.Record(ctx, tx, now, u.ID, "organization.rename", "organization", o.ID, before, o)
	})
	return out, err
}

// DeleteOrganization deletes the selected organization: owner only, and
// refused (412) while it still owns workspaces.
func (s *Service) DeleteOrganization(ctx context.Context, u *actor.User, sel Selector) error {
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		o, err := s.organization(ctx, tx, u, sel)
		if err != nil {
			return err
		}
		if o.Role != RoleOwner {
			return apperr.New(apperr.CodeForbidden, "only an organization owner may delete it")
		}
		n, err := countWorkspaces(ctx, tx, o.ID)
		if err != nil {
			return err
		}
		if n > 0 {
			return apperr.New(apperr.CodePreconditionFailed, "the organization still owns %d workspace(s); delete them first", n)
		}
		if s.plans != nil {
			paying, err := s.plans.Paying(ctx, tx, o.ID)
			if err != nil {
				return err
			}
			if paying {
				return apperr.New(apperr.CodePreconditionFailed, "the organization has an active subscription; cancel it first")
			}
		}
		if err := deleteOrganization(ctx, tx, o.ID); err != nil {
			return err
		}
		s.changed(tx)
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "organization.delete", "organization", o.ID, o, nil)
	})
}

// Members lists the selected organization's members.
func (s *Service) Members(ctx context.Context, u *actor.User, sel Selector) ([]Member, error) {
	o, err := s.organization(ctx, s.db.R, u, sel)
	if err != nil {
		return nil, err
	}
	return members(ctx, s.db.R, o.ID)
}

// Summary counts the selected organization's members and workspaces.
func (s *Service) Summary(ctx context.Context, u *actor.User, sel Selector) (*Summary, error) {
	o, err := s.organization(ctx, s.db.R, u, sel)
	if err != nil {
		return nil, err
	}
	ms, err := members(ctx, s.db.R, o.ID)
	if err != nil {
		return nil, err
	}
	n, err := countWorkspaces(ctx, s.db.R, o.ID)
	if err != nil {
		return nil, err
	}
	sum := &Summary{ID: o.ID, Name: o.Name, Role: o.Role, MemberCount: len(ms), WorkspaceCount: n,
		MembersByRole: map[string]int{RoleOwner: 0, RoleAdmin: 0, RoleMember: 0}}
	for _, m := range ms {
		sum.MembersByRole[m.Role]++
	}
	return sum, nil
}

// Workspaces lists the caller's joined workspaces, marking the one used by
// default.
func (s *Service) Workspaces(ctx context.Context, u *actor.User) ([]Workspace, error) {
	all, err := joinedWorkspaces(ctx, s.db.R, u.ID)
	if err != nil {
		return nil, err
	}
	// The same choice ResolveWorkspace makes: the default workspace if still
	// joined, else the earliest joined one.
	def := ""
	for _, w := range all {
		if w.ID == u.DefaultWorkspaceID {
			def = w.ID
		}
	}
	if def == "" && len(all) > 0 {
		def = all[0].ID
	}
	for i := range all {
		all[i].IsDefault = all[i].ID == def
	}
	return all, nil
}

// CreateWorkspace creates a workspace in an organization where the caller is
// owner or admin (the given one, else the selected one); the caller joins it
// as workspace admin.
func (s *Service) CreateWorkspace(ctx context.Context, u *actor.User, sel Selector, orgID, name string) (*Workspace, error) {
	name, err := cleanName("name", name)
	if err != nil {
		return nil, err
	}
	if orgID != "" {
		sel = Selector{OrganizationID: orgID}
	}
	var out *Workspace
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		o, err := s.organization(ctx, tx, u, sel)
		if err != nil {
			return err
		}
		if o.Role != RoleOwner && o.Role != RoleAdmin {
			return apperr.New(apperr.CodeForbidden, "only an organization owner or admin may create workspaces")
		}
		if err := s.check(ctx, tx, o.ID, u.ID, "workspaces.max"); err != nil {
			return err
		}
		now := s.clock.Now()
		w := &Workspace{ID: ids.New(), Name: name, OrganizationID: o.ID, OrganizationName: o.Name, Role: RoleOwner, CreatedAt: now}
		if err := s.newWorkspace(ctx, tx, w.ID, o.ID, name, u.ID, now); err != nil {
			return err
		}
		s.changed(tx)
		out = w
		return audit.Record(ctx, tx, now, u.ID, "workspace.create", "workspace", w.ID, nil, w)
	})
	return out, err
}

// DeleteWorkspace deletes a workspace: its organization's owner or admin
// may. A workspace the caller can see neither as a member nor through its
// organization is not_found, exactly like an unknown id.
func (s *Service) DeleteWorkspace(ctx context.Context, u *actor.User, id string) error {
	if !ids.Valid(id) {
		return apperr.NotFound("workspace")
	}
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		w, orgRole, err := workspaceVisible(ctx, tx, id, u.ID)
		if err != nil {
			return err
		}
		if orgRole != RoleOwner && orgRole != RoleAdmin {
			return apperr.New(apperr.CodeForbidden, "only the organization's owner or admin may delete a workspace")
		}
		if err := deleteWorkspace(ctx, tx, id); err != nil {
			return err
		}
		s.changed(tx)
		return audit.Record(ctx, tx, s.clock.Now(), u.ID, "workspace.delete", "workspace", id, w, nil)
	})
}

// OnlyAdmins reports whether everyone who can change what a workspace runs
// (its members and its organization's) is an instance admin: where the
// server cannot contain tenant code, it runs only such workspaces' code.
func (s *Service) OnlyAdmins(ctx context.Context, workspaceID string) (bool, error) {
	return onlyAdminsIn(ctx, s.db.R, workspaceID)
}

// linkBase starts the links this service mails: SERVICE_PUBLIC_URL, else
// the request's own origin when it came to a loopback address (a server
// on a developer's machine), else nothing (relative links; the server
// warns at boot).
func (s *Service) linkBase(ctx context.Context) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	return httpx.LoopbackOrigin(ctx)
}
