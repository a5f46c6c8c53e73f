package tenancy_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
)

// Who may do what in an organization, as data (the spec's rules): any
// member reads; owners and admins invite, rename, read a member's audit,
// manage runners; only an owner transfers ownership or deletes the
// organization. Every action is tried by every role.
func TestOrganizationActionTable(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		tm := newTeam(t, e)
		actors := map[string]*apitest.Client{"owner": tm.owner, "admin": tm.join(t, "Ada Admin", "admin"), "member": tm.join(t, "Mo Member", "member")}
		invite := func(t *testing.T) string {
			in := issue(t, tm.owner, map[string]any{"email": "i-" + ids.RandomHex(4) + "@example.test"}, "X-Organization-Id", tm.org)
			tm.app.Remember(in.Token)
			return in.ID
		}
		n := 0
		suspended := func(t *testing.T) string {
			n++
			c := tm.join(t, fmt.Sprintf("Sam Suspended %d", n), "member")
			if r := tm.as(tm.owner, "POST", "/organization/members/"+c.ID+"/suspend", nil); r.Status != 200 {
				t.Fatalf("suspend: %d %s", r.Status, r.Body)
			}
			return c.ID
		}
		all, managers, owners := []string{"owner", "admin", "member"}, []string{"owner", "admin"}, []string{"owner"}
		type action struct {
			name, method, path string // {id} comes from id
			id                 func(t *testing.T) string
			body               func() any
			may                []string
			allowed            int // status when allowed (0: any 2xx)
		}
		actions := []action{
			{name: "list members", method: "GET", path: "/organization/members", may: all},
			{name: "members board", method: "GET", path: "/api/organization/members/board", may: all},
			{name: "a member's workspaces", method: "GET", path: "/organization/members/{id}/workspaces", id: func(*testing.T) string { return tm.owner.ID }, may: all},
			{name: "summary", method: "GET", path: "/organization/summary", may: all},
			{name: "list runners", method: "GET", path: "/api/organization/runners", may: all},
			{name: "list invites", method: "GET", path: "/organization/invites", may: managers},
			{name: "invite", method: "POST", path: "/organization/invites", body: func() any { return map[string]any{"email": "n-" + ids.RandomHex(4) + "@example.test"} }, may: managers},
			{name: "bulk invite", method: "POST", path: "/organization/invites/bulk",
				body: func() any { return map[string]any{"emails": []string{"b-" + ids.RandomHex(4) + "@example.test"}} }, may: managers},
			{name: "revoke an invite", method: "DELETE", path: "/organization/invites/{id}", id: invite, may: managers},
			{name: "resend an invite", method: "POST", path: "/organization/invites/{id}/resend", id: invite, may: managers},
			{name: "a member's audit", method: "GET", path: "/organization/members/{id}/audit", id: func(*testing.T) string { return tm.owner.ID }, may: managers},
			{name: "reactivate a member", method: "POST", path: "/organization/members/{id}/reactivate", id: suspended, may: managers},
			{name: "rename", method: "PUT", path: "/organization", body: func() any { return map[string]any{"name": "Renamed " + ids.RandomHex(3)} }, may: managers},
			{name: "add a runner", method: "POST", path: "/api/organization/runners", body: func() any { return map[string]any{"name": "r-" + ids.RandomHex(3)} }, may: managers},
			{name: "seat summary", method: "GET", path: "/organization/seat-summary", may: all},
			{name: "seat types", method: "GET", path: "/organization/seat-types", may: all},
			{name: "give a seat type", method: "PUT", path: "/organization/members/{id}/seat-type", id: func(*testing.T) string { return tm.owner.ID },
				body: func() any { return map[string]any{"seat_type": "pro"} }, may: managers},
			{name: "billing", method: "GET", path: "/organization/billing", may: all},
			// No payment provider here: the owner passes the role check and
			// meets the instance's 409.
			{name: "check out a plan", method: "POST", path: "/organization/billing/checkout", body: func() any { return map[string]any{"plan_id": "team"} },
				may: owners, allowed: http.StatusConflict},
			{name: "open the billing portal", method: "POST", path: "/organization/billing/portal", may: owners, allowed: http.StatusConflict},
			{name: "delete the organization", method: "DELETE", path: "/organization", may: owners, allowed: http.StatusPreconditionFailed}, // it owns workspaces
			{name: "transfer ownership", method: "POST", path: "/organization/transfer-ownership",
				body: func() any { return map[string]any{"user_id": actors["admin"].ID} }, may: owners},
		}
		for _, a := range actions {
			for _, role := range []string{"member", "admin", "owner"} { // the owner last: a transfer changes roles
				t.Run(a.name+" as "+role, func(t *testing.T) {
					path := a.path
					if a.id != nil {
						path = strings.Replace(path, "{id}", a.id(t), 1)
					}
					var body any
					if a.body != nil {
						body = a.body()
					}
					r := tm.as(actors[role], a.method, path, body)
					allowed := slices.Contains(a.may, role)
					switch {
					case !allowed && (r.Status != http.StatusForbidden || r.Map(t)["code"] != "forbidden"):
						t.Fatalf("refused: %d %s, want 403", r.Status, r.Body)
					case allowed && a.allowed != 0 && r.Status != a.allowed:
						t.Fatalf("%d %s, want %d", r.Status, r.Body, a.allowed)
					case allowed && a.allowed == 0 && r.Status/100 != 2:
						t.Fatalf("%d %s, want 2xx", r.Status, r.Body)
					}
					tm.app.Remember(inviteToken.FindAllString(string(r.Body), -1)...)
				})
			}
		}
	})
}

