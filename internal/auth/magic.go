package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"slipway/internal/captcha"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	tokens "slipway/internal/platform/token"
)

// Magic link sign-in. A request always answers 202 and gives the asking
// browser a signed "pending" cookie for its request (also for an address
// without an account: the answer reveals nothing). An account gets a mail
// with a single-use link and a short code. The emailed link (GET) only
// redirects to the console's confirm page, which consumes the token by
// POST (mail scanners follow GET links); or the waiting browser types the
// code. Either signs in once, like a password (2FA still applies).

// Magic link settings.
const (
	MagicTokenPrefix = "smgc_"
	MagicTTL         = 15 * time.Minute
	PendingCookie    = "service_magic"
	magicCodeDigits  = 8
)

// Pending states of a waiting browser's request.
const (
	PendingUnknown = "unknown" // no request from this browser
	PendingWaiting = "waiting"
	PendingUsed    = "used"
	PendingExpired = "expired"
)

// MagicPending is the waiting browser's view of its request (never a hash
// or a code).
type MagicPending struct {
	Status    string     `json:"status" enum:"unknown,waiting,used,expired"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// ErrBadMagic is the one answer for an unknown, used or expired link or code.
var ErrBadMagic = apperr.BadRequest("this sign-in link or code is not valid: it is unknown, already used or expired")

// pendingValue signs a request id with its expiry for the pending cookie.
func (s *Service) pendingValue(requestID string, expires time.Time) string {
	payload := requestID + "." + strconv.FormatInt(expires.Unix(), 10)
	mac := hmac.New(sha256.New, s.cfg.Secret)
	mac.Write([]byte("magic pending:" + payload))
	return payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// pendingRequest reads a pending cookie: its request id and expiry.
func (s *Service) pendingRequest(cookie string) (string, time.Time, bool) {
	parts := strings.Split(cookie, ".")
	if len(parts) != 3 {
		return "", time.Time{}, false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !hmac.Equal([]byte(s.pendingValue(parts[0], time.Unix(exp, 0))), []byte(cookie)) {
		return "", time.Time{}, false
	}
	return parts[0], time.Unix(exp, 0).UTC(), true
}

func magicCode() string {
	n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return fmt.Sprintf("%0*d", magicCodeDigits, n.Int64())
}

// RequestMagic queues a sign-in mail for an account and returns the pending
// cookie value for the asking browser (whatever the address).
func (s *Service) RequestMagic(ctx context.Context, rawEmail, ip string, solved *captcha.Envelope) (string, error) {
	if err := s.throttleMail(ctx, "magic", rawEmail, ip); err != nil {
		return "", err
	}
	if ok, err := s.captchaPasses(ctx, solved); !ok || err != nil {
		return "", err
	}
	now := s.clock.Now()
	requestID := ids.New()
	expires := now.Add(MagicTTL)
	cookie := s.pendingValue(requestID, expires)
	email, err := text.Email(rawEmail)
	if err != nil || s.mailer == nil {
		return cookie, nil
	}
	u, err := userByEmail(ctx, s.db.R, email)
	if errors.Is(err, apperr.ErrNotFound) {
		return cookie, nil
	}
	if err != nil {
		return "", err
	}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		recent, err := recentTokens(ctx, tx, u.ID, "magic", now.Add(-10*time.Second))
		if err != nil || recent > 2 {
			return err // a burst of requests sends a few mails, not a flood
		}
		tok, hash := tokens.New(MagicTokenPrefix)
		code := magicCode()
		codeHash := tokens.Hash(requestID + ":" + code)
		if err := insertToken(ctx, tx, u.ID, "magic", hash, now, expires, &requestID, &codeHash); err != nil {
			return err
		}
		return s.mailer.Queue(ctx, tx, u.Email, "magic", map[string]string{"name": u.DisplayName, "code": code,
			"link": s.linkBase(ctx) + "/api/auth/magic/consume?token=" + tok, "expires": expires.Format("15:04 MST")})
	})
	return cookie, err
}

// MagicPendingOf is the waiting browser's view of its request.
func (s *Service) MagicPendingOf(ctx context.Context, cookie string) (*MagicPending, error) {
	requestID, expires, ok := s.pendingRequest(cookie)
	if !ok {
		return &MagicPending{Status: PendingUnknown}, nil
	}
	if s.clock.Now().After(expires) {
		return &MagicPending{Status: PendingExpired}, nil
	}
	used, err := magicRequestUsed(ctx, s.db.R, requestID)
	if err != nil {
		return nil, err
	}
	if used {
		return &MagicPending{Status: PendingUsed}, nil
	}
	return &MagicPending{Status: PendingWaiting, ExpiresAt: &expires}, nil
}

// ConsumeMagic signs in with the mailed token, once.
func (s *Service) ConsumeMagic(ctx context.Context, tok, ip, userAgent string) (*LoginResult, error) {
	if !strings.HasPrefix(tok, MagicTokenPrefix) || len(tok) > 200 {
		return nil, ErrBadMagic
	}
	return s.magicSignIn(ctx, `token_hash = $1`, tokens.Hash(tok), ip, userAgent)
}

// MagicCode signs the waiting browser in with the code from the mail.
func (s *Service) MagicCode(ctx context.Context, cookie, code, ip, userAgent string) (*LoginResult, error) {
	requestID, _, ok := s.pendingRequest(cookie)
	code = strings.TrimSpace(code)
	if !ok {
		return nil, ErrBadMagic
	}
	// Five wrong codes end a request's code (the link still works): an
	// 8-digit code cannot be guessed in so few tries.
	key := "magic:" + requestID
	now := s.clock.Now()
	if until, _, err := lockedUntil(ctx, s.db.R, now, key, key); err != nil {
		return nil, err
	} else if until != nil {
		return nil, ErrBadMagic
	}
	var res *LoginResult
	var err error = ErrBadMagic
	if len(code) == magicCodeDigits {
		res, err = s.magicSignIn(ctx, `request_id = $1 AND code_hash = $3`, requestID, ip, userAgent, tokens.Hash(requestID+":"+code))
	}
	if errors.Is(err, ErrBadMagic) {
		if ferr := recordFailure(ctx, s.db.W, key, now, MagicTTL, magicCodeTries, MagicTTL); ferr != nil {
			return nil, ferr
		}
	}
	return res, err
}

// magicCodeTries is how many wrong codes a request takes.
const magicCodeTries = 5

// magicSignIn uses the magic token that cond selects (compare-and-set on
// used_at) and opens a session, or asks for the second factor.
func (s *Service) magicSignIn(ctx context.Context, cond, key, ip, userAgent string, extra ...any) (*LoginResult, error) {
	now := s.clock.Now()
	var out *LoginResult
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		userID, err := useMagicToken(ctx, tx, cond, append([]any{key, now}, extra...))
		if err != nil {
			return err
		}
		u, err := userByID(ctx, tx, userID)
		if err != nil {
			return err
		}
		// Following the link proves the address.
		if err := setEmailVerified(ctx, tx, userID); err != nil {
			return err
		}
		u.EmailVerified = true
		if u.TOTPArmed {
			out = &LoginResult{TOTPRequired: true, Interim: s.interimToken(userID, now)}
			return nil
		}
		sess, err := s.openSession(ctx, tx, userID, ip, userAgent, now)
		if err != nil {
			return err
		}
		out = &LoginResult{Profile: u.profile(), Session: sess}
		return nil
	})
	return out, err
}

// openSession inserts a new session for the user inside tx.
func (s *Service) openSession(ctx context.Context, tx *db.Tx, userID, ip, userAgent string, now time.Time) (Session, error) {
	sess := Session{ID: ids.New(), Token: newSessionToken(), ExpiresAt: now.Add(s.cfg.SessionTTL)}
	sess.CSRF = csrfToken(s.cfg.Secret, sess.ID)
	return sess, insertSession(ctx, tx, sess.ID, userID, tokens.Hash(sess.Token), now, sess.ExpiresAt, truncate(userAgent, 512), ip)
}
