package notifications

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every statement names the recipient; a reader also names the active
// workspace: a person sees their notifications of that workspace and those
// about their account (workspace_id NULL), never another workspace's.

const columns = `id, workspace_id, source, title, body, target_kind, target_id, link, read_at, created_at`

// mine is the filter of a reader's rows: $1 the user, $2 the workspace.
const mine = `user_id = $1 AND (workspace_id = $2 OR workspace_id IS NULL)`

func scan(s interface{ Scan(...any) error }) (*Notification, error) {
	var n Notification
	err := s.Scan(&n.ID, &n.WorkspaceID, &n.Source, &n.Title, &n.Body, &n.TargetKind, &n.TargetID, &n.Link,
		db.NullUTC(&n.ReadAt), db.UTC(&n.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("notification")
	}
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	n.Read = n.ReadAt != nil
	return &n, nil
}

// insert gives a user a notification; false when they have its key
// already.
func insert(ctx context.Context, tx *db.Tx, id, userID string, n Note, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO notifications (id, user_id, workspace_id, source, title, body, target_kind, target_id,
		link, dedupe_key, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (user_id, dedupe_key) DO NOTHING`,
		id, userID, db.Null(n.WorkspaceID), n.Source, n.Title, n.Body, n.TargetKind, n.TargetID, n.Link, n.Key, now)
	if err != nil {
		return false, fmt.Errorf("notifications: insert: %w", err)
	}
	added, err := res.RowsAffected()
	return added == 1, err
}

// filter selects a reader's notifications.
type filter struct {
	userID, workspaceID string
	source              string // "": any
	state               string // "", "unread" or "read"
	q                   string // "": any title
}

// list is one page of a reader's notifications, newest first, and how
// many match.
func list(ctx context.Context, d *db.DB, f filter, limit, offset int) ([]Notification, int, error) {
	where := mine
	args := []any{f.userID, f.workspaceID}
	if f.source != "" {
		args = append(args, f.source)
		where += fmt.Sprintf(" AND source = $%d", len(args))
	}
	switch f.state {
	case "unread":
		where += " AND read_at IS NULL"
	case "read":
		where += " AND read_at IS NOT NULL"
	}
	if f.q != "" {
		args = append(args, "%"+db.EscapeLike(f.q)+"%")
		where += " AND " + d.Dialect.ILike("title", fmt.Sprintf("$%d", len(args)))
	}
	var total int
	if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM notifications WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("notifications: count: %w", err)
	}
	args = append(args, limit, offset)
	out, err := query(ctx, d, fmt.Sprintf("SELECT %s FROM notifications WHERE %s ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d",
		columns, where, len(args)-1, len(args)), args...)
	return out, total, err
}

// query reads notifications.
func query(ctx context.Context, d *db.DB, stmt string, args ...any) ([]Notification, error) {
	rows, err := d.R.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("notifications: list: %w", err)
	}
	defer rows.Close()
	out := []Notification{}
	for rows.Next() {
		n, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *n)
	}
	return out, rows.Err()
}

// unreadOf is a reader's newest unread notifications of the sources (at
// most limit) and how many there are.
func unreadOf(ctx context.Context, d *db.DB, userID, workspaceID string, sources []string, limit int) ([]Notification, int, error) {
	args := []any{userID, workspaceID}
	var in []string
	for _, src := range sources {
		args = append(args, src)
		in = append(in, fmt.Sprintf("$%d", len(args)))
	}
	where := mine + " AND read_at IS NULL AND source IN (" + strings.Join(in, ", ") + ")"
	var total int
	if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM notifications WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("notifications: unread: %w", err)
	}
	if total == 0 || limit <= 0 {
		return []Notification{}, total, nil
	}
	args = append(args, limit)
	out, err := query(ctx, d, fmt.Sprintf("SELECT %s FROM notifications WHERE %s ORDER BY created_at DESC, id DESC LIMIT $%d",
		columns, where, len(args)), args...)
	return out, total, err
}

// counts are a reader's notifications by source, and how many are unread.
func counts(ctx context.Context, q db.Queryer, userID, workspaceID string) (map[string]int, int, error) {
	rows, err := q.QueryContext(ctx, `SELECT source, COUNT(*), COUNT(*) - COUNT(read_at) FROM notifications WHERE `+mine+` GROUP BY source`,
		userID, workspaceID)
	if err != nil {
		return nil, 0, fmt.Errorf("notifications: counts: %w", err)
	}
	defer rows.Close()
	by := map[string]int{}
	unread := 0
	for rows.Next() {
		var src string
		var n, u int
		if err := rows.Scan(&src, &n, &u); err != nil {
			return nil, 0, fmt.Errorf("notifications: counts: %w", err)
		}
		by[src], unread = n, unread+u
	}
	return by, unread, rows.Err()
}

// get reads one of a reader's notifications.
func get(ctx context.Context, q db.Queryer, userID, workspaceID, id string) (*Notification, error) {
	return scan(q.QueryRowContext(ctx, `SELECT `+columns+` FROM notifications WHERE `+mine+` AND id = $3`, userID, workspaceID, id))
}

// markRead marks one read; false when it was read already (or is not the
// reader's).
func markRead(ctx context.Context, tx *db.Tx, userID, workspaceID, id string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE notifications SET read_at = $4 WHERE `+mine+` AND id = $3 AND read_at IS NULL`,
		userID, workspaceID, id, at)
	if err != nil {
		return false, fmt.Errorf("notifications: read: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// markAllRead marks every unread one of a reader's read.
func markAllRead(ctx context.Context, tx *db.Tx, userID, workspaceID string, at time.Time) (int, error) {
	res, err := tx.ExecContext(ctx, `UPDATE notifications SET read_at = $3 WHERE `+mine+` AND read_at IS NULL`, userID, workspaceID, at)
	if err != nil {
		return 0, fmt.Errorf("notifications: read all: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// settle marks read every unread notification of a key, whoever received
// it; it answers their recipients.
func settle(ctx context.Context, tx *db.Tx, key string, at time.Time) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT user_id FROM notifications WHERE dedupe_key = $1 AND read_at IS NULL`, key)
	if err != nil {
		return nil, fmt.Errorf("notifications: settle: %w", err)
	}
	var users []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return nil, fmt.Errorf("notifications: settle: %w", err)
		}
		users = append(users, u)
	}
	rows.Close()
	if len(users) == 0 {
		return nil, rows.Err()
	}
	if _, err := tx.ExecContext(ctx, `UPDATE notifications SET read_at = $2 WHERE dedupe_key = $1 AND read_at IS NULL`, key, at); err != nil {
		return nil, fmt.Errorf("notifications: settle: %w", err)
	}
	return users, nil
}

// remove deletes one of a reader's.
func remove(ctx context.Context, tx *db.Tx, userID, workspaceID, id string) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM notifications WHERE `+mine+` AND id = $3`, userID, workspaceID, id)
	if err != nil {
		return false, fmt.Errorf("notifications: delete: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// prune drops read notifications created before cutoff and every user's
// beyond their newest keep (in batches, so no statement holds the table
// long).
func prune(ctx context.Context, d *db.DB, cutoff time.Time, keep int) (int, error) {
	total := 0
	for {
		res, err := d.W.ExecContext(ctx, `DELETE FROM notifications WHERE id IN (SELECT id FROM notifications
			WHERE read_at IS NOT NULL AND created_at < $1 LIMIT 1000)`, cutoff)
		if err != nil {
			return total, fmt.Errorf("notifications: prune: %w", err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
		if n < 1000 {
			break
		}
	}
	// Users past the bound, then each one's oldest beyond it.
	rows, err := d.R.QueryContext(ctx, `SELECT user_id FROM notifications GROUP BY user_id HAVING COUNT(*) > $1 LIMIT 1000`, keep)
	if err != nil {
		return total, fmt.Errorf("notifications: prune: %w", err)
	}
	var over []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return total, fmt.Errorf("notifications: prune: %w", err)
		}
		over = append(over, u)
	}
	rows.Close()
	for _, u := range over {
		res, err := d.W.ExecContext(ctx, `DELETE FROM notifications WHERE user_id = $1 AND id NOT IN (SELECT id FROM notifications
			WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2)`, u, keep)
		if err != nil {
			return total, fmt.Errorf("notifications: prune: %w", err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	return total, nil
}

// mailSetting is a person's mail setting (off when never set).
func mailSetting(ctx context.Context, q db.Queryer, userID string) (string, error) {
	var mode string
	err := q.QueryRowContext(ctx, "SELECT mail FROM notification_settings WHERE user_id = $1", userID).Scan(&mode)
	if errors.Is(err, sql.ErrNoRows) {
		return MailOff, nil
	}
	if err != nil {
		return "", fmt.Errorf("notifications: settings: %w", err)
	}
	return mode, nil
}

func saveMailSetting(ctx context.Context, tx *db.Tx, userID, mode string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO notification_settings (user_id, mail, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET mail = excluded.mail, updated_at = excluded.updated_at`, userID, mode, now)
	if err != nil {
		return fmt.Errorf("notifications: settings: %w", err)
	}
	return nil
}

// mailTarget is where a person who asked for mail gets it: their address,
// name and setting ("" address: they did not ask).
func mailTarget(ctx context.Context, q db.Queryer, userID string) (to, name, mode string, err error) {
	err = q.QueryRowContext(ctx, `SELECT u.email, u.display_name, s.mail FROM notification_settings s JOIN users u ON u.id = s.user_id
		WHERE s.user_id = $1 AND s.mail <> 'off'`, userID).Scan(&to, &name, &mode)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", "", nil
	}
	if err != nil {
		return "", "", "", fmt.Errorf("notifications: mail target: %w", err)
	}
	return to, name, mode, nil
}

// mailedSince counts a person's notifications mailed since a time.
func mailedSince(ctx context.Context, q db.Queryer, userID string, since time.Time) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM notifications WHERE user_id = $1 AND mailed AND created_at >= $2", userID, since).Scan(&n); err != nil {
		return 0, fmt.Errorf("notifications: mailed: %w", err)
	}
	return n, nil
}

func markMailed(ctx context.Context, tx *db.Tx, userID, id string) error {
	if _, err := tx.ExecContext(ctx, "UPDATE notifications SET mailed = TRUE WHERE user_id = $1 AND id = $2", userID, id); err != nil {
		return fmt.Errorf("notifications: mailed: %w", err)
	}
	return nil
}
