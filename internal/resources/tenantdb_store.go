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

// RunStatement runs one statement in a transaction of its own, read-only
// for a query, with the statement's time limit set for the transaction.
// The four statements go in one round trip (a pipeline): on a warm
// connection whose statement cache knows the text, a node costs the
// database one exchange.
func RunStatement(ctx context.Context, pool *pgxpool.Pool, st Statement) (out any, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A failure inside the transaction leaves it open (aborted): the pool
	// closes a connection released in a transaction rather than reuse it.
	defer conn.Release()
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
		out, err = Collect(rows, st.MaxRows)
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

// rlsNames are what row-level security provisions for a workspace in a
// tenant's database; every name is from [a-z0-9_] (checked by
// rlsNamesFor), so it may be written into DDL, which takes no parameters.
type rlsNames struct {
	Role, Schema, Policy, Shared, Workspace string
}

// rlsLock serializes our catalog changes in a database: two refreshes at
// once (two replicas, two clicks) leave one role.
const rlsLock = "SELECT pg_advisory_xact_lock(hashtextextended('slipway_rls', 0))"

// provisionRLS creates the workspace's role (or sets its new password) and
// schema, and on every table of the shared schema with a workspace_id
// column enables row-level security with a policy letting the role see
// and write only the workspace's rows. It reports how many tables it
// covered.
func provisionRLS(ctx context.Context, pool *pgxpool.Pool, n rlsNames, password string) (tables int, err error) {
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, rlsLock); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", n.Role).Scan(&exists); err != nil {
			return err
		}
		verb := "CREATE"
		if exists {
			verb = "ALTER"
		}
		stmts := []string{
			verb + " ROLE " + n.Role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '" + password + "'",
			"CREATE SCHEMA IF NOT EXISTS " + n.Schema + " AUTHORIZATION " + n.Role,
			"GRANT USAGE ON SCHEMA " + n.Shared + " TO " + n.Role,
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_class c
			JOIN pg_namespace s ON s.oid = c.relnamespace
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped
			WHERE s.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`, n.Shared)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, t := range names {
			table := pgx.Identifier{n.Shared, t}.Sanitize()
			cond := "(workspace_id::text = '" + n.Workspace + "')"
			for _, s := range []string{
				"ALTER TABLE " + table + " ENABLE ROW LEVEL SECURITY",
				"DROP POLICY IF EXISTS " + n.Policy + " ON " + table,
				"CREATE POLICY " + n.Policy + " ON " + table + " TO " + n.Role + " USING " + cond + " WITH CHECK " + cond,
				"GRANT SELECT, INSERT, UPDATE, DELETE ON " + table + " TO " + n.Role,
			} {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
		}
		// The shared tables' serial columns draw from their sequences.
		if len(names) > 0 {
			if _, err := tx.Exec(ctx, "GRANT USAGE ON ALL SEQUENCES IN SCHEMA "+n.Shared+" TO "+n.Role); err != nil {
				return err
			}
		}
		tables = len(names)
		return nil
	})
	return tables, err
}

// dropRLS removes the workspace's role: its policies, then what it owns
// handed to the resource's user (REASSIGN OWNED: the schema and its data
// stay), then its privileges (DROP OWNED), then the role.
func dropRLS(ctx context.Context, pool *pgxpool.Pool, n rlsNames) error {
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, rlsLock); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", n.Role).Scan(&exists); err != nil || !exists {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT schemaname, tablename FROM pg_policies WHERE policyname = $1", n.Policy)
		if err != nil {
			return err
		}
		type table struct{ schema, name string }
		tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (table, error) {
			var t table
			return t, r.Scan(&t.schema, &t.name)
		})
		if err != nil {
			return err
		}
		for _, t := range tables {
			if _, err := tx.Exec(ctx, "DROP POLICY IF EXISTS "+n.Policy+" ON "+pgx.Identifier{t.schema, t.name}.Sanitize()); err != nil {
				return err
			}
		}
		for _, s := range []string{"REASSIGN OWNED BY " + n.Role + " TO CURRENT_USER", "DROP OWNED BY " + n.Role, "DROP ROLE " + n.Role} {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}
