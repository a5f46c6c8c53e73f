package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// The outbox and the edited templates.

func insertMail(ctx context.Context, tx *db.Tx, to, key, subject, sealedBody string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO mail_outbox (id, to_addr, template_key, subject, body_sealed, status, next_attempt_at, created_at)
		VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6)`, ids.New(), to, key, subject, sealedBody, now); err != nil {
		return fmt.Errorf("mail: queue: %w", err)
	}
	return nil
}

// dueMail lists the queued mail whose next attempt has come.
func dueMail(ctx context.Context, q db.Queryer, now time.Time) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM mail_outbox WHERE status = 'queued' AND next_attempt_at <= $1
		ORDER BY next_attempt_at, id LIMIT 50`, now)
	if err != nil {
		return nil, fmt.Errorf("mail: due: %w", err)
	}
	defer rows.Close()
	var due []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		due = append(due, id)
	}
	return due, nil
}

// queuedMail reads a queued mail with its sealed body; nil when it is not
// queued any more.
func queuedMail(ctx context.Context, q db.Queryer, id string) (*queued, string, error) {
	var m queued
	var sealed string
	err := q.QueryRowContext(ctx, `SELECT id, to_addr, subject, body_sealed, attempts, created_at FROM mail_outbox
		WHERE id = $1 AND status = 'queued'`, id).Scan(&m.id, &m.to, &m.subject, &sealed, &m.attempts, db.UTC(&m.created))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("mail: claim: %w", err)
	}
	return &m, sealed, nil
}

// takeAttempt is the claim's compare-and-set on the attempt count.
func takeAttempt(ctx context.Context, q db.Queryer, id string, attempts int, next time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = $3
		WHERE id = $1 AND attempts = $2 AND status = 'queued'`, id, attempts, next)
	if err != nil {
		return false, fmt.Errorf("mail: claim: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func markSent(ctx context.Context, q db.Queryer, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE mail_outbox SET status = 'sent', sent_at = $2, last_error = '' WHERE id = $1`, id, now)
	return err
}

func markFailed(ctx context.Context, q db.Queryer, id, lastError string) error {
	_, err := q.ExecContext(ctx, `UPDATE mail_outbox SET status = 'failed', last_error = $2 WHERE id = $1`, id, lastError)
	return err
}

func retryLater(ctx context.Context, q db.Queryer, id string, next time.Time, lastError string) error {
	_, err := q.ExecContext(ctx, `UPDATE mail_outbox SET next_attempt_at = $2, last_error = $3 WHERE id = $1`, id, next, lastError)
	return err
}

// pruneMail deletes sent and failed mail made before cutoff.
func pruneMail(ctx context.Context, q db.Queryer, cutoff time.Time) (int, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM mail_outbox WHERE status <> 'queued' AND created_at < $1`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("mail: prune: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// recentMail lists the newest mails, with their sealed bodies.
func recentMail(ctx context.Context, q db.Queryer, limit int) ([]OutboxMail, []string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, to_addr, template_key, subject, body_sealed, status, attempts, last_error, created_at, sent_at
		FROM mail_outbox ORDER BY created_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("mail: outbox: %w", err)
	}
	defer rows.Close()
	out, sealed := []OutboxMail{}, []string{}
	for rows.Next() {
		var m OutboxMail
		var s string
		if err := rows.Scan(&m.ID, &m.To, &m.TemplateKey, &m.Subject, &s, &m.Status, &m.Attempts, &m.LastError,
			db.UTC(&m.CreatedAt), db.NullUTC(&m.SentAt)); err != nil {
			return nil, nil, fmt.Errorf("mail: outbox: %w", err)
		}
		out, sealed = append(out, m), append(sealed, s)
	}
	return out, sealed, rows.Err()
}

// readTemplate reads an edited template over t's defaults (none stored:
// t stays as it is).
func readTemplate(ctx context.Context, q db.Queryer, t *MailTemplate) error {
	var at time.Time
	err := q.QueryRowContext(ctx, `SELECT subject, body, updated_by, updated_at FROM mail_templates WHERE key = $1`, t.Key).
		Scan(&t.Subject, &t.Body, &t.UpdatedBy, db.UTC(&at))
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("mail: template: %w", err)
	default:
		t.Custom, t.UpdatedAt = true, &at
	}
	return nil
}

func putTemplate(ctx context.Context, tx *db.Tx, key, subject, body, userID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO mail_templates (key, subject, body, updated_by, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (key) DO UPDATE SET subject = excluded.subject, body = excluded.body, updated_by = excluded.updated_by,
		updated_at = excluded.updated_at`, key, subject, body, userID, now); err != nil {
		return fmt.Errorf("mail: put template: %w", err)
	}
	return nil
}
