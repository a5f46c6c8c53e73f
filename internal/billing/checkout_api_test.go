package billing_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"slipway/internal/billing"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestCheckoutAndPortal: an organization's owner subscribes it to a plan
// through Stripe. The billing view lists what can be checked out; a
// checkout makes the organization a customer once (two racing checkouts
// included) and the plan's price when it has none, and sends the owner to
// Stripe with the organization's id on the subscription it will make; the
// subscription's event, naming only the customer, moves the organization
// onto the plan; then a second checkout is refused and the billing portal
// opens. Only the owner may do either.
func TestCheckoutAndPortal(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const key = "sk_test_Checkout0123456789"
		stripe := newStripeDouble(t, key)
		f := fixture.NewAPI(t, e, "STRIPE_SECRET_KEY", key, "STRIPE_API_BASE", stripe.URL, "STRIPE_WEBHOOK_SECRET", whsec)
		f.App.Remember(key, whsec)
		owner := f.Owner
		org := orgOf(t, owner)
		admin := join(t, f, owner, "Ada Admin")
		fixture.Want(t, owner.Do("PUT", "/organization/members/"+admin.ID+"/role", obj{"role": "admin"}, "X-Organization-Id", org), http.StatusOK)

		account := func() billing.Account {
			t.Helper()
			r := owner.Do("GET", "/organization/billing", nil)
			fixture.Want(t, r, http.StatusOK)
			var a billing.Account
			r.JSON(t, &a)
			return a
		}
		a := account()
		var sellable []string
		for _, p := range a.Plans {
			sellable = append(sellable, p.ID)
		}
		if !a.Payments || a.Customer || a.Subscribed || a.PlanID != "community" || a.Status != "none" || !a.CanManage ||
			strings.Join(sellable, ",") != "team,business" {
			t.Fatalf("before: %+v (plans %v)", a, sellable)
		}
		var seen billing.Account
		r := admin.Do("GET", "/organization/billing", nil, "X-Organization-Id", org)
		r.JSON(t, &seen)
		if r.Status != http.StatusOK || seen.CanManage {
			t.Fatalf("an admin's view: %d %s", r.Status, r.Body)
		}

		// Only the owner; only sellable plans.
		fixture.WantError(t, admin.Do("POST", "/organization/billing/checkout", obj{"plan_id": "team"}, "X-Organization-Id", org), http.StatusForbidden, "forbidden")
		fixture.WantError(t, admin.Do("POST", "/organization/billing/portal", nil, "X-Organization-Id", org), http.StatusForbidden, "forbidden")
		for _, plan := range []string{"community", "nope", "enterprise"} {
			fixture.WantError(t, owner.Do("POST", "/organization/billing/checkout", obj{"plan_id": plan}), http.StatusBadRequest, "bad_request")
		}
		fixture.WantError(t, owner.Do("POST", "/organization/billing/portal", nil), http.StatusConflict, "conflict") // no customer yet
		if calls := stripe.seen(); len(calls) != 0 {
			t.Fatalf("refusals called Stripe: %q", calls)
		}

		// Two checkouts at once: one customer, one price.
		stripe.mu.Lock()
		stripe.customerDelay = 300 * time.Millisecond
		stripe.mu.Unlock()
		var wg sync.WaitGroup
		links := make([]billing.BillingLink, 2)
		for i := range links {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := owner.Do("POST", "/organization/billing/checkout", obj{"plan_id": "team"})
				if r.Status != http.StatusOK {
					t.Errorf("checkout %d: %d %s", i, r.Status, r.Body)
					return
				}
				r.JSON(t, &links[i])
			}()
		}
		wg.Wait()
		stripe.mu.Lock()
		customers, sessions := len(stripe.customers), stripe.sessions
		var cus string
		for id, c := range stripe.customers {
			cus = id
			if c["metadata"].(map[string]any)["organization_id"] != org || c["email"] != owner.Email {
				t.Errorf("the customer: %v", c)
			}
		}
		prices := 0
		for _, p := range stripe.prices {
			if p["active"] == true && p["unit_amount"].(interface{ String() string }).String() == "4900" {
				prices++
			}
		}
		if customers != 1 || prices != 1 || len(sessions) != 2 {
			t.Errorf("after two checkouts: %d customers, %d prices of 4900, %d sessions", customers, prices, len(sessions))
		}
		for _, l := range links {
			s := sessions[strings.TrimPrefix(l.URL, stripe.URL+"/pay/")]
			if s == nil || s["customer"] != cus || s["mode"] != "subscription" || s["organization_id"] != org ||
				!strings.HasSuffix(s["success_url"].(string), "/settings?checkout=done") || !strings.HasPrefix(s["success_url"].(string), "http://127.0.0.1:") {
				t.Errorf("a checkout link %q: %v", l.URL, s)
			}
		}
		stripe.mu.Unlock()
		if t.Failed() {
			t.FailNow()
		}
		a = account()
		if !a.Customer || a.Subscribed || a.PlanID != "community" {
			t.Fatalf("after the checkout, before Stripe's event: %+v", a)
		}
		r = f.Admin.Do("POST", "/api/admin/plans/team/stripe-sync", nil)
		if !strings.Contains(string(r.Body), `"in_sync":true`) {
			t.Fatalf("the price the checkout made is the plan's: %s", r.Body)
		}
		var price string
		for id := range stripe.prices {
			price = id
		}

		// Stripe's event names the customer only: the organization is
		// found by it.
		fixture.Want(t, deliver(f.App.Anonymous(), stripeEvent("evt_c1", "customer.subscription.created", 2000, "sub_c", cus, "active", price, ""), whsec), http.StatusOK)
		a = account()
		if !a.Subscribed || a.PlanID != "team" || a.Status != "active" || a.Provider != "stripe" {
			t.Fatalf("after Stripe's event: %+v", a)
		}
		fixture.WantError(t, owner.Do("POST", "/organization/billing/checkout", obj{"plan_id": "business"}), http.StatusConflict, "conflict")
		r = owner.Do("POST", "/organization/billing/portal", nil)
		fixture.Want(t, r, http.StatusOK)
		var portal billing.BillingLink
		r.JSON(t, &portal)
		stripe.mu.Lock()
		p := stripe.portals[strings.TrimPrefix(portal.URL, stripe.URL+"/portal/")]
		stripe.mu.Unlock()
		if p == nil || p["customer"] != cus || !strings.HasSuffix(p["return_url"].(string), "/settings") {
			t.Fatalf("the portal link %q: %v", portal.URL, p)
		}
	})
}

