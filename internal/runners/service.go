package runners

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"slipway/internal/audit"
	"slipway/internal/billing"
	"slipway/internal/dispatch"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/jobs"
	"slipway/internal/platform/text"
	tokens "slipway/internal/platform/token"
	"slipway/internal/runnerapi"
)

// Config is what the runners service needs from the instance.
type Config struct {
	// Secret is the hub's signing secret (runner JWTs use a key derived
	// from it).
	Secret []byte
	// Stale is SERVICE_RUNNER_STALE_SECS: a runner without a heartbeat for
	// this long is offline.
	Stale time.Duration
	// JWTLifetime is how long a runner JWT lasts (refreshed at about half).
	JWTLifetime time.Duration
	// HubMode is SERVICE_HUB_MODE; FleetOnly SERVICE_AGENT_EXECUTION=fleet_only.
	HubMode   bool
	FleetOnly bool
	// Lease is how long a worker holds work without renewing it.
	Lease time.Duration
}

// Orgs resolves the organization a request acts on and the caller's role.
type Orgs interface {
	Resolve(ctx context.Context, u *actor.User, sel Selector) (orgID, role string, err error)
}

// Selector carries the request's choice of organization (X-Organization-Id,
// else the active workspace's).
type Selector struct {
	OrganizationID string
	WorkspaceID    string
}

// Queue is what the service needs of the job queue: taking back a gone
// runner's work and re-routing fleet work nobody can take.
type Queue interface {
	Expire(ctx context.Context, owner string) (int64, error)
	Waiting(ctx context.Context, pool string, limit int) ([]*jobs.Job, error)
	Repool(ctx context.Context, ids []string, pool string) (int, error)
}

// Bus announces, with a transaction's commit, that a runner's grant or
// status changed (every replica's waiting long polls look again).
type Bus interface {
	PublishTx(ctx context.Context, tx *db.Tx, topic, payload string) error
}

// Service holds the rules of runners.
type Service struct {
	bus    Bus
	db     *db.DB
	clock  clock.Clock
	cfg    Config
	signer signer
	orgs   Orgs
	queue  Queue
	log    *slog.Logger
	quota  Quota // the plan's runners.max; nil: no limit
}

// Quota decides a plan's limit inside the transaction that adds to it
// (billing): quota_exceeded when adding would pass it.
type Quota interface {
	Check(ctx context.Context, tx *db.Tx, subj billing.Subject, feature string, adding int64) error
}

// checkQuota holds a new runner of the organization to its plan.
func (s *Service) checkQuota(ctx context.Context, tx *db.Tx, orgID, userID string) error {
	if s.quota == nil {
		return nil
	}
	return s.quota.Check(ctx, tx, billing.Subject{OrganizationID: orgID, UserID: userID}, "runners.max", 1)
}

