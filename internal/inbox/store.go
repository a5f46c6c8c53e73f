package inbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/workport"
)

// A job's lines are addressed by the job: the hub posts them for a job of
// the workspace it acts in, and the job's holder takes them.

func nextSeq(ctx context.Context, tx *db.Tx, jobID string) (int64, error) {
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM agent_inbox WHERE job_id = $1`, jobID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("inbox: next seq: %w", err)
	}
	return seq, nil
}

func insertLine(ctx context.Context, tx *db.Tx, jobID string, seq int64, line string, messageID *string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO agent_inbox (job_id, seq, line, message_id, created_at) VALUES ($1, $2, $3, $4, $5)`,
		jobID, seq, line, messageID, now); err != nil {
		return fmt.Errorf("inbox: post: %w", err)
	}
	return nil
}

func withdraw(ctx context.Context, tx *db.Tx, jobID, messageID string) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM agent_inbox WHERE job_id = $1 AND message_id = $2 AND taken_at IS NULL`, jobID, messageID)
	if err != nil {
		return false, fmt.Errorf("inbox: withdraw: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// take marks the job's untaken lines after seq taken (a worker has
// them now; the nudge for them is answered).
func take(ctx context.Context, tx *db.Tx, jobID string, after int64, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE agent_inbox SET taken_at = $3 WHERE job_id = $1 AND seq > $2 AND taken_at IS NULL`,
		jobID, after, now); err != nil {
		return fmt.Errorf("inbox: take: %w", err)
	}
	return nil
}

func read(ctx context.Context, q db.Queryer, jobID string, after int64) (lines []workport.InboxLine, fresh bool, err error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, line, taken_at IS NULL FROM agent_inbox WHERE job_id = $1 AND seq > $2 ORDER BY seq`, jobID, after)
	if err != nil {
		return nil, false, fmt.Errorf("inbox: read: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var l workport.InboxLine
		var line string
		var untaken bool
		if err := rows.Scan(&l.Seq, &line, &untaken); err != nil {
			return nil, false, fmt.Errorf("inbox: read: %w", err)
		}
		l.Line = json.RawMessage(line)
		lines = append(lines, l)
		fresh = fresh || untaken
	}
	return lines, fresh, rows.Err()
}

// untaken is a held job with lines no worker took, and the oldest of them.
type untaken struct {
	job    string
	oldest time.Time
}

// oldestUntaken lists the running jobs a worker holds that have untaken
// lines, whatever their workspace (the holder serves them all).
func oldestUntaken(ctx context.Context, d *db.DB, owner string) ([]untaken, error) {
	rows, err := d.R.QueryContext(ctx, `SELECT j.id, MIN(`+d.Dialect.TimeColumn("i.created_at")+`) FROM jobs j
		JOIN agent_inbox i ON i.job_id = j.id
		WHERE j.state = 'running' AND j.locked_by = $1 AND i.taken_at IS NULL GROUP BY j.id`, owner)
	if err != nil {
		return nil, fmt.Errorf("inbox: waiting: %w", err)
	}
	defer rows.Close()
	var out []untaken
	for rows.Next() {
		var u untaken
		if err := rows.Scan(&u.job, db.UTC(&u.oldest)); err != nil {
			return nil, fmt.Errorf("inbox: waiting: %w", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

func lastTaken(ctx context.Context, q db.Queryer, jobID string) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM agent_inbox WHERE job_id = $1 AND taken_at IS NOT NULL`, jobID).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("inbox: taken: %w", err)
	}
	return seq, nil
}

// messagesUpTo lists the messages of a job's lines up to seq that a worker
// took (a line never taken cannot have been read).
func messagesUpTo(ctx context.Context, tx *db.Tx, jobID string, seq int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT message_id FROM agent_inbox WHERE job_id = $1 AND seq <= $2 AND message_id IS NOT NULL
		AND taken_at IS NOT NULL`, jobID, seq)
	if err != nil {
		return nil, fmt.Errorf("inbox: seen: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
