package captcha_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"slipway/internal/captcha"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// wrong finds a solution that does not do the work.
func wrong(c captcha.Challenge) string {
	for i := 0; ; i++ {
		if s := strconv.Itoa(i); captcha.ZeroBits(c.Challenge, s) < c.Difficulty {
			return s
		}
	}
}

func TestChallenges(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		clk := clock.NewFake(time.Now())
		s := captcha.New(d, clk, []byte("a captcha secret of some length"), 8)

		c, err := s.Mint()
		if err != nil || c.Difficulty != 8 || c.Algorithm != "sha256" || !c.ExpiresAt.After(clk.Now()) {
			t.Fatalf("mint: %+v %v", c, err)
		}
		good := captcha.Envelope{Challenge: c.Challenge, Solution: captcha.Solve(c)}
		if captcha.ZeroBits(good.Challenge, good.Solution) < 8 {
			t.Fatal("Solve found no solution")
		}

		// Well formed but not good: false, never an error.
		other := captcha.New(d, clk, []byte("another secret, another server"), 8)
		forged, _ := other.Mint()
		parts := strings.Split(c.Challenge, ".")
		easier := strings.Join([]string{parts[0], "1", parts[2], parts[3], parts[4]}, ".") // difficulty lowered, signature kept
		notOK := map[string]captcha.Envelope{
			"wrong solution":        {Challenge: c.Challenge, Solution: wrong(c)},
			"signed by another key": {Challenge: forged.Challenge, Solution: captcha.Solve(forged)},
			"difficulty tampered":   {Challenge: easier, Solution: captcha.Solve(captcha.Challenge{Challenge: easier, Difficulty: 1})},
			"solution of another":   {Challenge: c.Challenge, Solution: captcha.Solve(forged)},
		}
		for name, env := range notOK {
			if name == "solution of another" && captcha.ZeroBits(env.Challenge, env.Solution) >= 8 {
				continue // happens to solve this one too
			}
			if ok, err := s.Check(ctx, env); ok || err != nil {
				t.Fatalf("%s: check %v %v", name, ok, err)
			}
			if ok, err := s.Spend(ctx, env); ok || err != nil {
				t.Fatalf("%s: spend %v %v", name, ok, err)
			}
		}
		malformed := map[string]captcha.Envelope{
			"empty":               {},
			"not ours":            {Challenge: "hello", Solution: "1"},
			"unknown version":     {Challenge: "v9" + c.Challenge[2:], Solution: good.Solution},
			"bad nonce":           {Challenge: strings.Join([]string{parts[0], parts[1], parts[2], "zz", parts[4]}, "."), Solution: "1"},
			"difficulty too big":  {Challenge: strings.Join([]string{parts[0], "99", parts[2], parts[3], parts[4]}, "."), Solution: "1"},
			"solution not digits": {Challenge: c.Challenge, Solution: "12a"},
			"solution too long":   {Challenge: c.Challenge, Solution: strings.Repeat("1", 21)},
		}
		for name, env := range malformed {
			if _, err := s.Check(ctx, env); !errors.Is(err, captcha.ErrMalformed) {
				t.Fatalf("%s: check %v", name, err)
			}
			if _, err := s.Spend(ctx, env); !errors.Is(err, captcha.ErrMalformed) {
				t.Fatalf("%s: spend %v", name, err)
			}
		}

		// A good solution checks true as often as asked, and spends once:
		// of racing spends on two connections, one passes.
		for range 2 {
			if ok, err := s.Check(ctx, good); !ok || err != nil {
				t.Fatalf("check a good one: %v %v", ok, err)
			}
		}
		replica := captcha.New(dbtest.Replica(t, d), clk, []byte("a captcha secret of some length"), 8)
		var passed atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				on := s
				if i%2 == 1 {
					on = replica
				}
				ok, err := on.Spend(ctx, good)
				if err != nil {
					t.Error(err)
				}
				if ok {
					passed.Add(1)
				}
			}()
		}
		wg.Wait()
		if passed.Load() != 1 {
			t.Fatalf("%d spends passed", passed.Load())
		}
		if ok, err := s.Check(ctx, good); ok || err != nil {
			t.Fatalf("check a spent one: %v %v", ok, err)
		}

		// A challenge expires; expired spent nonces are cleared.
		late, _ := s.Mint()
		lateEnv := captcha.Envelope{Challenge: late.Challenge, Solution: captcha.Solve(late)}
		clk.Advance(captcha.TTL + time.Second)
		if ok, err := s.Spend(ctx, lateEnv); ok || err != nil {
			t.Fatalf("an expired challenge: %v %v", ok, err)
		}
		fresh, _ := s.Mint()
		if ok, err := s.Spend(ctx, captcha.Envelope{Challenge: fresh.Challenge, Solution: captcha.Solve(fresh)}); !ok || err != nil {
			t.Fatalf("a fresh challenge: %v %v", ok, err)
		}
		if n, err := s.Prune(ctx); n != 1 || err != nil {
			t.Fatalf("Prune = %d, %v; want the expired nonce", n, err)
		}
		var kept int
		d.R.QueryRow(`SELECT COUNT(*) FROM captcha_spent`).Scan(&kept)
		if kept != 1 {
			t.Fatalf("%d nonces kept, want the fresh one alone", kept)
		}
	})
}

func TestDisabled(t *testing.T) {
	s := captcha.New(nil, clock.System{}, nil, 0)
	if s.Enabled() {
		t.Fatal("enabled without a secret")
	}
	if _, err := s.Mint(); !errors.Is(err, captcha.ErrDisabled) {
		t.Fatal(err)
	}
	if _, err := s.Check(context.Background(), captcha.Envelope{Challenge: "x", Solution: "1"}); !errors.Is(err, captcha.ErrDisabled) {
		t.Fatal(err)
	}
	if _, err := s.Spend(context.Background(), captcha.Envelope{Challenge: "x", Solution: "1"}); !errors.Is(err, captcha.ErrDisabled) {
		t.Fatal(err)
	}
}
