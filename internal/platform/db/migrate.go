package db

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// VersionTable records applied migrations (goose's table).
const VersionTable = "goose_db_version"

// Migration is one migration file known to the binary.
type Migration struct {
	Version int64
	Name    string
}

// AppliedMigration is a migration recorded in the database.
type AppliedMigration struct {
	Migration
	AppliedAt time.Time
}

// MigrationStatus compares the binary's migrations with the database.
type MigrationStatus struct {
	Applied []AppliedMigration
	Pending []Migration
	// Newer are versions recorded in the database that this binary does not
	// know: a newer binary migrated it. They are accepted (side-by-side
	// upgrades), only reported.
	Newer []int64
}

// Migrations binds a database to its migration files. fsys holds one
// directory per engine ("sqlite", "postgres") with the same version numbers.
type Migrations struct {
	db   *DB
	fsys fs.FS
	log  *slog.Logger
}

// NewMigrations prepares migrations for d from fsys.
func (d *DB) NewMigrations(fsys fs.FS, log *slog.Logger) *Migrations {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Migrations{db: d, fsys: fsys, log: log}
}

func (m *Migrations) provider() (*goose.Provider, error) {
	sub, err := fs.Sub(m.fsys, string(m.db.Engine()))
	if err != nil {
		return nil, err
	}
	dialect := database.DialectSQLite3
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if m.db.Engine() == Postgres {
		dialect = database.DialectPostgres
		// Replicas booting together: the first takes the lock and migrates,
		// the others wait (polling each second, up to five minutes) and then
		// find nothing pending.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	store, err := database.NewStore(dialect, VersionTable)
	if err != nil {
		return nil, err
	}
	opts = append(opts, goose.WithStore(store))
	p, err := goose.NewProvider("", m.db.W, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("db: migrations: %w", err)
	}
	return p, nil
}

// Up applies every pending migration and returns the versions applied.
func (m *Migrations) Up(ctx context.Context) ([]Migration, error) {
	p, err := m.provider()
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("db: migrate up: %w", err)
	}
	var applied []Migration
	for _, r := range results {
		mig := Migration{Version: r.Source.Version, Name: baseName(r.Source.Path)}
		applied = append(applied, mig)
		m.log.Info("migration applied", "version", mig.Version, "name", mig.Name, "duration", r.Duration)
	}
	return applied, nil
}

// Status reads the database's migration state without writing anything (it
// does not even create the version table).
func (m *Migrations) Status(ctx context.Context) (*MigrationStatus, error) {
	p, err := m.provider()
	if err != nil {
		return nil, err
	}
	st := &MigrationStatus{}
	recorded := map[int64]time.Time{}
	exists, err := m.versionTableExists(ctx)
	if err != nil {
		return nil, err
	}
	if exists {
		rows, err := m.db.R.QueryContext(ctx,
			"SELECT version_id, tstamp FROM "+VersionTable+" WHERE is_applied AND version_id > 0 ORDER BY id")
		if err != nil {
			return nil, fmt.Errorf("db: reading %s: %w", VersionTable, err)
		}
		defer rows.Close()
		for rows.Next() {
			var v int64
			var at time.Time
			if err := rows.Scan(&v, UTC(&at)); err != nil {
				return nil, fmt.Errorf("db: reading %s: %w", VersionTable, err)
			}
			recorded[v] = at
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("db: reading %s: %w", VersionTable, err)
		}
	}
	known := map[int64]bool{}
	for _, src := range p.ListSources() {
		mig := Migration{Version: src.Version, Name: baseName(src.Path)}
		known[src.Version] = true
		if at, ok := recorded[src.Version]; ok {
			st.Applied = append(st.Applied, AppliedMigration{Migration: mig, AppliedAt: at})
		} else {
			st.Pending = append(st.Pending, mig)
		}
	}
	for v := range recorded {
		if !known[v] {
			st.Newer = append(st.Newer, v)
		}
	}
	slices.Sort(st.Newer)
	return st, nil
}

// Verify refuses a database that lacks any of the binary's migrations,
// naming them; migrations newer than the binary are accepted.
func (m *Migrations) Verify(ctx context.Context) (*MigrationStatus, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return nil, err
	}
	if len(st.Pending) > 0 {
		var names []string
		for _, p := range st.Pending {
			names = append(names, strconv.FormatInt(p.Version, 10)+" ("+p.Name+")")
		}
		return st, fmt.Errorf("SERVICE_SKIP_BOOT_MIGRATIONS: the database is missing migration(s) %s; run `slipway migrate up` or unset SERVICE_SKIP_BOOT_MIGRATIONS",
			strings.Join(names, ", "))
	}
	return st, nil
}

func (m *Migrations) versionTableExists(ctx context.Context) (bool, error) {
	var q string
	switch m.db.Engine() {
	case SQLite:
		q = "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = $1"
	default:
		q = "SELECT to_regclass($1) IS NOT NULL"
	}
	var ok bool
	if err := m.db.R.QueryRowContext(ctx, q, VersionTable).Scan(&ok); err != nil {
		return false, fmt.Errorf("db: checking %s: %w", VersionTable, err)
	}
	return ok, nil
}

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}
