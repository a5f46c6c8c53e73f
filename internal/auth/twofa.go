package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"net/url"
	"slipway/internal/captcha"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	tokens "slipway/internal/platform/token"
)

// Two-factor sign-in with TOTP (RFC 6238). Enrolling stores a new secret,
// sealed and pending; confirming with a live code arms it and hands out
// ten single-use recovery codes once (kept as hashes). With 2FA armed, a
// right password answers {totp_required: true} and a short-lived interim
// token instead of a session; POST /api/auth/2fa/verify exchanges it and a
// code (or a recovery code) for the session, counting failures like a
// password. A code is accepted once: its time step is remembered.

// Recovery codes and interim tokens.
const (
	RecoveryCodes       = 10
	InterimTokenPrefix  = "s2fa_"
	interimTTL          = 5 * time.Minute
	totpSealContext     = "totp secret"
	recoveryCodeLetters = "abcdefghjkmnpqrstuvwxyz23456789"
)

// TOTPEnrollment is a pending TOTP enrolment: scan the URI or type the secret.
type TOTPEnrollment struct {
	Secret string `json:"secret" doc:"Base32 secret for an authenticator app"`
	URI    string `json:"uri" doc:"otpauth:// provisioning URI (a QR code of it)"`
}

// RecoveryCodesOut are shown once, when 2FA is armed.
type RecoveryCodesOut struct {
	RecoveryCodes []string `json:"recovery_codes" doc:"Single-use codes for when the authenticator is lost; shown only now"`
}

// Enroll starts (or restarts) an enrolment for the signed-in account.
func (s *Service) Enroll(ctx context.Context, u *actor.User) (*TOTPEnrollment, error) {
	st, err := totpOf(ctx, s.db.R, u.ID)
	if err != nil {
		return nil, err
	}
	if st.secret != nil {
		return nil, apperr.New(apperr.CodeConflict, "two-factor sign-in is on already; disable it first to enrol again")
	}
	secret := make([]byte, 20)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	b32 := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret)
	if err := setTOTPPending(ctx, s.db.W, u.ID, s.sealer.Seal(b32, totpSealContext)); err != nil {
		return nil, err
	}
	label := url.PathEscape("Slipway:" + u.Email)
	return &TOTPEnrollment{Secret: b32, URI: "otpauth://totp/" + label + "?secret=" + b32 + "&issuer=Slipway&algorithm=SHA1&digits=6&period=30"}, nil
}

func (s *Service) secretBytes(sealed string) ([]byte, error) {
	b32, err := s.sealer.Open(sealed, totpSealContext)
	if err != nil {
		return nil, fmt.Errorf("auth: totp secret: %w", err)
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(b32)
}

// ErrBadCode is the one answer to a wrong two-factor code.
var ErrBadCode = apperr.BadRequest("the code is not valid")

// Confirm arms 2FA with a live code from the pending secret and returns the
// recovery codes (once).
func (s *Service) Confirm(ctx context.Context, u *actor.User, code string) (*RecoveryCodesOut, error) {
	var out *RecoveryCodesOut
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		st, err := totpOf(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		if st.secret != nil {
			return apperr.New(apperr.CodeConflict, "two-factor sign-in is on already")
		}
		if st.pending == nil {
			return apperr.New(apperr.CodeConflict, "no enrolment is pending: enrol first")
		}
		secret, err := s.secretBytes(*st.pending)
		if err != nil {
			return err
		}
		step := checkTOTP(secret, strings.TrimSpace(code), s.clock.Now(), 0)
		if step == 0 {
			return ErrBadCode
		}
		out = &RecoveryCodesOut{}
		var hashes []string
		for i := 0; i < RecoveryCodes; i++ {
			c := recoveryCode()
			out.RecoveryCodes = append(out.RecoveryCodes, c)
			hashes = append(hashes, tokens.Hash(c))
		}
		if err := armTOTP(ctx, tx, u.ID, step, hashes); err != nil {
			return err
		}
		tx.AfterCommit(func() { s.forgetUser(u.ID) }) // cached sessions say two_factor again
		return nil
	})
	return out, err
}

