package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"slipway/internal/admin"
	"slipway/internal/apitest"
	"slipway/internal/auth"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/ids"
)

func approved(t *testing.T, app *apitest.App, userID string) bool {
	t.Helper()
	var ok bool
	if err := app.DB.R.QueryRowContext(context.Background(), "SELECT approved FROM users WHERE id = $1", userID).Scan(&ok); err != nil {
		t.Fatalf("approved of %s: %v", userID, err)
	}
	return ok
}

// auditLog returns every audit_log row, by id, as one comparable string.
func auditLog(t *testing.T, app *apitest.App) map[string]string {
	t.Helper()
	rows, err := app.DB.R.QueryContext(context.Background(),
		"SELECT id, COALESCE(actor_id, ''), action, target_kind, target_id, COALESCE(CAST(before AS TEXT), ''), COALESCE(CAST(after AS TEXT), ''), created_at FROM audit_log")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, actorID, action, kind, target, before, after string
		var at any
		if err := rows.Scan(&id, &actorID, &action, &kind, &target, &before, &after, &at); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{actorID, action, kind, target, before, after, at})
		out[id] = string(b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// page decodes a users page.
func page(t *testing.T, r *apitest.Response) admin.UsersBody {
	t.Helper()
	var b admin.UsersBody
	r.JSON(t, &b)
	if b.Users == nil {
		t.Fatalf("users is not an array: %s", r.Body)
	}
	return b
}

func userIDs(ps []auth.Profile) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func sameIDs(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("user ids = %v, want %v", got, want)
	}
}

func TestListUsers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "no pending account", Client: adm, Method: "GET", Path: "/api/admin/users/pending",
				WantStatus: http.StatusOK, WantContains: []string{`"users":[]`, `"total":0`}},
		})

		carol := app.Approved(adm, "Carol Approved")
		alice := app.Pending("Alice Pending")
		bob := app.Pending("Bob Pending")
		all := []string{adm.ID, carol.ID, alice.ID, bob.ID}

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "pending only, oldest first", Client: adm, Method: "GET", Path: "/api/admin/users/pending",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					b := page(t, r)
					sameIDs(t, userIDs(b.Users), []string{alice.ID, bob.ID})
					if b.Total != 2 {
						t.Fatalf("total = %d, want 2", b.Total)
					}
					u := b.Users[0]
					if u.Email != alice.Email || u.DisplayName != "Alice Pending" || u.Approved || u.IsAdmin || u.CreatedAt.IsZero() {
						t.Fatalf("pending user = %+v", u)
					}
				}},
			{Name: "all accounts, oldest first", Client: adm, Method: "GET", Path: "/api/admin/users",
				WantStatus: http.StatusOK, WantNotContains: []string{"password", "hash"},
				Check: func(t *testing.T, r *apitest.Response) {
					b := page(t, r)
					sameIDs(t, userIDs(b.Users), all)
					if b.Total != 4 || !b.Users[0].IsAdmin || !b.Users[0].Approved || !b.Users[1].Approved || b.Users[1].IsAdmin {
						t.Fatalf("page = %+v", b)
					}
				}},
			{Name: "limit and offset", Client: adm, Method: "GET", Path: "/api/admin/users?limit=2&offset=1",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					b := page(t, r)
					sameIDs(t, userIDs(b.Users), all[1:3])
					if b.Total != 4 {
						t.Fatalf("total = %d, want 4", b.Total)
					}
				}},
			{Name: "pending paged", Client: adm, Method: "GET", Path: "/api/admin/users/pending?limit=1&offset=1",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					b := page(t, r)
					sameIDs(t, userIDs(b.Users), []string{bob.ID})
					if b.Total != 2 {
						t.Fatalf("total = %d, want 2", b.Total)
					}
				}},
			{Name: "offset past the end", Client: adm, Method: "GET", Path: "/api/admin/users?offset=10",
				WantStatus: http.StatusOK, WantContains: []string{`"users":[]`, `"total":4`}},
			{Name: "limit 500 is allowed", Client: adm, Method: "GET", Path: "/api/admin/users?limit=500",
				WantStatus: http.StatusOK, WantContains: []string{`"total":4`}},
			{Name: "limit over 500", Client: adm, Method: "GET", Path: "/api/admin/users?limit=501",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "limit 0", Client: adm, Method: "GET", Path: "/api/admin/users?limit=0",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "negative offset", Client: adm, Method: "GET", Path: "/api/admin/users/pending?offset=-1",
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
		})
	})
}

