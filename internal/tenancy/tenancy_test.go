package tenancy_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/apitest"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/tenancy"
)

// join makes userID a member of someone else's organization (no invite
// endpoint exists yet): an organization_members row with orgRole and, when
// wsID is set, a workspace_members row with wsRole.
func join(t *testing.T, app *apitest.App, orgID, userID, orgRole, wsID, wsRole string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if orgRole != "" {
		if _, err := app.DB.W.ExecContext(ctx, "INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
			orgID, userID, orgRole, now); err != nil {
			t.Fatalf("join organization: %v", err)
		}
	}
	if wsID != "" {
		if _, err := app.DB.W.ExecContext(ctx, "INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)",
			wsID, userID, wsRole, now); err != nil {
			t.Fatalf("join workspace: %v", err)
		}
	}
}

// org returns the caller's active organization.
func org(t *testing.T, c *apitest.Client, header ...string) tenancy.Organization {
	t.Helper()
	r := c.Do("GET", "/organization", nil, header...)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /organization = %d: %s", r.Status, r.Body)
	}
	var o tenancy.Organization
	r.JSON(t, &o)
	return o
}

// workspaces lists the caller's joined workspaces.
func workspaces(t *testing.T, c *apitest.Client) []tenancy.Workspace {
	t.Helper()
	r := c.Do("GET", "/api/workspaces", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /api/workspaces = %d: %s", r.Status, r.Body)
	}
	var ws []tenancy.Workspace
	r.JSON(t, &ws)
	return ws
}

// createWorkspace creates a workspace as c and returns it.
func createWorkspace(t *testing.T, c *apitest.Client, name string) tenancy.Workspace {
	t.Helper()
	r := c.Do("POST", "/api/workspaces", map[string]string{"name": name})
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /api/workspaces = %d: %s", r.Status, r.Body)
	}
	var w tenancy.Workspace
	r.JSON(t, &w)
	return w
}

func TestOrganizationRead(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		pending := app.Pending("Pat Pending")

		var orgID string
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "owner sees the personal organization", Client: owner, Method: "GET", Path: "/organization",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var o tenancy.Organization
					r.JSON(t, &o)
					if o.Name != "Olivia Owner's organization" || o.Role != tenancy.RoleOwner || !ids.Valid(o.ID) || o.CreatedAt.IsZero() {
						t.Fatalf("organization = %+v", o)
					}
					orgID = o.ID
				}},
			{Name: "owner is the only member", Client: owner, Method: "GET", Path: "/organization/members",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var ms []tenancy.Member
					r.JSON(t, &ms)
					if len(ms) != 1 || ms[0].UserID != owner.ID || ms[0].Role != tenancy.RoleOwner ||
						ms[0].Email != owner.Email || ms[0].DisplayName != "Olivia Owner" || ms[0].JoinedAt.IsZero() {
						t.Fatalf("members = %+v", ms)
					}
				}},
			{Name: "summary counts one owner and one workspace", Client: owner, Method: "GET", Path: "/organization/summary",
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var s tenancy.Summary
					r.JSON(t, &s)
					if s.ID != orgID || s.Name != "Olivia Owner's organization" || s.Role != tenancy.RoleOwner ||
						s.MemberCount != 1 || s.WorkspaceCount != 1 ||
						s.MembersByRole["owner"] != 1 || s.MembersByRole["admin"] != 0 || s.MembersByRole["member"] != 0 || len(s.MembersByRole) != 3 {
						t.Fatalf("summary = %+v", s)
					}
				}},
			{Name: "anonymous organization", Method: "GET", Path: "/organization", WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "anonymous members", Method: "GET", Path: "/organization/members", WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "anonymous summary", Method: "GET", Path: "/organization/summary", WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "pending organization", Client: pending, Method: "GET", Path: "/organization", WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "pending members", Client: pending, Method: "GET", Path: "/organization/members", WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "pending summary", Client: pending, Method: "GET", Path: "/organization/summary", WantStatus: http.StatusForbidden, WantCode: "forbidden"},
		})

		ws := workspaces(t, owner)
		if len(ws) != 1 || ws[0].Name != tenancy.DefaultWorkspaceName || ws[0].OrganizationID != orgID ||
			ws[0].OrganizationName != "Olivia Owner's organization" || ws[0].Role != tenancy.RoleOwner || !ws[0].IsDefault {
			t.Fatalf("a new account's workspaces = %+v", ws)
		}
	})
}

