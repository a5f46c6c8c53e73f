package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Users are instance-wide (not workspace-scoped): an account exists once
// across all workspaces, so these queries have no workspace filter.

const userColumns = `u.id, u.email, u.display_name, u.password_hash, u.approved,
	u.is_admin OR EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = u.id AND r.role = 'system_admin'),
	u.verbosity, u.default_workspace_id, u.created_at, u.updated_at, u.email_verified, u.totp_secret IS NOT NULL`

func scanUser(row interface{ Scan(...any) error }) (*user, error) {
	var u user
	err := row.Scan(&u.ID, &u.Email, &u.DisplayName, &u.PasswordHash, &u.Approved, &u.Admin, &u.Verbosity,
		&u.DefaultWorkspaceID, db.UTC(&u.CreatedAt), db.UTC(&u.UpdatedAt), &u.EmailVerified, &u.TOTPArmed)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

func userByEmail(ctx context.Context, q db.Queryer, email string) (*user, error) {
	u, err := scanUser(q.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users u WHERE u.email = $1", email))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("user")
	}
	if err != nil {
		return nil, fmt.Errorf("auth: user by email: %w", err)
	}
	return u, nil
}

func userByID(ctx context.Context, q db.Queryer, id string) (*user, error) {
	u, err := scanUser(q.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users u WHERE u.id = $1", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("user")
	}
	if err != nil {
		return nil, fmt.Errorf("auth: user by id: %w", err)
	}
	return u, nil
}

func insertUser(ctx context.Context, q db.Queryer, u *user) error {
	_, err := q.ExecContext(ctx, `INSERT INTO users (id, email, display_name, password_hash, approved, is_admin, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		u.ID, u.Email, u.DisplayName, u.PasswordHash, u.Approved, u.Admin, u.CreatedAt, u.UpdatedAt)
	if err != nil {
		return fmt.Errorf("auth: insert user: %w", err)
	}
	return nil
}

func setDefaultWorkspace(ctx context.Context, q db.Queryer, userID, workspaceID string) error {
	if _, err := q.ExecContext(ctx, "UPDATE users SET default_workspace_id = $1 WHERE id = $2", workspaceID, userID); err != nil {
		return fmt.Errorf("auth: set default workspace: %w", err)
	}
	return nil
}

func updateDisplayName(ctx context.Context, q db.Queryer, id, name string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE users SET display_name = $1, updated_at = $2 WHERE id = $3", name, now, id); err != nil {
		return fmt.Errorf("auth: update profile: %w", err)
	}
	return nil
}

func updateVerbosity(ctx context.Context, q db.Queryer, id string, v *string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE users SET verbosity = $1, updated_at = $2 WHERE id = $3", v, now, id); err != nil {
		return fmt.Errorf("auth: update verbosity: %w", err)
	}
	return nil
}

func updatePasswordHash(ctx context.Context, q db.Queryer, id, hash string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3", hash, now, id); err != nil {
		return fmt.Errorf("auth: update password: %w", err)
	}
	return nil
}

func approveUser(ctx context.Context, q db.Queryer, id string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE users SET approved = TRUE, updated_at = $1 WHERE id = $2", now, id); err != nil {
		return fmt.Errorf("auth: approve: %w", err)
	}
	return nil
}

func deleteUser(ctx context.Context, q db.Queryer, id string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM users WHERE id = $1", id); err != nil {
		return fmt.Errorf("auth: delete user: %w", err)
	}
	return nil
}

func listUsers(ctx context.Context, q db.Queryer, pendingOnly bool, limit, offset int) ([]*user, int, error) {
	where := ""
	if pendingOnly {
		where = " WHERE u.approved = FALSE"
	}
	var total int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM users u"+where).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("auth: count users: %w", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+userColumns+" FROM users u"+where+" ORDER BY u.created_at, u.id LIMIT $1 OFFSET $2", limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("auth: list users: %w", err)
	}
	defer rows.Close()
	var out []*user
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("auth: list users: %w", err)
		}
		out = append(out, u)
	}
	return out, total, rows.Err()
}

func insertSession(ctx context.Context, q db.Queryer, id, userID, tokenHash string, now, expires time.Time, userAgent, ip string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO sessions (id, user_id, token_hash, created_at, expires_at, user_agent, ip)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, id, userID, tokenHash, now, expires, userAgent, ip)
	if err != nil {
		return fmt.Errorf("auth: insert session: %w", err)
	}
	return nil
}

// sessionUser loads the live session with this token hash and its user, and
// the user's default workspace if they are still a member of it: one query
// per authenticated request.
func sessionUser(ctx context.Context, d *db.DB, tokenHash string, now time.Time) (*actor.User, string, time.Time, error) {
	var u actor.User
	var storedHash string
	var expires time.Time
	err := d.QueryRowPrepared(ctx, `SELECT s.id, s.token_hash, s.expires_at, u.id, u.email, u.display_name, u.approved,
			u.is_admin OR EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = u.id AND r.role = 'system_admin'),
			u.verbosity, u.created_at, COALESCE(wm.workspace_id, ''), u.email_verified, u.totp_secret IS NOT NULL
		FROM sessions s
		JOIN users u ON u.id = s.user_id
		LEFT JOIN workspace_members wm ON wm.workspace_id = u.default_workspace_id AND wm.user_id = u.id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2`, tokenHash, now).
		Scan(&u.SessionID, &storedHash, db.UTC(&expires), &u.ID, &u.Email, &u.DisplayName, &u.Approved, &u.Admin, &u.Verbosity,
			db.UTC(&u.CreatedAt), &u.DefaultWorkspaceID, &u.EmailVerified, &u.TwoFactor)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", time.Time{}, apperr.ErrUnauthorized
	}
	if err != nil {
		return nil, "", time.Time{}, fmt.Errorf("auth: session lookup: %w", err)
	}
	u.Method = actor.Cookie
	return &u, storedHash, expires, nil
}

func revokeSession(ctx context.Context, q db.Queryer, id string, now time.Time) error {
	if _, err := q.ExecContext(ctx, "UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", now, id); err != nil {
		return fmt.Errorf("auth: revoke session: %w", err)
	}
	return nil
}

func revokeOtherSessions(ctx context.Context, q db.Queryer, userID, keepID string, now time.Time) (int64, error) {
	res, err := q.ExecContext(ctx, "UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND id <> $3 AND revoked_at IS NULL", now, userID, keepID)
	if err != nil {
		return 0, fmt.Errorf("auth: revoke sessions: %w", err)
	}
	return res.RowsAffected()
}

// lockedUntil returns the locks still in force on an account key and a
// client key (nil: none), in one query.
func lockedUntil(ctx context.Context, q db.Queryer, now time.Time, accountKey, clientKey string) (account, client *time.Time, err error) {
	rows, err := q.QueryContext(ctx, "SELECT key, locked_until FROM auth_failures WHERE key IN ($1, $2) AND locked_until > $3",
		accountKey, clientKey, now)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: lockout lookup: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var until time.Time
		if err := rows.Scan(&key, db.UTC(&until)); err != nil {
			return nil, nil, fmt.Errorf("auth: lockout lookup: %w", err)
		}
		if key == accountKey {
			account = &until
		} else {
			client = &until
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("auth: lockout lookup: %w", err)
	}
	return account, client, nil
}

// hasAdmin reports whether an approved instance admin exists.
func hasAdmin(ctx context.Context, q db.Queryer) (bool, error) {
	var yes bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM users u WHERE u.approved AND (u.is_admin OR
		EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = u.id AND r.role = 'system_admin')))`).Scan(&yes)
	if err != nil {
		return false, fmt.Errorf("auth: has admin: %w", err)
	}
	return yes, nil
}

