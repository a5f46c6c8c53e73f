package auth

import (
	"context"
	"errors"
	"strings"
	"time"

	"slipway/internal/captcha"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/text"
	tokens "slipway/internal/platform/token"
)

// Account mail: password reset and address verification. A request always
// answers the same (202), whether or not the address has an account; an
// account gets a mail with a single-use link that expires (the token kept
// as a hash). Consuming a reset checks the token and the new password
// before any hashing work, sets the password and signs the account out
// everywhere; consuming a verification marks the address verified.

// Token purposes and lifetimes.
const (
	PurposeReset      = "reset"
	ResetTokenPrefix  = "srst_"
	ResetTTL          = time.Hour
	PurposeVerify     = "verify"
	VerifyTokenPrefix = "svfy_"
	VerifyTTL         = 24 * time.Hour
	// mailPause is how soon after one such mail an address gets another.
	mailPause = time.Minute
)

// Mailer queues a templated mail in a transaction (package mail).
type Mailer interface {
	Queue(ctx context.Context, tx *db.Tx, to, key string, vars map[string]string) error
}

// captchaPasses: with a captcha configured, a request must carry a good
// solution, which it spends; without one, every request passes.
func (s *Service) captchaPasses(ctx context.Context, solved *captcha.Envelope) (bool, error) {
	if !s.captcha.Enabled() {
		return true, nil
	}
	if solved == nil {
		return false, nil
	}
	return s.captcha.Spend(ctx, *solved)
}

// ErrBadResetToken is the one answer for an unknown, used or expired token.
var ErrBadResetToken = apperr.BadRequest("this reset link is not valid: it is unknown, already used or expired")

// RequestReset mails a reset link to the address if it has an account with
// a password; it answers nothing about the address. False: a captcha is
// configured and the request did not carry a good, unspent solution.
func (s *Service) RequestReset(ctx context.Context, rawEmail, ip string, solved *captcha.Envelope) (bool, error) {
	return s.requestMail(ctx, rawEmail, ip, solved, resetMail)
}

// Mail requests (reset, verification, magic link) are throttled with or
// without a captcha, on the address asked for (whether it has an account
// or not, so the answer still tells nothing) and on the asking client.
var (
	mailTargetPolicy = limit{max: 3, window: 15 * time.Minute, lockFor: 5 * time.Minute, pace: true}
	mailClientPolicy = limit{max: 10, window: 15 * time.Minute, lockFor: 15 * time.Minute}
)

// MailThrottled refuses a mail request for a while; Until says how long.
type MailThrottled struct{ Until time.Time }

func (e *MailThrottled) Error() string { return ErrMailThrottled.Error() }
func (e *MailThrottled) Unwrap() error { return ErrMailThrottled }

// ErrMailThrottled is the refusal's body.
var ErrMailThrottled = apperr.New(apperr.CodeRateLimited, "too many mail requests for this address or from this client; try again later")

// throttleMail counts a mail request against its address and its client,
// both or neither.
func (s *Service) throttleMail(ctx context.Context, purpose, email, ip string) error {
	_, until, err := s.reserve(ctx, s.clock.Now(), []throttleKey{
		{"mail:" + purpose + ":" + strings.ToLower(strings.TrimSpace(email)), mailTargetPolicy},
		{"mail-client:" + purpose + ":" + ip, mailClientPolicy}})
	if err == nil && !until.IsZero() {
		return &MailThrottled{Until: until}
	}
	return err
}

// mailedToken is a single-use link sent by mail: its purpose (also the
// template's key), token prefix, lifetime, where the link points, and which
// accounts get one.
type mailedToken struct {
	purpose, prefix, path string
	ttl                   time.Duration
	wants                 func(u *user) bool
}

var (
	resetMail = mailedToken{purpose: PurposeReset, prefix: ResetTokenPrefix, ttl: ResetTTL, path: "/reset?token=",
		wants: func(u *user) bool { return u.PasswordHash != nil }}
	verifyMail = mailedToken{purpose: PurposeVerify, prefix: VerifyTokenPrefix, ttl: VerifyTTL, path: "/api/auth/verify/consume?token=",
		wants: func(u *user) bool { return !u.EmailVerified }}
)