// actIn makes wsID the user's default workspace, so requests without
// selector headers act in it (and in its organization). Call it before the
// user's first request: a signed-in session may be cached in memory.
func actIn(t *testing.T, app *apitest.App, userID, wsID string) {
	t.Helper()
	if _, err := app.DB.W.ExecContext(context.Background(), "UPDATE users SET default_workspace_id = $1 WHERE id = $2", wsID, userID); err != nil {
		t.Fatalf("set default workspace: %v", err)
	}
}

func TestOrganizationRename(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		orgAdmin := app.Approved(admin, "Adam Admin")
		member := app.Approved(admin, "Mia Member")
		o := org(t, owner)
		ws := owner.DefaultWorkspace()
		// Both act in the owner's workspace by default, so the requests
		// below select the owner's organization without headers.
		join(t, app, o.ID, orgAdmin.ID, tenancy.RoleAdmin, ws, tenancy.RoleMember)
		join(t, app, o.ID, member.ID, tenancy.RoleMember, ws, tenancy.RoleAdmin)
		actIn(t, app, orgAdmin.ID, ws)
		actIn(t, app, member.ID, ws)

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "owner renames", Client: owner, Method: "PUT", Path: "/organization", Body: map[string]string{"name": "  Acme  "},
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var got tenancy.Organization
					r.JSON(t, &got)
					if got.ID != o.ID || got.Name != "Acme" || got.Role != tenancy.RoleOwner {
						t.Fatalf("renamed = %+v", got)
					}
					if n := org(t, owner).Name; n != "Acme" {
						t.Fatalf("name after rename = %q", n)
					}
					rows := app.AuditEntries(t, "organization.rename", o.ID)
					if len(rows) != 1 {
						t.Fatalf("%d organization.rename audit rows, want 1", len(rows))
					}
					a := rows[0]
					if a.ActorID != owner.ID || a.TargetKind != "organization" ||
						a.Before["name"] != "Olivia Owner's organization" || a.After["name"] != "Acme" ||
						a.Before["id"] != o.ID || a.After["id"] != o.ID {
						t.Fatalf("audit row = %+v", a)
					}
				}},
			{Name: "org admin renames", Client: orgAdmin, Method: "PUT", Path: "/organization", Body: map[string]string{"name": "Acme Two"},
				WantStatus: http.StatusOK, WantContains: []string{`"id":"` + o.ID + `"`, `"name":"Acme Two"`, `"role":"admin"`}},
			{Name: "org member (workspace admin) may not rename", Client: member, Method: "PUT", Path: "/organization", Body: map[string]string{"name": "Mine"},
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "empty name", Client: owner, Method: "PUT", Path: "/organization", Body: map[string]string{"name": ""},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "blank name", Client: owner, Method: "PUT", Path: "/organization", Body: map[string]string{"name": "   "},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "unknown field", Client: owner, Method: "PUT", Path: "/organization", Body: `{"name":"X","owner":"someone"}`,
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "without CSRF header", Client: owner, Method: "PUT", Path: "/organization", Body: map[string]string{"name": "X"},
				Header: []string{"X-CSRF-Token", ""}, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "anonymous", Method: "PUT", Path: "/organization", Body: map[string]string{"name": "X"},
				WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
		})

		if n := org(t, owner).Name; n != "Acme Two" {
			t.Fatalf("name after the refused renames = %q", n)
		}
		if rows := app.AuditEntries(t, "organization.rename", o.ID); len(rows) != 2 || rows[1].ActorID != orgAdmin.ID ||
			rows[1].Before["name"] != "Acme" || rows[1].After["name"] != "Acme Two" {
			t.Fatalf("rename audit rows = %+v", rows)
		}
		for _, c := range []*apitest.Client{orgAdmin, member} {
			if n := app.Count(t, "SELECT COUNT(*) FROM audit_log WHERE action = 'organization.rename' AND actor_id = $1 AND target_id <> $2", c.ID, o.ID); n != 0 {
				t.Fatalf("%s renamed another organization", c.Email)
			}
		}
	})
}

