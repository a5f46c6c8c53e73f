package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/captcha"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/sweep"
	"slipway/internal/platform/text"
	"slipway/internal/platform/ttlcache"
	"slipway/internal/platform/vault"

	"golang.org/x/sync/singleflight"
	tokens "slipway/internal/platform/token"
)

// Tenancy is what auth needs from organizations and workspaces, inside the
// caller's transaction.
type Tenancy interface {
	// ProvisionPersonal creates the user's own organization with one default
	// workspace, both owned by the user, and returns the workspace id.
	ProvisionPersonal(ctx context.Context, tx *db.Tx, userID, displayName string, now time.Time) (string, error)
	// RemovePersonal deletes the organizations whose only member is the user.
	RemovePersonal(ctx context.Context, tx *db.Tx, userID string) error
}

// Config holds the auth settings taken from the instance configuration.
type Config struct {
	InitialAdminEmails []string // lower-case
	HashParams         HashParams
	Secret             []byte // signs CSRF tokens
	CookieSecure       bool
	SessionTTL         time.Duration
	// SessionCacheTTL keeps authenticated sessions in memory this long
	// (0 disables the cache).
	SessionCacheTTL time.Duration
	// PublicURL starts the links in account mail.
	PublicURL string
}

// Deps are what auth uses of the rest. DB, Clock, Tenancy and Log are
// required.
type Deps struct {
	DB      *db.DB
	Clock   clock.Clock
	Tenancy Tenancy
	Log     *slog.Logger
	// Bus carries cache invalidations between replicas: sign-outs,
	// password changes and approvals apply at once on every replica (nil:
	// one replica).
	Bus Bus
	// Mailer sends account mail (nil: none is sent).
	Mailer Mailer
	// Captcha guards anonymous mail requests and the sign-in throttle (nil
	// or disabled: no captcha is asked for).
	Captcha *captcha.Service
}

// DefaultSessionTTL is how long a session lasts (absolute).
const DefaultSessionTTL = 30 * 24 * time.Hour

// Lockout policy: failures within the window lock the key for lockFor.
const (
	lockWindow   = 15 * time.Minute
	lockFor      = 15 * time.Minute
	accountLimit = 5
	addressLimit = 20
	ceilingLimit = 50
	ceilingPace  = 2 * time.Second
)

// Service implements accounts, sessions and approvals.
type Service struct {
	db        *db.DB
	clock     clock.Clock
	cfg       Config
	tenancy   Tenancy
	log       *slog.Logger
	mailer    Mailer           // account mail (password reset); nil: none is sent
	sealer    *vault.Sealer    // TOTP secrets at rest
	captcha   *captcha.Service // nil or disabled: no captcha asked for
	pages     func(*http.Request) bool
	publicURL string // links in mail start with it
	// dummyHash is verified against when the email is unknown, so a wrong
	// email costs the same work as a wrong password.
	dummyHash string
	// cache keeps recently authenticated sessions (by token hash) for a
	// short time, so the hot path skips the database. Every change that
	// affects a cached answer drops it here and, through the bus, on every
	// other replica (logout, password change, approval, rejection, profile
	// edits); a gap in the bus empties it (see Run).
	cache  *ttlcache.Cache[actor.User]
	flight singleflight.Group
	// bus carries invalidations to the other replicas' caches (nil: none).
	bus Bus
}

// Bus is how replicas tell each other which sessions to forget.
type Bus interface {
	Publish(ctx context.Context, topic, payload string) error
	Subscribe(topic string) *pubsub.Subscription
}

// topicSessions carries "user <id>" and "session <id>": forget these.
const topicSessions = "sessions"