var inviteToken = regexp.MustCompile(`sinv_[A-Za-z0-9_-]+`)

// Naming another organization answers exactly as naming an unknown one, on
// every organization route.
func TestForeignOrganizationLikeUnknown(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		tm := newTeam(t, e)
		ada := tm.join(t, "Ada Admin", "admin")
		in := issue(t, tm.owner, map[string]any{"email": "pending@example.test"}, "X-Organization-Id", tm.org)
		tm.app.Remember(in.Token)
		outsider := tm.app.Approved(tm.admin, "Otto Outsider")
		routes := []struct{ method, path string }{
			{"GET", "/organization"}, {"PUT", "/organization"}, {"DELETE", "/organization"}, {"GET", "/organization/summary"},
			{"GET", "/organization/members"}, {"GET", "/api/organization/members/board"},
			{"GET", "/organization/members/" + ada.ID + "/workspaces"}, {"GET", "/organization/members/" + ada.ID + "/audit"},
			{"POST", "/organization/members/" + ada.ID + "/suspend"}, {"POST", "/organization/members/" + ada.ID + "/reactivate"},
			{"PUT", "/organization/members/" + ada.ID + "/role"}, {"DELETE", "/organization/members/" + ada.ID},
			{"POST", "/organization/transfer-ownership"},
			{"GET", "/organization/invites"}, {"POST", "/organization/invites"}, {"POST", "/organization/invites/bulk"},
			{"DELETE", "/organization/invites/" + in.ID}, {"POST", "/organization/invites/" + in.ID + "/resend"},
			{"GET", "/api/organization/runners"}, {"POST", "/api/organization/runners"},
			{"GET", "/organization/seat-summary"}, {"PUT", "/organization/members/" + ada.ID + "/seat-type"},
			{"GET", "/organization/billing"}, {"POST", "/organization/billing/checkout"}, {"POST", "/organization/billing/portal"},
		}
		bodies := map[string]any{"/organization": map[string]any{"name": "Taken"}, "/organization/transfer-ownership": map[string]any{"user_id": ada.ID},
			"/organization/invites": map[string]any{"email": "x@example.test"}, "/organization/invites/bulk": map[string]any{"emails": []string{"x@example.test"}},
			"/api/organization/runners": map[string]any{"name": "r1"}, "/organization/billing/checkout": map[string]any{"plan_id": "team"}}
		for _, r := range routes {
			body := bodies[r.path]
			if r.method == "PUT" && strings.HasSuffix(r.path, "/role") {
				body = map[string]any{"role": "member"}
			}
			if strings.HasSuffix(r.path, "/seat-type") {
				body = map[string]any{"seat_type": "pro"}
			}
			foreign := outsider.Do(r.method, r.path, body, "X-Organization-Id", tm.org)
			unknown := outsider.Do(r.method, r.path, body, "X-Organization-Id", ids.New())
			if foreign.Status/100 == 2 || foreign.Status != unknown.Status || string(foreign.Body) != string(unknown.Body) {
				t.Fatalf("%s %s: foreign %d %s / unknown %d %s", r.method, r.path, foreign.Status, foreign.Body, unknown.Status, unknown.Body)
			}
		}
		// Nothing changed in the organization.
		if role := memberRole(t, tm.owner, ada.ID); role != "admin" {
			t.Fatalf("ada is %s", role)
		}
	})
}