// TestSelectorHeadersOnWrites: PUT /organization and POST /api/workspaces
// document X-Organization-Id / X-Workspace-Id like the read operations
// (selectorInput), and must act on the organization they select.
func TestSelectorHeadersOnWrites(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		orgAdmin := app.Approved(admin, "Adam Admin")
		member := app.Approved(admin, "Mia Member")
		o := org(t, owner)
		ws := owner.DefaultWorkspace()
		join(t, app, o.ID, orgAdmin.ID, tenancy.RoleAdmin, "", "")
		join(t, app, o.ID, member.ID, tenancy.RoleMember, ws, tenancy.RoleMember)
		adminOrg, memberOrg := org(t, orgAdmin), org(t, member)
		sel := []string{tenancy.OrganizationHeader, o.ID}

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "org admin renames the organization named by X-Organization-Id", Client: orgAdmin, Method: "PUT", Path: "/organization",
				Header: sel, Body: map[string]string{"name": "Acme"},
				WantStatus: http.StatusOK, WantContains: []string{`"id":"` + o.ID + `"`, `"role":"admin"`}},
			{Name: "org member may not rename the organization named by X-Organization-Id", Client: member, Method: "PUT", Path: "/organization",
				Header: sel, Body: map[string]string{"name": "Mine"}, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "X-Organization-Id of a foreign organization on rename", Client: owner, Method: "PUT", Path: "/organization",
				Header: []string{tenancy.OrganizationHeader, memberOrg.ID}, Body: map[string]string{"name": "Taken"},
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "malformed X-Organization-Id on rename", Client: owner, Method: "PUT", Path: "/organization",
				Header: []string{tenancy.OrganizationHeader, "nope"}, Body: map[string]string{"name": "Nope"},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "org member acting in the workspace by X-Workspace-Id may not create", Client: member, Method: "POST", Path: "/api/workspaces",
				Header: []string{tenancy.WorkspaceHeader, ws}, Body: map[string]string{"name": "Nope"},
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "org admin creates in the organization named by X-Organization-Id", Client: orgAdmin, Method: "POST", Path: "/api/workspaces",
				Header: sel, Body: map[string]string{"name": "By header"},
				WantStatus: http.StatusCreated, WantContains: []string{`"organization_id":"` + o.ID + `"`}},
		})

		// None of the callers' own organizations was touched instead.
		for _, c := range []struct {
			client *apitest.Client
			org    tenancy.Organization
		}{{orgAdmin, adminOrg}, {member, memberOrg}, {owner, o}} {
			if r := c.client.Do("GET", "/organization", nil, tenancy.OrganizationHeader, c.org.ID); r.Status != http.StatusOK {
				t.Fatalf("GET own organization: %d %s", r.Status, r.Body)
			} else if got := r.Map(t)["name"]; c.client != owner && got != c.org.Name {
				t.Errorf("%s's own organization was renamed to %v by a request naming another organization", c.client.Email, got)
			}
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM workspaces WHERE name = 'Nope'"); n != 0 {
			t.Errorf("a refused create made %d workspace(s) (in the caller's own organization)", n)
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM workspaces WHERE name = 'By header' AND organization_id <> $1", o.ID); n != 0 {
			t.Errorf("a create naming the organization by header made the workspace in another organization")
		}
	})
}