// NewService returns the runners service.
func NewService(d *db.DB, clk clock.Clock, cfg Config, orgs Orgs, q Queue, bus Bus, log *slog.Logger, quota Quota) *Service {
	if cfg.Stale <= 0 {
		cfg.Stale = 90 * time.Second
	}
	if cfg.JWTLifetime <= 0 {
		cfg.JWTLifetime = time.Hour
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	return &Service{db: d, clock: clk, cfg: cfg, signer: newSigner(cfg.Secret), orgs: orgs, queue: q, bus: bus, log: log, quota: quota}
}

// fresh reports whether a runner's heartbeat is within the stale window.
func (s *Service) fresh(r *row, now time.Time) bool {
	return r.Online && r.LastHeartbeat != nil && !r.LastHeartbeat.Before(now.Add(-s.cfg.Stale))
}

func (s *Service) view(r *row, now time.Time) *Runner {
	online := s.fresh(r, now)
	v := &Runner{ID: r.ID, OrganizationID: r.OrganizationID, Name: r.Name, Class: r.Class, Online: online, Draining: r.Draining,
		Disabled: r.Disabled, Eligible: online && !r.Draining && !r.Disabled && r.Unhealthy == "", Healthy: r.Unhealthy == "",
		HealthError: r.Unhealthy, Labels: nonNil(r.Labels), AllowedWorkspaceIDs: nonNil(r.AllowedWS),
		AllowedLabels: nonNil(r.AllowedLabels), Slots: r.Slots, Running: r.Running, LastHeartbeatAt: r.LastHeartbeat, Version: r.Version,
		Backend: r.Backend, Hostname: r.Hostname, CreatedAt: r.CreatedAt}
	switch {
	case r.Disabled:
		v.Status = StatusDisabled
	case r.Draining:
		v.Status = StatusDraining
	case online:
		v.Status = StatusOnline
	default:
		v.Status = StatusOffline
	}
	if !online {
		v.Running = 0
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// effectiveLabels are the labels a runner serves: those it advertises,
// narrowed to its grant's when the grant names any.
func effectiveLabels(r *row) []string {
	if len(r.AllowedLabels) == 0 {
		return r.Labels
	}
	var out []string
	for _, l := range r.Labels {
		if slices.Contains(r.AllowedLabels, l) {
			out = append(out, l)
		}
	}
	return out
}

// admits reports whether a runner may take work of the workspace that
// requires the labels.
func admits(r *row, workspaceID string, labels []string) bool {
	if len(r.AllowedWS) > 0 && !slices.Contains(r.AllowedWS, workspaceID) {
		return false
	}
	eff := effectiveLabels(r)
	for _, l := range labels {
		if !slices.Contains(eff, l) {
			return false
		}
	}
	return true
}

// --- organization side ---------------------------------------------------

// ErrNotAdmin refuses runner changes to members who are not owner or admin.
var ErrNotAdmin = apperr.New(apperr.CodeForbidden, "only an organization owner or admin may manage runners")

func (s *Service) org(ctx context.Context, u *actor.User, sel Selector, admin bool) (string, error) {
	orgID, role, err := s.orgs.Resolve(ctx, u, sel)
	if err != nil {
		return "", err
	}
	if admin && role != "owner" && role != "admin" {
		return "", ErrNotAdmin
	}
	return orgID, nil
}

// List lists the organization's runners with their live signals (any
// member).
func (s *Service) List(ctx context.Context, u *actor.User, sel Selector) ([]*Runner, error) {
	_, out, err := s.list(ctx, u, sel)
	return out, err
}

func (s *Service) list(ctx context.Context, u *actor.User, sel Selector) (orgID string, out []*Runner, err error) {
	if orgID, err = s.org(ctx, u, sel, false); err != nil {
		return "", nil, err
	}
	rows, err := listRunners(ctx, s.db.R, orgID)
	if err != nil {
		return "", nil, err
	}
	now := s.clock.Now()
	out = make([]*Runner, len(rows))
	for i, r := range rows {
		out[i] = s.view(r, now)
	}
	return orgID, out, nil
}

// grant validates a grant: workspaces of the organization, clean labels.
func grant(ctx context.Context, q db.Queryer, orgID string, wsIDs, labels []string) ([]string, []string, error) {
	var ws []string
	for _, id := range wsIDs {
		if !ids.Valid(id) {
			return nil, nil, apperr.BadRequest("allowed_workspace_ids: %q is not a workspace id", id)
		}
		if slices.Contains(ws, id) {
			continue
		}
		var n int
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM workspaces WHERE id = $1 AND organization_id = $2", id, orgID).Scan(&n); err != nil {
			return nil, nil, fmt.Errorf("runners: workspace %s: %w", id, err)
		}
		if n == 0 {
			return nil, nil, apperr.BadRequest("allowed_workspace_ids: %s is not a workspace of this organization", id)
		}
		ws = append(ws, id)
	}
	ls, err := text.Labels("allowed_labels", labels)
	if err != nil {
		return nil, nil, err
	}
	return ws, ls, nil
}

func cleanName(raw string) (string, error) { return text.Name("name", raw, 100) }

// Create creates a runner with a static token, shown once (owner or admin).
func (s *Service) Create(ctx context.Context, u *actor.User, sel Selector, in RunnerCreate) (*CreatedRunner, error) {
	name, err := cleanName(in.Name)
	if err != nil {
		return nil, err
	}
	var out *CreatedRunner
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		orgID, err := s.org(ctx, u, sel, true)
		if err != nil {
			return err
		}
		ws, ls, err := grant(ctx, tx, orgID, in.AllowedWorkspaceIDs, in.AllowedLabels)
		if err != nil {
			return err
		}
		if err := s.checkQuota(ctx, tx, orgID, u.ID); err != nil {
			return err
		}
		now := s.clock.Now()
		r := &row{ID: ids.New(), OrganizationID: orgID, Name: name, Class: ClassStatic, TokenGen: 1, AllowedWS: ws, AllowedLabels: ls, CreatedAt: now}
		secret, hash := tokens.New(runnerapi.StaticPrefix)
		if err := insertRunner(ctx, tx, r, &hash, &u.ID); err != nil {
			return err
		}
		v := s.view(r, now)
		out = &CreatedRunner{Runner: v, Token: secret}
		return audit.Record(ctx, tx, now, u.ID, "runner.create", "runner", r.ID, nil, v)
	})
	return out, err
}