// NewService builds the auth service.
func NewService(cfg Config, d Deps) (*Service, error) {
	if len(cfg.Secret) < 32 {
		return nil, errors.New("auth: the signing secret must be at least 32 bytes")
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.HashParams == (HashParams{}) {
		cfg.HashParams = DefaultHashParams
	}
	sealer, err := vault.NewSealer(cfg.Secret)
	if err != nil {
		return nil, err
	}
	return &Service{db: d.DB, clock: d.Clock, cfg: cfg, tenancy: d.Tenancy, log: d.Log, dummyHash: dummyHash(cfg.HashParams), sealer: sealer,
		cache: ttlcache.New[actor.User](cfg.SessionCacheTTL, 10000), bus: d.Bus, mailer: d.Mailer, captcha: d.Captcha,
		publicURL: strings.TrimRight(cfg.PublicURL, "/")}, nil
}

// HasAdmin reports whether an approved instance admin exists.
func (s *Service) HasAdmin(ctx context.Context) (bool, error) { return hasAdmin(ctx, s.db.R) }

// forgetUser drops a user's cached sessions here and on every replica.
func (s *Service) forgetUser(userID string) {
	s.cache.Drop(func(u *actor.User) bool { return u.ID == userID })
	s.announce("user " + userID)
}

// forgetSession drops one cached session here and on every replica.
func (s *Service) forgetSession(sessionID string) {
	s.cache.Drop(func(u *actor.User) bool { return u.SessionID == sessionID })
	s.announce("session " + sessionID)
}

func (s *Service) announce(what string) {
	// Sent even when this replica caches nothing: the others may.
	if s.bus == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.bus.Publish(ctx, topicSessions, what); err != nil {
		// The other replicas' entries expire within the cache's TTL anyway.
		s.log.Error("telling the other replicas to forget a session failed", "err", err)
	}
}

// pruneAfter is how long a sign-in record is kept once it can no longer
// matter (an expired or revoked session, a finished failure window, an
// expired mailed token), and pruneEvery how often the pass runs.
const (
	pruneAfter = 24 * time.Hour
	pruneEvery = time.Hour
)

// Prune deletes the sign-in records that stopped mattering more than a day
// ago, so the tables hold live state and not every sign-in ever made. It
// returns how many rows went; replicas may run it at the same time.
func (s *Service) Prune(ctx context.Context) (int, error) {
	var n int
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		var err error
		n, err = pruneExpired(ctx, tx, s.clock.Now().Add(-pruneAfter))
		return err
	})
	return n, err
}

// Run prunes expired sign-in records every hour and applies the other
// replicas' invalidations to this one's cache until ctx ends. A gap in
// them (a dropped connection) empties the cache.
func (s *Service) Run(ctx context.Context) {
	go sweep.Every(ctx, pruneEvery, s.log, "expired sign-in records deleted", s.Prune)
	if s.bus == nil || s.cache == nil {
		return
	}
	sub := s.bus.Subscribe(topicSessions)
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-sub.C:
			what, id, _ := strings.Cut(m.Payload, " ")
			switch {
			case m.Reset:
				s.cache.Clear()
			case what == "user":
				s.cache.Drop(func(u *actor.User) bool { return u.ID == id })
			case what == "session":
				s.cache.Drop(func(u *actor.User) bool { return u.SessionID == id })
			}
		}
	}
}

// CookieSecure reports whether cookies carry the Secure flag.
func (s *Service) CookieSecure() bool { return s.cfg.CookieSecure }

// NormalizeEmail validates an address and returns its lower-case form.
func NormalizeEmail(raw string) (string, error) { return text.Email(raw) }

func cleanDisplayName(raw string) (string, error) { return text.Name("display_name", raw, 100) }

// RegisterInput is a signup.
type RegisterInput struct {
	Email       string
	Password    string
	DisplayName string
}

// Register creates an account unless the email exists. To not reveal which
// emails have accounts, both cases do the same hashing work and return the
// same result; an existing account is left untouched.
func (s *Service) Register(ctx context.Context, in RegisterInput) error {
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return err
	}
	name, err := cleanDisplayName(in.DisplayName)
	if err != nil {
		return err
	}
	if err := CheckPassword(in.Password, email); err != nil {
		return err
	}
	hash, err := HashPassword(in.Password, s.cfg.HashParams)
	if err != nil {
		return err
	}
	initial := slices.Contains(s.cfg.InitialAdminEmails, email)
	_, err = s.createUser(ctx, email, name, hash, initial, initial)
	if errors.Is(err, apperr.ErrConflict) {
		s.log.Info("registration for an existing email ignored")
		return nil
	}
	return err
}

