package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Dialect holds what differs between the engines. Everything else is one SQL
// text for both.
type Dialect interface {
	// ILike returns a case-insensitive LIKE of expr against the placeholder
	// param (e.g. "$2"). The pattern escapes with a backslash.
	ILike(expr, param string) string
	// IsUniqueViolation reports a unique or primary-key constraint failure.
	IsUniqueViolation(err error) bool
	// TryLock takes the named cross-replica lock without waiting. It returns
	// ok=false when another holder has it; release frees it. On SQLite, which
	// has one process per database file, the lock is in-process.
	TryLock(ctx context.Context, d *DB, name string) (release func(), ok bool, err error)
	// XactLock takes the named lock until the transaction ends, so that
	// transactions taking the same name run one at a time across replicas
	// (count-based caps checked inside them hold). SQLite needs nothing: its
	// write transactions already run one at a time.
	XactLock(ctx context.Context, tx *Tx, name string) error
	// AsyncCommit lets the transaction commit without waiting for its WAL
	// to reach the disk (PostgreSQL's synchronous_commit off for this
	// transaction): what it wrote survives the process, only a crash of
	// the database host may lose the last fraction of a second of such
	// commits. SQLite's WAL at synchronous NORMAL already commits so.
	AsyncCommit(ctx context.Context, tx *Tx) error
	// SkipLocked ends a SELECT that picks rows to claim: PostgreSQL locks the
	// rows it returns and skips rows other transactions locked; SQLite's one
	// writer needs nothing.
	SkipLocked() string
	// ForUpdate ends a SELECT that locks the rows it returns until the
	// transaction ends (PostgreSQL; SQLite's one writer needs nothing).
	ForUpdate() string
	// TimeColumn selects a timestamp column for scanning with UTC/NullUTC.
	// On SQLite the column comes back as its text (which UTC parses fast)
	// instead of being parsed by the driver's general-purpose time parser,
	// a measurable share of a list request.
	TimeColumn(col string) string
	// Placeholder is the n-th (1-based) bind parameter. Shared SQL uses $n
	// everywhere; statements with hundreds of parameters (batched inserts)
	// use this instead, because SQLite looks $n names up in a list, which
	// grows quadratic with the parameter count, while plain ? costs nothing.
	Placeholder(n int) string
	// StoredJSON ends an INSERT that must hand back a JSON column as stored:
	// PostgreSQL's jsonb keeps its own key order and spacing (" RETURNING
	// id, col"); SQLite keeps the text as sent, so it needs nothing ("").
	StoredJSON(col string) string
	// JSONText is the text of a top-level key of a JSON column (NULL when
	// the key is absent or the value is JSON null); key is a constant of
	// the caller's, never input.
	JSONText(col, key string) string
}

type sqliteDialect struct{}

func (sqliteDialect) ILike(expr, param string) string {
	// SQLite's LIKE is already case-insensitive for ASCII.
	return expr + " LIKE " + param + ` ESCAPE '\'`
}

func (sqliteDialect) IsUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

var sqliteLocks sync.Map // name -> *sync.Mutex

func (sqliteDialect) TryLock(_ context.Context, _ *DB, name string) (func(), bool, error) {
	m, _ := sqliteLocks.LoadOrStore(name, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	if !mu.TryLock() {
		return nil, false, nil
	}
	return mu.Unlock, true, nil
}

func (sqliteDialect) XactLock(context.Context, *Tx, string) error { return nil }

func (sqliteDialect) AsyncCommit(context.Context, *Tx) error { return nil }

func (postgresDialect) AsyncCommit(_ context.Context, tx *Tx) error {
	tx.Later("SET LOCAL synchronous_commit = off") // with the transaction's next statement
	return nil
}

func (sqliteDialect) SkipLocked() string { return "" }

func (sqliteDialect) ForUpdate() string { return "" }

// A unary plus is a no-op on text, but the result has no declared type, so
// the driver hands the text over as it is.
func (sqliteDialect) TimeColumn(col string) string { return "+" + col }

func (sqliteDialect) Placeholder(int) string { return "?" }

func (sqliteDialect) StoredJSON(string) string { return "" }

func (sqliteDialect) JSONText(col, key string) string {
	return "json_extract(" + col + ", '$." + key + "')"
}

func (postgresDialect) JSONText(col, key string) string { return "(" + col + " ->> '" + key + "')" }

func (postgresDialect) StoredJSON(col string) string { return " RETURNING id, " + col }

func (postgresDialect) Placeholder(n int) string { return "$" + strconv.Itoa(n) }

type postgresDialect struct{}

func (postgresDialect) XactLock(ctx context.Context, tx *Tx, name string) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(name)); err != nil {
		return fmt.Errorf("db: lock %s: %w", name, err)
	}
	return nil
}

func (postgresDialect) SkipLocked() string { return " FOR UPDATE SKIP LOCKED" }

func (postgresDialect) ForUpdate() string { return " FOR UPDATE" }

func (postgresDialect) TimeColumn(col string) string { return col }

func (postgresDialect) ILike(expr, param string) string {
	return expr + " ILIKE " + param + ` ESCAPE '\'`
}

func (postgresDialect) IsUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// TryLock uses a session-level advisory lock held on a dedicated connection;
// the key is a 64-bit hash of the name.
func (postgresDialect) TryLock(ctx context.Context, d *DB, name string) (func(), bool, error) {
	conn, err := d.W.Conn(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("db: lock %s: %w", name, err)
	}
	key := lockKey(name)
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("db: lock %s: %w", name, err)
	}
	if !ok {
		conn.Close()
		return nil, false, nil
	}
	return func() {
		// Close returns the connection to the pool with its session, so after
		// a failed unlock discard it instead: ending the session releases
		// the lock. Raw reports back the ErrBadConn it is given.
		if _, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", key); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, true, nil
}

func lockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("slipway:" + name))
	return int64(h.Sum64())
}

// EscapeLike escapes LIKE wildcards in s for use with ILike.
func EscapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

var (
	_ Dialect = sqliteDialect{}
	_ Dialect = postgresDialect{}
)