// recordFailure counts one failure for key within a window starting at the
// key's first failure; reaching limit (at least 2) locks the key until
// now+lockFor.
// One statement, so concurrent failures count exactly.
func recordFailure(ctx context.Context, q db.Queryer, key string, now time.Time, window time.Duration, limit int, lockFor time.Duration) error {
	_, err := q.ExecContext(ctx, `INSERT INTO auth_failures (key, failures, window_start, locked_until)
		VALUES ($1, 1, $2, NULL)
		ON CONFLICT (key) DO UPDATE SET
			failures = CASE WHEN auth_failures.window_start < $3 THEN 1 ELSE auth_failures.failures + 1 END,
			window_start = CASE WHEN auth_failures.window_start < $3 THEN excluded.window_start ELSE auth_failures.window_start END,
			locked_until = CASE
				WHEN (CASE WHEN auth_failures.window_start < $3 THEN 1 ELSE auth_failures.failures + 1 END) >= $4 THEN $5
				ELSE auth_failures.locked_until END`,
		key, now, now.Add(-window), limit, now.Add(lockFor))
	if err != nil {
		return fmt.Errorf("auth: record failure: %w", err)
	}
	return nil
}

func clearFailures(ctx context.Context, q db.Queryer, key string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM auth_failures WHERE key = $1", key); err != nil {
		return fmt.Errorf("auth: clear failures: %w", err)
	}
	return nil
}

