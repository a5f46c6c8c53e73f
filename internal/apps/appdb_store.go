package apps

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sqlite "modernc.org/sqlite"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/resources"
)

// An app's own database, where its migrations run and its backend
// functions read and write: on SQLite a database file per app beside
// Slipway's, on PostgreSQL a schema per app in Slipway's database owned by
// a login role of the app's own. Tenant SQL never runs on a connection of
// Slipway's: on PostgreSQL it runs as the app's role (no rights on any
// other schema's tables; RESET ROLE leads nowhere, the session is the
// app's), on SQLite on a connection of the app's file that cannot attach
// another file, with statements that change the connection refused.

// Bounds of an app database.
const (
	// MaxSQLBytes bounds a migration's or a function's SQL.
	MaxSQLBytes = 100 << 10
	// migrationTimeout bounds one migration.
	migrationTimeout = 60 * time.Second
	// sqliteMaxPages bounds an app's SQLite file (4 KiB pages: 256 MiB).
	sqliteMaxPages = 65536
	// sqliteMaxValue bounds one value (a string or a blob) in SQLite.
	sqliteMaxValue = 16 << 20
	// pgConnsPerApp bounds one app's connections from one server (its role
	// allows 16 in all, for several replicas).
	pgConnsPerApp = 4
	// maxOpenApps bounds the apps whose databases one server keeps open
	// (PostgreSQL pools, SQLite files): the least recently used closes, so
	// many apps cannot exhaust the database's connections or the process's
	// files.
	maxOpenApps = 32
)

// SQLite's sqlite3_limit categories.
const (
	sqliteLimitLength    = 0
	sqliteLimitSQLLength = 1
	sqliteLimitAttached  = 7
)

// appDatabases opens and provisions apps' databases.
type appDatabases struct {
	engine  db.Engine
	dir     string // SQLite: where the files go
	url     string // PostgreSQL: Slipway's database
	secret  []byte // derives each app role's password
	mu      sync.Mutex
	sqlites map[string]*sqliteApp
	pools   map[string]*pgxpool.Pool
	used    map[string]time.Time // when each open app was last used
	// locks serialise the migrations of one app on this server (the
	// database's own record makes them idempotent across servers).
	locks map[string]*sync.Mutex
}

func newAppDatabases(d *db.DB, secret []byte) *appDatabases {
	a := &appDatabases{engine: d.Engine(), secret: secret, sqlites: map[string]*sqliteApp{}, pools: map[string]*pgxpool.Pool{}, used: map[string]time.Time{},
		locks: map[string]*sync.Mutex{}}
	if a.engine == db.SQLite {
		a.dir = filepath.Join(filepath.Dir(d.Target.Path), "apps")
	} else {
		a.url = d.Target.URL
	}
	return a
}

func (a *appDatabases) lock(appID string) *sync.Mutex {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.locks[appID]
	if m == nil {
		m = &sync.Mutex{}
		a.locks[appID] = m
	}
	return m
}

// pgName is the app's schema and role: app_ and the id's hex digits.
func pgName(appID string) string { return "app_" + strings.ReplaceAll(appID, "-", "") }

// password is the app role's password, derived from the instance secret.
func (a *appDatabases) password(appID string) string {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte("app-database:" + appID))
	return hex.EncodeToString(m.Sum(nil))
}

// Statement is one statement of a backend function.
type Statement struct {
	SQL     string
	Args    []any
	Write   bool // execute: rows_affected out
	MaxRows int
	Timeout time.Duration
}

