package db

import (
	"context"
	"fmt"
	"sync"
)

// maxBatch bounds the transactions Batch commits together.
const maxBatch = 64

// batcher groups the transactions submitted through Batch.
type batcher struct {
	mu      sync.Mutex
	pending []*batchItem
	running bool
}

type batchItem struct {
	ctx      context.Context
	fn       func(tx *Tx) error
	err      error
	after    []func()
	panicked any
	done     chan struct{}
}

// Batch runs fn in a write transaction, like Tx, but commits it together
// with the other transactions submitted meanwhile (group commit): under
// load many short transactions share one commit, each in a savepoint of
// its own, so one that fails (or panics) is rolled back alone and reports
// its own error. With nothing else pending it runs at once, alone. A batch
// that fails as a whole (its commit, a deadlock) runs each of its
// transactions again on its own; fn must be safe to run twice, as any
// transaction body that a retry may repeat. fn's statements run with its
// own ctx.
//
// Only SQLite batches: its one writer serialises every transaction, so
// sharing commits multiplies what it writes per second. PostgreSQL runs
// transactions side by side on its pool, where a batch would put each one's
// round trips in a row: there Batch is Tx.
func (d *DB) Batch(ctx context.Context, fn func(tx *Tx) error) error {
	if d.Target.Engine != SQLite {
		return d.Tx(ctx, fn)
	}
	it := &batchItem{ctx: ctx, fn: fn, done: make(chan struct{})}
	b := &d.batch
	b.mu.Lock()
	b.pending = append(b.pending, it)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go d.flush()
	}
	<-it.done
	if it.panicked != nil {
		panic(it.panicked)
	}
	return it.err
}

// flush runs batches until nothing is pending.
func (d *DB) flush() {
	b := &d.batch
	for {
		b.mu.Lock()
		n := min(len(b.pending), maxBatch)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		items := b.pending[:n:n]
		b.pending = b.pending[n:]
		b.mu.Unlock()
		d.runBatch(items)
	}
}

func (d *DB) runBatch(items []*batchItem) {
	if len(items) == 1 {
		d.runAlone(items[0])
		return
	}
	ctx := context.Background() // not one caller's: its cancel must not end the others'
	err := d.Tx(ctx, func(tx *Tx) error {
		for i, it := range items {
			if err := it.ctx.Err(); err != nil {
				it.err = err
				continue
			}
			sp := fmt.Sprintf("batch_%d", i)
			if _, err := tx.sqlTx.ExecContext(ctx, "SAVEPOINT "+sp); err != nil {
				return err
			}
			tx.after = nil
			if it.err = call(it, tx); it.err == nil {
				it.err = tx.flush(it.ctx) // its queued statements, inside its savepoint
			} else if tx.broken != nil {
				it.err = tx.broken
			}
			tx.later, tx.broken = nil, nil // the savepoint's rollback ends them
			if it.err != nil {
				if _, err := tx.sqlTx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+sp); err != nil {
					return err
				}
			} else {
				it.after = tx.after
			}
			if _, err := tx.sqlTx.ExecContext(ctx, "RELEASE SAVEPOINT "+sp); err != nil {
				return err
			}
		}
		tx.after = nil
		return nil
	})
	if err != nil {
		for _, it := range items {
			it.err, it.after, it.panicked = nil, nil, nil
			d.runAlone(it)
		}
		return
	}
	for _, it := range items {
		for _, f := range it.after {
			f()
		}
		close(it.done)
	}
}

// runAlone runs one item in a transaction of its own.
func (d *DB) runAlone(it *batchItem) {
	it.err = d.Tx(it.ctx, func(tx *Tx) error { return call(it, tx) })
	close(it.done)
}

// call runs an item's fn, turning a panic into an error here (the
// submitter panics with it).
func call(it *batchItem, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			it.panicked = p
			err = fmt.Errorf("db: batched transaction panicked: %v", p)
		}
	}()
	return it.fn(tx)
}