// createUser inserts a user with their personal organization and workspace
// in one transaction. It returns apperr conflict if the email exists.
func (s *Service) createUser(ctx context.Context, email, name, hash string, approved, admin bool) (*user, error) {
	now := s.clock.Now()
	u := &user{ID: ids.New(), Email: email, DisplayName: name, PasswordHash: &hash, Approved: approved, Admin: admin,
		CreatedAt: now, UpdatedAt: now}
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		if _, err := userByEmail(ctx, tx, email); err == nil {
			return apperr.New(apperr.CodeConflict, "an account with this email exists")
		} else if !errors.Is(err, apperr.ErrNotFound) {
			return err
		}
		if err := insertUser(ctx, tx, u); err != nil {
			if s.db.Dialect.IsUniqueViolation(err) {
				return apperr.New(apperr.CodeConflict, "an account with this email exists")
			}
			return err
		}
		wsID, err := s.tenancy.ProvisionPersonal(ctx, tx, u.ID, name, now)
		if err != nil {
			return err
		}
		u.DefaultWorkspaceID = &wsID
		return setDefaultWorkspace(ctx, tx, u.ID, wsID)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// CreateUser bootstraps an approved account offline (slipway users create).
func (s *Service) CreateUser(ctx context.Context, in RegisterInput, admin bool) (Profile, error) {
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return Profile{}, err
	}
	if in.DisplayName == "" {
		in.DisplayName = email[:strings.IndexByte(email, '@')]
	}
	name, err := cleanDisplayName(in.DisplayName)
	if err != nil {
		return Profile{}, err
	}
	if err := CheckPassword(in.Password, email); err != nil {
		return Profile{}, err
	}
	hash, err := HashPassword(in.Password, s.cfg.HashParams)
	if err != nil {
		return Profile{}, err
	}
	u, err := s.createUser(ctx, email, name, hash, true, admin)
	if err != nil {
		return Profile{}, err
	}
	return u.profile(), nil
}

// ErrInvalidCredentials is the one answer to a wrong email or password.
var ErrInvalidCredentials = apperr.New(apperr.CodeUnauthorized, "invalid email or password")

// ErrLocked answers while a lock is in force; ErrLockedCaptcha while only
// the account's lock from this client holds and a solved captcha would lift
// it.
var (
	ErrLocked        = apperr.New(apperr.CodeRateLimited, "too many failed sign-in attempts; try again later")
	ErrLockedCaptcha = apperr.New(apperr.CodeRateLimited, "too many failed sign-in attempts; try again later, or now with a solved captcha")
)

// Throttle keys, each counted before an attempt is evaluated (so parallel
// guesses get no more evaluations than sequential ones):
//   - an account from one client: 5 attempts per 15 minutes, then a lock
//     that a solved captcha lifts (failures elsewhere never keep the owner
//     out);
//   - a client across every account (a password spray): 20, then a lock;
//   - an account across every client (a distributed guess): past 50, one
//     attempt per 2 seconds, or any number with a solved captcha; never a
//     lock its owner cannot pass.
func accountKey(email, ip string) string { return "account:" + email + "|client:" + ip }
func addressKey(ip string) string        { return "address:" + ip }
func ceilingKey(email string) string     { return "ceiling:" + email }

var (
	accountPolicy = limit{max: accountLimit, window: lockWindow, lockFor: lockFor}
	addressPolicy = limit{max: addressLimit, window: lockWindow, lockFor: lockFor}
	ceilingPolicy = limit{max: ceilingLimit, window: lockWindow, lockFor: ceilingPace, pace: true}
)

// errRefused rolls back a reservation that a key refused.
var errRefused = errors.New("auth: attempt refused")

// throttleKey is one key an attempt counts against.
type throttleKey struct {
	name string
	l    limit
}

// attempt is a sign-in step counted against its keys before it is
// evaluated.
type attempt struct {
	email, ip string
	keys      []throttleKey // what it was counted against
}