// TestTiedEventsReadTheSubscription: Stripe's event times are whole
// seconds. An event made in the same second as the state held cannot be
// ordered by its time, so billing reads the subscription from Stripe and
// applies what Stripe holds now; a later second applies as delivered.
func TestTiedEventsReadTheSubscription(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const key = "sk_test_Tie0123456789"
		stripe := newStripeDouble(t, key)
		f := fixture.NewAPI(t, e, "STRIPE_SECRET_KEY", key, "STRIPE_API_BASE", stripe.URL, "STRIPE_WEBHOOK_SECRET", whsec)
		f.App.Remember(key, whsec)
		owner, anon := f.Owner, f.App.Anonymous()
		org := orgOf(t, owner)
		f.Exec(t, `INSERT INTO plan_prices (provider, provider_price_id, plan_id, amount_cents, currency, billing_interval, created_at)
			VALUES ('stripe', 'price_t', 'team', 4900, 'EUR', 'month', $1)`, time.Now().UTC())
		status := func() string {
			t.Helper()
			var a billing.Account
			r := owner.Do("GET", "/organization/billing", nil)
			fixture.Want(t, r, http.StatusOK)
			r.JSON(t, &a)
			return a.Status
		}
		outcome := func(payload []byte) string {
			t.Helper()
			r := deliver(anon, payload, whsec)
			fixture.Want(t, r, http.StatusOK)
			return r.Map(t)["outcome"].(string)
		}
		if got := outcome(stripeEvent("evt_t1", "customer.subscription.created", 1000, "sub_t", "cus_t", "incomplete", "price_t", org)); got != "applied" || stripe.reads() != 0 {
			t.Fatalf("the first event: %s", got)
		}
		// Same second: the payment went through and Stripe holds active,
		// though this delivery (made first, arriving last) says past_due.
		stripe.mu.Lock()
		stripe.subscriptions["sub_t"] = subscription("sub_t", "cus_t", "active", "price_t", org)
		stripe.mu.Unlock()
		if got := outcome(stripeEvent("evt_t2", "customer.subscription.updated", 1000, "sub_t", "cus_t", "past_due", "price_t", org)); got != "applied: the subscription as the provider holds it" || status() != "active" || stripe.reads() != 1 {
			t.Fatalf("a tied event: %s, status %s", got, status())
		}
		// A later second: as delivered, with no read.
		if got := outcome(stripeEvent("evt_t3", "customer.subscription.updated", 1001, "sub_t", "cus_t", "past_due", "price_t", org)); got != "applied" || status() != "past_due" || stripe.reads() != 0 {
			t.Fatalf("a later event: %s, status %s", got, status())
		}
		// Stripe unreachable on a tie: the later delivery wins.
		stripe.mu.Lock()
		stripe.failNext = true
		stripe.mu.Unlock()
		if got := outcome(stripeEvent("evt_t4", "customer.subscription.updated", 1001, "sub_t", "cus_t", "unpaid", "price_t", org)); got != "applied" || status() != "unpaid" {
			t.Fatalf("a tie with Stripe failing: %s, status %s", got, status())
		}
	})
}
