package tenancy_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// team is an organization with people in it, each signed in.
type team struct {
	app   *apitest.App
	admin *apitest.Client // the instance admin
	owner *apitest.Client
	org   string
	ws    string
}

func newTeam(t *testing.T, e db.Engine) *team {
	app := apitest.New(t, e)
	admin := app.Admin()
	owner := app.Approved(admin, "Olga Owner")
	return &team{app: app, admin: admin, owner: owner, org: orgOf(t, owner), ws: owner.DefaultWorkspace()}
}

// join brings a new person into the organization with a role (invited as
// admin or member, made owner by the owner).
func (tm *team) join(t *testing.T, name, role string) *apitest.Client {
	t.Helper()
	c := tm.app.Approved(tm.admin, name)
	invRole := role
	if role == "owner" {
		invRole = "admin"
	}
	in := issue(t, tm.owner, map[string]any{"email": c.Email, "role": invRole}, "X-Organization-Id", tm.org)
	tm.app.Remember(in.Token)
	if r := accept(c, in.Token); r.Status != 200 {
		t.Fatalf("%s accepts: %d %s", name, r.Status, r.Body)
	}
	if role == "owner" {
		if r := tm.owner.Do("PUT", "/organization/members/"+c.ID+"/role", map[string]any{"role": "owner"}, "X-Organization-Id", tm.org); r.Status != 200 {
			t.Fatalf("make %s owner: %d %s", name, r.Status, r.Body)
		}
	}
	return c
}

func (tm *team) as(c *apitest.Client, method, path string, body any) *apitest.Response {
	return c.Do(method, path, body, "X-Organization-Id", tm.org)
}

// The permission rules as data, tested exhaustively: who may change,
// suspend or offboard whom.
func TestMemberRoleTable(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		tm := newTeam(t, e)
		actors := map[string]*apitest.Client{"owner": tm.owner, "admin": tm.join(t, "Ada Admin", "admin"), "member": tm.join(t, "Mo Member", "member")}
		may := map[string]map[string]bool{ // actor role → target role → allowed
			"owner":  {"owner": true, "admin": true, "member": true},
			"admin":  {"owner": false, "admin": true, "member": true},
			"member": {"owner": false, "admin": false, "member": false},
		}
		type action struct {
			name, method, path string
			body               any
			needs              []string // roles the actor must be allowed to manage, besides the target's
		}
		actions := []action{
			{"make owner", "PUT", "/role", map[string]any{"role": "owner"}, []string{"owner"}},
			{"make admin", "PUT", "/role", map[string]any{"role": "admin"}, []string{"admin"}},
			{"make member", "PUT", "/role", map[string]any{"role": "member"}, []string{"member"}},
			{"suspend", "POST", "/suspend", nil, nil},
			{"offboard", "DELETE", "", nil, nil},
		}
		n := 0
		for _, actorRole := range []string{"owner", "admin", "member"} {
			for _, targetRole := range []string{"owner", "admin", "member"} {
				for _, a := range actions {
					n++
					t.Run(fmt.Sprintf("%s %s %s", actorRole, a.name, targetRole), func(t *testing.T) {
						target := tm.join(t, fmt.Sprintf("Target %d", n), targetRole)
						allowed := may[actorRole][targetRole]
						for _, r := range a.needs {
							allowed = allowed && may[actorRole][r]
						}
						r := tm.as(actors[actorRole], a.method, "/organization/members/"+target.ID+a.path, a.body)
						want := http.StatusForbidden
						if allowed {
							want = http.StatusOK
						}
						if r.Status != want {
							t.Fatalf("%d, want %d: %s", r.Status, want, r.Body)
						}
					})
				}
			}
		}
	})
}