// pruneExpired deletes what stopped mattering before cutoff: sessions that
// expired or were revoked, failure counts whose window began and whose lock
// ended, and reset, verification and magic-link tokens that expired.
func pruneExpired(ctx context.Context, q db.Queryer, cutoff time.Time) (int, error) {
	var n int64
	for _, stmt := range []string{
		"DELETE FROM sessions WHERE expires_at < $1 OR revoked_at < $1",
		"DELETE FROM auth_failures WHERE window_start < $1 AND (locked_until IS NULL OR locked_until < $1)",
		"DELETE FROM auth_tokens WHERE expires_at < $1",
	} {
		res, err := q.ExecContext(ctx, stmt, cutoff)
		if err != nil {
			return 0, fmt.Errorf("auth: prune: %w", err)
		}
		rows, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("auth: prune: %w", err)
		}
		n += rows
	}
	return int(n), nil
}

// limit is one throttle key's policy: at most max attempts in a window;
// the attempt that reaches max locks the key for lockFor. pace: past max,
// one attempt per lockFor instead of none until the window ends.
type limit struct {
	max     int
	window  time.Duration
	lockFor time.Duration
	pace    bool
}

// reserveAttempt counts an attempt against key before it is evaluated, in
// one statement, so concurrent attempts each get their own count: it is
// taken (true) while the key is not locked and the window has room; the
// attempt that fills the window locks the key for later ones.
func reserveAttempt(ctx context.Context, q db.Queryer, key string, now time.Time, l limit) (bool, error) {
	var lockNew any
	if l.max <= 1 {
		lockNew = now.Add(l.lockFor)
	}
	res, err := q.ExecContext(ctx, `INSERT INTO auth_failures (key, failures, window_start, locked_until)
		VALUES ($1, 1, $2, $6)
		ON CONFLICT (key) DO UPDATE SET
			failures = CASE WHEN auth_failures.window_start < $3 THEN 1 ELSE auth_failures.failures + 1 END,
			window_start = CASE WHEN auth_failures.window_start < $3 THEN excluded.window_start ELSE auth_failures.window_start END,
			locked_until = CASE
				WHEN (CASE WHEN auth_failures.window_start < $3 THEN 1 ELSE auth_failures.failures + 1 END) >= $4 THEN $5
				ELSE auth_failures.locked_until END
		WHERE (auth_failures.locked_until IS NULL OR auth_failures.locked_until <= $2)
			AND (auth_failures.window_start < $3 OR auth_failures.failures < $4 OR $7)`,
		key, now, now.Add(-l.window), l.max, now.Add(l.lockFor), lockNew, l.pace)
	if err != nil {
		return false, fmt.Errorf("auth: reserve attempt: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("auth: reserve attempt: %w", err)
	}
	return n == 1, nil
}

// refundAttempt takes back an attempt that succeeded: it no longer counts,
// and a lock it set goes with it.
func refundAttempt(ctx context.Context, q db.Queryer, key string, l limit) error {
	_, err := q.ExecContext(ctx, `UPDATE auth_failures SET failures = failures - 1,
		locked_until = CASE WHEN failures - 1 < $2 THEN NULL ELSE locked_until END
		WHERE key = $1 AND failures > 0`, key, l.max)
	if err != nil {
		return fmt.Errorf("auth: refund attempt: %w", err)
	}
	return nil
}

// lockEnd is when key's lock ends (the zero time when it has none).
func lockEnd(ctx context.Context, q db.Queryer, key string) (time.Time, error) {
	var until *time.Time
	err := q.QueryRowContext(ctx, "SELECT locked_until FROM auth_failures WHERE key = $1", key).Scan(db.NullUTC(&until))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && until == nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("auth: lock lookup: %w", err)
	}
	return *until, nil
}

func liveSessions(ctx context.Context, q db.Queryer, userID string, now time.Time, limit int) ([]SignedIn, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, created_at, expires_at, user_agent, ip FROM sessions
		WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2
		ORDER BY created_at DESC, id DESC LIMIT `+strconv.Itoa(limit), userID, now)
	if err != nil {
		return nil, fmt.Errorf("auth: list sessions: %w", err)
	}
	defer rows.Close()
	list := []SignedIn{}
	for rows.Next() {
		var s SignedIn
		if err := rows.Scan(&s.ID, db.UTC(&s.CreatedAt), db.UTC(&s.ExpiresAt), &s.UserAgent, &s.IP); err != nil {
			return nil, fmt.Errorf("auth: list sessions: %w", err)
		}
		list = append(list, s)
	}
	return list, rows.Err()
}

func revokeOwnSession(ctx context.Context, q db.Queryer, userID, id string, now time.Time) (int64, error) {
	res, err := q.ExecContext(ctx, `UPDATE sessions SET revoked_at = $1
		WHERE id = $2 AND user_id = $3 AND revoked_at IS NULL AND expires_at > $1`, now, id, userID)
	if err != nil {
		return 0, fmt.Errorf("auth: revoke session: %w", err)
	}
	return res.RowsAffected()
}
