package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// Later: queued statements run in order before the transaction's next
// statement or its commit; one that fails fails the transaction as a whole
// (nothing of it commits, its after-commit work does not run), whichever
// statement comes next; in a batch it fails only its own transaction.
func TestLater(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		d := dbtest.New(t, e)
		ctx := context.Background()
		if _, err := d.W.ExecContext(ctx, "CREATE TABLE later_rows (n INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		count := func() (n int) {
			t.Helper()
			if err := d.W.QueryRowContext(ctx, "SELECT COUNT(*) FROM later_rows").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		// In order, and seen by the next statement.
		err := d.Tx(ctx, func(tx *db.Tx) error {
			tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 1, "a")
			tx.Later("UPDATE later_rows SET v = v || $2 WHERE n = $1", 1, "b")
			tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 2, "c")
			var v string
			if err := tx.QueryRowContext(ctx, "SELECT v FROM later_rows WHERE n = 1").Scan(&v); err != nil {
				return err
			}
			if v != "ab" {
				t.Errorf("the next statement read %q, want the queued insert then update: ab", v)
			}
			// Queued last: only the commit runs it.
			tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 3, "d")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 3 {
			t.Fatalf("%d rows after commit, want 3", n)
		}

		// Pipe: queued statements, then queries whose rows are read, in
		// order; each sees what the ones before it did.
		err = d.Tx(ctx, func(tx *db.Tx) error {
			tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 4, "e")
			var n int
			var vs []string
			err := tx.Pipe(ctx,
				db.Query{SQL: "SELECT COUNT(*) FROM later_rows", Scan: func(r db.Rows) error {
					for r.Next() {
						if err := r.Scan(&n); err != nil {
							return err
						}
					}
					return r.Err()
				}},
				db.Query{SQL: "UPDATE later_rows SET v = v || '!' WHERE n >= $1", Args: []any{3}},
				db.Query{SQL: "SELECT v FROM later_rows WHERE n >= $1 ORDER BY n", Args: []any{3}, Scan: func(r db.Rows) error {
					for r.Next() {
						var v string
						if err := r.Scan(&v); err != nil {
							return err
						}
						vs = append(vs, v)
					}
					return r.Err()
				}})
			if err != nil {
				return err
			}
			if n != 4 || len(vs) != 2 || vs[0] != "d!" || vs[1] != "e!" {
				t.Errorf("pipe read count %d and %v, want 4 and [d! e!]", n, vs)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Queue: a query's Scan runs with the queue, at the commit when no
		// statement comes after it.
		var queued string
		err = d.Tx(ctx, func(tx *db.Tx) error {
			var found bool
			tx.Queue(db.Query{SQL: "UPDATE later_rows SET v = v || '?' WHERE n = $1 RETURNING v", Args: []any{3}, Scan: db.ScanOne(&found, &queued)})
			if queued != "" {
				t.Errorf("the queued query ran before anything asked for it")
			}
			return nil
		})
		if err != nil || queued != "d!?" {
			t.Fatalf("queued query read %q (err %v), want d!? by the commit", queued, err)
		}

		// A Scan's error fails the transaction like a statement's.
		refused := errors.New("refused by scan")
		err = d.Tx(ctx, func(tx *db.Tx) error {
			tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 5, "f")
			err := tx.Pipe(ctx, db.Query{SQL: "SELECT v FROM later_rows", Scan: func(db.Rows) error { return refused }})
			if !errors.Is(err, refused) {
				t.Errorf("pipe err = %v, want the scan's", err)
			}
			return nil // the transaction must still refuse to commit
		})
		if !errors.Is(err, refused) {
			t.Fatalf("commit after a failed scan: err = %v", err)
		}
		if _, err := d.W.ExecContext(ctx, "DELETE FROM later_rows WHERE n = 4"); err != nil {
			t.Fatal(err)
		}

		// A failure among them fails the commit: nothing of the
		// transaction stays, not even what ran before it.
		for _, next := range []string{"commit", "exec", "query row"} {
			ran := false
			err := d.Tx(ctx, func(tx *db.Tx) error {
				if _, err := tx.ExecContext(ctx, "INSERT INTO later_rows (n, v) VALUES (10, 'x')"); err != nil {
					return err
				}
				tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 11, "y")
				tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 1, "duplicate")
				tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, $2)", 12, "z")
				tx.AfterCommit(func() { ran = true })
				switch next {
				case "exec":
					_, err := tx.ExecContext(ctx, "UPDATE later_rows SET v = 'w' WHERE n = 2")
					return err
				case "query row":
					var n int
					_ = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM later_rows").Scan(&n) // its error may only say the transaction is aborted
					return nil
				}
				return nil
			})
			if err == nil || !d.Dialect.IsUniqueViolation(err) {
				t.Fatalf("%s after a failing queued insert: err = %v, want the unique violation", next, err)
			}
			if ran {
				t.Errorf("%s: after-commit work ran for a transaction that failed", next)
			}
			if n := count(); n != 3 {
				t.Errorf("%s: %d rows, want the 3 from before (the failed transaction left nothing)", next, n)
			}
		}

		// In a batch, a transaction whose queued statement fails is the
		// only one rolled back.
		var wg sync.WaitGroup
		errs := make([]error, 40)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = d.Batch(ctx, func(tx *db.Tx) error {
					n := 100 + i
					if i%4 == 0 {
						n = 1 // taken
					}
					tx.Later("INSERT INTO later_rows (n, v) VALUES ($1, 'batch')", n)
					return nil
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if (i%4 == 0) != (err != nil) {
				t.Errorf("batched transaction %d: err = %v", i, err)
			}
			if err != nil && !d.Dialect.IsUniqueViolation(err) && !errors.Is(err, context.Canceled) {
				t.Errorf("batched transaction %d: err = %v, want its unique violation", i, err)
			}
		}
		if n := count(); n != 3+30 {
			t.Errorf("%d rows after the batch, want 33", n)
		}
	})
}
