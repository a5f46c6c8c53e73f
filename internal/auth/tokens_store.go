package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Single-use tokens mailed to an account (reset, verify, magic), kept as
// hashes, and the address checks they make.

// recentTokens counts the account's tokens of a purpose made since.
func recentTokens(ctx context.Context, q db.Queryer, userID, purpose string, since time.Time) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM auth_tokens WHERE user_id = $1 AND purpose = $2 AND created_at > $3`,
		userID, purpose, since).Scan(&n); err != nil {
		return 0, fmt.Errorf("auth: %s: %w", purpose, err)
	}
	return n, nil
}

// insertToken stores a token's hash; a magic link's also names its
// request and the hash of its code.
func insertToken(ctx context.Context, tx *db.Tx, userID, purpose, hash string, now, expires time.Time, requestID, codeHash *string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO auth_tokens (id, user_id, purpose, token_hash, created_at, expires_at, request_id, code_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ids.New(), userID, purpose, hash, now, expires, requestID, codeHash); err != nil {
		return fmt.Errorf("auth: %s: %w", purpose, err)
	}
	return nil
}

// magicRequestUsed reports whether a magic request's token was used (false
// when there is none: an address without an account looks the same).
func magicRequestUsed(ctx context.Context, q db.Queryer, requestID string) (bool, error) {
	used := false
	err := q.QueryRowContext(ctx, `SELECT used_at IS NOT NULL FROM auth_tokens WHERE request_id = $1 AND purpose = 'magic'`, requestID).Scan(&used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("auth: magic pending: %w", err)
	}
	return used, nil
}

// useMagicToken spends the unexpired magic token cond selects (over $1, $2
// = now and what follows) and returns its account; ErrBadMagic when none.
func useMagicToken(ctx context.Context, tx *db.Tx, cond string, args []any) (string, error) {
	var userID string
	err := tx.QueryRowContext(ctx, `UPDATE auth_tokens SET used_at = $2 WHERE `+cond+` AND purpose = 'magic' AND used_at IS NULL
		AND expires_at > $2 RETURNING user_id`, args...).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrBadMagic
	}
	if err != nil {
		return "", fmt.Errorf("auth: magic: %w", err)
	}
	return userID, nil
}

// resetToken finds an unused, unexpired reset token by its hash.
func resetToken(ctx context.Context, q db.Queryer, hash string, now time.Time) (tokenID, userID string, err error) {
	err = q.QueryRowContext(ctx, `SELECT id, user_id FROM auth_tokens WHERE token_hash = $1 AND purpose = 'reset' AND used_at IS NULL
		AND expires_at > $2`, hash, now).Scan(&tokenID, &userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", ErrBadResetToken
	}
	if err != nil {
		return "", "", fmt.Errorf("auth: reset: %w", err)
	}
	return tokenID, userID, nil
}

// useToken spends a token by its id; false when it was used meanwhile.
func useToken(ctx context.Context, tx *db.Tx, tokenID string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE auth_tokens SET used_at = $2 WHERE id = $1 AND used_at IS NULL`, tokenID, now)
	if err != nil {
		return false, fmt.Errorf("auth: reset: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// useVerifyToken spends an unexpired verification token by its hash and
// returns its account ("" when there is none).
func useVerifyToken(ctx context.Context, tx *db.Tx, hash string, now time.Time) (string, error) {
	var userID string
	err := tx.QueryRowContext(ctx, `UPDATE auth_tokens SET used_at = $2 WHERE token_hash = $1 AND purpose = 'verify' AND used_at IS NULL
		AND expires_at > $2 RETURNING user_id`, hash, now).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("auth: verify: %w", err)
	}
	return userID, nil
}

// setEmailVerified marks an account's address verified (a magic link
// followed).
func setEmailVerified(ctx context.Context, tx *db.Tx, userID string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE users SET email_verified = TRUE WHERE id = $1`, userID); err != nil {
		return fmt.Errorf("auth: magic: %w", err)
	}
	return nil
}

// setEmailVerifiedAt marks an account's address verified by its check.
func setEmailVerifiedAt(ctx context.Context, tx *db.Tx, userID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE users SET email_verified = TRUE, updated_at = $2 WHERE id = $1`, userID, now); err != nil {
		return fmt.Errorf("auth: verify: %w", err)
	}
	return nil
}
