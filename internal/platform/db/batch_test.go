package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// Batch: many concurrent transactions, committed in groups; each one that
// fails or panics is rolled back alone and tells its caller, the others
// commit, and only theirs run their after-commit work.
func TestBatch(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		d := dbtest.New(t, e)
		ctx := context.Background()
		if _, err := d.W.ExecContext(ctx, "CREATE TABLE batch_rows (n INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		const n = 200
		var after atomic.Int64
		errs := make([]error, n)
		panics := make([]any, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { panics[i] = recover() }()
				errs[i] = d.Batch(ctx, func(tx *db.Tx) error {
					if _, err := tx.ExecContext(ctx, "INSERT INTO batch_rows (n) VALUES ($1)", i); err != nil {
						return err
					}
					tx.AfterCommit(func() { after.Add(1) })
					switch i % 10 {
					case 3:
						return fmt.Errorf("refused %d", i)
					case 7:
						// A statement that fails (a duplicate key) aborts
						// nothing but this one on PostgreSQL too.
						_, err := tx.ExecContext(ctx, "INSERT INTO batch_rows (n) VALUES ($1)", i)
						return err
					case 9:
						if i == 99 {
							panic("boom")
						}
					}
					return nil
				})
			}()
		}
		wg.Wait()
		want := 0
		for i := range n {
			switch {
			case i == 99:
				if panics[i] != "boom" {
					t.Fatalf("the panic of %d reached its caller as %v", i, panics[i])
				}
			case i%10 == 3:
				if errs[i] == nil || errs[i].Error() != fmt.Sprintf("refused %d", i) {
					t.Fatalf("%d: %v", i, errs[i])
				}
			case i%10 == 7:
				if errs[i] == nil {
					t.Fatalf("%d: the duplicate was accepted", i)
				}
			default:
				if errs[i] != nil || panics[i] != nil {
					t.Fatalf("%d: %v %v", i, errs[i], panics[i])
				}
				want++
			}
		}
		var got int
		if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM batch_rows").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want || after.Load() != int64(want) {
			t.Fatalf("%d rows and %d after-commit calls, want %d", got, after.Load(), want)
		}
		for _, i := range []int{3, 7, 99} {
			var c int
			if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM batch_rows WHERE n = $1", i).Scan(&c); err != nil || c != 0 {
				t.Fatalf("row %d of a failed transaction: %d %v", i, c, err)
			}
		}
		// A cancelled caller's transaction does not run.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := d.Batch(cctx, func(tx *db.Tx) error {
			_, err := tx.ExecContext(cctx, "INSERT INTO batch_rows (n) VALUES (1000)")
			return err
		}); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled batch item: %v", err)
		}
	})
}
