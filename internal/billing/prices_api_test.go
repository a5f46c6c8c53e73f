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

// TestPriceRotation: changing a plan's amount makes a new price at Stripe
// (its product made the first time) and archives the old one there, which
// stays mapped: a renewal on it still resolves to the plan. stripe-sync
// previews the state and moves nothing; a provider that fails leaves the
// plan as it was.
func TestPriceRotation(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const key = "sk_test_rotation_0123456789"
		stripe := newStripeDouble(t, key)
		f := fixture.NewAPI(t, e, "STRIPE_SECRET_KEY", key, "STRIPE_API_BASE", stripe.URL, "STRIPE_WEBHOOK_SECRET", whsec)
		f.App.Remember(key, whsec)
		admin, owner := f.Admin, f.Owner
		sync := func() billing.StripeSync {
			t.Helper()
			r := admin.Do("POST", "/api/admin/plans/team/stripe-sync", nil)
			fixture.Want(t, r, http.StatusOK)
			var s billing.StripeSync
			r.JSON(t, &s)
			return s
		}
		s := sync()
		if s.InSync || !s.Configured || len(s.Actions) != 1 || !strings.Contains(s.Actions[0], "create a price of 4900 EUR per month") || len(stripe.seen()) != 0 {
			t.Fatalf("before any price: %+v", s)
		}
		fixture.WantError(t, owner.Do("POST", "/api/admin/plans/team/stripe-sync", nil), http.StatusForbidden, "forbidden")

		fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"amount_cents": 5900}), http.StatusOK)
		calls := stripe.seen()
		if len(calls) != 3 || !strings.HasPrefix(calls[0], "GET /v1/products/slipway_plan_team") || !strings.HasPrefix(calls[1], "POST /v1/products id=slipway_plan_team") ||
			!strings.Contains(calls[2], "currency=eur") || !strings.Contains(calls[2], "unit_amount=5900") || !strings.Contains(calls[2], "recurring%5Binterval%5D=month") {
			t.Fatalf("the first price: %q", calls)
		}
		if s := sync(); !s.InSync || s.PriceID == nil || *s.PriceID != "price_1" || len(s.Actions) != 0 {
			t.Fatalf("after the first price: %+v", s)
		}

		fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"amount_cents": 6900}), http.StatusOK)
		calls = stripe.seen()
		if len(calls) != 3 || !strings.Contains(calls[1], "unit_amount=6900") || calls[2] != "POST /v1/prices/price_1 active=false" {
			t.Fatalf("the rotation: %q", calls)
		}
		s = sync()
		if !s.InSync || *s.PriceID != "price_2" || len(s.Prices) != 2 || s.Prices[0].PriceID != "price_2" || s.Prices[1].ArchivedAt == nil {
			t.Fatalf("after the rotation: %+v", s)
		}
		// A renewal on the archived price still resolves to Team.
		org := orgOf(t, owner)
		r := deliver(f.App.Anonymous(), stripeEvent("evt_r1", "customer.subscription.updated", 1000, "sub_r", "cus_r", "active", "price_1", org), whsec)
		fixture.Want(t, r, http.StatusOK)
		if got := r.Map(t)["outcome"]; got != "applied" || decision(t, owner, "workflows.max").PlanID != "team" {
			t.Fatalf("a renewal on the archived price: %v", got)
		}

		// Only the name: nothing at Stripe.
		fixture.Want(t, admin.Do("PUT", "/api/admin/plans/team", obj{"name": "Team 2026"}), http.StatusOK)
		if calls := stripe.seen(); len(calls) != 0 {
			t.Fatalf("a rename called Stripe: %q", calls)
		}
		// Stripe refuses: the plan keeps its price.
		stripe.mu.Lock()
		stripe.failNext = true
		stripe.mu.Unlock()
		if r := admin.Do("PUT", "/api/admin/plans/team", obj{"amount_cents": 7900}); r.Status != http.StatusInternalServerError {
			t.Fatalf("with Stripe failing: %d %s", r.Status, r.Body)
		}
		r = admin.Do("GET", "/api/admin/plans", nil)
		if !strings.Contains(string(r.Body), `"amount_cents":6900`) {
			t.Fatalf("the plan changed although Stripe failed: %s", r.Body)
		}
		if r := admin.Do("GET", "/api/admin/audit/board?action=plan.price", nil); !strings.Contains(string(r.Body), `"total":2`) {
			t.Fatalf("price changes audited: %s", r.Body)
		}
	})
}
