package tenancy_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"slipway/internal/auth"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/pubsub"
	"slipway/internal/tenancy"
)

// TestResolvedWorkspacesAcrossReplicas: two replicas on one PostgreSQL both
// keep a resolved workspace; when one deletes the workspace, the other
// refuses it at once, long before the cache's TTL, and so does the first;
// a replica that caches nothing still tells the others.
func TestResolvedWorkspacesAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := dbtest.New(t, db.Postgres)
	second := dbtest.Replica(t, first)
	log := slog.New(slog.DiscardHandler)
	replica := func(d *db.DB, ttl time.Duration) *tenancy.Service {
		bus := pubsub.New(d, log)
		t.Cleanup(bus.Close)
		if err := bus.Listening(ctx); err != nil {
			t.Fatal(err)
		}
		s := tenancy.NewService(tenancy.Config{CacheTTL: ttl}, tenancy.Deps{DB: d, Clock: clock.System{}, Bus: bus, Log: log})
		go s.Run(ctx)
		return s
	}
	a, b, uncached := replica(first, time.Hour), replica(second, time.Hour), replica(second, 0)
	users, err := auth.NewService(auth.Config{Secret: []byte(strings.Repeat("k", 32)),
		HashParams: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}, InitialAdminEmails: []string{"ann@example.test"}},
		auth.Deps{DB: first, Clock: clock.System{}, Tenancy: a, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := users.Register(ctx, auth.RegisterInput{Email: "ann@example.test", Password: "correct-horse-battery", DisplayName: "Ann"}); err != nil {
		t.Fatal(err)
	}
	res, _, err := users.Login(ctx, auth.LoginInput{Email: "ann@example.test", Password: "correct-horse-battery", IP: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ann, err := users.Authenticate(ctx, res.Session.Token)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := a.CreateWorkspace(ctx, ann, tenancy.Selector{}, "", "Extra")
	if err != nil {
		t.Fatal(err)
	}
	other, err := a.CreateWorkspace(ctx, ann, tenancy.Selector{}, "", "Other")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*tenancy.Service{a, b} { // now kept by both
		w, err := r.ResolveWorkspace(ctx, ann, extra.ID)
		if err != nil || w.ID != extra.ID || w.Role != tenancy.RoleOwner {
			t.Fatalf("resolve before the delete: %+v %v", w, err)
		}
	}
	if err := a.DeleteWorkspace(ctx, ann, extra.ID); err != nil {
		t.Fatal(err)
	}
	forbidden := func(err error) bool { return errors.Is(err, apperr.ErrForbidden) }
	if _, err := a.ResolveWorkspace(ctx, ann, extra.ID); !forbidden(err) {
		t.Fatalf("the replica that deleted the workspace still resolves it: %v", err)
	}
	forgotten := func(id string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for {
			_, err := b.ResolveWorkspace(ctx, ann, id)
			if forbidden(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the other replica still resolves the deleted workspace: %v", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	forgotten(extra.ID)

	// A replica without a cache of its own still tells the others. (b has
	// seen every earlier notification: they arrive in order, and it saw the
	// delete's.)
	if w, err := b.ResolveWorkspace(ctx, ann, other.ID); err != nil || w.ID != other.ID {
		t.Fatalf("resolve before the delete: %+v %v", w, err)
	}
	if err := uncached.DeleteWorkspace(ctx, ann, other.ID); err != nil {
		t.Fatal(err)
	}
	forgotten(other.ID)
	// The default workspace is still there, and resolved again.
	if w, err := b.ResolveWorkspace(ctx, ann, ""); err != nil || w.ID != ann.DefaultWorkspaceID {
		t.Fatalf("default after the delete: %+v %v", w, err)
	}
}
