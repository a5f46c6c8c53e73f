package resources

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The SQL a tenant's db_query and db_execute nodes run, on the tenant's own
// database (a postgresql resource), never on Slipway's: the statement is
// theirs, its parameters are bound, never pasted into it.

// runStatement runs one statement in a transaction of its own, read-only
// for a query, with the statement's time limit set for the transaction.
// The four statements go in one round trip (a pipeline): on a warm
// connection whose statement cache knows the text, a node costs the
// database one exchange.
func runStatement(ctx context.Context, pool *pgxpool.Pool, st Statement) (out any, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	defer func() {
		// A failure inside the transaction leaves it open (aborted): end it
		// before the connection goes back to the pool.
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	begin := "BEGIN READ ONLY"
	if st.Write {
		begin = "BEGIN"
	}
	b := &pgx.Batch{}
	b.Queue(begin)
	b.Queue("SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(st.Timeout.Milliseconds(), 10))
	b.Queue(st.SQL, st.Params...)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			out, err = nil, cerr
		}
	}()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	if st.Write {
		tag, err := br.Exec()
		if err != nil {
			return nil, err
		}
		out = map[string]any{"rows_affected": tag.RowsAffected(), "command": tag.String()}
	} else {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		out, err = collect(rows, st.MaxRows)
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		return nil, err
	}
	return out, nil
}
