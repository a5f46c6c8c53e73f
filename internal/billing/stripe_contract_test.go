package billing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"slipway/internal/billing"
)

// TestStripeAPIContract runs every call billing makes to Stripe through
// the real client (stripe-go) against stripe-mock, which refuses a
// request Stripe's OpenAPI description does not allow, and against the
// stateful double the API tests use, so that the double cannot drift
// from what Stripe takes: the same calls succeed on both, and both refuse
// a checkout of a price that does not exist... where the double can tell.
func TestStripeAPIContract(t *testing.T) {
	const key = "sk_test_Contract0123456789"
	double := newStripeDouble(t, key)
	double.subscriptions["sub_contract"] = subscription("sub_contract", "cus_1", "past_due", "price_1", "org1")
	backends := map[string]string{
		"stripe-mock": startStripeMock(t),
		"double":      double.URL,
	}
	for name, base := range backends {
		t.Run(name, func(t *testing.T) {
			api := billing.NewStripeAPI(key, base)
			ctx := context.Background()
			plan := billing.BillingPlan{ID: "team", Name: "Team", AmountCents: 4900, Currency: "EUR", Interval: "month"}
			price, err := api.CreatePrice(ctx, plan, "k-"+name+"-1")
			if err != nil || !strings.HasPrefix(price, "price_") {
				t.Fatalf("create a monthly price: %q %v", price, err)
			}
			if again, err := api.CreatePrice(ctx, plan, "k-"+name+"-1"); err != nil || (name == "double" && again != price) {
				t.Fatalf("the same idempotency key: %q %v, want %q", again, err, price)
			}
			oneTime := plan
			oneTime.Interval = "one_time"
			if p, err := api.CreatePrice(ctx, oneTime, ""); err != nil || p == "" {
				t.Fatalf("create a one-time price: %q %v", p, err)
			}
			cus, err := api.CreateCustomer(ctx, billing.ProviderCustomer{OrganizationID: "org1", Name: "Acme", Email: "owner@example.test"})
			if err != nil || !strings.HasPrefix(cus, "cus_") {
				t.Fatalf("create a customer: %q %v", cus, err)
			}
			url, err := api.CheckoutURL(ctx, billing.CheckoutRequest{OrganizationID: "org1", PlanID: "team", CustomerID: cus, PriceID: price,
				SuccessURL: "https://slipway.example/settings?checkout=done", CancelURL: "https://slipway.example/settings?checkout=canceled"})
			if err != nil || !strings.HasPrefix(url, "http") {
				t.Fatalf("open a checkout: %q %v", url, err)
			}
			portal, err := api.PortalURL(ctx, cus, "https://slipway.example/settings")
			if err != nil || !strings.HasPrefix(portal, "http") {
				t.Fatalf("open the billing portal: %q %v", portal, err)
			}
			sub, err := api.Subscription(ctx, "sub_contract")
			if err != nil || sub.ID == "" || sub.Status == "" || sub.PriceID == "" || sub.CustomerID == "" {
				t.Fatalf("read a subscription: %+v %v", sub, err)
			}
			if name == "double" && (sub.Status != "past_due" || sub.OrganizationID != "org1" || sub.PriceID != "price_1") {
				t.Fatalf("the subscription read: %+v", sub)
			}
			// A marketplace purchase: once, and by the month; a
			// subscription cancelled at its period's end, and now.
			for _, interval := range []string{"once", "month"} {
				u, err := api.MarketCheckoutURL(ctx, billing.MarketCheckout{PurchaseID: "pur_" + interval, ItemName: "Reporter", AmountMinor: 1999,
					Currency: "EUR", Interval: interval, SuccessURL: "https://slipway.example/marketplace/x?purchase=1", CancelURL: "https://slipway.example/marketplace/x"})
				if err != nil || !strings.HasPrefix(u, "http") {
					t.Fatalf("a marketplace checkout (%s): %q %v", interval, u, err)
				}
			}
			for _, atEnd := range []bool{true, false} {
				if err := api.CancelSubscription(ctx, "sub_contract", atEnd); err != nil {
					t.Fatalf("cancel a subscription (at its period's end: %v): %v", atEnd, err)
				}
			}
			if err := api.ArchivePrice(ctx, price); err != nil {
				t.Fatalf("archive a price: %v", err)
			}
			if name == "double" {
				// An archived price sells nothing.
				if _, err := api.CheckoutURL(ctx, billing.CheckoutRequest{OrganizationID: "org1", PlanID: "team", CustomerID: cus, PriceID: price,
					SuccessURL: "https://slipway.example/", CancelURL: "https://slipway.example/"}); err == nil {
					t.Fatal("a checkout of an archived price opened")
				}
			}
		})
	}
	// A wrong key is refused by both, as an error and not a panic.
	for name, base := range backends {
		if name == "stripe-mock" {
			continue // stripe-mock takes any sk_test_ key
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := billing.NewStripeAPI("sk_test_wrong", base).CreateCustomer(ctx, billing.ProviderCustomer{OrganizationID: "o", Name: "x"}); err == nil {
			t.Fatalf("%s: a wrong key was taken", name)
		}
	}
}
