package auth

import (
	"context"
	"errors"
	"time"

	"slipway/internal/captcha"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

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