// defaultEnrollmentLifetime is how long an enrollment token lasts by default.
const defaultEnrollmentLifetime = time.Hour

// MintEnrollment mints a single-use enrollment token (owner or admin).
func (s *Service) MintEnrollment(ctx context.Context, u *actor.User, sel Selector, in EnrollmentCreate) (*Enrollment, error) {
	name := ""
	if in.Name != "" {
		var err error
		if name, err = cleanName(in.Name); err != nil {
			return nil, err
		}
	}
	var out *Enrollment
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		orgID, err := s.org(ctx, u, sel, true)
		if err != nil {
			return err
		}
		ws, ls, err := grant(ctx, tx, orgID, in.AllowedWorkspaceIDs, in.AllowedLabels)
		if err != nil {
			return err
		}
		life := defaultEnrollmentLifetime
		if in.ExpiresInSecs > 0 {
			life = time.Duration(in.ExpiresInSecs) * time.Second
		}
		now := s.clock.Now()
		e := &enrollmentRow{ID: ids.New(), OrganizationID: orgID, Name: name, AllowedWS: ws, AllowedLabels: ls, ExpiresAt: now.Add(life)}
		out, err = s.mint(ctx, tx, e, u.ID, now)
		if err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "runner.enrollment_token", "organization", orgID, nil,
			map[string]any{"id": e.ID, "name": name, "expires_at": e.ExpiresAt})
	})
	return out, err
}

func (s *Service) mint(ctx context.Context, tx *db.Tx, e *enrollmentRow, userID string, now time.Time) (*Enrollment, error) {
	secret, hash := tokens.New(runnerapi.EnrollmentPrefix)
	if err := insertEnrollment(ctx, tx, e, hash, &userID, now); err != nil {
		return nil, err
	}
	return &Enrollment{ID: e.ID, Token: secret, RunnerID: e.RunnerID, ExpiresAt: e.ExpiresAt}, nil
}

// withRunner runs fn on a runner of the caller's organization in a
// transaction (owner or admin); another organization's runner is not
// found, like an unknown one.
func (s *Service) withRunner(ctx context.Context, u *actor.User, sel Selector, id string, fn func(tx *db.Tx, r *row, now time.Time) error) error {
	if !ids.Valid(id) {
		return apperr.NotFound("runner")
	}
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		orgID, err := s.org(ctx, u, sel, true)
		if err != nil {
			return err
		}
		r, err := getRunner(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		return fn(tx, r, s.clock.Now())
	})
}

// update runs fn on a runner (withRunner), audits the change and returns
// the refreshed runner.
func (s *Service) update(ctx context.Context, u *actor.User, sel Selector, id, action string, fn func(tx *db.Tx, r *row, now time.Time) error) (*Runner, error) {
	var out *Runner
	err := s.withRunner(ctx, u, sel, id, func(tx *db.Tx, r *row, now time.Time) error {
		before := s.view(r, now)
		if err := fn(tx, r, now); err != nil {
			return err
		}
		after, err := getRunner(ctx, tx, r.OrganizationID, id)
		if err != nil {
			return err
		}
		out = s.view(after, now)
		if err := s.bus.PublishTx(ctx, tx, dispatch.TopicRematch, id); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, action, "runner", id, before, out)
	})
	return out, err
}

