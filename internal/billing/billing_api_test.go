package billing_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"slipway/internal/apitest"
	"slipway/internal/billing"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

func orgOf(t *testing.T, c *apitest.Client) string {
	t.Helper()
	return c.Do("GET", "/organization", nil).Map(t)["id"].(string)
}

// decision reads one feature's decision from GET /api/entitlements.
func decision(t *testing.T, c *apitest.Client, feature string) billing.EntitlementDecision {
	t.Helper()
	r := c.Do("GET", "/api/entitlements", nil)
	fixture.Want(t, r, http.StatusOK)
	var ds []struct {
		Feature   string          `json:"feature"`
		PlanID    string          `json:"plan_id"`
		Value     json.RawMessage `json:"value"`
		Unlimited bool            `json:"unlimited"`
		Limit     *int64          `json:"limit"`
		Usage     *int64          `json:"usage"`
		Allowed   bool            `json:"allowed"`
		Chain     []struct {
			Source string          `json:"source"`
			ID     string          `json:"id"`
			Scope  string          `json:"scope"`
			Value  json.RawMessage `json:"value"`
		} `json:"chain"`
	}
	r.JSON(t, &ds)
	for _, d := range ds {
		if d.Feature == feature {
			out := billing.EntitlementDecision{Feature: d.Feature, PlanID: d.PlanID, Unlimited: d.Unlimited, Limit: d.Limit, Usage: d.Usage, Allowed: d.Allowed}
			_ = out.Value.UnmarshalJSON(d.Value)
			for _, s := range d.Chain {
				st := billing.DecisionStep{Source: s.Source, ID: s.ID, Scope: s.Scope}
				_ = st.Value.UnmarshalJSON(s.Value)
				out.Chain = append(out.Chain, st)
			}
			return out
		}
	}
	t.Fatalf("no decision for %s: %s", feature, r.Body)
	return billing.EntitlementDecision{}
}

