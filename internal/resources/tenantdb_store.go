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

// runStatement runs one statement in a transaction of its own: read-only
// for a query, with the statement's time limit set for the transaction.
func runStatement(ctx context.Context, pool *pgxpool.Pool, st Statement) (any, error) {
	mode := pgx.ReadOnly
	if st.Write {
		mode = pgx.ReadWrite
	}
	var out any
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{AccessMode: mode}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(st.Timeout.Milliseconds(), 10)); err != nil {
			return err
		}
		if st.Write {
			tag, err := tx.Exec(ctx, st.SQL, st.Params...)
			if err != nil {
				return err
			}
			out = map[string]any{"rows_affected": tag.RowsAffected(), "command": tag.String()}
			return nil
		}
		rows, err := tx.Query(ctx, st.SQL, st.Params...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = collect(rows, st.MaxRows)
		return err
	})
	return out, err
}
