package captcha

import (
	"context"
	"time"

	"slipway/internal/platform/db"
)

// isSpent reports whether a nonce was spent.
func isSpent(ctx context.Context, q db.Queryer, nonce string) (bool, error) {
	var yes bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM captcha_spent WHERE nonce = $1)`, nonce).Scan(&yes)
	return yes, err
}

// spend records a nonce once: of two writers, one gets true.
func spend(ctx context.Context, q db.Queryer, nonce string, expires time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO captcha_spent (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING`,
		nonce, expires)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// pruneSpent deletes the nonces of challenges expired before now.
func pruneSpent(ctx context.Context, q db.Queryer, now time.Time) (int, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM captcha_spent WHERE expires_at < $1`, now)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
