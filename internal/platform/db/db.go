// Package db opens Slipway's database (SQLite or PostgreSQL), holds the small
// Dialect that covers where the engines differ, runs transactions and
// migrations. SQL text is shared by both engines: write $1…$N placeholders.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// DB is an open database: a writer pool and a reader pool. On PostgreSQL both
// are the same pool; on SQLite the writer has exactly one connection (SQLite
// has one writer at a time, so queuing in Go beats SQLITE_BUSY retries) and
// readers are query-only connections that run in parallel under WAL.
type DB struct {
	Target  Target
	W       *sql.DB
	R       *sql.DB
	Dialect Dialect

	// readStmts caches prepared statements on R by query text.
	readStmts sync.Map
	// writeStmts caches prepared statements on W by query text (SQLite:
	// transactions use them, see Tx.stmt), up to maxWriteStmts of them.
	writeStmts sync.Map
	writeCount atomic.Int64

	batch batcher
}

// maxWriteStmts bounds the statements kept prepared for transactions; a
// query text beyond it runs unprepared.
const maxWriteStmts = 1024

// Engine reports which engine this database runs on.
func (d *DB) Engine() Engine { return d.Target.Engine }

// sqlitePragmas are applied to every SQLite connection (DESIGN §4).
var sqlitePragmas = []string{
	"busy_timeout(10000)",
	"journal_mode(WAL)",
	"synchronous(NORMAL)",
	"foreign_keys(ON)",
	"temp_store(MEMORY)",
}

func sqliteDSN(path string, writer bool) string {
	q := url.Values{}
	for _, p := range sqlitePragmas {
		q.Add("_pragma", p)
	}
	q.Set("_time_format", "sqlite")
	if writer {
		// auto_vacuum only takes effect on a new file; the driver applies it
		// before anything materialises the first page.
		q.Set("_auto_vacuum", "INCREMENTAL")
		q.Set("_txlock", "immediate")
	} else {
		q.Set("_txlock", "deferred")
		q.Add("_pragma", "query_only(1)")
	}
	return path + "?" + q.Encode()
}

// Open connects to the target and checks that it answers. For SQLite it
// creates the file's directory.
func Open(ctx context.Context, t Target) (*DB, error) {
	switch t.Engine {
	case SQLite:
		return openSQLite(ctx, t)
	case Postgres:
		return openPostgres(ctx, t)
	}
	return nil, fmt.Errorf("db: unknown engine %q", t.Engine)
}

func openSQLite(ctx context.Context, t Target) (*DB, error) {
	if dir := filepath.Dir(t.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("db: creating %s: %w", dir, err)
		}
	}
	w, err := openTraced("sqlite", sqliteDSN(t.Path, true))
	if err != nil {
		return nil, fmt.Errorf("db: open sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The writer must open first: it switches a new file to WAL before any
	// reader connects.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("db: open sqlite %s: %w", t.Path, err)
	}
	r, err := openTraced("sqlite", sqliteDSN(t.Path, false))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("db: open sqlite readers: %w", err)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(5 * time.Minute)
	return &DB{Target: t, W: w, R: r, Dialect: sqliteDialect{}}, nil
}

// DefaultPoolSize is how many connections one process opens to
// PostgreSQL unless told otherwise (Target.PoolSize): twice its CPUs, at
// least 4, as for SQLite's readers. A hub cannot drive more queries at once
// than its CPUs can answer, and more connections only add backends that
// compete for the database's cores: with 24 on a two-core machine running
// server and database, 1 % of list requests waited 50-130 ms for the
// scheduler (p99); with 4, p99 was 6 ms at a higher rate. Requests beyond
// the pool wait in it, in Go, which is cheap.
func DefaultPoolSize() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

func openPostgres(ctx context.Context, t Target) (*DB, error) {
	p, err := openTraced("pgx", t.URL)
	if err != nil {
		return nil, fmt.Errorf("db: open postgres: %w", err)
	}
	// As many idle connections as open ones: with fewer, every burst above
	// the idle count closes sessions on release and opens new ones on the
	// next burst (a PostgreSQL backend costs milliseconds to start).
	n := t.PoolSize
	if n <= 0 {
		n = DefaultPoolSize()
	}
	p.SetMaxOpenConns(n)
	p.SetMaxIdleConns(n)
	p.SetConnMaxIdleTime(5 * time.Minute)
	p.SetConnMaxLifetime(time.Hour)
	if err := p.PingContext(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("db: connect to %s: %w", t, err)
	}
	return &DB{Target: t, W: p, R: p, Dialect: postgresDialect{}}, nil
}