// reserve counts an attempt against every key, all or none: nil, or the
// key that refused it and when that key frees up.
func (s *Service) reserve(ctx context.Context, now time.Time, keys []throttleKey) (*throttleKey, time.Time, error) {
	var refused *throttleKey
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		for _, k := range keys {
			ok, err := reserveAttempt(ctx, tx, k.name, now, k.l)
			if err != nil {
				return err
			}
			if !ok {
				refused = &k
				return errRefused
			}
		}
		return nil
	})
	if refused == nil {
		return nil, time.Time{}, err
	}
	until, err := lockEnd(ctx, s.db.R, refused.name)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !until.After(now) {
		until = now.Add(refused.l.lockFor) // the window is full; it ends sooner or later
	}
	return refused, until, nil
}

// beginAttempt counts a sign-in step of email from ip against every key
// before it is evaluated, all or none: nil, or ErrLocked or
// ErrLockedCaptcha with the time the refusing key frees up. The client's
// key holds; the account's keys yield to a solved captcha, spent here.
func (s *Service) beginAttempt(ctx context.Context, now time.Time, email, ip string, solved *captcha.Envelope) (*attempt, time.Time, error) {
	client := throttleKey{addressKey(ip), addressPolicy}
	a := &attempt{email: email, ip: ip, keys: []throttleKey{client, {accountKey(email, ip), accountPolicy}, {ceilingKey(email), ceilingPolicy}}}
	for {
		refused, until, err := s.reserve(ctx, now, a.keys)
		if err != nil {
			return nil, time.Time{}, err
		}
		if refused == nil {
			return a, time.Time{}, nil
		}
		switch {
		case refused.name == client.name, !s.captcha.Enabled():
			return nil, until, ErrLocked
		case solved != nil && len(a.keys) > 1:
			ok, err := s.captcha.Spend(ctx, *solved)
			if err != nil {
				return nil, time.Time{}, err
			}
			if ok {
				a.keys = a.keys[:1] // this attempt counts for the client only
				continue
			}
		}
		return nil, until, ErrLockedCaptcha
	}
}

// refund takes the attempt back from every key it was counted against: it
// was right (a lock it set goes too).
func (a *attempt) refund(ctx context.Context, tx *db.Tx) error {
	for _, k := range a.keys {
		if err := refundAttempt(ctx, tx, k.name, k.l); err != nil {
			return err
		}
	}
	return nil
}

// succeeded ends a sign-in that passed: the account's failures from this
// client are forgotten, and the attempt is taken back from the other keys.
func (a *attempt) succeeded(ctx context.Context, tx *db.Tx) error {
	if err := a.refund(ctx, tx); err != nil {
		return err
	}
	return clearFailures(ctx, tx, accountKey(a.email, a.ip))
}

// LoginInput is a password sign-in.
type LoginInput struct {
	Email     string
	Password  string
	IP        string
	UserAgent string
	Captcha   *captcha.Envelope // lifts this account's throttle for this client, once
}

// Login checks a password and opens a session. Unknown email and wrong
// password give the same error after the same hashing work; repeated
// failures for the account from one client, or from one client across
// accounts, throttle further attempts from that client (same for existing
// and unknown emails). Failures from elsewhere never lock the owner out.
func (s *Service) Login(ctx context.Context, in LoginInput) (*LoginResult, time.Time, error) {
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" || in.Password == "" {
		return nil, time.Time{}, apperr.BadRequest("email and password are required")
	}
	if len(email) > 254 || len(in.Password) > MaxPasswordBytes {
		return nil, time.Time{}, ErrInvalidCredentials
	}
	now := s.clock.Now()
	att, until, err := s.beginAttempt(ctx, now, email, in.IP, in.Captcha)
	if err != nil {
		return nil, until, err
	}

	u, err := userByEmail(ctx, s.db.R, email)
	if err != nil && !errors.Is(err, apperr.ErrNotFound) {
		return nil, time.Time{}, err
	}
	hash := s.dummyHash
	if u != nil && u.PasswordHash != nil {
		hash = *u.PasswordHash
	}
	ok, err := VerifyPassword(in.Password, hash)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !ok || u == nil || u.PasswordHash == nil {
		return nil, time.Time{}, ErrInvalidCredentials // counted already
	}

	if u.TOTPArmed {
		// The second factor decides: the right password is taken back; the
		// account's earlier failures stay counted until the second step
		// passes (which counts its own attempts).
		if err := s.db.Tx(ctx, func(tx *db.Tx) error { return att.refund(ctx, tx) }); err != nil {
			return nil, time.Time{}, err
		}
		return &LoginResult{TOTPRequired: true, Interim: s.interimToken(u.ID, now)}, time.Time{}, nil
	}

	var sess Session
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := att.succeeded(ctx, tx); err != nil {
			return err
		}
		sess, err = s.openSession(ctx, tx, u.ID, in.IP, in.UserAgent, now)
		return err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return &LoginResult{Profile: u.profile(), Session: sess}, time.Time{}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Authenticate resolves a session token to its user; an unknown, expired or