// Patch renames or re-scopes a runner; a class change is refused.
func (s *Service) Patch(ctx context.Context, u *actor.User, sel Selector, id string, in RunnerPatch) (*Runner, error) {
	return s.update(ctx, u, sel, id, "runner.update", func(tx *db.Tx, r *row, now time.Time) error {
		if in.Class != nil && *in.Class != r.Class {
			return apperr.BadRequest("class: a runner's class cannot change (this runner is %s); create a new runner instead", r.Class)
		}
		name := r.Name
		if in.Name != nil {
			var err error
			if name, err = cleanName(*in.Name); err != nil {
				return err
			}
		}
		wsIn, lsIn := r.AllowedWS, r.AllowedLabels
		if in.AllowedWorkspaceIDs != nil {
			wsIn = *in.AllowedWorkspaceIDs
		}
		if in.AllowedLabels != nil {
			lsIn = *in.AllowedLabels
		}
		ws, ls, err := grant(ctx, tx, r.OrganizationID, wsIn, lsIn)
		if err != nil {
			return err
		}
		return exec(ctx, tx, `UPDATE runners SET name = $3, allowed_workspace_ids = $4, allowed_labels = $5, updated_at = $6
			WHERE id = $1 AND organization_id = $2`, r.ID, r.OrganizationID, name, jsonList(ws), jobs.EncodeLabels(ls), now)
	})
}

// Drain lets a runner finish its running work and gives it no new work.
func (s *Service) Drain(ctx context.Context, u *actor.User, sel Selector, id string) (*Runner, error) {
	return s.update(ctx, u, sel, id, "runner.drain", func(tx *db.Tx, r *row, now time.Time) error {
		return exec(ctx, tx, "UPDATE runners SET draining = TRUE, updated_at = $3 WHERE id = $1 AND organization_id = $2", r.ID, r.OrganizationID, now)
	})
}

// SetStatus disables a runner (no new work; its running work finishes) or
// enables it again (which also ends a drain).
func (s *Service) SetStatus(ctx context.Context, u *actor.User, sel Selector, id, status string) (*Runner, error) {
	var disabled bool
	switch status {
	case "disabled":
		disabled = true
	case "enabled":
	default:
		return nil, apperr.BadRequest("status must be disabled or enabled")
	}
	return s.update(ctx, u, sel, id, "runner."+status, func(tx *db.Tx, r *row, now time.Time) error {
		if disabled {
			return exec(ctx, tx, "UPDATE runners SET disabled = TRUE, updated_at = $3 WHERE id = $1 AND organization_id = $2", r.ID, r.OrganizationID, now)
		}
		return exec(ctx, tx, "UPDATE runners SET disabled = FALSE, draining = FALSE, updated_at = $3 WHERE id = $1 AND organization_id = $2",
			r.ID, r.OrganizationID, now)
	})
}

