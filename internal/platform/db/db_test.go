package db_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/migrations"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw     string
		want    db.Target
		wantErr string
	}{
		{"", db.Target{Engine: db.SQLite, Path: "data/slipway.db"}, ""},
		{"postgres://u:p@h/db", db.Target{Engine: db.Postgres, URL: "postgres://u:p@h/db"}, ""},
		{"postgresql://h/db?sslmode=disable", db.Target{Engine: db.Postgres, URL: "postgresql://h/db?sslmode=disable"}, ""},
		{"sqlite:/abs/x.db", db.Target{Engine: db.SQLite, Path: "/abs/x.db"}, ""},
		{"sqlite:///abs/x.db", db.Target{Engine: db.SQLite, Path: "/abs/x.db"}, ""},
		{"file:rel.db", db.Target{Engine: db.SQLite, Path: "rel.db"}, ""},
		{"mysql://h/db", db.Target{}, `unsupported scheme "mysql"`},
		{"x.db", db.Target{}, `unsupported scheme "(none)"`},
		{"sqlite:x.db?cache=shared", db.Target{}, "path only"},
		{"sqlite:", db.Target{}, "needs a file path"},
	}
	for _, tt := range tests {
		got, err := db.ParseURL(tt.raw, "data")
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseURL(%q) err = %v, want %q", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tt.raw, got, err, tt.want)
		}
	}
}

func TestTargetStringHidesPassword(t *testing.T) {
	s := db.Target{Engine: db.Postgres, URL: "postgres://app:hunter2@db:5432/x"}.String()
	if strings.Contains(s, "hunter2") || !strings.Contains(s, "app:xxxxx@db") {
		t.Fatalf("String() = %q", s)
	}
}

func TestMigrateFreshAndAgain(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.Empty(t, e)
		m := d.NewMigrations(migrations.FS, nil)

		st, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Applied) != 0 || len(st.Pending) == 0 {
			t.Fatalf("fresh status: %+v", st)
		}
		if _, err := m.Verify(ctx); err == nil || !strings.Contains(err.Error(), "SERVICE_SKIP_BOOT_MIGRATIONS") ||
			!strings.Contains(err.Error(), "1 (00001_instance.sql)") {
			t.Fatalf("Verify on an empty database = %v", err)
		}
		// Status and Verify only read: the version table still does not exist.
		if tableExists(t, d, db.VersionTable) {
			t.Fatal("Status/Verify created the version table")
		}

		applied, err := m.Up(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != len(st.Pending) {
			t.Fatalf("applied %v, pending were %v", applied, st.Pending)
		}
		again, err := m.Up(ctx)
		if err != nil || len(again) != 0 {
			t.Fatalf("second Up applied %v, err %v", again, err)
		}
		st, err = m.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Pending) != 0 || len(st.Applied) != len(applied) || st.Applied[0].AppliedAt.Location() != time.UTC {
			t.Fatalf("status after up: %+v", st)
		}
		if since := time.Since(st.Applied[0].AppliedAt); since < -time.Minute || since > time.Minute {
			t.Fatalf("applied_at %v is not about now (UTC)", st.Applied[0].AppliedAt)
		}
	})
}

// withExtra is the real migrations plus one numbered above them all, as a
// newer binary would ship.
func withExtra(t *testing.T) fstest.MapFS {
	fsys := fstest.MapFS{}
	for _, e := range []string{"sqlite", "postgres"} {
		entries, err := migrations.FS.ReadDir(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			b, err := migrations.FS.ReadFile(e + "/" + en.Name())
			if err != nil {
				t.Fatal(err)
			}
			fsys[e+"/"+en.Name()] = &fstest.MapFile{Data: b}
		}
		fsys[e+"/99999_extra.sql"] = &fstest.MapFile{Data: []byte("-- +goose Up\nCREATE TABLE extra (id TEXT PRIMARY KEY);\n-- +goose Down\nDROP TABLE extra;\n")}
	}
	return fsys
}

func realCount(t *testing.T) int {
	entries, err := migrations.FS.ReadDir("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestVerifyMissingAndNewer(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e) // has migration 1

		// A binary that knows migration 2 refuses this database, naming it.
		newer := d.NewMigrations(withExtra(t), nil)
		_, err := newer.Verify(ctx)
		if err == nil || !strings.Contains(err.Error(), "99999 (99999_extra.sql)") || strings.Contains(err.Error(), "1 (") {
			t.Fatalf("Verify with a missing migration = %v", err)
		}

		// Once the newer binary migrated, the older binary accepts the
		// database and reports the unknown version.
		if _, err := newer.Up(ctx); err != nil {
			t.Fatal(err)
		}
		st, err := d.NewMigrations(migrations.FS, nil).Verify(ctx)
		if err != nil {
			t.Fatalf("older binary refused a newer database: %v", err)
		}
		if len(st.Newer) != 1 || st.Newer[0] != 99999 {
			t.Fatalf("Newer = %v", st.Newer)
		}
		// And applying its own migrations is a no-op, not an error.
		if applied, err := d.NewMigrations(migrations.FS, nil).Up(ctx); err != nil || len(applied) != 0 {
			t.Fatalf("older binary Up = %v, %v", applied, err)
		}
	})
}

