package commerce_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/commerce"
	"slipway/internal/fixture"
	"slipway/internal/marketplace"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

type obj = map[string]any

// TestMarketplacePurchases, on both databases: a seller (one profile per
// person, a payout account whose IBAN and BIC are checked and whose IBAN is
// sealed) sells a script by the month; another workspace cannot read or
// install it until it buys it: checkout (a pending purchase, answered again
// while pending), the development completion (once, under a race), then
// files, install, invoice and subscription. The seller's ledger holds the
// sale and the fee in force, and sums to the balance; a fee change applies
// to later sales only; a cancellation at once refunds the unused remainder
// and ends the license, one at the period's end keeps it. A purchase is its
// buyer's: anyone else gets what an unknown id gets.
func TestMarketplacePurchases(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		pub, buyer, admin := f.Owner, f.Outsider, f.Admin
		buyerMember := f.Member(t, buyer, "Bo Member")

		// A paid listing needs a seller profile.
		r := pub.Do("POST", "/api/scripts", obj{"name": "Reporter", "slug": "reporter", "language": "sh", "source": "echo '{\"report\": 1}'\n"})
		fixture.Want(t, r, http.StatusCreated)
		script := r.Map(t)["id"].(string)
		price := obj{"amount_minor": 1999, "currency": "EUR", "interval": "month"}
		publish := func(version string) *apitest.Response {
			return pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": script, "version": version, "changelog": "v" + version, "price": price})
		}
		fixture.WantError(t, publish("1.0.0"), http.StatusBadRequest, "bad_request", "seller profile")
		fixture.WantError(t, pub.Do("GET", "/api/marketplace/seller/profile", nil), http.StatusNotFound, "not_found")
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/seller/payout-account", obj{"holder_name": "Olivia Owner", "iban": "DE89370400440532013000",
			"bic": "DEUTDEFF"}), http.StatusBadRequest, "bad_request", "seller profile")
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Olivia's tools", "country": "QQ"}),
			http.StatusBadRequest, "bad_request", "country")
		fixture.Want(t, pub.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Olivia's tools", "country": "DE"}), http.StatusCreated)
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Again", "country": "DE"}), http.StatusConflict, "conflict")
		var prof commerce.SellerProfile
		pub.Do("GET", "/api/marketplace/seller/profile", nil).JSON(t, &prof)
		if prof.Status != "pending_review" || prof.Country != "DE" {
			t.Fatalf("the profile: %+v", prof)
		}

		// Payout accounts: checked, the IBAN sealed and shown masked.
		account := func(holder, iban, bic string) *apitest.Response {
			return pub.Do("POST", "/api/marketplace/seller/payout-account", obj{"holder_name": holder, "iban": iban, "bic": bic})
		}
		fixture.WantError(t, account("Olivia Owner", "DE89370400440532013001", "DEUTDEFF"), http.StatusBadRequest, "bad_request", "iban")
		fixture.WantError(t, account("Olivia Owner", "DE89370400440532013000", "DEUTQQFF"), http.StatusBadRequest, "bad_request", "bic")
		fixture.WantError(t, account("Olivia <Owner>", "DE89370400440532013000", "DEUTDEFF"), http.StatusBadRequest, "bad_request", "holder_name")
		r = account("Olivia Owner", "de89 3704 0044 0532 0130 00", "deutdeff")
		fixture.Want(t, r, http.StatusCreated)
		if strings.Contains(string(r.Body), "0532013000") || !strings.Contains(string(r.Body), `"iban":"DE89 •••• 3000"`) {
			t.Fatalf("the account shows its IBAN: %s", r.Body)
		}
		var sealed string
		if err := f.App.DB.R.QueryRowContext(context.Background(), "SELECT iban_sealed FROM seller_payout_accounts").Scan(&sealed); err != nil ||
			strings.Contains(sealed, "0532013000") {
			t.Fatalf("the IBAN is stored in the clear: %q %v", sealed, err)
		}
		if r := pub.Do("GET", "/api/marketplace/seller/payout-accounts", nil); strings.Contains(string(r.Body), "0532013000") {
			t.Fatalf("the accounts show an IBAN: %s", r.Body)
		}

		// Sold by the month, approved.
		r = publish("1.0.0")
		fixture.Want(t, r, http.StatusCreated)
		var p marketplace.Published
		r.JSON(t, &p)
		if !p.Item.Paid || p.Item.Price == nil || p.Item.Price.AmountMinor != 1999 || p.Item.Price.Interval != "month" {
			t.Fatalf("the paid item: %+v", p.Item)
		}
		item, version := p.Item.ID, p.Version.ID
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+item+"/review/approve", nil), http.StatusOK)

		// Not the buyer's until bought.
		fixture.WantError(t, buyer.Do("GET", "/api/marketplace/items/"+item+"/files", nil), http.StatusForbidden, "forbidden", "license")
		fixture.WantError(t, buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.0.0/install", nil), http.StatusForbidden, "forbidden", "license")
		if r := buyer.Do("GET", "/api/marketplace/items/"+item+"/subscription", nil); strings.TrimSpace(string(r.Body)) != "null" {
			t.Fatalf("a subscription before buying: %s", r.Body)
		}
		fixture.WantError(t, pub.Do("POST", "/api/marketplace/checkout/"+version, nil), http.StatusConflict, "conflict", "own")
		fixture.WantError(t, buyerMember.Do("POST", "/api/marketplace/checkout/"+version, nil), http.StatusForbidden, "forbidden")
		r = buyer.Do("POST", "/api/marketplace/checkout/"+version, nil)
		fixture.Want(t, r, http.StatusCreated)
		var co commerce.Checkout
		r.JSON(t, &co)
		if co.Purchase.Status != "pending" || co.Purchase.AmountMinor != 1999 || co.Purchase.Currency != "EUR" || co.DevComplete == nil {
			t.Fatalf("the checkout: %s", r.Body)
		}
		purchase := co.Purchase.ID
		r = buyer.Do("POST", "/api/marketplace/checkout/"+version, nil)
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["purchase"].(obj)["id"] != purchase {
			t.Fatal("a second checkout made another pending purchase")
		}

		// Completed once, under a race.
		if wins := apitest.Race(t, 12, http.StatusOK, http.StatusConflict, func() int { return buyer.Do("POST", *co.DevComplete, nil).Status }); wins != 1 {
			t.Fatalf("%d completions won, want 1", wins)
		}
		var got commerce.Purchase
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase, nil).JSON(t, &got)
		if got.Status != "active" || got.PeriodEnd == nil || got.ActivatedAt == nil {
			t.Fatalf("the completed purchase: %+v", got)
		}
		fixture.Want(t, buyer.Do("GET", "/api/marketplace/items/"+item+"/files", nil), http.StatusOK)
		fixture.Want(t, buyer.Do("POST", "/api/marketplace/items/"+item+"/versions/1.0.0/install", nil), http.StatusCreated)
		var sub commerce.Purchase
		buyer.Do("GET", "/api/marketplace/items/"+item+"/subscription", nil).JSON(t, &sub)
		if sub.ID != purchase {
			t.Fatalf("the subscription: %+v", sub)
		}
		var invoices []commerce.Invoice
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase+"/invoices", nil).JSON(t, &invoices)
		if len(invoices) != 1 || invoices[0].AmountMinor != 1999 || !strings.HasPrefix(invoices[0].Number, "SW-") {
			t.Fatalf("the invoices: %+v", invoices)
		}
		var list commerce.PurchasePage
		buyer.Do("GET", "/api/marketplace/purchases?status=active", nil).JSON(t, &list)
		if list.Total != 1 || list.Items[0].ID != purchase {
			t.Fatalf("the purchases: %+v", list)
		}

		// The ledger: the sale and the fee in force (10 %), summing to the
		// balance.
		ledger := func() commerce.LedgerPage {
			var l commerce.LedgerPage
			pub.Do("GET", "/api/marketplace/seller/ledger?limit=200", nil).JSON(t, &l)
			var sum int64
			for _, e := range l.Items {
				sum += e.AmountMinor
			}
			if len(l.Balances) != 1 || l.Balances[0].AmountMinor != sum || l.Total != len(l.Items) {
				t.Fatalf("the ledger does not sum to its balance: %+v", l)
			}
			return l
		}
		if l := ledger(); l.Total != 2 || l.Balances[0].AmountMinor != 1999-199 || l.Balances[0].Currency != "EUR" {
			t.Fatalf("after one sale: %+v", l)
		}

		// Fees: 0 to 100, applied to later sales only.
		fixture.WantError(t, pub.Do("PUT", "/api/admin/marketplace/fee-settings", obj{"package_fee_percent": 20, "runner_fee_percent": 5}),
			http.StatusForbidden, "forbidden")
		fixture.WantError(t, admin.Do("PUT", "/api/admin/marketplace/fee-settings", obj{"package_fee_percent": 101, "runner_fee_percent": 5}),
			http.StatusBadRequest, "bad_request", "package_fee_percent")
		fixture.WantError(t, admin.Do("PUT", "/api/admin/marketplace/fee-settings", obj{"package_fee_percent": -1, "runner_fee_percent": 5}),
			http.StatusBadRequest, "bad_request", "package_fee_percent")
		fixture.Want(t, admin.Do("PUT", "/api/admin/marketplace/fee-settings", obj{"package_fee_percent": 20, "runner_fee_percent": 5}), http.StatusOK)
		if fs := admin.Do("GET", "/api/admin/marketplace/fee-settings", nil).Map(t); fs["package_fee_percent"] != float64(20) {
			t.Fatalf("the fees: %+v", fs)
		}
		r = admin.Do("POST", "/api/marketplace/checkout/"+version, nil)
		fixture.Want(t, r, http.StatusCreated)
		r.JSON(t, &co)
		fixture.Want(t, admin.Do("POST", *co.DevComplete, nil), http.StatusOK)
		if l := ledger(); l.Total != 4 || l.Balances[0].AmountMinor != 1800+1600 {
			t.Fatalf("after a second sale at 20 %%: %+v", l)
		}
		fixture.Want(t, buyer.Do("GET", "/api/marketplace/seller/purchases", nil), http.StatusOK)
		var lb struct {
			Rows  []commerce.LedgerEntry `json:"rows"`
			Total int                    `json:"total"`
		}
		pub.Do("GET", "/api/marketplace/seller/ledger/board?q=fee&sort=amount&order=asc", nil).JSON(t, &lb)
		if lb.Total != 2 || lb.Rows[0].AmountMinor != -399 {
			t.Fatalf("the ledger board: %+v", lb)
		}
		var pb struct {
			Rows  []commerce.Purchase `json:"rows"`
			Total int                 `json:"total"`
		}
		pub.Do("GET", "/api/marketplace/seller/purchases/board?q=report", nil).JSON(t, &pb)
		if pb.Total != 2 || pb.Rows[0].ItemName != "Reporter" {
			t.Fatalf("the seller's purchases board: %+v", pb)
		}
		if r := buyer.Do("GET", "/api/marketplace/seller/ledger/board", nil); !strings.Contains(string(r.Body), `"total":0`) {
			t.Fatalf("a person without a profile sees a ledger: %s", r.Body)
		}
		var sold commerce.PurchasePage
		pub.Do("GET", "/api/marketplace/seller/purchases", nil).JSON(t, &sold)
		if sold.Total != 2 {
			t.Fatalf("the seller's purchases: %+v", sold)
		}

		// Cancelled at the period's end: still licensed; at once: refunded
		// and unlicensed.
		r = admin.Do("POST", "/api/marketplace/purchases/"+co.Purchase.ID+"/cancel", obj{"when": "period_end"})
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["status"] != "active" || m["cancel_at_period_end"] != true {
			t.Fatalf("cancelled at the period's end: %+v", m)
		}
		fixture.Want(t, admin.Do("GET", "/api/marketplace/items/"+item+"/files", nil), http.StatusOK)
		r = buyer.Do("POST", "/api/marketplace/purchases/"+purchase+"/cancel", obj{"when": "now"})
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["status"] != "cancelled" {
			t.Fatalf("cancelled now: %+v", m)
		}
		fixture.WantError(t, buyer.Do("POST", "/api/marketplace/purchases/"+purchase+"/cancel", obj{"when": "now"}), http.StatusConflict, "conflict")
		fixture.WantError(t, buyer.Do("GET", "/api/marketplace/items/"+item+"/files", nil), http.StatusForbidden, "forbidden", "license")
		buyer.Do("GET", "/api/marketplace/purchases/"+purchase+"/invoices", nil).JSON(t, &invoices)
		if len(invoices) != 2 || invoices[1].AmountMinor >= 0 || invoices[1].AmountMinor < -1999 {
			t.Fatalf("the credit note: %+v", invoices)
		}
		l := ledger()
		var refund, feeBack int64
		for _, e := range l.Items {
			switch {
			case e.Kind == "refund":
				refund = e.AmountMinor
			case e.Kind == "fee" && e.AmountMinor > 0:
				feeBack = e.AmountMinor
			}
		}
		if refund != invoices[1].AmountMinor || feeBack <= 0 || feeBack > 199 || l.Total != 6 {
			t.Fatalf("the refund in the ledger: %+v", l)
		}
		if len(f.App.AuditEntries(t, "marketplace.purchase.activate", purchase)) != 1 || len(f.App.AuditEntries(t, "marketplace.purchase.cancel", purchase)) != 1 {
			t.Fatal("the purchase's activation and cancellation are not audited")
		}

		// A purchase is its buyer's alone (asked last: the owner's own
		// request is repeated, and a cancellation changes it).
		apitest.CheckTenancy(t, buyer, pub, []apitest.TenancyCase{
			{Name: "purchase", Method: "GET", Path: "/api/marketplace/purchases/{id}", Create: func(*testing.T, *apitest.Client) string { return purchase }},
			{Name: "invoices", Method: "GET", Path: "/api/marketplace/purchases/{id}/invoices", Create: func(*testing.T, *apitest.Client) string { return purchase }},
			{Name: "cancel", Method: "POST", Path: "/api/marketplace/purchases/{id}/cancel", Body: obj{"when": "now"},
				Create: func(*testing.T, *apitest.Client) string { return purchase }},
			{Name: "dev complete", Method: "POST", Path: "/api/marketplace/checkout/{id}/dev/complete", Create: func(*testing.T, *apitest.Client) string { return purchase }},
		})
		fixture.WantError(t, buyerMember.Do("GET", "/api/marketplace/purchases/"+purchase, nil), http.StatusNotFound, "not_found")

	})
}
