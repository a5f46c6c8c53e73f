package vault

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/sweep"
)

// Claims reports whether a row still names the secret at ref.
type Claims func(ctx context.Context, ref Ref) (bool, error)

// ReconcileDeps are what the orphan sweep works with.
type ReconcileDeps struct {
	Backend Backend
	DB      *db.DB
	Clock   clock.Clock
	Log     *slog.Logger
	// Claims by the first dot-separated part of a secret's name (its
	// owner's kind: "resource", "envvar"). A secret whose name has no
	// entry here is never removed.
	Claims map[string]Claims
}

// Reconciler removes orphaned secrets: those written before a row that
// never committed, or left when deleting them after their row failed.
type Reconciler struct {
	ReconcileDeps
	every time.Duration
}

const (
	// MinOrphanAge: a secret younger than this is never removed (its row
	// may be about to commit).
	MinOrphanAge = 15 * time.Minute
	// FirstPassAfter: the first pass after boot.
	FirstPassAfter = 15 * time.Minute
	// maxListed bounds the secrets one pass reads.
	maxListed = 100_000
)

// NewReconciler sweeps every interval (SERVICE_RESOURCE_SECRET_RECONCILE_INTERVAL_SECS).
func NewReconciler(d ReconcileDeps, every time.Duration) *Reconciler {
	return &Reconciler{ReconcileDeps: d, every: every}
}

// Run makes a pass FirstPassAfter boot, then every interval, until ctx
// ends. An interval of zero disables it.
func (r *Reconciler) Run(ctx context.Context) {
	if r.every <= 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(FirstPassAfter):
	}
	if _, err := r.Pass(ctx); err != nil && ctx.Err() == nil {
		r.Log.Error("vault: orphan sweep failed", "err", err)
	}
	sweep.Every(ctx, r.every, r.Log, "orphaned secrets removed", r.Pass)
}

// Pass runs one pass if no replica ran one in the last half interval, and
// reports how many secrets it removed (each is logged by its ref). A
// secret is removed when it is unclaimed, not soft-deleted and older than
// MinOrphanAge on two passes in a row; the first of them records it.
func (r *Reconciler) Pass(ctx context.Context) (int, error) {
	now := r.Clock.Now()
	if ok, err := r.take(ctx, now); err != nil || !ok {
		return 0, err
	}
	sighted, err := sightings(ctx, r.DB)
	if err != nil {
		return 0, err
	}
	var orphans []Ref
	err = r.Backend.List(ctx, maxListed, func(e Entry) error {
		claims := r.Claims[kindOf(e.Ref.Name)]
		if claims == nil || e.Deleted || now.Sub(e.CreatedAt) < MinOrphanAge {
			return nil
		}
		claimed, err := claims(ctx, e.Ref)
		if err != nil || claimed {
			return err
		}
		orphans = append(orphans, e.Ref)
		return nil
	})
	if err != nil {
		return 0, err
	}
	removed := 0
	next := map[string]bool{}
	for _, ref := range orphans {
		p := ref.path()
		if !sighted[p] {
			next[p] = true
			continue
		}
		if err := r.Backend.Delete(ctx, ref); err != nil {
			r.Log.Error("vault: removing an orphaned secret failed", "workspace", ref.Workspace, "name", ref.Name, "err", err)
			next[p] = true
			continue
		}
		removed++
		r.Log.Info("vault: orphaned secret removed", "backend", r.Backend.Name(), "workspace", ref.Workspace, "name", ref.Name)
	}
	return removed, r.remember(ctx, next, now)
}

// kindOf is the first part of a name: "resource" of "resource.<id>.<n>".
func kindOf(name string) string {
	kind, _, _ := strings.Cut(name, ".")
	return kind
}

// take claims this pass for this replica: it moves the last pass's time
// only if that is at least half an interval ago.
func (r *Reconciler) take(ctx context.Context, now time.Time) (taken bool, err error) {
	err = r.DB.Tx(ctx, func(tx *db.Tx) (err error) {
		taken, err = takePass(ctx, tx, now, now.Add(-r.every/2))
		return err
	})
	return taken, err
}

// remember replaces the sightings with this pass's: what was removed, or
// claimed meanwhile, is forgotten.
func (r *Reconciler) remember(ctx context.Context, paths map[string]bool, now time.Time) error {
	return r.DB.Tx(ctx, func(tx *db.Tx) error { return replaceSightings(ctx, tx, paths, now) })
}