func TestOrganizationDelete(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		orgAdmin := app.Approved(admin, "Adam Admin")
		member := app.Approved(admin, "Mia Member")
		o := org(t, owner)
		join(t, app, o.ID, orgAdmin.ID, tenancy.RoleAdmin, "", "")
		join(t, app, o.ID, member.ID, tenancy.RoleMember, "", "")
		sel := []string{tenancy.OrganizationHeader, o.ID}
		wsID := owner.DefaultWorkspace()

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "member may not delete", Client: member, Method: "DELETE", Path: "/organization", Header: sel,
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "admin may not delete", Client: orgAdmin, Method: "DELETE", Path: "/organization", Header: sel,
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "owner while it owns workspaces", Client: owner, Method: "DELETE", Path: "/organization",
				WantStatus: http.StatusPreconditionFailed, WantCode: "precondition_failed"},
			{Name: "delete the only workspace", Client: owner, Method: "DELETE", Path: "/api/workspaces/" + wsID,
				WantStatus: http.StatusOK, WantContains: []string{`"deleted":true`}},
			{Name: "owner deletes the empty organization", Client: owner, Method: "DELETE", Path: "/organization", Header: sel,
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var b map[string]any
					r.JSON(t, &b)
					if len(b) != 1 || b["deleted"] != true {
						t.Fatalf("body = %s", r.Body)
					}
				}},
			{Name: "the deleted organization is gone", Client: owner, Method: "GET", Path: "/organization", Header: sel,
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "also for its former admin", Client: orgAdmin, Method: "GET", Path: "/organization", Header: sel,
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
		})

		if n := app.Count(t, "SELECT COUNT(*) FROM organizations WHERE id = $1", o.ID); n != 0 {
			t.Fatalf("organization row still there")
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM organization_members WHERE organization_id = $1", o.ID); n != 0 {
			t.Fatalf("%d organization_members rows left", n)
		}
		if rows := app.AuditEntries(t, "organization.delete", o.ID); len(rows) != 1 || rows[0].ActorID != owner.ID ||
			rows[0].Before["id"] != o.ID || rows[0].After != nil {
			t.Fatalf("organization.delete audit rows = %+v", rows)
		}
		if rows := app.AuditEntries(t, "workspace.delete", wsID); len(rows) != 1 || rows[0].ActorID != owner.ID {
			t.Fatalf("workspace.delete audit rows = %+v", rows)
		}
		if ws := workspaces(t, owner); len(ws) != 0 {
			t.Fatalf("workspaces after deleting the organization = %+v", ws)
		}
	})
}

func TestOrganizationSelectors(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		alice := app.Approved(admin, "Alice")
		bob := app.Approved(admin, "Bob")
		bobOrg := org(t, bob)
		bobWS := bob.DefaultWorkspace()

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "own organization by header", Client: alice, Method: "GET", Path: "/organization",
				Header: []string{tenancy.OrganizationHeader, org(t, alice).ID}, WantStatus: http.StatusOK, WantContains: []string{`"Alice's organization"`}},
			{Name: "foreign organization", Client: alice, Method: "GET", Path: "/organization",
				Header: []string{tenancy.OrganizationHeader, bobOrg.ID}, WantStatus: http.StatusForbidden, WantCode: "forbidden",
				WantNotContains: []string{"Bob"}},
			{Name: "foreign organization members", Client: alice, Method: "GET", Path: "/organization/members",
				Header: []string{tenancy.OrganizationHeader, bobOrg.ID}, WantStatus: http.StatusForbidden, WantCode: "forbidden",
				WantNotContains: []string{bob.Email}},
			{Name: "malformed organization id", Client: alice, Method: "GET", Path: "/organization",
				Header: []string{tenancy.OrganizationHeader, "not-a-uuid"}, WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "malformed workspace id", Client: alice, Method: "GET", Path: "/organization",
				Header: []string{tenancy.WorkspaceHeader, "12345"}, WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
		})

		// Another account's workspace and an unknown one answer the same.
		for _, path := range []string{"/organization", "/organization/members", "/organization/summary"} {
			foreign := alice.Do("GET", path, nil, tenancy.WorkspaceHeader, bobWS)
			unknown := alice.Do("GET", path, nil, tenancy.WorkspaceHeader, ids.New())
			if foreign.Status != http.StatusForbidden || unknown.Status != http.StatusForbidden {
				t.Fatalf("%s: foreign workspace %d, unknown %d, want 403: %s %s", path, foreign.Status, unknown.Status, foreign.Body, unknown.Body)
			}
			if string(foreign.Body) != string(unknown.Body) {
				t.Fatalf("%s: foreign and unknown workspace answer differently:\n%s\n%s", path, foreign.Body, unknown.Body)
			}
			var eb struct{ Code, Error string }
			foreign.JSON(t, &eb)
			if eb.Code != "forbidden" || eb.Error == "" {
				t.Fatalf("%s: error body = %s", path, foreign.Body)
			}
		}
	})
}

