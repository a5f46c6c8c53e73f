package billing_test

import (
	"net/http"
	"strings"
	"testing"

	"slipway/internal/billing"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// publicPlans reads GET /api/plans as c and returns the plans' ids.
func publicPlans(t *testing.T, f *fixture.API, who string) ([]billing.PublicPlan, []string) {
	t.Helper()
	c := f.App.Anonymous()
	if who == "owner" {
		c = f.Owner
	}
	r := c.Do("GET", "/api/plans", nil)
	fixture.Want(t, r, http.StatusOK)
	var plans []billing.PublicPlan
	r.JSON(t, &plans)
	if strings.Contains(string(r.Body), "entitlements") || strings.Contains(string(r.Body), `"active"`) {
		t.Fatalf("the public plans say more than they should: %s", r.Body)
	}
	ids := make([]string, len(plans))
	for i, p := range plans {
		ids[i] = p.ID
	}
	return plans, ids
}

// TestPublicPlans: anyone, signed in or not, reads the active, public
// plans, cheapest first; a plan an admin hides or retires leaves the list.
func TestPublicPlans(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		plans, ids := publicPlans(t, f, "anonymous")
		if strings.Join(ids, " ") != "community team business" {
			t.Fatalf("public plans = %v", ids)
		}
		team := plans[1]
		if n, _, ok := team.IncludedSeats.Limit(); team.Name != "Team" || team.AmountCents != 4900 || team.Currency != "EUR" || team.Interval != "month" || !ok || n != 10 {
			t.Fatalf("team = %+v", team)
		}
		if _, unlimited, _ := plans[0].IncludedSeats.Limit(); !unlimited {
			t.Fatalf("community's seats = %+v", plans[0])
		}
		if _, signedIn := publicPlans(t, f, "owner"); strings.Join(signedIn, " ") != strings.Join(ids, " ") {
			t.Fatalf("signed in: %v", signedIn)
		}

		// Cheapest first, whatever the admin's order.
		fixture.Want(t, f.Admin.Do("PUT", "/api/admin/plans/business", obj{"amount_cents": 100}), http.StatusOK)
		if _, ids := publicPlans(t, f, "anonymous"); strings.Join(ids, " ") != "community business team" {
			t.Fatalf("after business costs 1.00: %v", ids)
		}
		// Hidden, then retired: gone from the public list, still the admin's.
		fixture.Want(t, f.Admin.Do("PUT", "/api/admin/plans/team", obj{"public": false}), http.StatusOK)
		if _, ids := publicPlans(t, f, "anonymous"); strings.Join(ids, " ") != "community business" {
			t.Fatalf("team hidden: %v", ids)
		}
		fixture.Want(t, f.Admin.Do("PUT", "/api/admin/plans/business", obj{"active": false}), http.StatusOK)
		if _, ids := publicPlans(t, f, "anonymous"); strings.Join(ids, " ") != "community" {
			t.Fatalf("business retired: %v", ids)
		}
		var all []billing.BillingPlan
		f.Admin.Do("GET", "/api/admin/plans", nil).JSON(t, &all)
		if len(all) != 3 {
			t.Fatalf("the admin still sees every plan: %+v", all)
		}
		fixture.Want(t, f.Admin.Do("PUT", "/api/admin/plans/team", obj{"public": true}), http.StatusOK)
		if _, ids := publicPlans(t, f, "anonymous"); strings.Join(ids, " ") != "community team" {
			t.Fatalf("team public again: %v", ids)
		}
	})
}