// revoked token is apperr unauthorized.
func (s *Service) Authenticate(ctx context.Context, token string) (*actor.User, error) {
	h := tokens.Hash(token)
	now := s.clock.Now()
	if s.cache == nil {
		return s.lookup(ctx, h, now)
	}
	if u, ok := s.cache.Get(h, now); ok {
		return &u, nil
	}
	// One lookup per session at a time: when a busy session's entry
	// expires, the requests that miss it together share one database read
	// instead of all going to the database at once (which, on PostgreSQL
	// under load, made a pause every TTL).
	v, err, _ := s.flight.Do(h, func() (any, error) {
		if u, ok := s.cache.Get(h, now); ok {
			return &u, nil // stored by the flight we queued behind
		}
		// Not the first caller's context: the others wait on this read too.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return s.lookup(lctx, h, now)
	})
	if err != nil {
		return nil, err
	}
	u := *v.(*actor.User) // every caller gets its own copy
	return &u, nil
}

// lookup reads a session and its user, and caches them.
func (s *Service) lookup(ctx context.Context, h string, now time.Time) (*actor.User, error) {
	epoch := s.cache.Epoch()
	u, stored, expires, err := sessionUser(ctx, s.db, h, now)
	if err != nil {
		return nil, err
	}
	// The lookup matched on the hash already; compare again in constant time
	// so no code path compares token material any other way.
	if subtle.ConstantTimeCompare([]byte(h), []byte(stored)) != 1 {
		return nil, apperr.ErrUnauthorized
	}
	s.cache.Put(h, *u, now, expires, epoch)
	return u, nil
}

// ValidCSRF checks the CSRF header and cookie against the session.
func (s *Service) ValidCSRF(sessionID, header, cookie string) bool {
	return validCSRF(s.cfg.Secret, sessionID, header, cookie)
}

// Logout revokes the caller's session.
func (s *Service) Logout(ctx context.Context, u *actor.User) error {
	if u.SessionID == "" {
		return nil
	}
	defer s.forgetSession(u.SessionID)
	return revokeSession(ctx, s.db.W, u.SessionID, s.clock.Now())
}

// UpdateProfile changes the display name and returns the refreshed profile.
func (s *Service) UpdateProfile(ctx context.Context, u *actor.User, displayName string) (Profile, error) {
	name, err := cleanDisplayName(displayName)
	if err != nil {
		return Profile{}, err
	}
	defer s.forgetUser(u.ID)
	if err := updateDisplayName(ctx, s.db.W, u.ID, name, s.clock.Now()); err != nil {
		return Profile{}, err
	}
	return s.Profile(ctx, u.ID)
}

// SetVerbosity sets (or, with nil, clears) the default live-feed verbosity.
func (s *Service) SetVerbosity(ctx context.Context, u *actor.User, v *string) (Profile, error) {
	if v != nil && !slices.Contains(Verbosities, *v) {
		return Profile{}, apperr.BadRequest("verbosity must be one of %s, or null to clear it", strings.Join(Verbosities, ", "))
	}
	defer s.forgetUser(u.ID)
	if err := updateVerbosity(ctx, s.db.W, u.ID, v, s.clock.Now()); err != nil {
		return Profile{}, err
	}
	return s.Profile(ctx, u.ID)
}

// Profile reads a user's current profile.
func (s *Service) Profile(ctx context.Context, userID string) (Profile, error) {
	u, err := userByID(ctx, s.db.R, userID)
	if err != nil {
		return Profile{}, err
	}
	return u.profile(), nil
}

