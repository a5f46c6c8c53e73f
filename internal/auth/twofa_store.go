package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Two-factor sign-in: an account's TOTP secret and its recovery codes.

type totpState struct {
	secret, pending *string
	lastStep        int64
}

func totpOf(ctx context.Context, q db.Queryer, userID string) (*totpState, error) {
	var st totpState
	err := q.QueryRowContext(ctx, `SELECT totp_secret, totp_pending, totp_last_step FROM users WHERE id = $1`, userID).Scan(&st.secret, &st.pending, &st.lastStep)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("user")
	}
	if err != nil {
		return nil, fmt.Errorf("auth: totp: %w", err)
	}
	return &st, nil
}

func setTOTPPending(ctx context.Context, q db.Queryer, userID, sealed string) error {
	if _, err := q.ExecContext(ctx, `UPDATE users SET totp_pending = $2 WHERE id = $1`, userID, sealed); err != nil {
		return fmt.Errorf("auth: enroll: %w", err)
	}
	return nil
}

// armTOTP makes the pending secret the account's, accepted up to step, with
// new recovery codes (their hashes) in place of the old.
func armTOTP(ctx context.Context, tx *db.Tx, userID string, step int64, codeHashes []string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE users SET totp_secret = totp_pending, totp_pending = NULL, totp_last_step = $2 WHERE id = $1`,
		userID, step); err != nil {
		return fmt.Errorf("auth: confirm: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM user_recovery_codes WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("auth: confirm: %w", err)
	}
	for _, h := range codeHashes {
		if _, err := tx.ExecContext(ctx, `INSERT INTO user_recovery_codes (user_id, code_hash) VALUES ($1, $2)`, userID, h); err != nil {
			return fmt.Errorf("auth: confirm: %w", err)
		}
	}
	return nil
}

// advanceTOTPStep accepts a code's time step once: false when a code of
// that step or a later one was accepted.
func advanceTOTPStep(ctx context.Context, tx *db.Tx, userID string, step int64) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE users SET totp_last_step = $2 WHERE id = $1 AND totp_last_step < $2`, userID, step)
	if err != nil {
		return false, fmt.Errorf("auth: totp: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// useRecoveryCode spends an unused recovery code (by its hash).
func useRecoveryCode(ctx context.Context, tx *db.Tx, userID, hash string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE user_recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`,
		userID, hash, now)
	if err != nil {
		return false, fmt.Errorf("auth: recovery code: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// disarmTOTP turns two-factor sign-in off and drops the recovery codes.
func disarmTOTP(ctx context.Context, tx *db.Tx, userID string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE users SET totp_secret = NULL, totp_pending = NULL, totp_last_step = 0 WHERE id = $1`, userID); err != nil {
		return fmt.Errorf("auth: disable: %w", err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM user_recovery_codes WHERE user_id = $1`, userID)
	return err
}
