package billing_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"slipway/internal/billing"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// stripeDouble is a stateful stand-in for the few Stripe API endpoints
// billing uses: products (retrieve, create) and prices (create, update),
// form-encoded requests and Stripe's JSON and error shapes.
type stripeDouble struct {
	*httptest.Server
	mu       sync.Mutex
	products map[string]bool
	prices   map[string]map[string]any
	calls    []string // "METHOD path form"
	failNext bool
}

func newStripeDouble(t *testing.T, key string) *stripeDouble {
	d := &stripeDouble{products: map[string]bool{}, prices: map[string]map[string]any{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}}`))
			return
		}
		r.ParseForm()
		d.calls = append(d.calls, r.Method+" "+r.URL.Path+" "+r.PostForm.Encode())
		if d.failNext {
			d.failNext = false
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error": {"type": "api_error", "message": "Something went wrong"}}`))
			return
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		switch {
		case r.Method == "GET" && len(parts) == 3 && parts[1] == "products":
			if !d.products[parts[2]] {
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(`{"error": {"type": "invalid_request_error", "code": "resource_missing", "message": "No such product"}}`))
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"id": parts[2], "object": "product"})
		case r.Method == "POST" && r.URL.Path == "/v1/products":
			d.products[r.PostForm.Get("id")] = true
			json.NewEncoder(w).Encode(map[string]any{"id": r.PostForm.Get("id"), "object": "product", "name": r.PostForm.Get("name")})
		case r.Method == "POST" && r.URL.Path == "/v1/prices":
			id := fmt.Sprintf("price_%d", len(d.prices)+1)
			p := map[string]any{"id": id, "object": "price", "active": true, "product": r.PostForm.Get("product"),
				"currency": r.PostForm.Get("currency"), "unit_amount": json.Number(r.PostForm.Get("unit_amount"))}
			d.prices[id] = p
			json.NewEncoder(w).Encode(p)
		case r.Method == "POST" && len(parts) == 3 && parts[1] == "prices" && d.prices[parts[2]] != nil:
			d.prices[parts[2]]["active"] = r.PostForm.Get("active") != "false"
			json.NewEncoder(w).Encode(d.prices[parts[2]])
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}}`))
		}
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *stripeDouble) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.calls
	d.calls = nil
	return out
}

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
