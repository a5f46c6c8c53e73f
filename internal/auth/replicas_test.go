package auth_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"slipway/internal/auth"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/pubsub"
	"slipway/internal/tenancy"
)

// TestSessionCacheAcrossReplicas: two replicas on one PostgreSQL both cache
// a session; a sign-out through one is refused by the other at once, long
// before the cache's TTL.
func TestSessionCacheAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := dbtest.New(t, db.Postgres)
	second := dbtest.Replica(t, first)
	log := slog.New(slog.DiscardHandler)
	replica := func(d *db.DB, ttl time.Duration) *auth.Service {
		bus := pubsub.New(d, log)
		t.Cleanup(bus.Close)
		if err := bus.Listening(ctx); err != nil {
			t.Fatal(err)
		}
		s, err := auth.NewService(auth.Config{Secret: []byte(strings.Repeat("k", 32)), SessionCacheTTL: ttl,
			HashParams: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}, InitialAdminEmails: []string{"ann@example.test"}},
			auth.Deps{DB: d, Clock: clock.System{}, Tenancy: tenancy.NewService(tenancy.Config{}, tenancy.Deps{DB: d, Clock: clock.System{}, Log: log}), Bus: bus, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		go s.Run(ctx)
		return s
	}
	a, b, uncached := replica(first, time.Hour), replica(second, time.Hour), replica(second, 0)
	if err := a.Register(ctx, auth.RegisterInput{Email: "ann@example.test", Password: "correct-horse-battery", DisplayName: "Ann"}); err != nil {
		t.Fatal(err)
	}
	res, _, err := a.Login(ctx, auth.LoginInput{Email: "ann@example.test", Password: "correct-horse-battery", IP: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	// A second session, signed out later through a replica that caches
	// nothing: it must still tell the others.
	res2, _, err := a.Login(ctx, auth.LoginInput{Email: "ann@example.test", Password: "correct-horse-battery", IP: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	token := res.Session.Token
	u, err := a.Authenticate(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, token); err != nil { // now cached on b too
		t.Fatal(err)
	}
	if err := a.Logout(ctx, u); err != nil {
		t.Fatal(err)
	}
	refused := func(token string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for {
			_, err := b.Authenticate(ctx, token)
			if err != nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the other replica still accepts the signed-out session")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	refused(token)
	if _, err := a.Authenticate(ctx, token); err == nil {
		t.Fatal("the replica that signed out still accepts the session")
	}

	u2, err := b.Authenticate(ctx, res2.Session.Token) // cached on b
	if err != nil {
		t.Fatal(err)
	}
	if err := uncached.Logout(ctx, u2); err != nil {
		t.Fatal(err)
	}
	refused(res2.Session.Token)
}
