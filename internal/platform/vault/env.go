package vault

import (
	"context"
	"fmt"
	"strings"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
)

// Env is the env backend: secrets sealed in the database (vault_secrets),
// addressed "<workspace>/<name>" like an OpenBao path.
type Env struct {
	db   *db.DB
	keys *Keyring
	clk  clock.Clock
}

// NewEnv keeps secrets in d, sealed under keys.
func NewEnv(d *db.DB, keys *Keyring, clk clock.Clock) *Env {
	return &Env{db: d, keys: keys, clk: clk}
}

// Name is "env".
func (*Env) Name() string { return "env" }

// Put seals and writes the value.
func (e *Env) Put(ctx context.Context, ref Ref, value string) error {
	if err := check(ref, value); err != nil {
		return err
	}
	sealed, err := e.keys.seal(ref, value)
	if err != nil {
		return fail("seal", err)
	}
	now := e.clk.Now()
	err = e.db.Tx(ctx, func(tx *db.Tx) error { return putSealed(ctx, tx, ref.path(), e.keys.Current(), sealed, now) })
	if err != nil {
		return fail("store", err)
	}
	return nil
}

// Get opens the value.
func (e *Env) Get(ctx context.Context, ref Ref) (string, error) {
	if !ref.Valid() {
		return "", ErrNotFound
	}
	sealed, found, err := getSealed(ctx, e.db, ref.path())
	if err != nil {
		return "", fail("read", err)
	}
	if !found {
		return "", ErrNotFound
	}
	v, err := e.keys.open(ref, sealed)
	if err != nil {
		return "", fail("open", err)
	}
	return v, nil
}

// GetMany opens several secrets of one workspace with one read.
func (e *Env) GetMany(ctx context.Context, workspace string, names []string) (map[string]string, error) {
	return e.getMany(ctx, nil, workspace, names)
}

// getMany reads through q (nil: the database's readers).
func (e *Env) getMany(ctx context.Context, q db.Queryer, workspace string, names []string) (map[string]string, error) {
	if q == nil {
		q = e.db.R
	}
	paths := make([]string, 0, len(names))
	for _, n := range names {
		if ref := (Ref{Workspace: workspace, Name: n}); ref.Valid() {
			paths = append(paths, ref.path())
		}
	}
	sealed, err := getSealedMany(ctx, q, paths)
	if err != nil {
		return nil, fail("read", err)
	}
	out := make(map[string]string, len(sealed))
	for _, n := range names {
		ref := Ref{Workspace: workspace, Name: n}
		s, ok := sealed[ref.path()]
		if !ok {
			continue
		}
		v, err := e.keys.open(ref, s)
		if err != nil {
			return nil, fail("open", err)
		}
		out[n] = v
	}
	return out, nil
}

// Delete removes the secret.
func (e *Env) Delete(ctx context.Context, ref Ref) error {
	if !ref.Valid() {
		return nil
	}
	err := e.db.Tx(ctx, func(tx *db.Tx) error { return deleteSealed(ctx, tx, ref.path()) })
	if err != nil {
		return fail("delete", err)
	}
	return nil
}

// List reads up to limit secrets in path order.
func (e *Env) List(ctx context.Context, limit int, fn func(Entry) error) error {
	entries, err := listSealed(ctx, e.db, limit)
	if err != nil {
		return fail("list", err)
	}
	for _, en := range entries {
		if err := fn(en); err != nil {
			return err
		}
	}
	return nil
}

// Stale counts the secrets a key other than the current one sealed: while
// it is above zero, no key may leave SERVICE_VAULT_KEYS.
func (e *Env) Stale(ctx context.Context) (int, error) {
	return countStale(ctx, e.db, e.keys.Current())
}

// rewrapBatch is how many secrets one statement of Rewrap reads.
const rewrapBatch = 200

// Rewrap re-encrypts, online, every secret an older key sealed under the
// current key, and reads each back to verify it before going on: after a
// pass that ends with no error and Stale at zero, the older keys can be
// removed. A secret written meanwhile is left as its writer put it (the
// update names the sealed text it replaces). It reports how many it moved.
func (e *Env) Rewrap(ctx context.Context) (int, error) {
	cur := e.keys.Current()
	moved := 0
	after := ""
	for {
		batch, err := staleAfter(ctx, e.db, cur, after, rewrapBatch)
		if err != nil {
			return moved, err
		}
		if len(batch) == 0 {
			return moved, nil
		}
		for _, r := range batch {
			after = r.path
			ws, name, _ := strings.Cut(r.path, "/")
			ref := Ref{Workspace: ws, Name: name}
			plain, err := e.keys.open(ref, r.sealed)
			if err != nil {
				return moved, fmt.Errorf("vault: rewrap %s: %w", r.path, err)
			}
			sealed, err := e.keys.seal(ref, plain)
			if err != nil {
				return moved, err
			}
			var done bool
			err = e.db.Tx(ctx, func(tx *db.Tx) (err error) {
				done, err = reseal(ctx, tx, r, cur, sealed)
				return err
			})
			if err != nil {
				return moved, err
			}
			if !done {
				continue // rewritten or deleted meanwhile
			}
			if got, err := e.Get(ctx, ref); err != nil || got != plain {
				return moved, fmt.Errorf("vault: rewrap %s: the re-encrypted secret does not read back (%v)", r.path, err)
			}
			moved++
		}
	}
}
