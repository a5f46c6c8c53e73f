// Package dbtest gives tests a fresh database on either engine. SQLite is
// always available; PostgreSQL when SERVICE_TEST_POSTGRES_URL points at a
// server whose user may create databases. SERVICE_TEST_REQUIRE=postgres turns
// a missing PostgreSQL into a failure instead of a skip (CI sets it).
package dbtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/migrations"
)

// PostgresURLEnv names the variable with the PostgreSQL admin URL for tests.
const PostgresURLEnv = "SERVICE_TEST_POSTGRES_URL"

// Required reports whether SERVICE_TEST_REQUIRE lists the service.
func Required(service string) bool {
	for _, s := range strings.FieldsFunc(os.Getenv("SERVICE_TEST_REQUIRE"), func(r rune) bool { return r == ',' || r == ' ' }) {
		if strings.EqualFold(s, service) {
			return true
		}
	}
	return false
}

// Engines runs fn as one subtest per available engine.
func Engines(t *testing.T, fn func(t *testing.T, engine db.Engine)) {
	t.Helper()
	t.Run(string(db.SQLite), func(t *testing.T) { fn(t, db.SQLite) })
	t.Run(string(db.Postgres), func(t *testing.T) {
		RequirePostgres(t)
		fn(t, db.Postgres)
	})
}

// RequirePostgres skips (or, when required, fails) a test without PostgreSQL.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	u := os.Getenv(PostgresURLEnv)
	if u == "" {
		if Required("postgres") {
			t.Fatalf("SERVICE_TEST_REQUIRE lists postgres but %s is not set", PostgresURLEnv)
		}
		t.Skipf("PostgreSQL tests need %s", PostgresURLEnv)
	}
	return u
}

// New returns a fresh, migrated database of the engine, closed (and on
// PostgreSQL dropped) when the test ends.
func New(t testing.TB, engine db.Engine) *db.DB {
	t.Helper()
	target := newTarget(t, engine, true)
	d := open(t, target)
	if engine == db.SQLite {
		if _, err := d.NewMigrations(migrations.FS, nil).Up(context.Background()); err != nil {
			t.Fatalf("dbtest: migrate: %v", err)
		}
	}
	return d
}

// Empty returns a fresh database with no migrations applied.
func Empty(t testing.TB, engine db.Engine) *db.DB {
	t.Helper()
	return open(t, newTarget(t, engine, false))
}

// EmptyTarget returns where a fresh, unmigrated database lives without
// opening it (for tests that boot a server against it).
func EmptyTarget(t testing.TB, engine db.Engine) db.Target {
	t.Helper()
	return newTarget(t, engine, false)
}

// MigratedTarget returns a fresh database that has every migration applied.
func MigratedTarget(t testing.TB, engine db.Engine) db.Target {
	t.Helper()
	target := newTarget(t, engine, true)
	if engine == db.SQLite {
		d := open(t, target)
		if _, err := d.NewMigrations(migrations.FS, nil).Up(context.Background()); err != nil {
			t.Fatalf("dbtest: migrate: %v", err)
		}
	}
	return target
}

// Replica opens a second pool on d's database, as another server process
// on the same database has (closed when the test ends).
func Replica(t testing.TB, d *db.DB) *db.DB {
	t.Helper()
	return open(t, d.Target)
}

func open(t testing.TB, target db.Target) *db.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := db.Open(ctx, target)
	if err != nil {
		t.Fatalf("dbtest: open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func newTarget(t testing.TB, engine db.Engine, migrated bool) db.Target {
	t.Helper()
	if engine == db.SQLite {
		return db.Target{Engine: db.SQLite, Path: filepath.Join(t.TempDir(), "test.db")}
	}
	admin := RequirePostgres(t)
	name := "slipway_t_" + strings.ReplaceAll(ids.New(), "-", "")[:20]
	stmt := "CREATE DATABASE " + name
	if migrated {
		stmt += " TEMPLATE " + template(t, admin)
	}
	adminDB := adminPool(t, admin)
	if _, err := adminDB.Exec(stmt); err != nil {
		t.Fatalf("dbtest: %s: %v", stmt, err)
	}
	t.Cleanup(func() {
		if _, err := adminDB.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("dbtest: dropping %s: %v", name, err)
		}
	})
	return db.Target{Engine: db.Postgres, URL: withDatabase(t, admin, name)}
}

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error

	templateMu   sync.Mutex
	templateName string
)

func adminPool(t testing.TB, admin string) *sql.DB {
	adminOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var d *db.DB
		d, adminErr = db.Open(ctx, db.Target{Engine: db.Postgres, URL: admin})
		if adminErr == nil {
			adminDB = d.W
		}
	})
	if adminErr != nil {
		t.Fatalf("dbtest: connecting to %s: %v", PostgresURLEnv, adminErr)
	}
	return adminDB
}

// template returns a migrated template database named after the migrations'
// content, so every test process reuses it until the migrations change.
func template(t testing.TB, admin string) string {
	t.Helper()
	templateMu.Lock()
	defer templateMu.Unlock()
	if templateName != "" {
		return templateName
	}
	name := "slipway_tpl_" + migrationsHash(t)
	adminDB := adminPool(t, admin)
	ctx := context.Background()
	// Test binaries run in parallel: one creates the template, the others
	// wait on this advisory lock and then find it.
	conn, err := adminDB.Conn(ctx)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(7317001)"); err != nil {
		t.Fatalf("dbtest: template lock: %v", err)
	}
	defer conn.ExecContext(ctx, "SELECT pg_advisory_unlock(7317001)")

	var exists bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	if !exists {
		// Templates of older migration sets are no longer useful, once a
		// day old: a younger one may serve another checkout's tests running
		// now (each template carries its birth time as its comment).
		rows, err := conn.QueryContext(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'slipway\_tpl\_%'
			AND COALESCE(NULLIF(shobj_description(oid, 'pg_database'), ''), '0')::bigint < $1`, time.Now().Add(-24*time.Hour).Unix())
		if err == nil {
			var old []string
			for rows.Next() {
				var n string
				if rows.Scan(&n) == nil {
					old = append(old, n)
				}
			}
			rows.Close()
			for _, n := range old {
				conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)")
			}
		}
		build := name + "_build"
		conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)")
		if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+build); err != nil {
			t.Fatalf("dbtest: creating template: %v", err)
		}
		d, err := db.Open(ctx, db.Target{Engine: db.Postgres, URL: withDatabase(t, admin, build)})
		if err != nil {
			t.Fatalf("dbtest: opening template: %v", err)
		}
		if _, err := d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil {
			d.Close()
			t.Fatalf("dbtest: migrating template: %v", err)
		}
		d.Close()
		// Rename only when complete, so a crash never leaves a half-built
		// template under the real name.
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS '%d'", build, time.Now().Unix())); err != nil {
			t.Fatalf("dbtest: dating template: %v", err)
		}
		if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+build+" RENAME TO "+name); err != nil {
			t.Fatalf("dbtest: finishing template: %v", err)
		}
	}
	templateName = name
	return name
}

func migrationsHash(t testing.TB) string {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, "postgres", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatalf("dbtest: hashing migrations: %v", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func withDatabase(t testing.TB, admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("dbtest: %s: %v", PostgresURLEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}
