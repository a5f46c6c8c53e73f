package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/attribute"
)

// later is a statement queued by Tx.Later or run by Tx.Pipe.
type later struct {
	query string
	args  []any
	scan  func(Rows) error // nil: its rows are not read
}

// Query is a statement of Tx.Pipe; Scan (nil: none) reads its rows.
type Query struct {
	SQL  string
	Args []any
	Scan func(Rows) error
}

// Rows are a pipelined query's rows as Query.Scan reads them (database/sql's
// on SQLite, pgx's on PostgreSQL: scan destinations that implement
// sql.Scanner work with both).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Queue queues queries like Later, each with its Scan (nil: none), which
// runs when the queue does: before the transaction's next statement or its
// commit. Only what runs after that may use what the Scans read.
func (tx *Tx) Queue(qs ...Query) {
	for _, q := range qs {
		tx.later = append(tx.later, later{query: q.SQL, args: q.Args, scan: q.Scan})
	}
}

// ScanOne is a Query.Scan for a query of at most one row: it scans the row
// into dst and sets found.
func ScanOne(found *bool, dst ...any) func(Rows) error {
	return func(rows Rows) error {
		if rows.Next() {
			*found = true
			return rows.Scan(dst...)
		}
		return rows.Err()
	}
}

// Pipe runs the queued statements and then qs, in order, each seeing what
// the ones before it did (as separate statements do: on PostgreSQL each
// takes its own snapshot, so a query after a row lock reads what the lock's
// previous holder committed), and reads their rows; on PostgreSQL all of
// them travel in one round trip. An error from a statement or a Scan fails
// the transaction (see Later), so a Scan reports "no row" in its own
// variables, not as an error, when the caller goes on.
func (tx *Tx) Pipe(ctx context.Context, qs ...Query) error {
	tx.Queue(qs...)
	return tx.flush(ctx)
}

// Later queues a statement whose outcome the transaction needs only as an
// error (an insert of new rows, an update, a notify): it runs, in the
// order queued, before the transaction's next statement or its commit. On
// PostgreSQL the statements queued together travel as one pipeline, a
// single round trip instead of one each. A failure among them fails that
// next statement, or the commit, and the transaction rolls back: a caller
// that must react to one statement's error (a unique violation it turns
// into a conflict) runs it with ExecContext instead.
func (tx *Tx) Later(query string, args ...any) {
	tx.later = append(tx.later, later{query: query, args: args})
}

// flush runs the queued statements. After a failure the transaction is
// broken (PostgreSQL aborts it; on SQLite the statements after the failed
// one did not run): commit refuses it.
func (tx *Tx) flush(ctx context.Context) error {
	return tx.send(ctx, nil)
}

// ready is flush before a statement of the caller's: on PostgreSQL BEGIN
// goes out first if nothing took it yet.
func (tx *Tx) ready(ctx context.Context) error {
	if tx.conn != nil && !tx.begun && len(tx.later) == 0 && tx.broken == nil {
		return tx.send(ctx, nil) // BEGIN alone: the caller's statement needs database/sql's answer types
	}
	return tx.flush(ctx)
}

// send runs the queued statements, then last (nil: none). On PostgreSQL
// they go as one pipeline, after BEGIN when it has not gone out yet.
func (tx *Tx) send(ctx context.Context, last *later) error {
	if tx.broken != nil {
		return tx.broken
	}
	qs := tx.later
	tx.later = nil
	if last != nil {
		qs = append(qs, *last)
	}
	var err error
	switch {
	case tx.conn != nil:
		if !tx.begun {
			qs = append([]later{{query: "BEGIN"}}, qs...)
			tx.begun = true
		}
		if len(qs) > 0 {
			err = tx.pipeline(ctx, qs)
		}
	default:
		for _, q := range qs {
			if err = tx.run(ctx, q); err != nil {
				break
			}
		}
	}
	if err != nil {
		tx.broken = err
	}
	return err
}