func TestWorkspaces(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		member := app.Approved(admin, "Mia Member")
		outsider := app.Approved(admin, "Otto Outsider")
		o := org(t, owner)
		defWS := owner.DefaultWorkspace()
		join(t, app, o.ID, member.ID, tenancy.RoleMember, defWS, tenancy.RoleMember)

		var created tenancy.Workspace
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "anonymous list", Method: "GET", Path: "/api/workspaces", WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "owner creates", Client: owner, Method: "POST", Path: "/api/workspaces", Body: map[string]string{"name": " Second "},
				WantStatus: http.StatusCreated,
				Check: func(t *testing.T, r *apitest.Response) {
					r.JSON(t, &created)
					if !ids.Valid(created.ID) || created.Name != "Second" || created.OrganizationID != o.ID ||
						created.Role != tenancy.RoleOwner || created.IsDefault {
						t.Fatalf("created = %+v", created)
					}
					if n := app.Count(t, "SELECT COUNT(*) FROM workspace_members WHERE workspace_id = $1 AND user_id = $2 AND role = 'owner'",
						created.ID, owner.ID); n != 1 {
						t.Fatalf("the creator is not the workspace owner")
					}
					if rows := app.AuditEntries(t, "workspace.create", created.ID); len(rows) != 1 || rows[0].ActorID != owner.ID ||
						rows[0].Before != nil || rows[0].After["name"] != "Second" {
						t.Fatalf("workspace.create audit rows = %+v", rows)
					}
				}},
			{Name: "owner creates in the named organization", Client: owner, Method: "POST", Path: "/api/workspaces",
				Body: map[string]string{"name": "Third", "organization_id": o.ID}, WantStatus: http.StatusCreated,
				WantContains: []string{`"organization_id":"` + o.ID + `"`}},
			{Name: "member may not create", Client: member, Method: "POST", Path: "/api/workspaces",
				Body: map[string]string{"name": "Nope", "organization_id": o.ID}, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "foreign organization", Client: outsider, Method: "POST", Path: "/api/workspaces",
				Body: map[string]string{"name": "Intruder", "organization_id": o.ID}, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "empty name", Client: owner, Method: "POST", Path: "/api/workspaces", Body: map[string]string{"name": ""},
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "unknown field", Client: owner, Method: "POST", Path: "/api/workspaces", Body: `{"name":"X","color":"red"}`,
				WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "anonymous create", Method: "POST", Path: "/api/workspaces", Body: map[string]string{"name": "X"},
				WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
		})

		ws := workspaces(t, owner)
		if len(ws) != 3 || ws[0].ID != defWS || !ws[0].IsDefault || ws[1].ID != created.ID || ws[1].IsDefault || ws[2].Name != "Third" || ws[2].IsDefault {
			t.Fatalf("owner's workspaces = %+v", ws)
		}
		for _, w := range ws {
			if w.Role != tenancy.RoleOwner || w.OrganizationID != o.ID {
				t.Fatalf("owner's workspace = %+v", w)
			}
		}
		// The member sees its own default first and the joined one, with its
		// member role; never the workspaces it has not joined.
		mws := workspaces(t, member)
		if len(mws) != 2 || !mws[0].IsDefault || mws[1].ID != defWS || mws[1].Role != tenancy.RoleMember || mws[1].IsDefault {
			t.Fatalf("member's workspaces = %+v", mws)
		}
		for _, w := range workspaces(t, outsider) {
			if w.OrganizationID == o.ID {
				t.Fatalf("the outsider lists a workspace of the owner's organization: %+v", w)
			}
		}
		if n := app.Count(t, "SELECT COUNT(*) FROM workspaces WHERE name IN ('Nope', 'Intruder', 'X')"); n != 0 {
			t.Fatalf("a refused create made %d workspace(s)", n)
		}
	})
}

