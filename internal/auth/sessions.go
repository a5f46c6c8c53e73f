package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"slipway/internal/captcha"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"

	tokens "slipway/internal/platform/token"
)

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

// RevokeSessions revokes every session of a user inside tx (offboarding);
// the user's cached sessions are dropped once it commits, on every replica.
func (s *Service) RevokeSessions(ctx context.Context, tx *db.Tx, userID string) error {
	if _, err := revokeOtherSessions(ctx, tx, userID, "", s.clock.Now()); err != nil {
		return err
	}
	tx.AfterCommit(func() { s.forgetUser(userID) })
	return nil
}

// SignedIn is one live session of an account, as its owner sees it: never
// its token or hash.
type SignedIn struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at" doc:"When it signed in"`
	ExpiresAt time.Time `json:"expires_at"`
	UserAgent string    `json:"user_agent" doc:"The browser or client that signed in, as it named itself (at most 512 bytes)"`
	IP        string    `json:"ip" doc:"The address it signed in from"`
	Current   bool      `json:"current" doc:"The session making this request"`
}

// MaxListedSessions bounds the list: an account signing in from a script
// without ever signing out would otherwise grow it until the sweeper runs.
const MaxListedSessions = 200

// Sessions lists the caller's live sessions, newest first.
func (s *Service) Sessions(ctx context.Context, u *actor.User) ([]SignedIn, error) {
	list, err := liveSessions(ctx, s.db.R, u.ID, s.clock.Now(), MaxListedSessions)
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Current = list[i].ID == u.SessionID
	}
	return list, nil
}

// SignOut revokes one of the caller's live sessions (the current one too:
// the next request with it is unauthorized). Another account's session, a
// spent one and an unknown id are all not found.
func (s *Service) SignOut(ctx context.Context, u *actor.User, id string) error {
	if !ids.Valid(id) {
		return apperr.NotFound("session")
	}
	n, err := revokeOwnSession(ctx, s.db.W, u.ID, id, s.clock.Now())
	if err != nil {
		return err
	}
	if n == 0 {
		return apperr.NotFound("session")
	}
	s.forgetSession(id)
	return nil
}