func recoveryCode() string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	out := make([]byte, 0, 11)
	for i, x := range b {
		if i == 5 {
			out = append(out, '-')
		}
		out = append(out, recoveryCodeLetters[int(x)%len(recoveryCodeLetters)])
	}
	return string(out)
}

// useCode accepts a live TOTP code (once per time step) or an unused
// recovery code of an armed account, inside tx.
func (s *Service) useCode(ctx context.Context, tx *db.Tx, userID, code string) (bool, error) {
	st, err := totpOf(ctx, tx, userID)
	if err != nil || st.secret == nil {
		return false, err
	}
	code = strings.ToLower(strings.TrimSpace(code))
	if len(code) == totpDigits {
		secret, err := s.secretBytes(*st.secret)
		if err != nil {
			return false, err
		}
		step := checkTOTP(secret, code, s.clock.Now(), st.lastStep)
		if step == 0 {
			return false, nil
		}
		return advanceTOTPStep(ctx, tx, userID, step)
	}
	return useRecoveryCode(ctx, tx, userID, tokens.Hash(code), s.clock.Now())
}

// Disable turns 2FA off with a valid code or recovery code.
func (s *Service) Disable(ctx context.Context, u *actor.User, code string) error {
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		st, err := totpOf(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		if st.secret == nil {
			return apperr.New(apperr.CodeConflict, "two-factor sign-in is off")
		}
		ok, err := s.useCode(ctx, tx, u.ID, code)
		if err != nil {
			return err
		}
		if !ok {
			return ErrBadCode
		}
		if err := disarmTOTP(ctx, tx, u.ID); err != nil {
			return err
		}
		tx.AfterCommit(func() { s.forgetUser(u.ID) }) // cached sessions say two_factor again
		return nil
	})
}

// interimToken binds a passed password step to an account for a few
// minutes: s2fa_ base64url(user id "." expiry "." HMAC).
func (s *Service) interimToken(userID string, now time.Time) string {
	payload := userID + "." + strconv.FormatInt(now.Add(interimTTL).Unix(), 10)
	mac := hmac.New(sha256.New, s.cfg.Secret)
	mac.Write([]byte("2fa interim:" + payload))
	return InterimTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(payload+"."+base64.RawURLEncoding.EncodeToString(mac.Sum(nil))))
}

func (s *Service) interimUser(tok string, now time.Time) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, InterimTokenPrefix))
	if err != nil || !strings.HasPrefix(tok, InterimTokenPrefix) {
		return "", false
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 {
		return "", false
	}
	mac := hmac.New(sha256.New, s.cfg.Secret)
	mac.Write([]byte("2fa interim:" + parts[0] + "." + parts[1]))
	want := base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || !hmac.Equal([]byte(want), []byte(parts[2])) || now.Unix() > exp {
		return "", false
	}
	return parts[0], true
}

// ErrBadInterim refuses an unknown or expired interim token.
var ErrBadInterim = apperr.New(apperr.CodeUnauthorized, "sign in again: the two-factor step expired or is not valid")

// VerifySecondFactor exchanges an interim token and a code for a session;
// failures count toward the sign-in throttle of the account and client,
// which a solved captcha lifts as on sign-in.
func (s *Service) VerifySecondFactor(ctx context.Context, tok, code, ip, userAgent string, solved *captcha.Envelope) (*LoginResult, time.Time, error) {
	now := s.clock.Now()
	userID, ok := s.interimUser(tok, now)
	if !ok {
		return nil, time.Time{}, ErrBadInterim
	}
	u, err := userByID(ctx, s.db.R, userID)
	if err != nil {
		return nil, time.Time{}, ErrBadInterim
	}
	att, until, err := s.beginAttempt(ctx, now, u.Email, ip, solved)
	if err != nil {
		return nil, until, err
	}
	var sess Session
	var good bool
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if good, err = s.useCode(ctx, tx, u.ID, code); err != nil || !good {
			return err
		}
		if err := att.succeeded(ctx, tx); err != nil {
			return err
		}
		sess, err = s.openSession(ctx, tx, u.ID, ip, userAgent, now)
		return err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	if !good {
		return nil, time.Time{}, ErrBadCode // counted already
	}
	return &LoginResult{Profile: u.profile(), Session: sess}, time.Time{}, nil
}