// chain writes a decision's chain as "source:value" steps.
func chain(d billing.EntitlementDecision) string {
	var parts []string
	for _, s := range d.Chain {
		v, _ := s.Value.MarshalJSON()
		p := s.Source + ":" + string(v)
		if s.Scope != "" {
			p = s.Source + "(" + s.Scope + "):" + string(v)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// quota checks a quota_exceeded answer and its details.
func quota(t *testing.T, r *apitest.Response, feature string, limit, usage int64, planID string) {
	t.Helper()
	fixture.WantError(t, r, http.StatusForbidden, "quota_exceeded")
	var body struct {
		Details struct {
			Feature    string            `json:"feature"`
			Limit      *int64            `json:"limit"`
			Usage      *int64            `json:"usage"`
			PlanID     string            `json:"plan_id"`
			UpgradeURL string            `json:"upgrade_url"`
			Chain      []json.RawMessage `json:"chain"`
		} `json:"details"`
	}
	r.JSON(t, &body)
	d := body.Details
	if d.Feature != feature || d.Limit == nil || *d.Limit != limit || d.Usage == nil || *d.Usage != usage || d.PlanID != planID ||
		!strings.HasSuffix(d.UpgradeURL, billing.UpgradePath) || len(d.Chain) < 2 {
		t.Fatalf("%s: details %s", feature, r.Body)
	}
}

// TestEveryLimitReachesQuotaExceeded: with an organization on a plan whose
// limits are small, each enforced count answers 403 quota_exceeded with
// the feature, the limit, the usage, the plan, where to upgrade and the
// chain; an override lifts one; the community plan limits nothing.
func TestEveryLimitReachesQuotaExceeded(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		admin, owner := f.Admin, f.Owner
		org := orgOf(t, owner)
		fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"included_seats": 1,
			"entitlements": obj{"workspaces.max": 2, "workflows.max": 1, "runners.max": 1, "runs.concurrent": 1}}), http.StatusOK)
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}), http.StatusOK)

		// workspaces.max 2: the default one and one more.
		fixture.Want(t, owner.Do("POST", "/api/workspaces", obj{"name": "Second"}), http.StatusCreated)
		quota(t, owner.Do("POST", "/api/workspaces", obj{"name": "Third"}), "workspaces.max", 2, 2, "team")

		// runners.max 1.
		fixture.Want(t, owner.Do("POST", "/api/organization/runners", obj{"name": "r1"}), http.StatusCreated)
		quota(t, owner.Do("POST", "/api/organization/runners", obj{"name": "r2"}), "runners.max", 1, 1, "team")

		// workflows.max 1 (per workspace).
		project := f.Project(t, owner, "P")
		wf := func(name string, nodes []obj) *apitest.Response {
			return owner.Do("POST", "/api/workflows", obj{"project_id": project, "name": name, "nodes": nodes})
		}
		r := wf("Ask", []obj{{"key": "ask", "kind": "human", "config": obj{"message": "go?"}}})
		fixture.Want(t, r, http.StatusCreated)
		ask := r.Map(t)["id"].(string)
		quota(t, wf("More", []obj{{"key": "t", "kind": "transform", "config": obj{}}}), "workflows.max", 1, 1, "team")

		// runs.concurrent 1: a run waiting on its human node holds the one.
		fixture.Want(t, owner.Do("POST", "/api/workflows/"+ask+"/runs", obj{"input": obj{}}), http.StatusCreated)
		quota(t, owner.Do("POST", "/api/workflows/"+ask+"/runs", obj{"input": obj{}}), "runs.concurrent", 1, 1, "team")

		// users.max 1: an invited account cannot join until an override
		// gives one more seat; the refused accept leaves the invite usable.
		ivy := f.App.Approved(admin, "Ivy Invitee")
		r = owner.Do("POST", "/organization/invites", obj{"email": ivy.Email})
		fixture.Want(t, r, http.StatusCreated)
		tok := r.Map(t)["token"].(string)
		f.App.Remember(tok)
		quota(t, ivy.Do("POST", "/organization/invites/accept", obj{"token": tok}), "users.max", 1, 1, "team")
		r = admin.Do("POST", "/api/admin/overrides", obj{"feature": "users.max", "value": 2, "reason": "a second seat for Ivy", "user_id": ivy.ID})
		fixture.Want(t, r, http.StatusCreated)
		fixture.Want(t, ivy.Do("POST", "/organization/invites/accept", obj{"token": tok}), http.StatusOK)

		// Back on the community plan, nothing is limited.
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "community"}), http.StatusOK)
		fixture.Want(t, owner.Do("POST", "/api/workspaces", obj{"name": "Third"}), http.StatusCreated)
		fixture.Want(t, wf("More", []obj{{"key": "t", "kind": "transform", "config": obj{}}}), http.StatusCreated)
		if d := decision(t, owner, "workflows.max"); !d.Unlimited || d.PlanID != "community" || chain(d) != `plan:"unlimited"` {
			t.Fatalf("on community: %+v (%s)", d, chain(d))
		}
	})
}

