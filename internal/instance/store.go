// Package instance keeps facts about this Slipway instance that outlive a
// process: when it first booted and which version booted it last, so a boot
// can say "first boot" or "upgraded from X".
package instance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
)

// Keys of instance_meta.
const (
	keyFirstBootAt = "first_boot_at"
	keyLastVersion = "last_boot_version"
)

// Boot is what RecordBoot learned about earlier boots.
type Boot struct {
	FirstBootAt     time.Time
	PreviousVersion string // "" on the first boot
	First           bool
}

// RecordBoot notes this boot: the first boot time (kept once) and the
// version now running. It returns what was recorded before.
func RecordBoot(ctx context.Context, d *db.DB, version string, now time.Time) (Boot, error) {
	var b Boot
	err := d.Tx(ctx, func(tx *db.Tx) error {
		first, err := get(ctx, tx, keyFirstBootAt)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			b.First = true
			b.FirstBootAt = now
			if err := set(ctx, tx, keyFirstBootAt, now.Format(time.RFC3339Nano), now); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if b.FirstBootAt, err = time.Parse(time.RFC3339Nano, first); err != nil {
				return fmt.Errorf("instance: %s is corrupt: %w", keyFirstBootAt, err)
			}
		}
		prev, err := get(ctx, tx, keyLastVersion)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		b.PreviousVersion = prev
		return set(ctx, tx, keyLastVersion, version, now)
	})
	return b, err
}

func get(ctx context.Context, q db.Queryer, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, "SELECT value FROM instance_meta WHERE key = $1", key).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("instance: reading %s: %w", key, err)
	}
	return v, err
}

func set(ctx context.Context, q db.Queryer, key, value string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, value, now)
	if err != nil {
		return fmt.Errorf("instance: writing %s: %w", key, err)
	}
	return nil
}
