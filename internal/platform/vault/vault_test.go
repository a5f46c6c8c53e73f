package vault

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/vault/kvtest"
)

// backendCase is one implementation of the contract, with the clock its
// creation times follow.
type backendCase struct {
	name string
	make func(t *testing.T, clk *clock.Fake) Backend
}

func newKey(t testing.TB, id string) Key {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Secret: b}
}

func envBackend(engine db.Engine) func(t *testing.T, clk *clock.Fake) Backend {
	return func(t *testing.T, clk *clock.Fake) Backend {
		if engine == db.Postgres {
			dbtest.RequirePostgres(t)
		}
		keys, err := NewKeyring(newKey(t, "k1"))
		if err != nil {
			t.Fatal(err)
		}
		return NewEnv(dbtest.New(t, engine), keys, clk)
	}
}

func baoBackend(approle bool) func(t *testing.T, clk *clock.Fake) Backend {
	return func(t *testing.T, clk *clock.Fake) Backend {
		o := kvtest.Options{Now: clk.Now}
		cfg := OpenBaoConfig{Token: "root"}
		if approle {
			o.RoleID, o.SecretID = "role-1", "secret-1"
			cfg = OpenBaoConfig{RoleID: "role-1", SecretID: "secret-1"}
		}
		srv := kvtest.New(t, o)
		cfg.Addr = srv.URL
		b, err := NewOpenBao(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func backends() []backendCase {
	cases := []backendCase{
		{"env/sqlite", envBackend(db.SQLite)},
		{"env/postgres", envBackend(db.Postgres)},
		{"openbao/token", baoBackend(false)},
		{"openbao/approle", baoBackend(true)},
	}
	// A real `bao server -dev` (or Vault) when one is reachable: its own
	// clock, so only the parts of the contract that do not move time.
	if addr := os.Getenv("BAO_ADDR"); addr != "" {
		cases = append(cases, backendCase{"openbao/real", func(t *testing.T, _ *clock.Fake) Backend {
			b, err := NewOpenBao(OpenBaoConfig{Addr: addr, Token: os.Getenv("BAO_TOKEN"), Prefix: "slipway-test-" + randomName(t)})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}})
	}
	return cases
}

func randomName(t testing.TB) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

const (
	wsA = "0b6f7c2e-3f3a-4a57-9c1e-5c8a1d2e3f40"
	wsB = "9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"
)

func listAll(t *testing.T, b Backend) []Entry {
	t.Helper()
	var out []Entry
	if err := b.List(context.Background(), 1000, func(e Entry) error { out = append(out, e); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Ref.path(), b.Ref.path()) })
	return out
}

// TestContract runs one suite against every backend.
func TestContract(t *testing.T) {
	ctx := context.Background()
	for _, bc := range backends() {
		t.Run(bc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
			b := bc.make(t, clk)

			a := Ref{wsA, "resource.1.a"}
			if _, err := b.Get(ctx, a); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a missing secret: %v, want ErrNotFound", err)
			}
			// Multi-line, non-ASCII, JSON-hostile text survives.
			value := "line one\n\"quoted\" \\ ünïcödé \u2028 -----BEGIN KEY-----"
			if err := b.Put(ctx, a, value); err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(ctx, a); err != nil || got != value {
				t.Fatalf("get = %q, %v", got, err)
			}
			// Overwrite.
			if err := b.Put(ctx, a, "second"); err != nil {
				t.Fatal(err)
			}
			if got, _ := b.Get(ctx, a); got != "second" {
				t.Fatalf("after overwrite: %q", got)
			}
			// The same name in another workspace is another secret.
			other := Ref{wsB, a.Name}
			if _, err := b.Get(ctx, other); !errors.Is(err, ErrNotFound) {
				t.Fatalf("workspace B sees A's secret: %v", err)
			}
			if err := b.Put(ctx, other, "bee"); err != nil {
				t.Fatal(err)
			}
			if got, _ := b.Get(ctx, a); got != "second" {
				t.Fatalf("B's write changed A's secret: %q", got)
			}
			// The empty value is a value.
			empty := Ref{wsA, "envvar.2.a"}
			if err := b.Put(ctx, empty, ""); err != nil {
				t.Fatal(err)
			}
			if got, err := b.Get(ctx, empty); err != nil || got != "" {
				t.Fatalf("empty: %q, %v", got, err)
			}

			// Bounds and names.
			for _, bad := range []Ref{{wsA, "../escape"}, {wsA, "a/b"}, {"", "x"}, {wsA, ""}, {"../" + wsA, "x"}, {wsA, "UPPER"}, {wsA, strings.Repeat("n", 201)}} {
				if err := b.Put(ctx, bad, "v"); !errors.Is(err, ErrInvalid) {
					t.Fatalf("put %+v: %v, want ErrInvalid", bad, err)
				}
				if _, err := b.Get(ctx, bad); !errors.Is(err, ErrNotFound) {
					t.Fatalf("get %+v: %v, want ErrNotFound", bad, err)
				}
			}
			if err := b.Put(ctx, Ref{wsA, "big"}, strings.Repeat("x", MaxValueBytes+1)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("an oversized value: %v", err)
			}
			if err := b.Put(ctx, Ref{wsA, "resource.max"}, strings.Repeat("x", MaxValueBytes)); err != nil {
				t.Fatalf("the largest value: %v", err)
			}

			// List sees every secret with its creation time.
			got := listAll(t, b)
			var paths []string
			for _, e := range got {
				paths = append(paths, e.Ref.path())
				if e.Deleted {
					t.Fatalf("%s listed as deleted", e.Ref.path())
				}
				if _, isReal := b.(*OpenBao); isReal && bc.name == "openbao/real" {
					continue
				}
				if !e.CreatedAt.Equal(clk.Now()) {
					t.Fatalf("%s created %v, want %v", e.Ref.path(), e.CreatedAt, clk.Now())
				}
			}
			want := []string{wsA + "/envvar.2.a", wsA + "/resource.1.a", wsA + "/resource.max", wsB + "/resource.1.a"}
			if !slices.Equal(paths, want) {
				t.Fatalf("listed %v, want %v", paths, want)
			}
			var limited int
			if err := b.List(ctx, 2, func(Entry) error { limited++; return nil }); err != nil || limited != 2 {
				t.Fatalf("a list bounded at 2 gave %d (%v)", limited, err)
			}

			// Several at once, of one workspace only; a missing one is absent.
			many, err := GetMany(ctx, b, wsA, []string{"resource.1.a", "envvar.2.a", "resource.none", "../bad"})
			if err != nil || len(many) != 2 || many["resource.1.a"] != "second" || many["envvar.2.a"] != "" {
				t.Fatalf("GetMany = %v, %v", many, err)
			}
			if many, err := GetMany(ctx, b, wsB, []string{"envvar.2.a"}); err != nil || len(many) != 0 {
				t.Fatalf("GetMany across workspaces = %v, %v", many, err)
			}

			// Delete, twice.
			if err := b.Delete(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete(ctx, a); err != nil {
				t.Fatalf("deleting a missing secret: %v", err)
			}
			if _, err := b.Get(ctx, a); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a deleted secret: %v", err)
			}
			if got, _ := b.Get(ctx, other); got != "bee" {
				t.Fatalf("deleting A's removed B's: %q", got)
			}

			// Concurrent writers of distinct secrets all land.
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ref := Ref{wsB, fmt.Sprintf("resource.c%d", i)}
					if err := b.Put(ctx, ref, fmt.Sprint(i)); err != nil {
						errs <- err
						return
					}
					if v, err := b.Get(ctx, ref); err != nil || v != fmt.Sprint(i) {
						errs <- fmt.Errorf("%s = %q, %v", ref.Name, v, err)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
}

// TestEnvSealing: the database holds no plaintext, a sealed value moved
// to another ref does not open, and a key the keyring lacks is a
// vault_error, not garbage.
func TestEnvSealing(t *testing.T) {
	ctx := context.Background()
	d := dbtest.New(t, db.SQLite)
	k1 := newKey(t, "k1")
	keys, _ := NewKeyring(k1)
	env := NewEnv(d, keys, clock.System{})
	secret := "sk_live_correct-horse-battery-staple"
	a, b := Ref{wsA, "resource.a"}, Ref{wsB, "resource.a"}
	if err := env.Put(ctx, a, secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Put(ctx, b, "other"); err != nil {
		t.Fatal(err)
	}
	var sealed string
	if err := d.R.QueryRow("SELECT sealed FROM vault_secrets WHERE path = $1", a.path()).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, secret) || !strings.HasPrefix(sealed, "k1:") {
		t.Fatalf("stored %q", sealed)
	}
	// Move A's sealed text onto B's row: it must not open there.
	if _, err := d.W.Exec("UPDATE vault_secrets SET sealed = $1 WHERE path = $2", sealed, b.path()); err != nil {
		t.Fatal(err)
	}
	if v, err := env.Get(ctx, b); !errors.Is(err, apperr.ErrNotFound) && (err == nil || v != "") {
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Code != apperr.CodeVault {
			t.Fatalf("a moved secret opened: %q, %v", v, err)
		}
	}
	// A keyring without k1 cannot open what k1 sealed.
	other, _ := NewKeyring(newKey(t, "k2"))
	if _, err := NewEnv(d, other, clock.System{}).Get(ctx, a); err == nil || !strings.Contains(err.Error(), "k1") {
		t.Fatalf("opened without its key: %v", err)
	}
}

// TestRotation: a new key seals from the moment it is first; what the old
// key sealed still opens; Rewrap moves it (verifying each by reading back),
// leaves a secret rewritten meanwhile alone, and afterwards the old key
// can go.
func TestRotation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, engine db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, engine)
		k1, k2 := newKey(t, "k1"), newKey(t, "k2")
		old, _ := NewKeyring(k1)
		before := NewEnv(d, old, clock.System{})
		want := map[Ref]string{}
		for i := range 450 { // more than two batches
			ref := Ref{[]string{wsA, wsB}[i%2], fmt.Sprintf("resource.r%03d", i)}
			want[ref] = fmt.Sprintf("secret-%d", i)
			if err := before.Put(ctx, ref, want[ref]); err != nil {
				t.Fatal(err)
			}
		}
		both, _ := NewKeyring(k2, k1)
		after := NewEnv(d, both, clock.System{})
		if n, err := after.Stale(ctx); err != nil || n != 450 {
			t.Fatalf("stale = %d, %v", n, err)
		}
		// Readable under the old key before any rewrap.
		for ref, v := range want {
			if got, err := after.Get(ctx, ref); err != nil || got != v {
				t.Fatalf("%v before rewrap = %q, %v", ref, got, err)
			}
		}
		// A fresh write seals under k2 at once.
		fresh := Ref{wsA, "resource.r000"}
		want[fresh] = "rewritten"
		if err := after.Put(ctx, fresh, "rewritten"); err != nil {
			t.Fatal(err)
		}
		if id, _ := after.keyOfPath(ctx, fresh); id != "k2" {
			t.Fatalf("a new write sealed under %q", id)
		}
		moved, err := after.Rewrap(ctx)
		if err != nil || moved != 449 {
			t.Fatalf("rewrap moved %d, %v", moved, err)
		}
		if n, _ := after.Stale(ctx); n != 0 {
			t.Fatalf("stale after rewrap: %d", n)
		}
		if moved, err := after.Rewrap(ctx); err != nil || moved != 0 {
			t.Fatalf("a second rewrap moved %d, %v", moved, err)
		}
		// The old key removed: everything opens with k2 alone.
		only, _ := NewKeyring(k2)
		final := NewEnv(d, only, clock.System{})
		for ref, v := range want {
			if got, err := final.Get(ctx, ref); err != nil || got != v {
				t.Fatalf("%v after the old key left = %q, %v", ref, got, err)
			}
		}
	})
}