// commit runs what is queued and commits: on PostgreSQL COMMIT goes in the
// same pipeline (a transaction that ran nothing sends nothing).
func (tx *Tx) commit(ctx context.Context) error {
	if tx.conn == nil {
		if err := tx.flush(ctx); err != nil {
			return err
		}
		if err := tx.sqlTx.Commit(); err != nil {
			return fmt.Errorf("db: commit: %w", err)
		}
		return nil
	}
	if !tx.begun && len(tx.later) == 0 {
		return nil
	}
	err := tx.send(ctx, &later{query: "COMMIT"})
	if err != nil {
		return fmt.Errorf("db: commit: %w", err) // the caller rolls back
	}
	tx.begun = false // over: nothing to roll back
	return nil
}

// rollback ends a transaction that will not commit.
func (tx *Tx) rollback() {
	if tx.conn == nil {
		_ = tx.sqlTx.Rollback()
		return
	}
	if tx.begun {
		tx.abort()
		tx.begun = false
	}
}

// end gives a PostgreSQL transaction's connection back to the pool.
func (tx *Tx) end() {
	if tx.conn != nil {
		tx.conn.Close()
	}
}

// abort sends ROLLBACK on PostgreSQL (after a failed pipeline, the
// transaction may still be open, aborted). If that fails too, the pool
// drops the connection: it never hands out one with a transaction open.
func (tx *Tx) abort() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = tx.conn.ExecContext(ctx, "ROLLBACK")
}

// run runs one statement (prepared where Tx.stmt keeps it) and hands its
// rows to its scan.
func (tx *Tx) run(ctx context.Context, q later) error {
	st := tx.stmt(ctx, q.query)
	if q.scan == nil {
		var err error
		if st != nil {
			_, err = st.ExecContext(ctx, q.args...)
		} else {
			_, err = tx.sqlTx.ExecContext(ctx, q.query, q.args...)
		}
		return err
	}
	var rows *sql.Rows
	var err error
	if st != nil {
		rows, err = st.QueryContext(ctx, q.args...)
	} else {
		rows, err = tx.sqlTx.QueryContext(ctx, q.query, q.args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := q.scan(rows); err != nil {
		return err
	}
	return rows.Close()
}

// pipeline sends the statements to PostgreSQL as one batch on the
// transaction's connection (the transaction is open on it, so they run
// inside it) and reads their outcomes.
func (tx *Tx) pipeline(ctx context.Context, qs []later) error {
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.query
	}
	query := strings.Join(texts, "; ") // startSQL bounds it
	ctx, span := startSQL(ctx, attribute.String("db.system.name", "postgresql"), "db.pipeline", query)
	err := tx.conn.Raw(func(dc any) error {
		c, ok := pgxConn(dc)
		if !ok {
			return fmt.Errorf("db: a PostgreSQL connection that is not pgx's (%T)", dc)
		}
		b := &pgx.Batch{}
		for _, q := range qs {
			qq := b.Queue(q.query, q.args...)
			if q.scan != nil {
				scan := q.scan
				qq.Query(func(rows pgx.Rows) error { return scan(rows) })
			}
		}
		return c.SendBatch(ctx, b).Close()
	})
	endSQL(span, err)
	return err
}

// pgxConn finds the pgx connection under a driver connection.
func pgxConn(dc any) (*pgx.Conn, bool) {
	if t, ok := dc.(*tracedConn); ok {
		dc = t.Conn
	}
	c, ok := dc.(*stdlib.Conn)
	if !ok {
		return nil, false
	}
	return c.Conn(), true
}

// beginOn starts a write transaction: on SQLite database/sql's, on the
// writer; on PostgreSQL on a connection of its own, where BEGIN waits to
// travel with the transaction's first statements (in the pipeline of
// Later and Pipe) and COMMIT with its last.
func (d *DB) beginOn(ctx context.Context) (*Tx, error) {
	if d.Target.Engine != Postgres {
		stx, err := d.W.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &Tx{sqlTx: stx, db: d}, nil
	}
	conn, err := d.W.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{db: d, conn: conn}, nil
}