// RotateToken replaces a runner's credential; the old one is refused at
// once. A static runner gets a new static token; an enrolled runner's JWTs
// are revoked and it gets an enrollment token that re-enrols it.
func (s *Service) RotateToken(ctx context.Context, u *actor.User, sel Selector, id string) (*RotatedToken, error) {
	var out *RotatedToken
	_, err := s.update(ctx, u, sel, id, "runner.rotate_token", func(tx *db.Tx, r *row, now time.Time) error {
		if r.Class == ClassStatic {
			secret, hash := tokens.New(runnerapi.StaticPrefix)
			out = &RotatedToken{Token: secret, Kind: "static"}
			return exec(ctx, tx, "UPDATE runners SET token_hash = $3, updated_at = $4 WHERE id = $1 AND organization_id = $2",
				r.ID, r.OrganizationID, hash, now)
		}
		if err := exec(ctx, tx, "UPDATE runners SET token_gen = token_gen + 1, updated_at = $3 WHERE id = $1 AND organization_id = $2",
			r.ID, r.OrganizationID, now); err != nil {
			return err
		}
		e := &enrollmentRow{ID: ids.New(), OrganizationID: r.OrganizationID, RunnerID: &r.ID, Name: r.Name, AllowedWS: r.AllowedWS,
			AllowedLabels: r.AllowedLabels, ExpiresAt: now.Add(defaultEnrollmentLifetime)}
		en, err := s.mint(ctx, tx, e, u.ID, now)
		if err != nil {
			return err
		}
		out = &RotatedToken{Token: en.Token, Kind: "enrollment", ExpiresAt: &en.ExpiresAt}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes a runner: its credentials stop working at once and the
// work it holds is taken back (started work fails, as for a runner that
// went offline).
func (s *Service) Delete(ctx context.Context, u *actor.User, sel Selector, id string) error {
	err := s.withRunner(ctx, u, sel, id, func(tx *db.Tx, r *row, now time.Time) error {
		if err := exec(ctx, tx, "DELETE FROM runners WHERE id = $1 AND organization_id = $2", id, r.OrganizationID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, now, u.ID, "runner.delete", "runner", id, s.view(r, now), nil)
	})
	if err != nil {
		return err
	}
	if _, err := s.queue.Expire(ctx, runnerapi.Owner(id)); err != nil {
		s.log.Error("taking back the work of a deleted runner failed; its leases run out instead", "runner_id", id, "err", err)
	}
	return nil
}

// Onboarding says how far the organization is with runners.
func (s *Service) Onboarding(ctx context.Context, u *actor.User, sel Selector) (*Onboarding, error) {
	orgID, rs, err := s.list(ctx, u, sel)
	if err != nil {
		return nil, err
	}
	o := &Onboarding{HubMode: s.cfg.HubMode, FleetOnly: s.cfg.FleetOnly, Runners: len(rs)}
	if o.PendingEnrolment, err = countPendingEnrollments(ctx, s.db.R, orgID, s.clock.Now()); err != nil {
		return nil, err
	}
	for _, v := range rs {
		if v.Online {
			o.Online++
		}
		if v.Eligible {
			o.Eligible++
		}
	}
	switch {
	case !s.cfg.HubMode:
		o.NextStep = "enable_hub_mode"
	case o.Runners == 0 && o.PendingEnrolment == 0:
		o.NextStep = "create_runner"
	case o.Online == 0:
		o.NextStep = "start_runner"
	case o.Eligible == 0:
		o.NextStep = "enable_runner"
	default:
		o.NextStep = "done"
	}
	return o, nil
}

// --- dispatch side --------------------------------------------------------

// Eligible counts the runners that could take work of the workspace that
// requires the labels, now: online, enabled, undrained, fresh, granted the
// workspace and the labels, and advertising them. q reads in the caller's
// transaction.
func (s *Service) Eligible(ctx context.Context, q db.Queryer, workspaceID string, labels []string) (int, error) {
	rows, err := candidates(ctx, q, workspaceID, s.clock.Now().Add(-s.cfg.Stale))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if admits(r, workspaceID, labels) {
			n++
		}
	}
	return n, nil
}

// Match is what a runner may claim now; nil when it may claim nothing
// (offline, disabled, draining or gone).
func (s *Service) Match(ctx context.Context, runnerID string) (*jobs.Match, error) {
	r, err := runnerByID(ctx, s.db.R, runnerID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !s.eligible(r) {
		return nil, nil
	}
	return &jobs.Match{OrganizationID: r.OrganizationID, WorkspaceIDs: r.AllowedWS, Labels: effectiveLabels(r),
		// Read again in the claim's transaction: a disable or drain that
		// committed after this read stops the claim.
		Still: func(ctx context.Context, q db.Queryer) (bool, error) {
			r, err := runnerByID(ctx, q, runnerID)
			if errors.Is(err, apperr.ErrNotFound) {
				return false, nil
			}
			return err == nil && s.eligible(r), err
		}}, nil
}

// eligible: the runner may take new work now.
func (s *Service) eligible(r *row) bool {
	return s.fresh(r, s.clock.Now()) && !r.Disabled && !r.Draining && r.Unhealthy == ""
}

// Sweep takes runners whose heartbeat is older than the stale window
// offline and ends the leases of the work they hold (the rescuer then fails
// their started work and queues the rest again); without fleet_only, fleet
// work no runner can take any more falls back to the hub. It reports how
// many runners went offline.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.clock.Now()
	rows, err := s.db.W.QueryContext(ctx, `UPDATE runners SET online = FALSE WHERE online AND last_heartbeat_at < $1 RETURNING id, name`,
		now.Add(-s.cfg.Stale))
	if err != nil {
		return 0, fmt.Errorf("runners: sweep: %w", err)
	}
	type gone struct{ id, name string }
	var offline []gone
	for rows.Next() {
		var g gone
		if err := rows.Scan(&g.id, &g.name); err != nil {
			rows.Close()
			return 0, fmt.Errorf("runners: sweep: %w", err)
		}
		offline = append(offline, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("runners: sweep: %w", err)
	}
	var errs []error
	for _, g := range offline {
		n, err := s.queue.Expire(ctx, runnerapi.Owner(g.id))
		if err != nil {
			errs = append(errs, err)
		}
		s.log.Warn("runner went offline: no heartbeat within the stale window", "runner_id", g.id, "runner", g.name,
			"stale_after", s.cfg.Stale, "work_taken_back", n)
	}
	if s.cfg.HubMode && !s.cfg.FleetOnly {
		if err := s.fallBack(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return len(offline), errors.Join(errs...)
}

// fallBack moves waiting fleet work that no runner is eligible for any more
// to the hub's own workers; labelled work stays for a runner (the server
// advertises no labels).
func (s *Service) fallBack(ctx context.Context) error {
	waiting, err := s.queue.Waiting(ctx, jobs.PoolFleet, 500)
	if err != nil || len(waiting) == 0 {
		return err
	}
	var move []string
	for _, j := range waiting {
		if len(j.Labels) > 0 {
			continue
		}
		n, err := s.Eligible(ctx, s.db.R, j.WorkspaceID, j.Labels)
		if err != nil {
			return err
		}
		if n == 0 {
			move = append(move, j.ID)
		}
	}
	if len(move) == 0 {
		return nil
	}
	n, err := s.queue.Repool(ctx, move, jobs.PoolLocal)
	if n > 0 {
		s.log.Info("no runner can take some waiting work any more; it runs on this server", "jobs", n)
	}
	return err
}

// sweepLock makes one replica sweep at a time.
const sweepLock = "runners-sweep"

// Run sweeps until ctx ends.
func (s *Service) Run(ctx context.Context) {
	every := min(max(s.cfg.Stale/9, time.Second), 10*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		unlock, ok, err := s.db.Dialect.TryLock(ctx, s.db, sweepLock)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("runner sweep: taking its lock failed", "err", err)
			}
			continue
		}
		if !ok {
			continue
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("runner sweep failed", "err", err)
		}
		unlock()
	}
}

// AdminRunner is a runner of the organization the request acts on, for
// its owners and admins (another organization's runner is not found): its
// organization and name. The marketplace offers such a runner.
func (s *Service) AdminRunner(ctx context.Context, u *actor.User, sel Selector, id string) (orgID, name string, err error) {
	if !ids.Valid(id) {
		return "", "", apperr.NotFound("runner")
	}
	if orgID, err = s.org(ctx, u, sel, true); err != nil {
		return "", "", err
	}
	r, err := getRunner(ctx, s.db.R, orgID, id)
	if err != nil {
		return "", "", err
	}
	return orgID, r.Name, nil
}

// MemberOrg is the organization the request acts on, for any of its
// members.
func (s *Service) MemberOrg(ctx context.Context, u *actor.User, sel Selector) (string, error) {
	return s.org(ctx, u, sel, false)
}
