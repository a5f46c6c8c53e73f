// Package vault keeps tenants' secrets: the secret of a resource, the value
// of a secret env var. A secret lives at a Ref (its workspace and a name the
// caller chose) in one of two backends with one contract (Backend):
//
//   - env: sealed with AES-256-GCM in the database's vault_secrets table,
//     under a data key per workspace derived (HKDF-SHA256) from a versioned
//     key-encryption key. The sealed text names the key that sealed it, so a
//     new key is added online and a re-encrypt sweep (Rewrap) moves every
//     secret onto it, after which the old key can be removed.
//   - openbao: an OpenBao (or HashiCorp Vault) KV version 2 engine over
//     HTTP, token or AppRole auth, every secret under one prefix of ours.
//
// Secrets never leave the vault except into a run's environment (and the
// server-side connection test of the resource that owns them). Callers
// write a secret before the row that names it commits and delete it after
// the row is gone, so a failure leaves an orphan in the vault, never a row
// pointing at nothing; Reconcile removes orphans.
//
// The package also keeps the Sealer, which seals the server's own secrets
// (TOTP keys, repository credentials) under the instance secret.
package vault

import (
	"context"
	"errors"
	"regexp"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Ref names one secret: the workspace that owns it and a name within it.
type Ref struct {
	Workspace string
	Name      string
}

// nameRE bounds a name: what a path segment of both backends accepts
// without escaping. Callers build names from ids ("resource.<uuid>.<rand>").
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,199}$`)

// workspaceRE is a workspace id (a UUID in practice).
var workspaceRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Valid reports whether the ref can be stored.
func (r Ref) Valid() bool { return workspaceRE.MatchString(r.Workspace) && nameRE.MatchString(r.Name) }

// path is the ref below the backend's prefix.
func (r Ref) path() string { return r.Workspace + "/" + r.Name }

// Entry is a secret as Reconcile sees it.
type Entry struct {
	Ref       Ref
	CreatedAt time.Time
	// Deleted: soft-deleted in the backend (an operator's act: Reconcile
	// leaves it alone). The env backend has no soft delete.
	Deleted bool
}

// Backend is where secrets live. Every method is safe for concurrent use.
type Backend interface {
	// Name is "env" or "openbao".
	Name() string
	// Put writes the value (at most MaxValueBytes), replacing any earlier one.
	Put(ctx context.Context, ref Ref, value string) error
	// Get reads a value; ErrNotFound when there is none.
	Get(ctx context.Context, ref Ref) (string, error)
	// Delete removes the secret and every version of it; deleting a
	// missing secret is not an error.
	Delete(ctx context.Context, ref Ref) error
	// List calls fn for every secret under this instance's prefix, at
	// most limit of them (the caller's bound); refs that are not ours in
	// shape are skipped.
	List(ctx context.Context, limit int, fn func(Entry) error) error
}

// GetMany reads several secrets of one workspace: with one read where the
// backend can (env), one by one otherwise. A missing secret is missing
// from the map.
func GetMany(ctx context.Context, b Backend, workspace string, names []string) (map[string]string, error) {
	return GetManyIn(ctx, nil, b, workspace, names)
}

// GetManyIn is GetMany reading through q (a caller's transaction; nil: the
// database's readers) where the backend is the database (env).
func GetManyIn(ctx context.Context, q db.Queryer, b Backend, workspace string, names []string) (map[string]string, error) {
	if e, ok := b.(*Env); ok {
		return e.getMany(ctx, q, workspace, names)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, err := b.Get(ctx, Ref{Workspace: workspace, Name: n})
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[n] = v
	}
	return out, nil
}

// MaxValueBytes bounds one secret.
const MaxValueBytes = 64 << 10

var (
	// ErrNotFound: no secret at that ref.
	ErrNotFound = errors.New("vault: no such secret")
	// ErrInvalid: a ref or value the vault does not store.
	ErrInvalid = errors.New("vault: invalid secret name or value")
)

// fail wraps a failure of the vault itself (unreachable, refused, corrupt):
// the API answers it as vault_error, the cause is logged, never shown.
func fail(op string, err error) error {
	return apperr.Wrap(apperr.CodeVault, err, "the secret store could not %s the secret", op)
}

func check(ref Ref, value string) error {
	if !ref.Valid() || len(value) > MaxValueBytes {
		return ErrInvalid
	}
	return nil
}

// pathRE is a mount or prefix: plain segments joined by '/'.
var pathRE = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)