func TestApprove(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		pat := app.Pending("Pat Pending")
		path := "/api/admin/users/" + pat.ID + "/approve"

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "pending account is refused before approval", Client: pat, Method: "GET", Path: "/api/workspaces",
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "approve", Client: adm, Method: "POST", Path: path, WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var p auth.Profile
					r.JSON(t, &p)
					if p.ID != pat.ID || !p.Approved || p.Email != pat.Email || p.IsAdmin {
						t.Fatalf("approved profile = %+v", p)
					}
					if !approved(t, app, pat.ID) {
						t.Fatal("users.approved is still false")
					}
				}},
			{Name: "approve again", Client: adm, Method: "POST", Path: path, WantStatus: http.StatusOK,
				WantContains: []string{`"approved":true`, `"id":"` + pat.ID + `"`}},
			{Name: "unknown id", Client: adm, Method: "POST", Path: "/api/admin/users/" + ids.New() + "/approve",
				WantStatus: http.StatusNotFound, WantCode: "not_found"},
			{Name: "the existing session now works", Client: pat, Method: "GET", Path: "/api/workspaces",
				WantStatus: http.StatusOK, WantContains: []string{`"is_default":true`, `"Pat Pending's organization"`}},
		})

		rows := app.AuditEntries(t, "user.approve", pat.ID)
		if len(rows) != 1 {
			t.Fatalf("%d user.approve audit rows, want exactly 1", len(rows))
		}
		a := rows[0]
		if a.ActorID != adm.ID || a.TargetKind != "user" || a.Before["approved"] != false || a.After["approved"] != true ||
			a.Before["id"] != pat.ID || a.After["email"] != pat.Email {
			t.Fatalf("audit row = %+v", a)
		}
	})
}

func TestReject(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		ok := app.Approved(adm, "Olga Approved")
		rex := app.Pending("Rex Rejected")
		ctx := context.Background()
		var orgID, wsID string
		if err := app.DB.R.QueryRowContext(ctx, "SELECT organization_id FROM organization_members WHERE user_id = $1", rex.ID).Scan(&orgID); err != nil {
			t.Fatal(err)
		}
		if err := app.DB.R.QueryRowContext(ctx, "SELECT id FROM workspaces WHERE organization_id = $1", orgID).Scan(&wsID); err != nil {
			t.Fatal(err)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM sessions WHERE user_id = $1", rex.ID); n != 1 {
			t.Fatalf("%d sessions before the reject, want 1", n)
		}

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "reject a pending account", Client: adm, Method: "DELETE", Path: "/api/admin/users/" + rex.ID + "/reject",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var b map[string]any
					r.JSON(t, &b)
					if len(b) != 1 || b["deleted"] != true {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "rejecting again", Client: adm, Method: "DELETE", Path: "/api/admin/users/" + rex.ID + "/reject",
				WantStatus: http.StatusNotFound, WantCode: "not_found"},
			{Name: "approved account", Client: adm, Method: "DELETE", Path: "/api/admin/users/" + ok.ID + "/reject",
				WantStatus: http.StatusConflict, WantCode: "conflict"},
			{Name: "unknown id", Client: adm, Method: "DELETE", Path: "/api/admin/users/" + ids.New() + "/reject",
				WantStatus: http.StatusNotFound, WantCode: "not_found"},
			{Name: "sign in with the rejected account", Method: "POST", Path: "/api/auth/login",
				Body: map[string]string{"email": rex.Email, "password": apitest.Password}, WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "the rejected account's old session", Client: rex, Method: "GET", Path: "/api/me",
				WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "the approved account still works", Client: ok, Method: "GET", Path: "/api/workspaces",
				WantStatus: http.StatusOK, WantContains: []string{`"is_default":true`}},
		})

		for _, c := range []struct{ query, arg string }{
			{"SELECT COUNT(*) FROM users WHERE id = $1", rex.ID},
			{"SELECT COUNT(*) FROM sessions WHERE user_id = $1", rex.ID},
			{"SELECT COUNT(*) FROM organization_members WHERE user_id = $1", rex.ID},
			{"SELECT COUNT(*) FROM workspace_members WHERE user_id = $1", rex.ID},
			{"SELECT COUNT(*) FROM organizations WHERE id = $1", orgID},
			{"SELECT COUNT(*) FROM workspaces WHERE organization_id = $1", orgID},
			{"SELECT COUNT(*) FROM workspaces WHERE id = $1", wsID},
		} {
			if n := app.Count(t, c.query, c.arg); n != 0 {
				t.Errorf("%s [%s] = %d after the reject, want 0", c.query, c.arg, n)
			}
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM users WHERE id = $1 AND approved = TRUE", ok.ID); n != 1 {
			t.Fatal("the refused reject changed the approved account")
		}

		rows := app.AuditEntries(t, "user.reject", rex.ID)
		if len(rows) != 1 {
			t.Fatalf("%d user.reject audit rows, want 1", len(rows))
		}
		a := rows[0]
		if a.ActorID != adm.ID || a.TargetKind != "user" || a.Before["email"] != rex.Email || a.Before["approved"] != false || a.After != nil {
			t.Fatalf("audit row = %+v", a)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM audit_log WHERE action = 'user.reject'"); n != 1 {
			t.Fatalf("%d user.reject audit rows in all, want 1 (refused rejects wrote entries)", n)
		}
	})
}