func TestMembers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		tm := newTeam(t, e)
		app, owner := tm.app, tm.owner
		ada := tm.join(t, "Ada Admin", "admin")
		mo := tm.join(t, "Mo Member", "member")
		outsider := app.Approved(tm.admin, "Otto Outsider")

		// The last owner stays: not demoted, suspended, or removed, and may not leave.
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "anonymous role change with a bad body is 401", Method: "PUT", Path: "/organization/members/" + mo.ID + "/role", Body: map[string]any{"role": 7},
				WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous transfer", Method: "POST", Path: "/organization/transfer-ownership", Body: map[string]any{}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous board", Method: "GET", Path: "/api/organization/members/board", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "the last owner is not demoted", Client: owner, Method: "PUT", Path: "/organization/members/" + owner.ID + "/role", Body: map[string]any{"role": "admin"},
				WantStatus: 409, WantCode: "conflict", WantContains: []string{"last owner"}},
			{Name: "the last owner does not leave", Client: owner, Method: "DELETE", Path: "/organization/members/" + owner.ID, WantStatus: 409, WantCode: "conflict"},
			{Name: "nobody suspends themselves", Client: ada, Method: "POST", Path: "/organization/members/" + ada.ID + "/suspend", Header: []string{"X-Organization-Id", tm.org},
				WantStatus: 409, WantCode: "conflict"},
			{Name: "a bad role", Client: owner, Method: "PUT", Path: "/organization/members/" + mo.ID + "/role", Body: map[string]any{"role": "boss"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "unknown member", Client: owner, Method: "POST", Path: "/organization/members/" + ids.New() + "/suspend", WantStatus: 404, WantCode: "not_found"},
			{Name: "member workspaces", Client: mo, Method: "GET", Path: "/organization/members/" + mo.ID + "/workspaces", Header: []string{"X-Organization-Id", tm.org},
				WantStatus: 200, WantContains: []string{tm.ws}},
			{Name: "a member reads no audit", Client: mo, Method: "GET", Path: "/organization/members/" + ada.ID + "/audit", Header: []string{"X-Organization-Id", tm.org},
				WantStatus: 403, WantCode: "forbidden"},
			{Name: "the outsider naming the organization", Client: outsider, Method: "GET", Path: "/organization/members/" + mo.ID + "/workspaces",
				Header: []string{"X-Organization-Id", tm.org}, WantStatus: 403, WantCode: "forbidden"},
		})

		// Suspension: no access to the organization's workspace until reactivated.
		if r := inWS(mo, tm.ws).Do("GET", "/api/projects", nil); r.Status != 200 {
			t.Fatalf("mo before: %d", r.Status)
		}
		if r := tm.as(ada, "POST", "/organization/members/"+mo.ID+"/suspend", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"status":"suspended"`) {
			t.Fatalf("suspend: %d %s", r.Status, r.Body)
		}
		if r := inWS(mo, tm.ws).Do("GET", "/api/projects", nil); r.Status != 403 {
			t.Fatalf("a suspended member's access: %d", r.Status)
		}
		if r := tm.as(mo, "GET", "/organization", nil); r.Status != 403 {
			t.Fatalf("a suspended member reads the organization: %d", r.Status)
		}
		if r := mo.Do("GET", "/api/me", nil); r.Status != 200 {
			t.Fatalf("a suspended member keeps their account: %d", r.Status)
		}
		if r := tm.as(owner, "POST", "/organization/members/"+mo.ID+"/suspend", nil); r.Status != 409 {
			t.Fatalf("suspend twice: %d", r.Status)
		}
		if r := tm.as(owner, "POST", "/organization/members/"+mo.ID+"/reactivate", nil); r.Status != 200 {
			t.Fatalf("reactivate: %d %s", r.Status, r.Body)
		}
		if r := inWS(mo, tm.ws).Do("GET", "/api/projects", nil); r.Status != 200 {
			t.Fatalf("a reactivated member's access: %d", r.Status)
		}

		// The board: facets and search.
		r := owner.Do("GET", "/api/organization/members/board?q=ada", nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), ada.Email) || strings.Contains(string(r.Body), mo.Email) {
			t.Fatalf("board ?q=ada: %d %s", r.Status, r.Body)
		}
		r = owner.Do("GET", "/api/organization/members/board?role=member", nil)
		if !strings.Contains(string(r.Body), mo.Email) || strings.Contains(string(r.Body), ada.Email) ||
			!strings.Contains(string(r.Body), `{"value":"admin","label":"Admin","count":1}`) {
			t.Fatalf("board ?role=member: %s", r.Body)
		}

		// Offboard: the person's workspace memberships here and sessions go;
		// their own organization stays theirs.
		moWS := mo.DefaultWorkspace()
		if r := owner.Do("DELETE", "/organization/members/"+mo.ID, nil); r.Status != 200 {
			t.Fatalf("offboard: %d %s", r.Status, r.Body)
		}
		if r := mo.Do("GET", "/api/me", nil); r.Status != 401 {
			t.Fatalf("the offboarded person's session: %d", r.Status)
		}
		mo2 := app.Login(mo.Email, mo.Password)
		if r := inWS(mo2, tm.ws).Do("GET", "/api/projects", nil); r.Status != 403 {
			t.Fatalf("the offboarded person in the workspace: %d", r.Status)
		}
		if r := inWS(mo2, moWS).Do("GET", "/api/projects", nil); r.Status != 200 {
			t.Fatalf("the offboarded person's own workspace: %d", r.Status)
		}
		r = owner.Do("GET", "/organization/members/"+mo.ID+"/audit", nil)
		var actions []string
		for _, e := range decodeList(t, r) {
			actions = append(actions, e["action"].(string))
		}
		if strings.Join(actions, " ") != "member.offboard member.reactivate member.suspend" {
			t.Fatalf("audit %v", actions)
		}
		// Leaving: a member may offboard themselves.
		sue := tm.join(t, "Sue Member", "member")
		if r := tm.as(sue, "DELETE", "/organization/members/"+sue.ID, nil); r.Status != 200 {
			t.Fatalf("leave: %d %s", r.Status, r.Body)
		}
		if r := sue.Do("GET", "/api/me", nil); r.Status != 200 {
			t.Fatalf("leaving signed sue out: %d", r.Status)
		}

		// Transfer: ada becomes owner, olga admin.
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "an admin transfers nothing", Client: ada, Method: "POST", Path: "/organization/transfer-ownership", Header: []string{"X-Organization-Id", tm.org},
				Body: map[string]any{"user_id": ada.ID}, WantStatus: 403, WantCode: "forbidden"},
			{Name: "to a non-member", Client: owner, Method: "POST", Path: "/organization/transfer-ownership", Body: map[string]any{"user_id": outsider.ID},
				WantStatus: 404, WantCode: "not_found"},
		})
		r = owner.Do("POST", "/organization/transfer-ownership", map[string]any{"user_id": ada.ID})
		if r.Status != 200 || !strings.Contains(string(r.Body), `"role":"admin"`) {
			t.Fatalf("transfer: %d %s", r.Status, r.Body)
		}
		if role := memberRole(t, owner, ada.ID); role != "owner" {
			t.Fatalf("ada is %s", role)
		}
		if r := tm.as(ada, "DELETE", "/organization", nil); r.Status != 412 {
			t.Fatalf("the new owner deletes an organization with workspaces: %d %s", r.Status, r.Body)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "suspend", Method: "POST", Path: "/organization/members/{id}/suspend", Create: func(t *testing.T, c *apitest.Client) string { return ada.ID }},
			{Name: "reactivate", Method: "POST", Path: "/organization/members/{id}/reactivate", Create: func(t *testing.T, c *apitest.Client) string { return ada.ID }},
			{Name: "role", Method: "PUT", Path: "/organization/members/{id}/role", Body: map[string]any{"role": "member"},
				Create: func(t *testing.T, c *apitest.Client) string { return ada.ID }},
			{Name: "offboard", Method: "DELETE", Path: "/organization/members/{id}", Create: func(t *testing.T, c *apitest.Client) string { return ada.ID }},
			{Name: "workspaces", Method: "GET", Path: "/organization/members/{id}/workspaces", Create: func(t *testing.T, c *apitest.Client) string { return ada.ID }},
			{Name: "audit", Method: "GET", Path: "/organization/members/{id}/audit", Create: func(t *testing.T, c *apitest.Client) string { return ada.ID }},
		})
	})
}

func decodeList(t *testing.T, r *apitest.Response) []map[string]any {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var out []map[string]any
	r.JSON(t, &out)
	return out
}

// Workspace roles as data: who may give which workspace role to whom.
func TestWorkspaceMemberRoleTable(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		tm := newTeam(t, e)
		path := func(userID string) string { return "/api/workspaces/" + tm.ws + "/members/" + userID }
		setWS := func(t *testing.T, c *apitest.Client, role string) {
			t.Helper()
			if r := tm.owner.Do("PUT", path(c.ID), map[string]any{"role": role}); r.Status != 200 {
				t.Fatalf("make %s a workspace %s: %d %s", c.Email, role, r.Status, r.Body)
			}
		}
		actors := map[string]*apitest.Client{"ws owner": tm.join(t, "Wanda Owner", "member"), "ws admin": tm.join(t, "Wes Admin", "member"),
			"ws member": tm.join(t, "Will Member", "member"), "org admin": tm.join(t, "Ada Admin", "admin")}
		setWS(t, actors["ws owner"], "owner")
		setWS(t, actors["ws admin"], "admin")
		setWS(t, actors["ws member"], "member")
		// Whom each may manage (the current role and the new one both count).
		may := map[string]map[string]bool{
			"ws owner":  {"owner": true, "admin": true, "member": true},
			"org admin": {"owner": true, "admin": true, "member": true},
			"ws admin":  {"owner": false, "admin": true, "member": true},
			"ws member": {"owner": false, "admin": false, "member": false},
		}
		n := 0
		for _, actor := range []string{"ws owner", "org admin", "ws admin", "ws member"} {
			for _, from := range []string{"", "owner", "admin", "member"} {
				for _, to := range []string{"owner", "admin", "member"} {
					n++
					t.Run(fmt.Sprintf("%s: %q to %s", actor, from, to), func(t *testing.T) {
						target := tm.join(t, fmt.Sprintf("Target %d", n), "member")
						if from != "" {
							setWS(t, target, from)
						}
						allowed := may[actor][to] && (from == "" || may[actor][from])
						want := http.StatusForbidden
						if allowed {
							want = http.StatusOK
						}
						if r := actors[actor].Do("PUT", path(target.ID), map[string]any{"role": to}, "X-Organization-Id", tm.org); r.Status != want {
							t.Fatalf("%d, want %d: %s", r.Status, want, r.Body)
						}
					})
				}
			}
		}
	})
}

func TestWorkspaceMembers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		tm := newTeam(t, e)
		app, owner := tm.app, tm.owner
		mo := tm.join(t, "Mo Member", "member")
		sue := tm.join(t, "Sue Suspended", "member")
		outsider := app.Approved(tm.admin, "Otto Outsider")
		path := "/api/workspaces/" + tm.ws + "/members"
		if r := owner.Do("PUT", path+"/"+mo.ID, map[string]any{"role": "admin"}); r.Status != 200 || !strings.Contains(string(r.Body), `"role":"admin"`) {
			t.Fatalf("set: %d %s", r.Status, r.Body)
		}
		r := owner.Do("GET", path, nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"role":"owner"`) || !strings.Contains(string(r.Body), mo.ID) {
			t.Fatalf("members: %d %s", r.Status, r.Body)
		}
		if r := tm.as(owner, "POST", "/organization/members/"+sue.ID+"/suspend", nil); r.Status != 200 {
			t.Fatalf("suspend: %d", r.Status)
		}
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "anonymous set with a bad body is 401", Method: "PUT", Path: path + "/" + mo.ID, Body: map[string]any{"role": 1}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "a bad role", Client: owner, Method: "PUT", Path: path + "/" + mo.ID, Body: map[string]any{"role": "boss"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "not a member of the organization", Client: owner, Method: "PUT", Path: path + "/" + outsider.ID, Body: map[string]any{"role": "member"},
				WantStatus: 404, WantCode: "not_found"},
			{Name: "a suspended member", Client: owner, Method: "PUT", Path: path + "/" + sue.ID, Body: map[string]any{"role": "member"}, WantStatus: 409, WantCode: "conflict"},
			{Name: "the last owner is not demoted", Client: owner, Method: "PUT", Path: path + "/" + owner.ID, Body: map[string]any{"role": "admin"},
				WantStatus: 409, WantCode: "conflict"},
			{Name: "the last owner does not leave", Client: owner, Method: "DELETE", Path: path + "/" + owner.ID, WantStatus: 409, WantCode: "conflict"},
			{Name: "an admin does not remove the owner", Client: mo, Method: "DELETE", Path: path + "/" + owner.ID, Header: []string{"X-Organization-Id", tm.org},
				WantStatus: 403, WantCode: "forbidden"},
			{Name: "someone not in it", Client: owner, Method: "DELETE", Path: path + "/" + outsider.ID, WantStatus: 404, WantCode: "not_found"},
		})
		// The workspace's admin now acts there; leaving takes that away.
		if r := inWS(mo, tm.ws).Do("GET", "/api/projects", nil); r.Status != 200 {
			t.Fatalf("mo in the workspace: %d", r.Status)
		}
		if r := mo.Do("DELETE", path+"/"+mo.ID, nil); r.Status != 200 {
			t.Fatalf("leave: %d %s", r.Status, r.Body)
		}
		if r := inWS(mo, tm.ws).Do("GET", "/api/projects", nil); r.Status != 403 {
			t.Fatalf("mo after leaving: %d", r.Status)
		}
		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "members", Method: "GET", Path: "/api/workspaces/{id}/members", Create: func(t *testing.T, c *apitest.Client) string { return c.DefaultWorkspace() }},
			{Name: "set", Method: "PUT", Path: "/api/workspaces/{id}/members/" + mo.ID, Body: map[string]any{"role": "member"},
				Create: func(t *testing.T, c *apitest.Client) string { return c.DefaultWorkspace() }},
			{Name: "remove", Method: "DELETE", Path: "/api/workspaces/{id}/members/" + owner.ID, Create: func(t *testing.T, c *apitest.Client) string { return c.DefaultWorkspace() }},
		})
	})
}