// requestMail queues m's mail for the address when its account wants one
// and has had none in the last minute; every other address gets the same
// answer and no mail.
func (s *Service) requestMail(ctx context.Context, rawEmail, ip string, solved *captcha.Envelope, m mailedToken) (bool, error) {
	if err := s.throttleMail(ctx, m.purpose, rawEmail, ip); err != nil {
		return false, err
	}
	if ok, err := s.captchaPasses(ctx, solved); !ok || err != nil {
		return false, err
	}
	email, err := text.Email(rawEmail)
	if err != nil || s.mailer == nil {
		return true, nil // the same answer as for an address without an account
	}
	u, err := userByEmail(ctx, s.db.R, email)
	if errors.Is(err, apperr.ErrNotFound) || (err == nil && !m.wants(u)) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	now := s.clock.Now()
	return true, s.db.Tx(ctx, func(tx *db.Tx) error {
		recent, err := recentTokens(ctx, tx, u.ID, m.purpose, now.Add(-mailPause))
		if err != nil {
			return err
		}
		if recent > 0 {
			return nil // one mail a minute is plenty
		}
		tok, hash := tokens.New(m.prefix)
		expires := now.Add(m.ttl)
		if err := insertToken(ctx, tx, u.ID, m.purpose, hash, now, expires, nil, nil); err != nil {
			return err
		}
		return s.mailer.Queue(ctx, tx, u.Email, m.purpose, map[string]string{"name": u.DisplayName,
			"link": s.linkBase(ctx) + m.path + tok, "expires": expires.Format("2 January 2006 15:04 MST")})
	})
}

// ConsumeReset sets a new password with a reset token, once.
func (s *Service) ConsumeReset(ctx context.Context, tok, password string) error {
	if !strings.HasPrefix(tok, ResetTokenPrefix) || len(tok) > 200 {
		return ErrBadResetToken
	}
	now := s.clock.Now()
	tokenID, userID, err := resetToken(ctx, s.db.R, tokens.Hash(tok), now)
	if err != nil {
		return err
	}
	u, err := userByID(ctx, s.db.R, userID)
	if err != nil {
		return err
	}
	// Both checked before the hashing work.
	if err := CheckPassword(password, u.Email); err != nil {
		return err
	}
	hash, err := HashPassword(password, s.cfg.HashParams)
	if err != nil {
		return err
	}
	defer s.forgetUser(userID)
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		won, err := useToken(ctx, tx, tokenID, now)
		if err != nil {
			return err
		}
		if !won {
			return ErrBadResetToken // a racing consume won
		}
		if err := updatePasswordHash(ctx, tx, userID, hash, now); err != nil {
			return err
		}
		if _, err := revokeOtherSessions(ctx, tx, userID, "", now); err != nil {
			return err
		}
		return nil
	})
}

// RequestVerify mails an address check to an account whose address is not
// verified yet; it answers nothing about the address (false: the captcha,
// as for RequestReset).
func (s *Service) RequestVerify(ctx context.Context, rawEmail, ip string, solved *captcha.Envelope) (bool, error) {
	return s.requestMail(ctx, rawEmail, ip, solved, verifyMail)
}

// ConsumeVerify marks the token's address verified, once; false for an
// unknown, used or expired token.
func (s *Service) ConsumeVerify(ctx context.Context, tok string) (bool, error) {
	if !strings.HasPrefix(tok, VerifyTokenPrefix) || len(tok) > 200 {
		return false, nil
	}
	now := s.clock.Now()
	verified := false
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		userID, err := useVerifyToken(ctx, tx, tokens.Hash(tok), now)
		if err != nil || userID == "" {
			return err
		}
		if err := setEmailVerifiedAt(ctx, tx, userID, now); err != nil {
			return err
		}
		verified = true
		tx.AfterCommit(func() { s.forgetUser(userID) })
		return nil
	})
	return verified, err
}