func TestAdminAccess(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		user := app.Approved(adm, "Uma User")
		pending := app.Pending("Pat Pending")
		target := app.Pending("Tina Target")
		before := app.Count(t, "SELECT COUNT(*) FROM audit_log")

		endpoints := []struct{ method, path string }{
			{"GET", "/api/admin/users/pending"},
			{"GET", "/api/admin/users"},
			{"POST", "/api/admin/users/" + target.ID + "/approve"},
			{"DELETE", "/api/admin/users/" + target.ID + "/reject"},
			{"GET", "/api/admin/feature-availability"},
		}
		var scenarios []apitest.Scenario
		for _, ep := range endpoints {
			scenarios = append(scenarios,
				apitest.Scenario{Name: "non-admin " + ep.method + " " + ep.path, Client: user, Method: ep.method, Path: ep.path,
					WantStatus: http.StatusForbidden, WantCode: "forbidden", WantNotContains: []string{target.Email}},
				apitest.Scenario{Name: "pending " + ep.method + " " + ep.path, Client: pending, Method: ep.method, Path: ep.path,
					WantStatus: http.StatusForbidden, WantCode: "forbidden", WantNotContains: []string{target.Email}},
				apitest.Scenario{Name: "anonymous " + ep.method + " " + ep.path, Method: ep.method, Path: ep.path,
					WantStatus: http.StatusUnauthorized, WantCode: "unauthorized", WantNotContains: []string{target.Email}},
			)
		}
		scenarios = append(scenarios,
			apitest.Scenario{Name: "admin without CSRF header", Client: adm, Method: "POST", Path: "/api/admin/users/" + target.ID + "/approve",
				Header: []string{"X-CSRF-Token", ""}, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			apitest.Scenario{Name: "unknown admin route for a non-admin", Client: user, Method: "GET", Path: "/api/admin/nothing-here",
				WantStatus: http.StatusForbidden, WantCode: "forbidden"})
		apitest.Run(t, app, scenarios)

		if approved(t, app, target.ID) {
			t.Fatal("a refused approve approved the account")
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM audit_log"); n != before {
			t.Fatalf("refused requests wrote %d audit rows", n-before)
		}
	})
}

