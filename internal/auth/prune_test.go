package auth_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"slipway/internal/auth"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/tenancy"
)

// TestPruneExpiredSignInRecords: the housekeeping pass deletes sessions,
// failure counts and mailed tokens a day after they stopped mattering, and
// nothing that still does (a live session keeps working).
func TestPruneExpiredSignInRecords(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, engine db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, engine)
		clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		log := slog.New(slog.DiscardHandler)
		s, err := auth.NewService(auth.Config{Secret: []byte(strings.Repeat("k", 32)),
			HashParams: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}, InitialAdminEmails: []string{"ann@example.test"}},
			auth.Deps{DB: d, Clock: clk, Tenancy: tenancy.NewService(tenancy.Config{}, tenancy.Deps{DB: d, Clock: clk, Log: log}), Log: log})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(ctx, auth.RegisterInput{Email: "ann@example.test", Password: "correct-horse-battery", DisplayName: "Ann"}); err != nil {
			t.Fatal(err)
		}
		login := func() string {
			t.Helper()
			res, _, err := s.Login(ctx, auth.LoginInput{Email: "ann@example.test", Password: "correct-horse-battery", IP: "10.0.0.1"})
			if err != nil {
				t.Fatal(err)
			}
			return res.Session.Token
		}
		live, leaving := login(), login()
		u, err := s.Authenticate(ctx, leaving)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Logout(ctx, u); err != nil {
			t.Fatal(err)
		}
		// A failed sign-in counts against the account and the client.
		if _, _, err := s.Login(ctx, auth.LoginInput{Email: "ann@example.test", Password: "wrong", IP: "10.0.0.2"}); !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Fatalf("a wrong password: %v", err)
		}
		// A reset token valid for an hour (as RequestReset writes it).
		if _, err := d.W.ExecContext(ctx, `INSERT INTO auth_tokens (id, user_id, purpose, token_hash, created_at, expires_at) VALUES ($1, $2, 'reset', $3, $4, $5)`,
			"tok-1", u.ID, "hash-1", clk.Now(), clk.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		count := func(table string) int {
			t.Helper()
			var n int
			if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		rows := func() [3]int { return [3]int{count("sessions"), count("auth_failures"), count("auth_tokens")} }
		prune := func(want int) {
			t.Helper()
			n, err := s.Prune(ctx)
			if err != nil || n != want {
				t.Fatalf("Prune = %d, %v; want %d", n, err, want)
			}
		}
		if got := rows(); got[0] != 2 || got[1] == 0 || got[2] != 1 {
			t.Fatalf("rows before (sessions, failures, tokens) = %v", got)
		}
		failures := count("auth_failures")

		// Within the day after: everything stays.
		clk.Advance(23 * time.Hour)
		prune(0)

		// Past it: the revoked session, the failure counts and the expired
		// token go; the live session stays and still signs in.
		clk.Advance(3 * time.Hour)
		prune(1 + failures + 1)
		if got := rows(); got != [3]int{1, 0, 0} {
			t.Fatalf("rows after a day (sessions, failures, tokens) = %v", got)
		}
		if _, err := s.Authenticate(ctx, live); err != nil {
			t.Fatalf("the live session after the prune: %v", err)
		}

		// A day after the live session expires, it goes too.
		clk.Advance(auth.DefaultSessionTTL)
		prune(1)
		if got := rows(); got != [3]int{0, 0, 0} {
			t.Fatalf("rows at the end = %v", got)
		}
	})
}