// provision makes the app's database if it is not there.
func (a *appDatabases) provision(ctx context.Context, appID string) error {
	if a.engine == db.SQLite {
		_, err := a.sqlite(appID)
		return err
	}
	admin, err := pgx.Connect(ctx, a.url)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	name := pgName(appID)
	return pgx.BeginFunc(ctx, admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('slipway_app_db', 0))"); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", name).Scan(&exists); err != nil {
			return err
		}
		verb := "CREATE"
		if exists {
			verb = "ALTER"
		}
		// name is app_ and hex digits, the password hex digits: both may be
		// written into DDL, which takes no parameters.
		for _, s := range []string{
			verb + " ROLE " + name + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 16 PASSWORD '" + a.password(appID) + "'",
			"CREATE SCHEMA IF NOT EXISTS " + name + " AUTHORIZATION " + name,
			"ALTER ROLE " + name + " SET search_path = " + name,
			"ALTER ROLE " + name + " SET statement_timeout = '60s'",
			"ALTER ROLE " + name + " SET idle_in_transaction_session_timeout = '60s'",
		} {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// drop removes the app's database.
func (a *appDatabases) drop(ctx context.Context, appID string) error {
	a.mu.Lock()
	if s := a.sqlites[appID]; s != nil {
		s.close()
		delete(a.sqlites, appID)
	}
	if p := a.pools[appID]; p != nil {
		p.Close()
		delete(a.pools, appID)
	}
	delete(a.used, appID)
	a.mu.Unlock()
	if a.engine == db.SQLite {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(a.sqlitePath(appID) + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}
	admin, err := pgx.Connect(ctx, a.url)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	name := pgName(appID)
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", name).Scan(&exists); err != nil || !exists {
		return err
	}
	for _, s := range []string{
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + name + "'",
		"DROP SCHEMA IF EXISTS " + name + " CASCADE",
		"DROP OWNED BY " + name,
		"DROP ROLE IF EXISTS " + name,
	} {
		if _, err := admin.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// pool is the app's connection pool on PostgreSQL, as its role.
func (a *appDatabases) pool(ctx context.Context, appID string) (*pgxpool.Pool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.pools[appID]; p != nil {
		a.used[appID] = time.Now()
		return p, nil
	}
	a.evict()
	cfg, err := pgxpool.ParseConfig(a.url)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.User = pgName(appID)
	cfg.ConnConfig.Password = a.password(appID)
	cfg.ConnConfig.RuntimeParams["search_path"] = pgName(appID)
	cfg.MaxConns = pgConnsPerApp
	cfg.MaxConnIdleTime = 5 * time.Minute
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.pools[appID] = p
	a.used[appID] = time.Now()
	return p, nil
}

// evict closes the least recently used app's database when maxOpenApps
// are open (under a.mu; the closing happens beside, so a call still using
// it finishes first on SQLite).
func (a *appDatabases) evict() {
	if len(a.used) < maxOpenApps {
		return
	}
	var oldest string
	for id, t := range a.used {
		if oldest == "" || t.Before(a.used[oldest]) {
			oldest = id
		}
	}
	delete(a.used, oldest)
	if s := a.sqlites[oldest]; s != nil {
		delete(a.sqlites, oldest)
		go s.close()
	}
	if p := a.pools[oldest]; p != nil {
		delete(a.pools, oldest)
		go p.Close()
	}
}

// appliedTable records, inside the app's own database, the migrations
// applied to it: in the migration's own transaction, so the record and the
// change never part.
const appliedTable = "_slipway_migrations"

// migrate applies one migration unless the app's database records it,
// in a transaction of its own with its own time limit.
func (a *appDatabases) migrate(ctx context.Context, appID string, m migrationRef, sqlText string) error {
	ctx, cancel := context.WithTimeout(ctx, migrationTimeout)
	defer cancel()
	if a.engine == db.SQLite {
		if kw := sqliteForbidden(sqlText); kw != "" {
			return apperr.BadRequest("migration %s: %s statements are not allowed in an app's database", m.Name, kw)
		}
		s, err := a.sqlite(appID)
		if err != nil {
			return err
		}
		return s.tx(ctx, func(c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+appliedTable+" (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)"); err != nil {
				return err
			}
			var n int
			if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+appliedTable+" WHERE name = ?", m.Name).Scan(&n); err != nil || n > 0 {
				return err
			}
			if _, err := c.ExecContext(ctx, sqlText); err != nil {
				return migrationError(m, err)
			}
			_, err := c.ExecContext(ctx, "INSERT INTO "+appliedTable+" (name, checksum, applied_at) VALUES (?, ?, ?)", m.Name, m.Checksum, time.Now().UTC().Format(time.RFC3339Nano))
			return err
		})
	}
	p, err := a.pool(ctx, appID)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+appliedTable+" (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+appliedTable); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM "+appliedTable+" WHERE name = $1", m.Name).Scan(&n); err != nil || n > 0 {
			return err
		}
		// The simple protocol: a migration may hold several statements.
		if _, err := tx.Exec(ctx, sqlText, pgx.QueryExecModeSimpleProtocol); err != nil {
			return migrationError(m, err)
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+appliedTable+" (name, checksum) VALUES ($1, $2)", m.Name, m.Checksum)
		return err
	})
}