// TestPlansAdmin: every plan is listed to instance admins only; a change
// is checked, applies to the organizations on the plan at once and is
// audited with before and after.
func TestPlansAdmin(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		admin, owner := f.Admin, f.Owner
		fixture.WantError(t, owner.Do("GET", "/api/admin/plans", nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, owner.Do("PUT", "/api/admin/plans/team", obj{"amount_cents": 1}), http.StatusForbidden, "forbidden")
		r := admin.Do("GET", "/api/admin/plans", nil)
		fixture.Want(t, r, http.StatusOK)
		var plans []billing.BillingPlan
		r.JSON(t, &plans)
		if len(plans) != 3 || plans[0].ID != "community" || plans[1].ID != "team" || plans[2].ID != "business" {
			t.Fatalf("plans = %s", r.Body)
		}
		if n, _, ok := plans[1].IncludedSeats.Limit(); !ok || n != 10 {
			t.Fatalf("team's included seats = %s", r.Body)
		}

		for _, bad := range []struct {
			body  obj
			words string
		}{
			{obj{"included_seats": "lots"}, "included_seats"},
			{obj{"included_seats": -1}, "included_seats"},
			{obj{"included_seats": 1.5}, "included_seats"},
			{obj{"entitlements": obj{"workflows.max": "many"}}, "workflows.max"},
			{obj{"entitlements": obj{"sso_oidc_byo": 3}}, "sso_oidc_byo"},
			{obj{"entitlements": obj{"Bad Key": 1}}, "feature key"},
			{obj{"name": "  "}, "name"},
			{obj{"name": "Team\u202e"}, "name"},
		} {
			fixture.WantError(t, admin.Do("PUT", "/api/admin/plans/team", bad.body), http.StatusBadRequest, "bad_request", bad.words)
		}
		if r := admin.Do("PUT", "/api/admin/plans/team", obj{"currency": "JPY"}); r.Status/100 != 4 {
			t.Fatalf("an unknown currency: %d", r.Status)
		}
		fixture.WantError(t, admin.Do("PUT", "/api/admin/plans/nope", obj{"amount_cents": 1}), http.StatusNotFound, "not_found")

		org := orgOf(t, owner)
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}), http.StatusOK)
		if d := decision(t, owner, "workflows.max"); d.Limit == nil || *d.Limit != 500 || d.PlanID != "team" || *d.Usage != 0 {
			t.Fatalf("on team: %+v", d)
		}
		r = admin.Do("PUT", "/api/admin/plans/team", obj{"name": "Team plus", "amount_cents": 5900, "interval": "year", "included_seats": "unlimited",
			"entitlements": obj{"workflows.max": 7, "apps.max": nil, "custom.key": obj{"any": "thing"}}})
		fixture.Want(t, r, http.StatusOK)
		var team billing.BillingPlan
		r.JSON(t, &team)
		if _, unlimited, _ := team.IncludedSeats.Limit(); team.Name != "Team plus" || team.AmountCents != 5900 || team.Interval != "year" || !unlimited {
			t.Fatalf("updated = %s", r.Body)
		}
		if _, ok := team.Entitlements["apps.max"]; ok || !strings.Contains(string(r.Body), `"custom.key":{"any":"thing"}`) {
			t.Fatalf("entitlements = %s", r.Body)
		}
		// At once, for the organization on it (the cache forgot it).
		if d := decision(t, owner, "workflows.max"); d.Limit == nil || *d.Limit != 7 {
			t.Fatalf("after the edit: %+v", d)
		}
		// A key the plan lost falls back to the Community default.
		if d := decision(t, owner, "apps.max"); !d.Unlimited || chain(d) != `default:"unlimited"` {
			t.Fatalf("apps.max: %+v %s", d, chain(d))
		}
		// The owner console's audit tab finds the edit with before and after.
		r = admin.Do("GET", "/api/admin/audit/board?action=plan.update", nil)
		fixture.Want(t, r, http.StatusOK)
		var audit struct {
			Rows []struct {
				TargetID   string          `json:"target_id"`
				ActorEmail string          `json:"actor_email"`
				Before     json.RawMessage `json:"before"`
				After      json.RawMessage `json:"after"`
			} `json:"rows"`
		}
		r.JSON(t, &audit)
		var b, a billing.BillingPlan
		if len(audit.Rows) != 1 || audit.Rows[0].TargetID != "team" || audit.Rows[0].ActorEmail != apitest.AdminEmail ||
			json.Unmarshal(audit.Rows[0].Before, &b) != nil || json.Unmarshal(audit.Rows[0].After, &a) != nil ||
			b.AmountCents != 4900 || a.AmountCents != 5900 || a.Name != "Team plus" {
			t.Fatalf("audit: %s", r.Body)
		}
	})
}