// TestAdminHandlersCheckThemselves mounts the admin operations on a separate
// mux behind authentication only (no auth.AdminLayer): the handlers must
// still refuse a non-admin.
func TestAdminHandlersCheckThemselves(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		user := app.Approved(adm, "Uma User")
		pending := app.Pending("Pat Pending")
		target := app.Pending("Tina Target")

		mux := http.NewServeMux()
		api := humago.New(mux, huma.Config{
			OpenAPI: &huma.OpenAPI{
				OpenAPI: "3.1.0",
				Info:    &huma.Info{Title: "bare admin", Version: "0"},
				Components: &huma.Components{
					Schemas:         huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer),
					SecuritySchemes: map[string]*huma.SecurityScheme{},
				},
			},
			DefaultFormat: "application/json",
			Formats: map[string]huma.Format{
				"application/json": huma.DefaultJSONFormat,
				"json":             huma.DefaultJSONFormat,
			},
		})
		svc := app.Server.Services.Auth
		admin.Register(api, svc, app.Server.Services.Tenancy, app.Server.Services.Features, app.Server.Services.SEO)
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		srv := httptest.NewServer(httpx.Observe(log, svc.Middleware(httpx.Router(mux))))
		t.Cleanup(srv.Close)

		do := func(c *apitest.Client, method, path string) (int, string) {
			t.Helper()
			req, err := http.NewRequest(method, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c != nil {
				req.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: c.SessionToken()})
				req.AddCookie(&http.Cookie{Name: auth.CSRFCookie, Value: c.CSRFToken()})
				req.Header.Set(auth.CSRFHeader, c.CSRFToken())
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		wantErr := func(status int, body string, wantStatus int, code string) {
			t.Helper()
			var eb struct{ Code, Error string }
			if status != wantStatus || json.Unmarshal([]byte(body), &eb) != nil || eb.Code != code || eb.Error == "" {
				t.Fatalf("= %d %s, want %d %s", status, body, wantStatus, code)
			}
		}
		if user.SessionToken() == "" || user.CSRFToken() == "" {
			t.Fatal("the signed-in client has no session or CSRF cookie")
		}
		audits := app.Count(t, "SELECT COUNT(*) FROM audit_log")

		status, body := do(user, "GET", "/api/admin/users")
		wantErr(status, body, http.StatusForbidden, "forbidden")
		status, body = do(user, "GET", "/api/admin/users/pending")
		wantErr(status, body, http.StatusForbidden, "forbidden")
		if strings.Contains(body, target.Email) {
			t.Fatalf("a refused list leaks accounts: %s", body)
		}
		status, body = do(user, "POST", "/api/admin/users/"+target.ID+"/approve")
		wantErr(status, body, http.StatusForbidden, "forbidden")
		status, body = do(user, "DELETE", "/api/admin/users/"+target.ID+"/reject")
		wantErr(status, body, http.StatusForbidden, "forbidden")
		status, body = do(user, "GET", "/api/admin/feature-availability")
		wantErr(status, body, http.StatusForbidden, "forbidden")
		status, body = do(pending, "POST", "/api/admin/users/"+target.ID+"/approve")
		wantErr(status, body, http.StatusForbidden, "forbidden")
		status, body = do(nil, "POST", "/api/admin/users/"+target.ID+"/approve")
		wantErr(status, body, http.StatusUnauthorized, "unauthorized")
		if approved(t, app, target.ID) || app.Count(t, "SELECT COUNT(*) FROM users WHERE id = $1", target.ID) != 1 {
			t.Fatal("a refused request changed the target account")
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM audit_log"); n != audits {
			t.Fatalf("refused requests wrote %d audit rows", n-audits)
		}

		// The same routes work for the admin: the refusals above are the
		// handlers' own checks, not a broken mount.
		status, body = do(adm, "GET", "/api/admin/users")
		if status != http.StatusOK || !strings.Contains(body, target.Email) {
			t.Fatalf("admin list on the bare mux = %d %s", status, body)
		}
		status, body = do(adm, "GET", "/api/admin/feature-availability")
		if status != http.StatusOK || !strings.Contains(body, `"secret_backend":"env"`) {
			t.Fatalf("admin features on the bare mux = %d %s", status, body)
		}
		status, body = do(adm, "POST", "/api/admin/users/"+target.ID+"/approve")
		if status != http.StatusOK || !strings.Contains(body, `"approved":true`) || !approved(t, app, target.ID) {
			t.Fatalf("admin approve on the bare mux = %d %s", status, body)
		}
	})
}

