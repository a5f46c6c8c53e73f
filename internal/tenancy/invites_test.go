package tenancy_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/platform/ids"
	"slipway/internal/tenancy"
)

func issue(t *testing.T, c *apitest.Client, body map[string]any, header ...string) tenancy.IssuedInvite {
	t.Helper()
	r := c.Do("POST", "/organization/invites", body, header...)
	if r.Status != http.StatusCreated {
		t.Fatalf("invite: %d %s", r.Status, r.Body)
	}
	var in tenancy.IssuedInvite
	r.JSON(t, &in)
	return in
}

func accept(c *apitest.Client, tok string) *apitest.Response {
	return c.Do("POST", "/organization/invites/accept", map[string]any{"token": tok})
}

func memberRole(t *testing.T, c *apitest.Client, userID string) string {
	t.Helper()
	r := c.Do("GET", "/organization/members", nil)
	var ms []tenancy.Member
	r.JSON(t, &ms)
	for _, m := range ms {
		if m.UserID == userID {
			return m.Role
		}
	}
	return ""
}

func TestInvites(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		app := apitest.New(t, e)
		admin := app.Admin()
		owner := app.Approved(admin, "Olga Owner")
		outsider := app.Approved(admin, "Otto Outsider")
		ivy := app.Approved(admin, "Ivy Invitee")
		ws := owner.DefaultWorkspace()

		in := issue(t, owner, map[string]any{"email": "  IVY.Invitee@Example.TEST "})
		app.Remember(in.Token)
		if !strings.HasPrefix(in.Token, tenancy.InviteTokenPrefix) || in.Email != "ivy.invitee@example.test" || in.Role != "member" ||
			fmt.Sprint(in.WorkspaceIDs) != "["+ws+"]" || in.AcceptURL != app.URL+"/invite?token="+in.Token {
			t.Fatalf("invite %+v", in)
		}
		r := owner.Do("GET", "/organization/invites", nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), in.ID) || strings.Contains(string(r.Body), tenancy.InviteTokenPrefix) ||
			strings.Contains(string(r.Body), `"token"`) {
			t.Fatalf("pending list: %d %s", r.Status, r.Body)
		}
		// The token is stored hashed only.
		var stored string
		if err := app.DB.R.QueryRow(`SELECT token_hash FROM organization_invites WHERE id = $1`, in.ID).Scan(&stored); err != nil || strings.Contains(stored, in.Token) {
			t.Fatalf("stored %q, %v", stored, err)
		}

		apitest.Run(t, app, []apitest.Scenario{
			{Name: "anonymous invite with a bad body is 401", Method: "POST", Path: "/organization/invites", Body: map[string]any{"email": 5}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous list", Method: "GET", Path: "/organization/invites", WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous accept with a bad body is 401", Method: "POST", Path: "/organization/invites/accept", Body: map[string]any{"token": 5}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "anonymous bulk", Method: "POST", Path: "/organization/invites/bulk", Body: map[string]any{}, WantStatus: 401, WantCode: "unauthorized"},
			{Name: "the same address again", Client: owner, Method: "POST", Path: "/organization/invites", Body: map[string]any{"email": "ivy.invitee@example.test"},
				WantStatus: 409, WantCode: "conflict", WantContains: []string{"resend"}},
			{Name: "a member", Client: owner, Method: "POST", Path: "/organization/invites", Body: map[string]any{"email": owner.Email},
				WantStatus: 409, WantCode: "conflict", WantContains: []string{"already a member"}},
			{Name: "not an address", Client: owner, Method: "POST", Path: "/organization/invites", Body: map[string]any{"email": "nobody"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "control characters", Client: owner, Method: "POST", Path: "/organization/invites", Body: map[string]any{"email": "a\x00b@example.test"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "owner is not invited", Client: owner, Method: "POST", Path: "/organization/invites", Body: map[string]any{"email": "x@example.test", "role": "owner"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "another organization's workspace", Client: owner, Method: "POST", Path: "/organization/invites",
				Body: map[string]any{"email": "x@example.test", "workspace_ids": []string{outsider.DefaultWorkspace()}}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "a bad token", Client: ivy, Method: "POST", Path: "/organization/invites/accept", Body: map[string]any{"token": "sinv_nope"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "not a token at all", Client: ivy, Method: "POST", Path: "/organization/invites/accept", Body: map[string]any{"token": "hello"}, WantStatus: 400, WantCode: "bad_request"},
			{Name: "another account", Client: outsider, Method: "POST", Path: "/organization/invites/accept", Body: map[string]any{"token": in.Token},
				WantStatus: 403, WantCode: "forbidden", WantContains: []string{"another email address"}},
			{Name: "outsider sees none of them", Client: outsider, Method: "GET", Path: "/organization/invites", WantStatus: 200, WantNotContains: []string{in.ID}},
			{Name: "outsider naming the organization", Client: outsider, Method: "GET", Path: "/organization/invites", Header: []string{"X-Organization-Id", orgOf(t, owner)},
				WantStatus: 403, WantCode: "forbidden"},
		})

		// Racing accepts of one token: one joins.
		var wg sync.WaitGroup
		statuses := make([]int, 8)
		for i := range statuses {
			wg.Add(1)
			go func() { defer wg.Done(); statuses[i] = accept(ivy, in.Token).Status }()
		}
		wg.Wait()
		won := 0
		for _, s := range statuses {
			if s == 200 {
				won++
			} else if s != 400 {
				t.Fatalf("an accept got %d", s)
			}
		}
		if won != 1 {
			t.Fatalf("%d accepts won: %v", won, statuses)
		}
		if role := memberRole(t, owner, ivy.ID); role != "member" {
			t.Fatalf("ivy's role %q", role)
		}
		ivyWS := inWS(ivy, ws)
		if r := ivyWS.Do("GET", "/api/projects", nil); r.Status != 200 {
			t.Fatalf("ivy in the invite's workspace: %d %s", r.Status, r.Body)
		}
		if r := owner.Do("GET", "/organization/invites", nil); strings.Contains(string(r.Body), in.ID) {
			t.Fatal("an accepted invite is still pending")
		}
		// A member (not admin) manages no invites.
		org := orgOf(t, owner)
		apitest.Run(t, app, []apitest.Scenario{
			{Name: "a member lists", Client: ivy, Method: "GET", Path: "/organization/invites", Header: []string{"X-Organization-Id", org}, WantStatus: 403, WantCode: "forbidden"},
			{Name: "a member invites", Client: ivy, Method: "POST", Path: "/organization/invites", Header: []string{"X-Organization-Id", org},
				Body: map[string]any{"email": "z@example.test"}, WantStatus: 403, WantCode: "forbidden"},
		})

		// Resend: the old token stops working; revoke: the new one too.
		second := issue(t, owner, map[string]any{"email": "sam@example.test", "role": "admin"})
		app.Remember(second.Token)
		r = owner.Do("POST", "/organization/invites/"+second.ID+"/resend", nil)
		if r.Status != 200 {
			t.Fatalf("resend: %d %s", r.Status, r.Body)
		}
		var resent tenancy.IssuedInvite
		r.JSON(t, &resent)
		app.Remember(resent.Token)
		if resent.Token == second.Token || resent.ID != second.ID || !resent.ExpiresAt.After(time.Now().Add(6*24*time.Hour)) {
			t.Fatalf("resent %+v", resent)
		}
		sam := app.Approved(admin, "Sam")
		if r := accept(sam, second.Token); r.Status != 400 {
			t.Fatalf("the old token after a resend: %d", r.Status)
		}
		r = owner.Do("DELETE", "/organization/invites/"+second.ID, nil)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"deleted":true`) {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		if r := accept(sam, resent.Token); r.Status != 400 {
			t.Fatalf("a revoked invite's token: %d", r.Status)
		}

		// Expired: not listed, not accepted; inviting the address again works.
		third := issue(t, owner, map[string]any{"email": "sam@example.test"})
		app.Remember(third.Token)
		if _, err := app.DB.W.Exec(`UPDATE organization_invites SET expires_at = $2 WHERE id = $1`, third.ID, time.Now().UTC().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if r := accept(sam, third.Token); r.Status != 400 {
			t.Fatalf("an expired token: %d", r.Status)
		}
		if r := owner.Do("GET", "/organization/invites", nil); strings.Contains(string(r.Body), third.ID) {
			t.Fatal("an expired invite is listed")
		}
		fourth := issue(t, owner, map[string]any{"email": "sam@example.test", "role": "admin"})
		app.Remember(fourth.Token)
		if r := accept(sam, fourth.Token); r.Status != 200 || memberRole(t, owner, sam.ID) != "admin" {
			t.Fatalf("accept as admin: %d %s", r.Status, r.Body)
		}

		// Bulk: a verdict per address.
		pendingInvite := issue(t, owner, map[string]any{"email": "pat@example.test"})
		app.Remember(pendingInvite.Token)
		r = owner.Do("POST", "/organization/invites/bulk", map[string]any{"emails": []string{"new1@example.test", "NEW1@example.test", "bad", owner.Email, "pat@example.test"}})
		if r.Status != 200 {
			t.Fatalf("bulk: %d %s", r.Status, r.Body)
		}
		var bulk tenancy.BulkVerdicts
		r.JSON(t, &bulk)
		var verdicts []string
		for _, v := range bulk.Results {
			verdicts = append(verdicts, v.Verdict)
			if v.Invite != nil {
				app.Remember(v.Invite.Token)
			}
		}
		if strings.Join(verdicts, " ") != "invited duplicate invalid already_member already_invited" || bulk.Results[0].Invite == nil || bulk.Results[0].Invite.Token == "" {
			t.Fatalf("bulk %s", r.Body)
		}

		// An account not yet approved joins, and stays pending.
		pend := app.Pending("Pia Pending")
		pi := issue(t, owner, map[string]any{"email": pend.Email})
		app.Remember(pi.Token)
		if r := accept(pend, pi.Token); r.Status != 200 || !strings.Contains(string(r.Body), org) {
			t.Fatalf("a pending account accepts: %d %s", r.Status, r.Body)
		}
		if r := inWS(pend, ws).Do("GET", "/api/projects", nil); r.Status != 403 {
			t.Fatalf("a pending account's API access: %d", r.Status)
		}
		r = admin.Do("GET", "/api/admin/users/pending", nil)
		if !strings.Contains(string(r.Body), pend.Email) || !strings.Contains(string(r.Body), `"invited_by":["Olga Owner's organization"]`) {
			t.Fatalf("the admin's pending list does not show who invited Pia: %s", r.Body)
		}

		apitest.CheckTenancy(t, owner, outsider, []apitest.TenancyCase{
			{Name: "revoke", Method: "DELETE", Path: "/organization/invites/{id}", Create: func(t *testing.T, c *apitest.Client) string {
				i := issue(t, c, map[string]any{"email": "t-" + ids.RandomHex(3) + "@example.test"})
				app.Remember(i.Token)
				return i.ID
			}},
			{Name: "resend", Method: "POST", Path: "/organization/invites/{id}/resend", Create: func(t *testing.T, c *apitest.Client) string {
				i := issue(t, c, map[string]any{"email": "t-" + ids.RandomHex(3) + "@example.test"})
				app.Remember(i.Token)
				return i.ID
			}},
		})
	})
}

func orgOf(t *testing.T, c *apitest.Client) string {
	t.Helper()
	return c.Do("GET", "/organization", nil).Map(t)["id"].(string)
}

// inWS is the client acting in a workspace (X-Workspace-Id).
func inWS(c *apitest.Client, ws string) *apitest.Client {
	cc := *c
	cc.Workspace = ws
	return &cc
}