// migrationError is a migration's own failure: the tenant's SQL, in the
// database's words, as a 400.
func migrationError(m migrationRef, err error) error {
	return apperr.BadRequest("migration %s failed: %v", m.Name, err)
}

// run runs one statement of a backend function: read-only for a query.
func (a *appDatabases) run(ctx context.Context, appID string, st Statement) (any, error) {
	if len(st.SQL) > MaxSQLBytes {
		return nil, apperr.BadRequest("the statement is too long")
	}
	ctx, cancel := context.WithTimeout(ctx, st.Timeout)
	defer cancel()
	if a.engine == db.SQLite {
		if kw := sqliteForbidden(st.SQL); kw != "" {
			return nil, apperr.BadRequest("%s statements are not allowed in an app's database", kw)
		}
		s, err := a.sqlite(appID)
		if err != nil {
			return nil, err
		}
		var out any
		if !st.Write {
			// Reads: one statement on the read-only connection (WAL lets
			// it read beside a write).
			err = s.read(ctx, func(c *sql.Conn) error {
				rows, err := c.QueryContext(ctx, st.SQL, st.Args...)
				if err != nil {
					return err
				}
				defer rows.Close()
				out, err = collectSQL(rows, st.MaxRows)
				return err
			})
			return out, err
		}
		err = s.tx(ctx, func(c *sql.Conn) error {
			res, err := c.ExecContext(ctx, st.SQL, st.Args...)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			out = map[string]any{"rows_affected": n}
			return nil
		})
		return out, err
	}
	p, err := a.pool(ctx, appID)
	if err != nil {
		return nil, err
	}
	// One round trip: BEGIN (read-only for a query), the time limit, the
	// statement and COMMIT, pipelined (the db_query node's path).
	return resources.RunStatement(ctx, p, resources.Statement{SQL: st.SQL, Params: st.Args, Write: st.Write, MaxRows: st.MaxRows, Timeout: st.Timeout})
}

// The SQLite side.

func (a *appDatabases) sqlitePath(appID string) string {
	return filepath.Join(a.dir, strings.ReplaceAll(appID, "-", "")+".db")
}

// sqliteApp is one app's SQLite file through one connection, held with
// its limits set (sqlite3_limit is per connection): no attached files,
// values of at most 16 MiB.
type sqliteApp struct {
	mu   sync.Mutex
	db   *sql.DB
	conn *sql.Conn
	// The read-only connection (query_only set when it opens; no tenant
	// statement can unset it: PRAGMA is refused).
	rmu   sync.Mutex
	rdb   *sql.DB
	rconn *sql.Conn
}

func (a *appDatabases) sqlite(appID string) (*sqliteApp, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sqlites[appID]; s != nil {
		a.used[appID] = time.Now()
		return s, nil
	}
	a.evict()
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return nil, err
	}
	dsn := "file:" + a.sqlitePath(appID) + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)" +
		fmt.Sprintf("&_pragma=max_page_count(%d)&_pragma=trusted_schema(0)&_defensive=1", sqliteMaxPages)
	d, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(1)
	rd, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		d.Close()
		return nil, err
	}
	rd.SetMaxOpenConns(1)
	s := &sqliteApp{db: d, rdb: rd}
	if err := s.open(context.Background()); err != nil {
		d.Close()
		rd.Close()
		return nil, err
	}
	a.sqlites[appID] = s
	a.used[appID] = time.Now()
	return s, nil
}