// Two replicas booting together migrate once.
func TestConcurrentMigrationsRunOnce(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		if e == db.SQLite {
			t.Skip("one process owns a SQLite file; the PostgreSQL lock is what is under test")
		}
		ctx := context.Background()
		target := dbtest.EmptyTarget(t, e)
		var wg sync.WaitGroup
		results := make([][]db.Migration, 4)
		errs := make([]error, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := db.Open(ctx, target)
				if err != nil {
					errs[i] = err
					return
				}
				defer d.Close()
				results[i], errs[i] = d.NewMigrations(withExtra(t), nil).Up(ctx)
			}()
		}
		wg.Wait()
		total := 0
		for i := range results {
			if errs[i] != nil {
				t.Fatalf("replica %d: %v", i, errs[i])
			}
			total += len(results[i])
		}
		if want := realCount(t) + 1; total != want {
			t.Fatalf("replicas applied %d migrations in all, want %d (each once)", total, want)
		}
	})
}

func TestTx(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		now := time.Now().UTC().Truncate(time.Microsecond)
		insert := func(q db.Queryer, key string) error {
			_, err := q.ExecContext(ctx, "INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3)", key, "v", now)
			return err
		}
		count := func() int {
			var n int
			if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM instance_meta").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		boom := errors.New("boom")
		err := d.Tx(ctx, func(tx *db.Tx) error {
			if err := insert(tx, "a"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || count() != 0 {
			t.Fatalf("rolled-back tx: err=%v rows=%d", err, count())
		}

		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic was swallowed")
				}
			}()
			d.Tx(ctx, func(tx *db.Tx) error {
				insert(tx, "p")
				panic("in tx")
			})
		}()
		if count() != 0 {
			t.Fatal("panicking tx left a row")
		}

		// After-commit work runs once the commit is visible, and never after
		// a rollback.
		var seen []int
		if err := d.Tx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { seen = append(seen, count()) })
			return insert(tx, "b")
		}); err != nil || count() != 1 {
			t.Fatalf("committed tx: err=%v rows=%d", err, count())
		}
		if len(seen) != 1 || seen[0] != 1 {
			t.Fatalf("after-commit hook saw %v, want one call seeing the committed row", seen)
		}
		_ = d.Tx(ctx, func(tx *db.Tx) error {
			tx.AfterCommit(func() { t.Error("after-commit hook ran after a rollback") })
			return boom
		})

		// A duplicate key is recognised as a unique violation on both engines.
		err = d.Tx(ctx, func(tx *db.Tx) error { return insert(tx, "b") })
		if err == nil || !d.Dialect.IsUniqueViolation(err) {
			t.Fatalf("duplicate insert: %v (unique=%v)", err, err != nil && d.Dialect.IsUniqueViolation(err))
		}
		if d.Dialect.IsUniqueViolation(boom) {
			t.Fatal("any error reported as unique violation")
		}
	})
}

func TestTimesRoundTripInUTC(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		// Drivers hand times back in time.Local; make that visibly not UTC.
		local := time.Local
		time.Local = time.FixedZone("UTC-7", -7*3600)
		t.Cleanup(func() { time.Local = local })
		// A time in a non-UTC zone goes in; the same instant comes back in UTC.
		berlin := time.FixedZone("CET", 3600)
		in := time.Date(2026, 3, 29, 1, 30, 15, 123456000, berlin)
		if _, err := d.W.ExecContext(ctx, "INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, $2, $3)", "t", "v", in.UTC()); err != nil {
			t.Fatal(err)
		}
		var out time.Time
		if err := d.R.QueryRowContext(ctx, "SELECT updated_at FROM instance_meta WHERE key = $1", "t").Scan(db.UTC(&out)); err != nil {
			t.Fatal(err)
		}
		if !out.Equal(in) || out.Location() != time.UTC {
			t.Fatalf("got %v (%v), want %v in UTC", out, out.Location(), in)
		}
		// A computed column (no declared type on SQLite) also scans.
		var max time.Time
		if err := d.R.QueryRowContext(ctx, "SELECT MAX(updated_at) FROM instance_meta").Scan(db.UTC(&max)); err != nil {
			t.Fatal(err)
		}
		if !max.Equal(in) {
			t.Fatalf("MAX = %v, want %v", max, in)
		}
		var none *time.Time
		if err := d.R.QueryRowContext(ctx, "SELECT MAX(updated_at) FROM instance_meta WHERE key = 'nope'").Scan(db.NullUTC(&none)); err != nil || none != nil {
			t.Fatalf("NULL scan = %v, %v", none, err)
		}
	})
}

