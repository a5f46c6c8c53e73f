package commerce_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"slipway/internal/apitest"
	"slipway/internal/commerce"
	"slipway/internal/fixture"
	"slipway/internal/marketplace"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// stripeAPI is a local stand-in for the two Stripe calls a purchase makes
// (a Checkout session, a subscription's cancellation), in Stripe's form
// encoding and JSON; billing's contract test checks those calls' shapes
// against stripe-mock. It records the calls.
func stripeAPI(t *testing.T, calls *[]string) string {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		*calls = append(*calls, r.Method+" "+r.URL.Path+" "+r.PostForm.Encode())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/checkout/sessions" && r.PostForm.Get("metadata[slipway_purchase]") != "":
			id := "cs_" + r.PostForm.Get("metadata[slipway_purchase]")
			json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "checkout.session", "url": "https://checkout.stripe.test/" + id})
		case strings.HasPrefix(r.URL.Path, "/v1/subscriptions/"):
			json.NewEncoder(w).Encode(map[string]any{"id": strings.TrimPrefix(r.URL.Path, "/v1/subscriptions/"), "object": "subscription"})
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMarketplaceStripePurchases, on both databases, with a local stand-in
// for Stripe's API and signed webhook deliveries as its events: a checkout
// answers the provider's checkout address (the development completion is
// refused); the paid session's event activates the purchase once (a
// replay changes nothing; an unpaid session nothing either); a paid cycle
// renews it, its sale and fee in the ledger once per period; a
// cancellation goes to the provider; the subscription's end ends the
// license.
func TestMarketplaceStripePurchases(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const secret = "whsec_marketplace_test"
		var calls []string
		f := fixture.NewAPI(t, e, "STRIPE_WEBHOOK_SECRET", secret, "STRIPE_SECRET_KEY", "sk_test_marketplace", "STRIPE_API_BASE", stripeAPI(t, &calls))
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin
		seq := 0
		deliver := func(typ string, object map[string]any) map[string]any {
			t.Helper()
			seq++
			payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("evt_mk_%s_%d", e, seq), "object": "event", "type": typ,
				"created": time.Now().Unix(), "api_version": "2025-03-31.basil", "data": map[string]any{"object": object}})
			signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now()})
			r := f.App.Anonymous().Do("POST", "/api/billing/webhooks/stripe", string(payload), "Stripe-Signature", signed.Header)
			fixture.Want(t, r, http.StatusOK)
			return r.Map(t)
		}

		fixture.Want(t, pub.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Olivia's tools", "country": "DE"}), http.StatusCreated)
		r := pub.Do("POST", "/api/scripts", obj{"name": "Reporter", "slug": "reporter", "language": "sh", "source": "echo '{}'\n"})
		fixture.Want(t, r, http.StatusCreated)
		r = pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": r.Map(t)["id"], "version": "1.0.0", "changelog": "First.",
			"price": obj{"amount_minor": 1999, "currency": "EUR", "interval": "month"}})
		fixture.Want(t, r, http.StatusCreated)
		var p marketplace.Published
		r.JSON(t, &p)
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/approve", nil), http.StatusOK)

		checkout := func(c *apitest.Client) commerce.Checkout {
			r := c.Do("POST", "/api/marketplace/checkout/"+p.Version.ID, nil)
			fixture.Want(t, r, http.StatusCreated)
			var co commerce.Checkout
			r.JSON(t, &co)
			if co.CheckoutURL == nil || !strings.HasPrefix(*co.CheckoutURL, "http") || co.DevComplete != nil || co.Purchase.Status != "pending" {
				t.Fatalf("the checkout: %+v", co)
			}
			return co
		}
		co := checkout(buyer)
		purchase := co.Purchase.ID
		if c := calls[0]; !strings.HasPrefix(c, "POST /v1/checkout/sessions ") || !strings.Contains(c, "mode=subscription") ||
			!strings.Contains(c, "line_items%5B0%5D%5Bprice_data%5D%5Bunit_amount%5D=1999") || !strings.Contains(c, "metadata%5Bslipway_purchase%5D="+purchase) {
			t.Fatalf("the checkout Stripe was asked for: %s", c)
		}
		fixture.WantError(t, buyer.Do("POST", "/api/marketplace/checkout/"+purchase+"/dev/complete", nil), http.StatusConflict, "conflict", "payment provider")

		// An unpaid session changes nothing; the paid one activates, once.
		session := func(id, status string) map[string]any {
			return map[string]any{"id": "cs_" + id, "object": "checkout.session", "payment_status": status, "subscription": "sub_" + id,
				"metadata": map[string]any{"slipway_purchase": id}}
		}
		other := checkout(admin)
		if ack := deliver("checkout.session.completed", session(other.Purchase.ID, "unpaid")); ack["outcome"] != "ignored" {
			t.Fatalf("an unpaid session: %+v", ack)
		}
		var got commerce.Purchase
		admin.Do("GET", "/api/marketplace/purchases/"+other.Purchase.ID, nil).JSON(t, &got)
		if got.Status != "pending" {
			t.Fatalf("an unpaid session activated the purchase: %+v", got)
		}
		if ack := deliver("checkout.session.completed", session(purchase, "paid")); ack["outcome"] != "activated" {
			t.Fatalf("the paid session: %+v", ack)
		}
		if ack := deliver("checkout.session.completed", session(purchase, "paid")); !strings.HasPrefix(ack["outcome"].(string), "duplicate") {
			t.Fatalf("the same session again: %+v", ack)
		}
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase, nil).JSON(t, &got)
		if got.Status != "active" {
			t.Fatalf("after the paid session: %+v", got)
		}
		fixture.Want(t, buyer.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/files", nil), http.StatusOK)

		// A paid cycle renews it: sale and fee once per period.
		start, end := got.PeriodEnd.Unix(), got.PeriodEnd.AddDate(0, 1, 0).Unix()
		invoice := map[string]any{"id": "in_1", "object": "invoice", "billing_reason": "subscription_cycle",
			"parent": map[string]any{"type": "subscription_details", "subscription_details": map[string]any{"subscription": "sub_" + purchase,
				"metadata": map[string]any{"slipway_purchase": purchase}}},
			"lines": map[string]any{"object": "list", "data": []any{map[string]any{"id": "il_1", "object": "line_item", "period": map[string]any{"start": start, "end": end}}}}}
		if ack := deliver("invoice.paid", invoice); ack["outcome"] != "renewed" {
			t.Fatalf("the renewal: %+v", ack)
		}
		if ack := deliver("invoice.paid", invoice); !strings.HasPrefix(ack["outcome"].(string), "duplicate") {
			t.Fatalf("the renewal again: %+v", ack)
		}
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase, nil).JSON(t, &got)
		if got.PeriodEnd.Unix() != end {
			t.Fatalf("the renewed period ends %v, want %v", got.PeriodEnd, time.Unix(end, 0))
		}
		var l commerce.LedgerPage
		pub.Do("GET", "/api/marketplace/seller/ledger", nil).JSON(t, &l)
		if l.Total != 4 || l.Balances[0].AmountMinor != 2*(1999-199) {
			t.Fatalf("the ledger after a renewal: %+v", l)
		}
		var invoices []commerce.Invoice
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase+"/invoices", nil).JSON(t, &invoices)
		if len(invoices) != 2 {
			t.Fatalf("the invoices: %+v", invoices)
		}

		// Cancelled at the period's end through the provider; the
		// subscription's end ends the license.
		r = buyer.Do("POST", "/api/marketplace/purchases/"+purchase+"/cancel", obj{"when": "period_end"})
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["cancel_at_period_end"] != true {
			t.Fatalf("cancelled: %s", r.Body)
		}
		if last := calls[len(calls)-1]; last != "POST /v1/subscriptions/sub_"+purchase+" cancel_at_period_end=true" {
			t.Fatalf("the cancellation did not go to Stripe first: %q", last)
		}
		sub := map[string]any{"id": "sub_" + purchase, "object": "subscription", "status": "canceled", "metadata": map[string]any{"slipway_purchase": purchase}}
		if ack := deliver("customer.subscription.updated", sub); !strings.HasPrefix(ack["outcome"].(string), "ignored") {
			t.Fatalf("the subscription's update: %+v", ack)
		}
		if ack := deliver("customer.subscription.deleted", sub); ack["outcome"] != "ended" {
			t.Fatalf("the subscription's end: %+v", ack)
		}
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase, nil).JSON(t, &got)
		if got.Status != "ended" || got.EndedAt == nil {
			t.Fatalf("after the end: %+v", got)
		}
		fixture.WantError(t, buyer.Do("GET", "/api/marketplace/items/"+p.Item.ID+"/files", nil), http.StatusForbidden, "forbidden", "license")
	})
}
