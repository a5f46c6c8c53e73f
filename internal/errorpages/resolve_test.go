package errorpages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"slipway/internal/errorpages"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// TestResolveCascade: every combination of an app page, a workspace page
// and an instance default, set or not, resolves to the first one set in
// that order, else the built-in page; an empty or {} app page, and one
// that fails the checks, fall through; another workspace's page is never
// taken.
func TestResolveCascade(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		ctx := context.Background()
		d := dbtest.New(t, e)
		t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		s := errorpages.NewService(errorpages.Deps{DB: d, Clock: clock.NewFake(t0)})
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := d.W.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		org, ws, other, user := ids.New(), ids.New(), ids.New(), ids.New()
		exec("INSERT INTO organizations (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)", org, t0)
		exec("INSERT INTO workspaces (id, organization_id, name, created_at) VALUES ($1, $2, 'w', $3), ($4, $2, 'other', $3)", ws, org, t0, other)
		exec("INSERT INTO users (id, email, display_name, approved, created_at, updated_at) VALUES ($1, 'u@example.test', 'u', TRUE, $2, $2)", user, t0)
		u := &actor.User{ID: user}
		owner := func(id string) *actor.Workspace { return &actor.Workspace{ID: id, OrganizationID: org, Role: "owner"} }
		// The other workspace always has a page: it must never be the answer.
		if _, err := s.SetWorkspace(ctx, owner(other), u, json.RawMessage(`{"title":"other workspace"}`)); err != nil {
			t.Fatal(err)
		}
		apps := []struct {
			name string
			page json.RawMessage
			set  bool
		}{
			{"no app page", nil, false},
			{"app page {}", json.RawMessage(` { } `), false},
			{"app page null", json.RawMessage(`null`), false},
			{"app page not an object", json.RawMessage(`[1]`), false},
			{"app page with a wrong-typed title", json.RawMessage(`{"title":5}`), false},
			{"app page set", json.RawMessage(`{"title":"app", "x": [1]}`), true},
		}
		for _, app := range apps {
			for _, wsSet := range []bool{false, true} {
				for _, instSet := range []bool{false, true} {
					name := fmt.Sprintf("%s, workspace %v, instance %v", app.name, wsSet, instSet)
					t.Run(name, func(t *testing.T) {
						wsPage, instPage := `{}`, `{}`
						if wsSet {
							wsPage = `{"title":"workspace"}`
						}
						if instSet {
							instPage = `{"title":"instance"}`
						}
						if _, err := s.SetWorkspace(ctx, owner(ws), u, json.RawMessage(wsPage)); err != nil {
							t.Fatal(err)
						}
						if _, err := s.SetInstance(ctx, u, json.RawMessage(instPage)); err != nil {
							t.Fatal(err)
						}
						want, wantPage := errorpages.SourceDefault, `{}`
						switch {
						case app.set:
							want, wantPage = errorpages.SourceApp, `{"title":"app","x":[1]}`
						case wsSet:
							want, wantPage = errorpages.SourceWorkspace, wsPage
						case instSet:
							want, wantPage = errorpages.SourceInstance, instPage
						}
						for _, q := range []db.Queryer{d.R, d.W} {
							got, err := s.Resolve(ctx, q, ws, app.page)
							if err != nil {
								t.Fatal(err)
							}
							if got.Source != want || string(got.Page) != wantPage {
								t.Fatalf("resolved %s %s, want %s %s", got.Source, got.Page, want, wantPage)
							}
						}
					})
				}
			}
		}
		// Inside the caller's transaction too.
		if err := d.Tx(ctx, func(tx *db.Tx) error {
			got, err := s.Resolve(ctx, tx, ws, nil)
			if err == nil && got.Source != errorpages.SourceWorkspace {
				err = fmt.Errorf("in a transaction: %s", got.Source)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		// An unknown workspace has no page of its own.
		got, err := s.Resolve(ctx, d.R, ids.New(), nil)
		if err != nil || got.Source != errorpages.SourceInstance {
			t.Fatalf("unknown workspace: %+v %v", got, err)
		}
		// A deleted workspace takes its page with it.
		exec("DELETE FROM workspaces WHERE id = $1", ws)
		var n int
		if err := d.R.QueryRowContext(ctx, "SELECT COUNT(*) FROM workspace_error_pages WHERE workspace_id = $1", ws).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d pages left for a deleted workspace (%v)", n, err)
		}
	})
}