// TestAuditLogAppendOnly: approve and reject flows only ever add audit rows;
// every earlier row is still there, unchanged.
func TestAuditLogAppendOnly(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		a := app.Pending("Ann")
		b := app.Pending("Ben")
		c := app.Pending("Cid")
		if r := adm.Do("POST", "/api/admin/users/"+a.ID+"/approve", nil); r.Status != http.StatusOK {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		if r := adm.Do("DELETE", "/api/admin/users/"+b.ID+"/reject", nil); r.Status != http.StatusOK {
			t.Fatalf("reject: %d %s", r.Status, r.Body)
		}
		before := auditLog(t, app)
		if len(before) != 2 {
			t.Fatalf("%d audit rows after one approve and one reject, want 2", len(before))
		}

		steps := []struct {
			method, path string
			status       int
			added        int
		}{
			{"POST", "/api/admin/users/" + a.ID + "/approve", http.StatusOK, 0},        // repeat: no change
			{"DELETE", "/api/admin/users/" + a.ID + "/reject", http.StatusConflict, 0}, // approved now
			{"DELETE", "/api/admin/users/" + b.ID + "/reject", http.StatusNotFound, 0}, // gone
			{"POST", "/api/admin/users/" + b.ID + "/approve", http.StatusNotFound, 0},
			{"POST", "/api/admin/users/" + c.ID + "/approve", http.StatusOK, 1},
			{"POST", "/api/admin/users/" + c.ID + "/approve", http.StatusOK, 0},
		}
		want := len(before)
		for _, s := range steps {
			if r := adm.Do(s.method, s.path, nil); r.Status != s.status {
				t.Fatalf("%s %s = %d, want %d: %s", s.method, s.path, r.Status, s.status, r.Body)
			}
			want += s.added
			if n := app.Count(t, "SELECT COUNT(*) FROM audit_log"); n != want {
				t.Fatalf("after %s %s: %d audit rows, want %d", s.method, s.path, n, want)
			}
		}
		after := auditLog(t, app)
		for id, row := range before {
			if after[id] != row {
				t.Fatalf("audit row %s changed or vanished:\nbefore %s\nafter  %s", id, row, after[id])
			}
		}
	})
}

// TestMalformedPathIDs: an id with a NUL byte (or none that could exist)
// is not found, like an unknown id, on both databases, never a 500
// (PostgreSQL refuses a NUL in text); and the caller is authenticated first.
func TestMalformedPathIDs(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		adm := app.Admin()
		var scenarios []apitest.Scenario
		for _, id := range []string{"%00", "a%00b", ids.New() + "%00", "not-a-uuid"} {
			scenarios = append(scenarios,
				apitest.Scenario{Name: "approve " + id, Client: adm, Method: "POST", Path: "/api/admin/users/" + id + "/approve",
					WantStatus: http.StatusNotFound, WantCode: "not_found"},
				apitest.Scenario{Name: "reject " + id, Client: adm, Method: "DELETE", Path: "/api/admin/users/" + id + "/reject",
					WantStatus: http.StatusNotFound, WantCode: "not_found"},
				apitest.Scenario{Name: "task " + id, Client: adm, Method: "GET", Path: "/api/tasks/" + id,
					WantStatus: http.StatusNotFound, WantCode: "not_found"},
				apitest.Scenario{Name: "run " + id, Client: adm, Method: "GET", Path: "/api/runs/" + id,
					WantStatus: http.StatusNotFound, WantCode: "not_found"},
				apitest.Scenario{Name: "anonymous " + id, Client: app.Anonymous(), Method: "POST", Path: "/api/admin/users/" + id + "/approve",
					WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			)
		}
		apitest.Run(t, app, scenarios)
	})
}