// QueryRowPrepared runs a read through a statement prepared once per query
// text and reused. It is for hot paths (the session lookup runs on every
// request): SQLite otherwise parses and plans the SQL on every call, which
// costs more than running it.
func (d *DB) QueryRowPrepared(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := d.prepared(ctx, query)
	if err != nil {
		// Fall back to an unprepared query; its error (if any) surfaces on Scan.
		return d.R.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// QueryPrepared is QueryRowPrepared for many rows (hot list endpoints).
// Query texts must come from a bounded set (filters and sort keys choose
// among fixed fragments; values are arguments): each is kept prepared.
func (d *DB) QueryPrepared(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := d.prepared(ctx, query)
	if err != nil {
		return d.R.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

func (d *DB) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := d.readStmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := d.R.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := d.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// ReadTx runs fn's reads over one consistent snapshot (what a view made of
// several rows needs: a run and its node runs, say, as one commit left
// them). SQLite's read transactions are snapshots; PostgreSQL's need
// REPEATABLE READ.
func (d *DB) ReadTx(ctx context.Context, fn func(q Queryer) error) error {
	opts := &sql.TxOptions{}
	if d.Target.Engine == Postgres {
		opts.Isolation, opts.ReadOnly = sql.LevelRepeatableRead, true
	}
	tx, err := d.R.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("db: begin read: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // nothing was written
	return fn(tx)
}

// Ping checks that the database answers (readiness).
func (d *DB) Ping(ctx context.Context) error {
	return d.R.PingContext(ctx)
}

// Close closes both pools.
func (d *DB) Close() error {
	for _, m := range []*sync.Map{&d.readStmts, &d.writeStmts} {
		m.Range(func(_, st any) bool {
			st.(*sql.Stmt).Close()
			return true
		})
	}
	if d.R != d.W {
		return errors.Join(d.R.Close(), d.W.Close())
	}
	return d.W.Close()
}

// Queryer is what stores need to run SQL: a pool or a transaction.
type Queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Tx is a write transaction. AfterCommit queues work that must only happen
// once the transaction's effects are visible to others (waking a worker,
// invalidating a cache): it runs after a successful commit, never after a
// rollback.
type Tx struct {
	db    *DB
	after []func()

	sqlTx  *sql.Tx   // SQLite: database/sql's transaction on the writer
	conn   *sql.Conn // PostgreSQL: the connection the transaction runs on
	begun  bool      // PostgreSQL: BEGIN went out (it travels with the first statements)
	later  []later   // statements queued by Later
	broken error     // a queued statement failed: the transaction cannot commit
}

// stmt returns the transaction's use of a statement prepared once on the
// writer pool for query, or nil to run it unprepared. Only on SQLite, which
// otherwise parses and plans every statement on every call (more than most
// statements cost to run); pgx caches prepared statements per connection
// by itself.
func (tx *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	if tx.db == nil || tx.db.Target.Engine != SQLite {
		return nil
	}
	st, ok := tx.db.writeStmts.Load(query)
	if !ok {
		// Prepared after the commit: the writer pool's one connection is
		// this transaction's until then. This run goes unprepared.
		if tx.db.writeCount.Load() < maxWriteStmts {
			d := tx.db
			tx.AfterCommit(func() { d.prepareWrite(query) })
		}
		return nil
	}
	// Bound to the transaction (closed with it); it reuses the statement
	// already prepared on the transaction's connection.
	return tx.sqlTx.StmtContext(ctx, st.(*sql.Stmt))
}

// prepareWrite prepares a transaction's statement on the writer pool.
func (d *DB) prepareWrite(query string) {
	if _, ok := d.writeStmts.Load(query); ok || d.writeCount.Load() >= maxWriteStmts {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := d.W.PrepareContext(ctx, query)
	if err != nil {
		return // it keeps running unprepared, and reports its own errors
	}
	if _, loaded := d.writeStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return
	}
	d.writeCount.Add(1)
}

// ExecContext runs a statement in the transaction.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := tx.ready(ctx); err != nil {
		return nil, err
	}
	if tx.conn != nil {
		return tx.conn.ExecContext(ctx, query, args...)
	}
	if st := tx.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return tx.sqlTx.ExecContext(ctx, query, args...)
}

// QueryContext runs a query in the transaction.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := tx.ready(ctx); err != nil {
		return nil, err
	}
	if tx.conn != nil {
		return tx.conn.QueryContext(ctx, query, args...)
	}
	if st := tx.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.sqlTx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a one-row query in the transaction. When statements
// queued by Later failed before it, it does not run: its row reports an
// error (context.Canceled, as *sql.Row can carry no other), and the
// transaction refuses to commit and returns their error.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if tx.ready(ctx) != nil {
		// Kept in tx.broken. Never run it outside the transaction (a
		// PostgreSQL BEGIN that failed): a cancelled context fails it.
		done, cancel := context.WithCancel(ctx)
		cancel()
		ctx = done
	}
	if tx.conn != nil {
		return tx.conn.QueryRowContext(ctx, query, args...)
	}
	if st := tx.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.sqlTx.QueryRowContext(ctx, query, args...)
}

// AfterCommit runs fn after the transaction commits.
func (tx *Tx) AfterCommit(fn func()) { tx.after = append(tx.after, fn) }

// Tx runs fn in a write transaction: committed when fn returns nil, rolled
// back when it returns an error or panics. On SQLite the transaction starts
// IMMEDIATE, so it holds the write lock from the start and never fails late
// with SQLITE_BUSY on upgrade.
func (d *DB) Tx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	tx, err := d.beginOn(ctx)
	if err != nil {
		return fmt.Errorf("db: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			tx.rollback() // the panic is what matters
			tx.end()
			panic(p)
		}
		if err != nil {
			tx.rollback() // fn's error is what matters; a failed rollback ends with the connection
		}
		tx.end()
	}()
	if err = fn(tx); err != nil {
		if tx.broken != nil {
			return tx.broken // what made fn's statements fail
		}
		return err
	}
	if err = tx.commit(ctx); err != nil {
		return err
	}
	for _, f := range tx.after {
		f()
	}
	return nil
}