func TestDeleteWorkspace(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		member := app.Approved(admin, "Mia Member")
		outsider := app.Approved(admin, "Otto Outsider")
		o := org(t, owner)
		shared := createWorkspace(t, owner, "Shared")
		join(t, app, o.ID, member.ID, tenancy.RoleMember, shared.ID, tenancy.RoleAdmin)
		doomed := createWorkspace(t, owner, "Doomed")

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "org member (workspace admin) may not delete", Client: member, Method: "DELETE", Path: "/api/workspaces/" + shared.ID,
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "org member may not delete one it has not joined", Client: member, Method: "DELETE", Path: "/api/workspaces/" + doomed.ID,
				WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "anonymous", Method: "DELETE", Path: "/api/workspaces/" + doomed.ID,
				WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "owner deletes", Client: owner, Method: "DELETE", Path: "/api/workspaces/" + doomed.ID,
				WantStatus: http.StatusOK,
				Check: func(t *testing.T, r *apitest.Response) {
					var b map[string]any
					r.JSON(t, &b)
					if len(b) != 1 || b["deleted"] != true {
						t.Fatalf("body = %s", r.Body)
					}
					if n := app.Count(t, "SELECT COUNT(*) FROM workspaces WHERE id = $1", doomed.ID); n != 0 {
						t.Fatal("workspace row still there")
					}
				}},
			{Name: "deleting again", Client: owner, Method: "DELETE", Path: "/api/workspaces/" + doomed.ID,
				WantStatus: http.StatusNotFound, WantCode: "not_found"},
		})
		if n := app.Count(t, "SELECT COUNT(*) FROM workspaces WHERE id = $1", shared.ID); n != 1 {
			t.Fatal("a refused delete removed the workspace")
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{{
			Name: "delete workspace", Method: "DELETE", Path: "/api/workspaces/{id}",
			Create: func(t *testing.T, owner *apitest.Client) string { return createWorkspace(t, owner, "Tenancy").ID },
		}})
	})
}

type activeWorkspaceOutput struct {
	Body struct {
		ID             string `json:"id"`
		OrganizationID string `json:"organization_id"`
		Role           string `json:"role"`
	}
}

// mountActiveWorkspace adds a test-only workspace-scoped operation that
// echoes the workspace the middleware resolved.
func mountActiveWorkspace(app *apitest.App) {
	api := app.Server.APIs.Public
	huma.Register(api, huma.Operation{
		OperationID: "test_active_workspace", Method: http.MethodGet, Path: "/api/test/active-workspace",
		Middlewares: huma.Middlewares{app.Server.Services.Tenancy.WorkspaceScoped(api)},
	}, func(ctx context.Context, _ *struct{}) (*activeWorkspaceOutput, error) {
		w, err := actor.WorkspaceFrom(ctx)
		if err != nil {
			return nil, err
		}
		out := &activeWorkspaceOutput{}
		out.Body.ID, out.Body.OrganizationID, out.Body.Role = w.ID, w.OrganizationID, w.Role
		return out, nil
	})
}

