package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"slipway/internal/captcha"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/pubsub"
	"slipway/internal/platform/sweep"
	"slipway/internal/platform/ttlcache"
	"slipway/internal/platform/vault"

	"golang.org/x/sync/singleflight"
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
