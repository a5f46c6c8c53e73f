package vault

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"slipway/internal/platform/db"
)

// The env backend's and the orphan sweep's SQL. Neither table belongs to a
// workspace: a secret's path names its workspace, like an OpenBao path.

func putSealed(ctx context.Context, tx *db.Tx, path, keyID, sealed string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO vault_secrets (path, key_id, sealed, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (path) DO UPDATE SET key_id = excluded.key_id, sealed = excluded.sealed, updated_at = excluded.updated_at`,
		path, keyID, sealed, now)
	return err
}

// getSealed reads a sealed value; found is false when there is none.
func getSealed(ctx context.Context, d *db.DB, path string) (sealed string, found bool, err error) {
	err = d.QueryRowPrepared(ctx, "SELECT sealed FROM vault_secrets WHERE path = $1", path).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return sealed, err == nil, err
}

func deleteSealed(ctx context.Context, tx *db.Tx, path string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM vault_secrets WHERE path = $1", path)
	return err
}

// listSealed reads up to limit entries in path order.
func listSealed(ctx context.Context, d *db.DB, limit int) ([]Entry, error) {
	rows, err := d.R.QueryContext(ctx, "SELECT path, "+d.Dialect.TimeColumn("created_at")+" FROM vault_secrets ORDER BY path LIMIT $1", limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var path string
		var en Entry
		if err := rows.Scan(&path, db.UTC(&en.CreatedAt)); err != nil {
			return nil, err
		}
		ws, name, _ := strings.Cut(path, "/")
		if en.Ref = (Ref{Workspace: ws, Name: name}); en.Ref.Valid() {
			out = append(out, en)
		}
	}
	return out, rows.Err()
}

// countStale counts what a key other than current sealed.
func countStale(ctx context.Context, d *db.DB, current string) (int, error) {
	var n int
	err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM vault_secrets WHERE key_id <> $1", current).Scan(&n)
	return n, err
}

type sealedRow struct{ path, sealed string }

// staleAfter reads up to limit secrets a key other than current sealed,
// with paths after the given one, in path order.
func staleAfter(ctx context.Context, d *db.DB, current, after string, limit int) ([]sealedRow, error) {
	rows, err := d.R.QueryContext(ctx, "SELECT path, sealed FROM vault_secrets WHERE key_id <> $1 AND path > $2 ORDER BY path LIMIT $3", current, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sealedRow
	for rows.Next() {
		var r sealedRow
		if err := rows.Scan(&r.path, &r.sealed); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// reseal replaces a sealed value only if it is still the one read.
func reseal(ctx context.Context, tx *db.Tx, r sealedRow, keyID, sealed string) (bool, error) {
	res, err := tx.ExecContext(ctx, "UPDATE vault_secrets SET key_id = $1, sealed = $2 WHERE path = $3 AND sealed = $4", keyID, sealed, r.path, r.sealed)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// takePass moves the last pass's time to now if it is before due.
func takePass(ctx context.Context, tx *db.Tx, now, due time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, "UPDATE vault_reconcile SET pass_at = $1, passes = passes + 1 WHERE id = 1 AND pass_at <= $2", now, due)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func sightings(ctx context.Context, d *db.DB) (map[string]bool, error) {
	rows, err := d.R.QueryContext(ctx, "SELECT path FROM vault_orphans")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out[p] = true
	}
	return out, rows.Err()
}

func replaceSightings(ctx context.Context, tx *db.Tx, paths map[string]bool, now time.Time) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM vault_orphans"); err != nil {
		return err
	}
	for p := range paths {
		if _, err := tx.ExecContext(ctx, "INSERT INTO vault_orphans (path, seen_at) VALUES ($1, $2)", p, now); err != nil {
			return err
		}
	}
	return nil
}

// getSealedMany reads the sealed values of several paths in one statement.
func getSealedMany(ctx context.Context, q db.Queryer, paths []string) (map[string]string, error) {
	out := make(map[string]string, len(paths))
	for len(paths) > 0 {
		batch := paths[:min(len(paths), 500)]
		paths = paths[len(batch):]
		marks := make([]string, len(batch))
		args := make([]any, len(batch))
		for i, p := range batch {
			marks[i], args[i] = "$"+strconv.Itoa(i+1), p
		}
		rows, err := q.QueryContext(ctx, "SELECT path, sealed FROM vault_secrets WHERE path IN ("+strings.Join(marks, ", ")+")", args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var p, sealed string
			if err := rows.Scan(&p, &sealed); err != nil {
				rows.Close()
				return nil, err
			}
			out[p] = sealed
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