func TestDialectILikeAndLocks(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		now := time.Now().UTC()
		for _, k := range []string{"Alpha_One", "alphaXone", "beta"} {
			if _, err := d.W.ExecContext(ctx, "INSERT INTO instance_meta (key, value, updated_at) VALUES ($1, 'v', $2)", k, now); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		q := "SELECT COUNT(*) FROM instance_meta WHERE " + d.Dialect.ILike("key", "$1")
		if err := d.R.QueryRowContext(ctx, q, "%"+db.EscapeLike("ALPHA_")+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("escaped case-insensitive match found %d rows, want 1", n)
		}

		release, ok, err := d.Dialect.TryLock(ctx, d, "sweep")
		if err != nil || !ok {
			t.Fatalf("first TryLock: ok=%v err=%v", ok, err)
		}
		if _, ok2, err := d.Dialect.TryLock(ctx, d, "sweep"); err != nil || ok2 {
			t.Fatalf("second TryLock while held: ok=%v err=%v", ok2, err)
		}
		if r3, ok3, err := d.Dialect.TryLock(ctx, d, "other"); err != nil || !ok3 {
			t.Fatalf("a different lock: ok=%v err=%v", ok3, err)
		} else {
			r3()
		}
		release()
		r4, ok4, err := d.Dialect.TryLock(ctx, d, "sweep")
		if err != nil || !ok4 {
			t.Fatalf("TryLock after release: ok=%v err=%v", ok4, err)
		}
		r4()
	})
}

func TestSQLitePragmasAndReaders(t *testing.T) {
	ctx := context.Background()
	d := dbtest.New(t, db.SQLite)
	pragma := func(pool *sql.DB, name string) string {
		var v string
		if err := pool.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, pool := range []*sql.DB{d.W, d.R} {
		for name, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "10000", "synchronous": "1", "temp_store": "2"} {
			if got := pragma(pool, name); got != want {
				t.Errorf("PRAGMA %s = %s, want %s", name, got, want)
			}
		}
	}
	if got := pragma(d.W, "auto_vacuum"); got != "2" {
		t.Errorf("auto_vacuum = %s, want 2 (incremental)", got)
	}
	if _, err := d.R.ExecContext(ctx, "INSERT INTO instance_meta (key, value, updated_at) VALUES ('x', 'y', CURRENT_TIMESTAMP)"); err == nil {
		t.Fatal("the reader pool accepted a write")
	}
	if d.W.Stats().MaxOpenConnections != 1 {
		t.Fatalf("writer pool allows %d connections", d.W.Stats().MaxOpenConnections)
	}
}

func tableExists(t *testing.T, d *db.DB, name string) bool {
	t.Helper()
	q := "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = $1"
	if d.Engine() == db.Postgres {
		q = "SELECT to_regclass($1) IS NOT NULL"
	}
	var ok bool
	if err := d.R.QueryRowContext(context.Background(), q, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestTimeTextForms(t *testing.T) {
	want := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-11-23 10:04:05.123456789+00:00", want("2026-11-23T10:04:05.123456789Z"), true},
		{"2026-11-23 10:04:05.5+00:00", want("2026-11-23T10:04:05.5Z"), true},
		{"2026-11-23 10:04:05+00:00", want("2026-11-23T10:04:05Z"), true},
		{"2026-11-23T10:04:05Z", want("2026-11-23T10:04:05Z"), true},
		{"2026-11-23 10:04:05", want("2026-11-23T10:04:05Z"), true},
		{"2026-11-23 12:04:05+02:00", want("2026-11-23T10:04:05Z"), true}, // another offset: the generic path
		{"2026-11-23", want("2026-11-23T00:00:00Z"), true},
		{"2026-02-31 10:04:05+00:00", time.Time{}, false},
		{"2026-13-01 10:04:05+00:00", time.Time{}, false},
		{"2026-11-23 10:04:05.+00:00", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	} {
		var got time.Time
		err := db.UTC(&got).Scan(c.in)
		if c.ok != (err == nil) || (c.ok && (!got.Equal(c.want) || got.Location() != time.UTC)) {
			t.Errorf("%q: got %v (%v), err %v; want %v ok=%v", c.in, got, got.Location(), err, c.want, c.ok)
		}
	}
}

func TestPostgresPoolSize(t *testing.T) {
	target := dbtest.EmptyTarget(t, db.Postgres)
	for _, c := range []struct{ set, want int }{{0, db.DefaultPoolSize()}, {3, 3}} {
		target.PoolSize = c.set
		d, err := db.Open(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.W.Stats().MaxOpenConnections; got != c.want {
			t.Errorf("PoolSize %d: %d connections allowed, want %d", c.set, got, c.want)
		}
		d.Close()
	}
	if db.DefaultPoolSize() < 4 {
		t.Fatalf("default pool of %d", db.DefaultPoolSize())
	}
}