// ErrWrongPassword answers a password change with a wrong current password.
var ErrWrongPassword = apperr.New(apperr.CodeForbidden, "current password is incorrect")

// ChangePassword replaces the password after checking the current one, and
// revokes every other session of the user. A wrong current password counts
// toward the account lockout like a failed sign-in.
func (s *Service) ChangePassword(ctx context.Context, u *actor.User, current, next, ip string) error {
	if err := CheckPassword(next, u.Email); err != nil {
		return err
	}
	now := s.clock.Now()
	keys := []string{accountKey(u.Email, ip), addressKey(ip)}
	// No captcha input here: a lock holds until it ends.
	if account, client, err := lockedUntil(ctx, s.db.R, now, keys[0], keys[1]); err != nil {
		return err
	} else if account != nil || client != nil {
		return ErrLocked
	}
	row, err := userByID(ctx, s.db.R, u.ID)
	if err != nil {
		return err
	}
	if row.PasswordHash == nil {
		return apperr.BadRequest("this account has no password (it signs in through an identity provider)")
	}
	ok, err := VerifyPassword(current, *row.PasswordHash)
	if err != nil {
		return err
	}
	if !ok {
		if err := recordFailure(ctx, s.db.W, keys[0], now, lockWindow, accountLimit, lockFor); err != nil {
			return err
		}
		return ErrWrongPassword
	}
	hash, err := HashPassword(next, s.cfg.HashParams)
	if err != nil {
		return err
	}
	defer s.forgetUser(u.ID)
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := updatePasswordHash(ctx, tx, u.ID, hash, now); err != nil {
			return err
		}
		_, err := revokeOtherSessions(ctx, tx, u.ID, u.SessionID, now)
		return err
	})
}

// RevokeSessions revokes every session of a user inside tx (offboarding);
// the user's cached sessions are dropped once it commits, on every replica.
func (s *Service) RevokeSessions(ctx context.Context, tx *db.Tx, userID string) error {
	if _, err := revokeOtherSessions(ctx, tx, userID, "", s.clock.Now()); err != nil {
		return err
	}
	tx.AfterCommit(func() { s.forgetUser(userID) })
	return nil
}

// ListUsers pages through accounts, oldest first.
func (s *Service) ListUsers(ctx context.Context, pendingOnly bool, limit, offset int) ([]Profile, int, error) {
	rows, total, err := listUsers(ctx, s.db.R, pendingOnly, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Profile, 0, len(rows))
	for _, u := range rows {
		out = append(out, u.profile())
	}
	return out, total, nil
}

// Approve sets approved=true; repeating it is harmless. An actual change
// writes an audit entry.
func (s *Service) Approve(ctx context.Context, admin *actor.User, userID string) (Profile, error) {
	defer s.forgetUser(userID)
	var p Profile
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		u, err := userByID(ctx, tx, userID)
		if err != nil {
			return err
		}
		before := u.profile()
		if u.Approved {
			p = before
			return nil
		}
		now := s.clock.Now()
		if err := approveUser(ctx, tx, userID, now); err != nil {
			return err
		}
		u.Approved = true
		p = u.profile()
		return audit.Record(ctx, tx, now, admin.ID, "user.approve", "user", userID, before, p)
	})
	return p, err
}

// ErrApprovedCannotBeRejected refuses rejecting an approved account.
var ErrApprovedCannotBeRejected = apperr.New(apperr.CodeConflict, "an approved account cannot be rejected")

// Reject hard-deletes an unapproved profile, with its sessions and its
// personal organization, and writes an audit entry. An approved account is
// refused.
func (s *Service) Reject(ctx context.Context, admin *actor.User, userID string) error {
	defer s.forgetUser(userID)
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		u, err := userByID(ctx, tx, userID)
		if err != nil {
			return err
		}
		if u.Approved {
			return ErrApprovedCannotBeRejected
		}
		if err := s.tenancy.RemovePersonal(ctx, tx, userID); err != nil {
			return err
		}
		if err := deleteUser(ctx, tx, userID); err != nil {
			return err
		}
		return audit.Record(ctx, tx, s.clock.Now(), admin.ID, "user.reject", "user", userID, u.profile(), nil)
	})
}