func TestParseKeys(t *testing.T) {
	k := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	keys, err := ParseKeys("k2:" + k + ", k1:" + strings.TrimRight(k, "="))
	if err != nil || len(keys) != 2 || keys[0].ID != "k2" || string(keys[1].Secret) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("%v, %v", keys, err)
	}
	for _, bad := range []string{"", "k1", "k1:short", "K1:" + k, "k1:" + k + ",k1:" + k, ":" + k} {
		if _, err := ParseKeys(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		} else if strings.Contains(err.Error(), k) {
			t.Fatalf("the error shows the key: %v", err)
		}
	}
}

// TestOpenBaoAuth: an AppRole token that expires is renewed by logging in
// again; a refused static token and a failing server are vault_errors.
func TestOpenBaoAuth(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Now())
	srv := kvtest.New(t, kvtest.Options{RoleID: "r", SecretID: "s", TokenTTL: 2 * time.Minute, Now: clk.Now})
	b, err := NewOpenBao(OpenBaoConfig{Addr: srv.URL, RoleID: "r", SecretID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ref := Ref{wsA, "resource.x"}
	if err := b.Put(ctx, ref, "v"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Minute) // the server now refuses the token
	if got, err := b.Get(ctx, ref); err != nil || got != "v" {
		t.Fatalf("after the token expired: %q, %v", got, err)
	}
	if srv.Logins() != 2 {
		t.Fatalf("%d logins, want 2", srv.Logins())
	}

	wrong, _ := NewOpenBao(OpenBaoConfig{Addr: srv.URL, Token: "not-the-token"})
	assertVaultError(t, wrong.Put(ctx, ref, "v"))
	srv.Fail(1)
	_, err = b.Get(ctx, ref)
	assertVaultError(t, err)
	badRole, _ := NewOpenBao(OpenBaoConfig{Addr: srv.URL, RoleID: "r", SecretID: "wrong"})
	_, err = badRole.Get(ctx, ref)
	assertVaultError(t, err)

	for _, cfg := range []OpenBaoConfig{{Addr: "ftp://x", Token: "t"}, {Addr: srv.URL}, {Addr: srv.URL, RoleID: "r"}, {Addr: srv.URL, Token: "t", Prefix: "../x"}, {Addr: srv.URL, Token: "t", Mount: "/secret"}} {
		if _, err := NewOpenBao(cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
	}
}

func assertVaultError(t *testing.T, err error) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.CodeVault {
		t.Fatalf("%v, want a vault_error", err)
	}
}

// TestReconcile drives the orphan sweep with a fake clock on every
// backend: the first pass only sights an orphan, the second removes it;
// nothing younger than 15 minutes, nothing claimed, nothing soft-deleted,
// nothing outside the known kinds and nothing outside our prefix goes; a
// second replica inside the same interval does not pass.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	for _, bc := range backends() {
		if bc.name == "openbao/real" {
			continue // its clock is its own
		}
		t.Run(bc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
			b := bc.make(t, clk)
			d := dbtest.New(t, db.SQLite)
			if env, ok := b.(*Env); ok {
				d = env.db
			}
			var logs bytes.Buffer
			claimed := map[string]bool{}
			var mu sync.Mutex
			claims := func(_ context.Context, ref Ref) (bool, error) {
				mu.Lock()
				defer mu.Unlock()
				return claimed[ref.path()], nil
			}
			newRec := func() *Reconciler {
				return NewReconciler(ReconcileDeps{Backend: b, DB: d, Clock: clk,
					Log: slog.New(slog.NewTextHandler(io.MultiWriter(&logs), nil)), Claims: map[string]Claims{"resource": claims}}, time.Hour)
			}
			r, replica := newRec(), newRec()

			put := func(ref Ref) {
				t.Helper()
				if err := b.Put(ctx, ref, "v"); err != nil {
					t.Fatal(err)
				}
			}
			orphan := Ref{wsA, "resource.orphan.1"}
			kept := Ref{wsA, "resource.kept.1"}
			unknownKind := Ref{wsB, "legacy.thing"}
			put(orphan)
			put(kept)
			put(unknownKind)
			claimed[kept.path()] = true
			if bao, ok := b.(*OpenBao); ok {
				// Outside our prefix: never listed, never touched.
				foreign, _ := NewOpenBao(OpenBaoConfig{Addr: bao.cfg.Addr, Token: bao.cfg.Token, RoleID: bao.cfg.RoleID, SecretID: bao.cfg.SecretID, Prefix: "someone-else"})
				if err := foreign.Put(ctx, orphan, "theirs"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if v, err := foreign.Get(ctx, orphan); err != nil || v != "theirs" {
						t.Errorf("a secret outside our prefix was touched: %q, %v", v, err)
					}
				})
				// An operator soft-deleted this one: the sweep leaves it.
				soft := Ref{wsB, "resource.soft.1"}
				put(soft)
				if _, err := bao.call(ctx, http.MethodDelete, bao.cfg.Mount+"/data/"+bao.path(soft), nil, nil); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if en, found, err := bao.metadata(ctx, soft); err != nil || !found || !en.Deleted {
						t.Errorf("the soft-deleted secret was destroyed: %v %v %v", en, found, err)
					}
				})
			}
			pass := func(rec *Reconciler) int {
				t.Helper()
				n, err := rec.Pass(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			exists := func(ref Ref) bool {
				_, err := b.Get(ctx, ref)
				return err == nil
			}

			// Young: two passes 10 minutes apart (same interval: the second
			// does not even run) remove nothing.
			if n := pass(r); n != 0 {
				t.Fatalf("a pass over young secrets removed %d", n)
			}
			clk.Advance(10 * time.Minute)
			if n := pass(replica); n != 0 || !exists(orphan) {
				t.Fatalf("a second replica within half an interval removed %d", n)
			}
			// 31 minutes: old enough; the first pass only sights it.
			clk.Advance(21 * time.Minute)
			if n := pass(r); n != 0 || !exists(orphan) {
				t.Fatalf("the first pass that saw the orphan removed %d", n)
			}
			// A secret that becomes orphaned now was not sighted yet.
			late := Ref{wsB, "resource.late.1"}
			put(late)
			// The next pass, on the other replica, removes the orphan only.
			clk.Advance(time.Hour)
			if n := pass(replica); n != 1 {
				t.Fatalf("the second pass removed %d, want 1", n)
			}
			if exists(orphan) || !exists(kept) || !exists(unknownKind) || !exists(late) {
				t.Fatalf("after the second pass: orphan %v kept %v unknown %v late %v", exists(orphan), exists(kept), exists(unknownKind), exists(late))
			}
			if !strings.Contains(logs.String(), "orphaned secret removed") || !strings.Contains(logs.String(), orphan.Name) {
				t.Fatalf("the removal is not reported: %s", logs.String())
			}
			// late is claimed before its second pass: it stays.
			mu.Lock()
			claimed[late.path()] = true
			mu.Unlock()
			clk.Advance(time.Hour)
			pass(r)
			clk.Advance(time.Hour)
			if n := pass(r); n != 0 || !exists(late) {
				t.Fatalf("a claimed secret was removed (%d)", n)
			}
		})
	}
}

// keyOfPath is the key id a stored secret names.
func (e *Env) keyOfPath(ctx context.Context, ref Ref) (string, error) {
	sealed, _, err := getSealed(ctx, e.db, ref.path())
	return keyOf(sealed), err
}