// TestOverrides: grants at each scope change the decision, the most
// specific and then the newest winning; revoke keeps the row; an expired
// grant stops counting; the board pages, filters, searches and counts.
func TestOverrides(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		admin, owner, outsider := f.Admin, f.Owner, f.Outsider
		ws := owner.DefaultWorkspace()
		grant := func(body obj) string {
			t.Helper()
			r := admin.Do("POST", "/api/admin/overrides", body)
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		limit := func(c *apitest.Client) string {
			t.Helper()
			d := decision(t, c, "workflows.max")
			if d.Unlimited {
				return "unlimited"
			}
			return itoa(*d.Limit)
		}
		fixture.WantError(t, owner.Do("POST", "/api/admin/overrides", obj{"feature": "workflows.max", "value": 1, "reason": "x"}), http.StatusForbidden, "forbidden")
		for _, bad := range []obj{
			{"feature": "workflows.max", "value": "many", "reason": "x"},
			{"feature": "workflows.max", "value": -2, "reason": "x"},
			{"feature": "sso_oidc_byo", "value": 1, "reason": "x"},
			{"feature": "workflows.max", "value": 1, "reason": "x", "workspace_id": "00000000-0000-4000-8000-000000000000"},
			{"feature": "workflows.max", "value": 1, "reason": "x", "user_id": "00000000-0000-4000-8000-000000000000"},
			{"feature": "workflows.max", "value": 1, "reason": "x", "expires_at": time.Now().Add(-time.Minute).Format(time.RFC3339)},
			{"feature": "workflows.max", "value": 1, "reason": "bad\x07reason"},
		} {
			if r := admin.Do("POST", "/api/admin/overrides", bad); r.Status != http.StatusBadRequest && r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%v: %d %s", bad, r.Status, r.Body)
			}
		}

		global := grant(obj{"feature": "workflows.max", "value": 50, "reason": "launch promotion"})
		if limit(owner) != "50" || limit(outsider) != "50" {
			t.Fatal("a global grant reaches every tenant")
		}
		wsGrant := grant(obj{"feature": "workflows.max", "value": 70, "reason": "big team", "workspace_id": ws})
		if limit(owner) != "70" || limit(outsider) != "50" {
			t.Fatalf("a workspace grant: %s %s", limit(owner), limit(outsider))
		}
		userGrant := grant(obj{"feature": "workflows.max", "value": 80, "reason": "power user", "user_id": owner.ID})
		if d := decision(t, owner, "workflows.max"); chain(d) != `plan:"unlimited" override(user):80 usage:0` {
			t.Fatalf("a user grant wins over the workspace's: %s", chain(d))
		}
		grant(obj{"feature": "workflows.max", "value": 90, "reason": "exactly here", "user_id": owner.ID, "workspace_id": ws})
		newer := grant(obj{"feature": "workflows.max", "value": 95, "reason": "exactly here, later", "user_id": owner.ID, "workspace_id": ws})
		if limit(owner) != "95" {
			t.Fatalf("the newest of the most specific scope: %s", limit(owner))
		}
		r := admin.Do("POST", "/api/admin/overrides/"+newer+"/revoke", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"status":"revoked"`) || limit(owner) != "90" {
			t.Fatalf("revoked: %s, limit %s", r.Body, limit(owner))
		}
		fixture.WantError(t, admin.Do("POST", "/api/admin/overrides/"+newer+"/revoke", nil), http.StatusConflict, "conflict")
		fixture.WantError(t, admin.Do("POST", "/api/admin/overrides/00000000-0000-4000-8000-000000000000/revoke", nil), http.StatusNotFound, "not_found")

		// An expiring grant counts until its expiry, then not.
		soon := time.Now().Add(1500 * time.Millisecond).UTC()
		grant(obj{"feature": "runs.concurrent", "value": 3, "reason": "trial", "workspace_id": ws, "expires_at": soon.Format(time.RFC3339Nano)})
		if d := decision(t, owner, "runs.concurrent"); d.Limit == nil || *d.Limit != 3 {
			t.Fatalf("before its expiry: %+v", d)
		}
		time.Sleep(time.Until(soon) + 100*time.Millisecond)
		if d := decision(t, owner, "runs.concurrent"); !d.Unlimited {
			t.Fatalf("after its expiry: %+v", d)
		}

		// The board: newest first, facets under the other filters, search.
		type page struct {
			Rows   []billing.Override `json:"rows"`
			Total  int                `json:"total"`
			Facets map[string][]struct {
				Value string `json:"value"`
				Count int    `json:"count"`
			} `json:"facets"`
		}
		read := func(query string) page {
			t.Helper()
			r := admin.Do("GET", "/api/admin/overrides/board"+query, nil)
			fixture.Want(t, r, http.StatusOK)
			var p page
			r.JSON(t, &p)
			return p
		}
		facet := func(p page, name string) string {
			var out []string
			for _, f := range p.Facets[name] {
				out = append(out, f.Value+"="+itoa(int64(f.Count)))
			}
			return strings.Join(out, ",")
		}
		all := read("")
		if all.Total != 6 || all.Rows[0].Feature != "runs.concurrent" || all.Rows[5].ID != global {
			t.Fatalf("board: %+v", all)
		}
		if facet(all, "status") != "active=4,expired=1,revoked=1" || facet(all, "scope") != "global=1,user=1,user_in_workspace=2,workspace=2" ||
			facet(all, "feature") != "runs.concurrent=1,workflows.max=5" {
			t.Fatalf("facets: %s | %s | %s", facet(all, "status"), facet(all, "scope"), facet(all, "feature"))
		}
		if p := read("?status=active&scope=workspace"); p.Total != 1 || p.Rows[0].ID != wsGrant || facet(p, "status") != "active=1,expired=1" {
			t.Fatalf("filtered: %+v / %s", p.Rows, facet(p, "status"))
		}
		if p := read("?q=POWER"); p.Total != 1 || p.Rows[0].ID != userGrant {
			t.Fatalf("search: %+v", p.Rows)
		}
		if p := read("?page_size=2&page=3&sort=created_at&order=asc"); p.Total != 6 || len(p.Rows) != 2 || p.Rows[1].Feature != "runs.concurrent" {
			t.Fatalf("page 3: %+v", p.Rows)
		}
		fixture.WantError(t, admin.Do("GET", "/api/admin/overrides/board?sort=nope", nil), http.StatusBadRequest, "bad_request")
		fixture.WantError(t, owner.Do("GET", "/api/admin/overrides/board", nil), http.StatusForbidden, "forbidden")

		for action, want := range map[string]int{"override.grant": 6, "override.revoke": 1} {
			r := admin.Do("GET", "/api/admin/audit/board?action="+action, nil)
			fixture.Want(t, r, http.StatusOK)
			if n := int(r.Map(t)["total"].(float64)); n != want {
				t.Fatalf("%d %s entries: %s", n, action, r.Body)
			}
		}
	})
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestPayingOrganizationIsNotDeleted: an organization a payment provider
// bills is not deleted (412) until its subscription ends; a plan an admin
// assigned does not hold it.
func TestPayingOrganizationIsNotDeleted(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		admin, owner := f.Admin, f.Owner
		org := orgOf(t, owner)
		if r := owner.Do("DELETE", "/api/workspaces/"+owner.DefaultWorkspace(), nil); r.Status/100 != 2 {
			t.Fatalf("deleting the workspace: %d %s", r.Status, r.Body)
		}
		// What the provider's webhook will write (issue 26, next step).
		f.Exec(t, `INSERT INTO subscriptions (organization_id, plan_id, status, provider, created_at, updated_at)
			VALUES ($1, 'team', 'active', 'stripe', $2, $2)`, org, time.Now().UTC())
		sel := func(c *apitest.Client) *apitest.Client { cc := *c; cc.Workspace = ""; return &cc }
		r := sel(owner).Do("DELETE", "/organization", nil, "X-Organization-Id", org)
		fixture.WantError(t, r, http.StatusPreconditionFailed, "precondition_failed", "active subscription")
		f.Exec(t, `UPDATE subscriptions SET status = 'canceled' WHERE organization_id = $1`, org)
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "business"}), http.StatusOK)
		r = sel(owner).Do("DELETE", "/organization", nil, "X-Organization-Id", org)
		if r.Status/100 != 2 {
			t.Fatalf("with the subscription ended: %d %s", r.Status, r.Body)
		}
	})
}

// join invites a new account into the owner's organization and accepts.
func join(t *testing.T, f *fixture.API, owner *apitest.Client, name string) *apitest.Client {
	t.Helper()
	c := f.App.Approved(f.Admin, name)
	r := owner.Do("POST", "/organization/invites", obj{"email": c.Email})
	fixture.Want(t, r, http.StatusCreated)
	tok := r.Map(t)["token"].(string)
	f.App.Remember(tok)
	fixture.Want(t, c.Do("POST", "/organization/invites/accept", obj{"token": tok}), http.StatusOK)
	return c
}

// TestSeats: the seat summary counts active members against the plan's
// included seats, prices the seats beyond them and the add-on seat types,
// and totals the monthly recurring revenue; suspending frees a seat;
// only an owner or admin gives seat types.
func TestSeats(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		admin, owner := f.Admin, f.Owner
		org := orgOf(t, owner)
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "business"}), http.StatusOK)
		ivy, max := join(t, f, owner, "Ivy Member"), join(t, f, owner, "Max Member")
		// Down to a plan of two seats: three members, one beyond.
		fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"included_seats": 2, "entitlements": obj{"seats.overage_price": 900}}), http.StatusOK)
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}), http.StatusOK)

		r := owner.Do("GET", "/organization/seat-types", nil)
		fixture.Want(t, r, http.StatusOK)
		if !strings.Contains(string(r.Body), `"id":"pro"`) || !strings.Contains(string(r.Body), `"amount_cents":2000`) {
			t.Fatalf("seat types: %s", r.Body)
		}
		seat := func(c *apitest.Client, userID string, seatType any) *apitest.Response {
			return c.Do("PUT", "/organization/members/"+userID+"/seat-type", obj{"seat_type": seatType}, "X-Organization-Id", org)
		}
		fixture.Want(t, seat(owner, ivy.ID, "pro"), http.StatusOK)
		fixture.WantError(t, seat(max, ivy.ID, nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, seat(owner, max.ID, "gold"), http.StatusBadRequest, "bad_request", "gold")
		fixture.WantError(t, seat(owner, f.Outsider.ID, "pro"), http.StatusNotFound, "not_found")
		// Someone of another organization.
		fixture.WantError(t, seat(f.Outsider, ivy.ID, "pro"), http.StatusForbidden, "forbidden", "not a member")

		summary := func() billing.SeatSummary {
			t.Helper()
			r := owner.Do("GET", "/organization/seat-summary", nil)
			fixture.Want(t, r, http.StatusOK)
			var s billing.SeatSummary
			r.JSON(t, &s)
			return s
		}
		s := summary()
		if len(s.Assigned) != 1 || s.Assigned[0].UserID != ivy.ID || s.Assigned[0].SeatType != "pro" {
			t.Fatalf("assigned seats: %+v", s.Assigned)
		}
		if s.PlanID != "team" || s.ActiveMembers != 3 || s.OverageSeats != 1 || s.OverageAmountCents != 900 || s.PlanMonthlyCents != 4900 ||
			len(s.AddOns) != 1 || s.AddOns[0].SeatType != "pro" || s.AddOns[0].Members != 1 || s.AddOns[0].AmountCents != 2000 || s.MRRCents != 4900+900+2000 {
			t.Fatalf("summary: %+v", s)
		}
		// Suspending Ivy frees her seat and her add-on.
		fixture.Want(t, owner.Do("POST", "/organization/members/"+ivy.ID+"/suspend", nil), http.StatusOK)
		if s := summary(); s.ActiveMembers != 2 || s.SuspendedMembers != 1 || s.OverageSeats != 0 || len(s.AddOns) != 0 || s.MRRCents != 4900 {
			t.Fatalf("after the suspension: %+v", s)
		}
		// Yearly: a twelfth, rounded to the nearest cent.
		fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"interval": "year", "amount_cents": 1000}), http.StatusOK)
		if s := summary(); s.PlanMonthlyCents != 83 || s.MRRCents != 83 {
			t.Fatalf("yearly: %+v", s)
		}
		// Back on the standard seat, then offboarded: the seat goes with the membership.
		fixture.Want(t, seat(owner, ivy.ID, nil), http.StatusOK)
		fixture.Want(t, seat(owner, max.ID, "reviewer"), http.StatusOK)
		if s := summary(); len(s.AddOns) != 1 || s.AddOns[0].SeatType != "reviewer" || s.MRRCents != 83+500 {
			t.Fatalf("a reviewer: %+v", s)
		}
		if r := owner.Do("DELETE", "/organization/members/"+max.ID, nil); r.Status/100 != 2 {
			t.Fatalf("offboarding: %d %s", r.Status, r.Body)
		}
		if s := summary(); len(s.AddOns) != 0 || s.ActiveMembers != 1 {
			t.Fatalf("after offboarding: %+v", s)
		}
	})
}

// TestCustomers: the customers tab lists every organization with its
// plan, subscription and workspaces, paged by name, searchable; admins only.
func TestCustomers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		admin, owner := f.Admin, f.Owner
		org := orgOf(t, owner)
		fixture.Want(t, owner.Do("POST", "/api/workspaces", obj{"name": "Zeta launch"}), http.StatusCreated)
		fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}), http.StatusOK)
		fixture.WantError(t, owner.Do("GET", "/api/admin/customers", nil), http.StatusForbidden, "forbidden")
		read := func(query string) billing.Customers {
			t.Helper()
			r := admin.Do("GET", "/api/admin/customers"+query, nil)
			fixture.Want(t, r, http.StatusOK)
			var c billing.Customers
			r.JSON(t, &c)
			return c
		}
		all := read("")
		if all.Total != 3 || len(all.Organizations) != 3 || len(all.Ungrouped) != 0 {
			t.Fatalf("customers: %+v", all)
		}
		var mine *billing.Customer
		for i := range all.Organizations {
			if all.Organizations[i].OrganizationID == org {
				mine = &all.Organizations[i]
			} else if all.Organizations[i].PlanID != "community" || all.Organizations[i].SubscriptionStatus != "none" {
				t.Fatalf("an organization without a subscription: %+v", all.Organizations[i])
			}
		}
		if mine == nil || mine.PlanID != "team" || mine.SubscriptionStatus != "active" || mine.Provider != "none" ||
			len(mine.Workspaces) != 2 || mine.Workspaces[1].Name != "Zeta launch" {
			t.Fatalf("the owner's organization: %+v", mine)
		}
		if c := read("?q=zeta"); c.Total != 1 || c.Organizations[0].OrganizationID != org {
			t.Fatalf("search: %+v", c)
		}
		if c := read("?page_size=2&page=2"); c.Total != 3 || len(c.Organizations) != 1 {
			t.Fatalf("page 2: %+v", c)
		}
	})
}

// TestEntitlementsAcrossReplicas: two replicas keep decisions in memory;
// a plan edited or an override granted through one is decided at once on
// the other (the bus carries the invalidation), long before the caches'
// 30 s.
func TestEntitlementsAcrossReplicas(t *testing.T) {
	dbtest.RequirePostgres(t)
	f := fixture.NewAPI(t, db.Postgres)
	other := f.App.Replica(t)
	admin, owner := f.Admin, f.Owner
	there := owner.On(other)
	org := orgOf(t, owner)
	fixture.Want(t, admin.Do("PUT", "/api/admin/organizations/"+org+"/plan", obj{"plan_id": "team"}), http.StatusOK)
	limit := func(c *apitest.Client) int64 {
		t.Helper()
		d := decision(t, c, "workflows.max")
		if d.Limit == nil {
			return -1
		}
		return *d.Limit
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s", what)
			}
		}
	}
	eventually("team's limit on the other replica", func() bool { return limit(there) == 500 })
	fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"entitlements": obj{"workflows.max": 42}}), http.StatusOK)
	eventually("the edited plan on the other replica", func() bool { return limit(there) == 42 })
	fixture.Want(t, admin.Do("POST", "/api/admin/overrides", obj{"feature": "workflows.max", "value": 7, "reason": "replicas"}), http.StatusCreated)
	eventually("the override on the other replica", func() bool { return limit(there) == 7 })
}