func TestWorkspaceScoped(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		mountActiveWorkspace(app)
		admin := app.Admin()
		owner := app.Approved(admin, "Olivia Owner")
		other := app.Approved(admin, "Otto Other")
		leaver := app.Approved(admin, "Lee Leaver")
		pending := app.Pending("Pat Pending")
		o := org(t, owner)
		defWS := owner.DefaultWorkspace()
		second := createWorkspace(t, owner, "Second")
		// A workspace of the other account the owner joins as a plain member.
		otherWS := other.DefaultWorkspace()
		otherOrg := org(t, other)
		joined := createWorkspace(t, other, "Joined")
		join(t, app, "", owner.ID, "", joined.ID, tenancy.RoleMember)
		if _, err := app.DB.W.ExecContext(context.Background(), "DELETE FROM workspace_members WHERE user_id = $1", leaver.ID); err != nil {
			t.Fatal(err)
		}

		const path = "/api/test/active-workspace"
		want := func(id, orgID, role string) func(t *testing.T, r *apitest.Response) {
			return func(t *testing.T, r *apitest.Response) {
				var got activeWorkspaceOutput
				r.JSON(t, &got.Body)
				if got.Body.ID != id || got.Body.OrganizationID != orgID || got.Body.Role != role {
					t.Fatalf("active workspace = %+v, want %s/%s/%s", got.Body, id, orgID, role)
				}
			}
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "default workspace without a header", Client: owner, Method: "GET", Path: path,
				WantStatus: http.StatusOK, Check: want(defWS, o.ID, tenancy.RoleOwner)},
			{Name: "second joined workspace by header", Client: owner, Method: "GET", Path: path,
				Header: []string{tenancy.WorkspaceHeader, second.ID}, WantStatus: http.StatusOK, Check: want(second.ID, o.ID, tenancy.RoleOwner)},
			{Name: "joined workspace of another organization, member role", Client: owner, Method: "GET", Path: path,
				Header: []string{tenancy.WorkspaceHeader, joined.ID}, WantStatus: http.StatusOK, Check: want(joined.ID, otherOrg.ID, tenancy.RoleMember)},
			{Name: "another account's workspace", Client: owner, Method: "GET", Path: path,
				Header: []string{tenancy.WorkspaceHeader, otherWS}, WantStatus: http.StatusForbidden, WantCode: "forbidden",
				WantContains: []string{"X-Workspace-Id"}},
			{Name: "malformed header", Client: owner, Method: "GET", Path: path,
				Header: []string{tenancy.WorkspaceHeader, "workspace-1"}, WantStatus: http.StatusBadRequest, WantCode: "bad_request"},
			{Name: "anonymous", Method: "GET", Path: path, WantStatus: http.StatusUnauthorized, WantCode: "unauthorized"},
			{Name: "pending account", Client: pending, Method: "GET", Path: path, WantStatus: http.StatusForbidden, WantCode: "forbidden"},
			{Name: "no joined workspace", Client: leaver, Method: "GET", Path: path, WantStatus: http.StatusForbidden, WantCode: "forbidden",
				WantContains: []string{"you have not joined any workspace"}},
			{Name: "no joined workspace, organization endpoint", Client: leaver, Method: "GET", Path: "/organization",
				WantStatus: http.StatusForbidden, WantCode: "forbidden", WantContains: []string{"you have not joined any workspace"}},
		})

		foreign := owner.Do("GET", path, nil, tenancy.WorkspaceHeader, otherWS)
		unknown := owner.Do("GET", path, nil, tenancy.WorkspaceHeader, ids.New())
		if foreign.Status != http.StatusForbidden || unknown.Status != foreign.Status || string(unknown.Body) != string(foreign.Body) {
			t.Fatalf("another account's workspace and an unknown one answer differently:\n%d %s\n%d %s",
				foreign.Status, foreign.Body, unknown.Status, unknown.Body)
		}

		// Without its default workspace the owner falls back to the earliest
		// joined one.
		if r := owner.Do("DELETE", "/api/workspaces/"+defWS, nil); r.Status != http.StatusOK {
			t.Fatalf("delete default workspace: %d %s", r.Status, r.Body)
		}
		r := owner.Do("GET", path, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("after deleting the default workspace: %d %s", r.Status, r.Body)
		}
		want(second.ID, o.ID, tenancy.RoleOwner)(t, r)
		// The list marks the same workspace as the default.
		var defaults []string
		for _, w := range workspaces(t, owner) {
			if w.IsDefault {
				defaults = append(defaults, w.ID)
			}
		}
		if len(defaults) != 1 || defaults[0] != second.ID {
			t.Fatalf("after deleting the default workspace, is_default marks %v; requests without a header act in %s", defaults, second.ID)
		}
	})
}