func (s *sqliteApp) open(ctx context.Context) error {
	c, err := limited(ctx, s.db)
	if err != nil {
		return err
	}
	s.conn = c
	return nil
}

// limited is a connection with an app's limits set.
func limited(ctx context.Context, d *sql.DB) (*sql.Conn, error) {
	c, err := d.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for id, v := range map[int]int{sqliteLimitAttached: 0, sqliteLimitLength: sqliteMaxValue, sqliteLimitSQLLength: MaxSQLBytes} {
		if _, err := sqlite.Limit(c, id, v); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// read runs fn on the read-only connection.
func (s *sqliteApp) read(ctx context.Context, fn func(*sql.Conn) error) error {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.rconn == nil {
		c, err := limited(ctx, s.rdb)
		if err != nil {
			return err
		}
		s.rconn = c
	}
	err := fn(s.rconn)
	if err != nil && ctx.Err() != nil {
		// Interrupted: start the next read on a fresh connection.
		s.rconn.Close()
		s.rconn = nil
	}
	return err
}

// tx runs fn in a transaction on the app's connection.
func (s *sqliteApp) tx(ctx context.Context, fn func(*sql.Conn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		if err := s.open(ctx); err != nil {
			return err
		}
	}
	if _, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		s.reset()
		return err
	}
	if err := fn(s.conn); err != nil {
		if _, rerr := s.conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
			s.reset()
		}
		return err
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		s.conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	return nil
}

// reset drops a connection in an unknown state; the next use opens one
// with the limits set again.
func (s *sqliteApp) reset() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

func (s *sqliteApp) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
	s.db.Close()
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.rconn != nil {
		s.rconn.Close()
	}
	s.rdb.Close()
}

// sqliteForbidden names the first statement keyword an app may not use on
// SQLite ("" for none): PRAGMA (it changes the connection: its limits,
// query_only), ATTACH and DETACH (other files), VACUUM (VACUUM INTO writes
// a file anywhere). Quoted strings, quoted identifiers and comments are
// skipped; a word is compared case-insensitively.
func sqliteForbidden(q string) string {
	n := len(q)
	for i := 0; i < n; {
		c := q[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < n {
				if q[j] == c {
					if j+1 < n && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
		case c == '[':
			j := strings.IndexByte(q[i:], ']')
			if j < 0 {
				return ""
			}
			i += j + 1
		case c == '-' && i+1 < n && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				return ""
			}
			i += j + 1
		case c == '/' && i+1 < n && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return ""
			}
			i += j + 4
		case isWordStart(c):
			j := i + 1
			for j < n && isWordByte(q[j]) {
				j++
			}
			switch w := strings.ToUpper(q[i:j]); w {
			case "PRAGMA", "ATTACH", "DETACH", "VACUUM":
				return w
			}
			i = j
		default:
			i++
		}
	}
	return ""
}

func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isWordByte(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' || c == '$' }

// maxResultBytes bounds a result's JSON; rows past it are cut off.
const maxResultBytes = 1 << 20

// collectPG reads up to max rows as objects of JSON values (PostgreSQL).
func collectPG(rows pgx.Rows, max int) (map[string]any, error) {
	return resources.Collect(rows, max)
}

// collectSQL reads up to max rows as objects of JSON values (SQLite):
// the shape the db_query node and a postgresql function answer.
func collectSQL(rows *sql.Rows, max int) (map[string]any, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	size, truncated := 0, false
	for rows.Next() {
		if len(out) == max {
			truncated = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(map[string]any, len(cols))
		for i, v := range vals {
			switch x := v.(type) {
			case []byte:
				row[cols[i]] = hex.EncodeToString(x)
			case time.Time:
				row[cols[i]] = x.UTC().Format(time.RFC3339Nano)
			default:
				row[cols[i]] = x
			}
		}
		b, _ := json.Marshal(row)
		if size += len(b); size > maxResultBytes {
			truncated = true
			break
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return map[string]any{"rows": out, "row_count": len(out), "columns": cols, "truncated": truncated}, nil
}
