package commerce_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/bank"
	"slipway/internal/bank/banktest"
	"slipway/internal/commerce"
	"slipway/internal/fixture"
	"slipway/internal/marketplace"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
)

// TestMarketplacePayouts, on both databases, against a local bank that
// speaks the payment API (with a TAN challenge): 50 workspaces buy a
// seller's item at once while batches keep trying to pay the seller
// more than the ledger holds, and no batch ever exceeds the balance;
// the batch state machine (draft → approved → submitting → submitted →
// reconciled, cancel windows, no un-submit) with the SEPA file written once
// at approval; the TAN forwarded and never kept; reconcile settles paid
// transfers into the ledger once and frees rejected ones; the ledger sums
// to its balance throughout.
func TestMarketplacePayouts(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		const token, tan = "bank_tok_0123456789", "424242"
		bk := banktest.New(t, token)
		bk.TAN = tan
		f := fixture.NewAPI(t, e, "SERVICE_PAYOUT_DEBTOR_NAME", "Slipway Marketplace GmbH", "SERVICE_PAYOUT_DEBTOR_IBAN", "DE89370400440532013000",
			"SERVICE_PAYOUT_DEBTOR_BIC", "COBADEFFXXX", "SERVICE_PAYOUT_BANK", "api", "SERVICE_PAYOUT_BANK_URL", bk.URL, "SERVICE_PAYOUT_BANK_TOKEN", token)
		pub, admin := f.Owner, f.Admin

		// A seller with two accounts, an item sold once for 50.00 EUR.
		fixture.Want(t, pub.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Olivia's tools", "country": "DE"}), http.StatusCreated)
		accountID := func(holder, iban, bic string) string {
			r := pub.Do("POST", "/api/marketplace/seller/payout-account", obj{"holder_name": holder, "iban": iban, "bic": bic})
			fixture.Want(t, r, http.StatusCreated)
			return r.Map(t)["id"].(string)
		}
		acct := accountID("Olivia Owner", "FR1420041010050500013M02606", "BNPAFRPP")
		acct2 := accountID("Olivia Owner", "NL91ABNA0417164300", "ABNANL2A")
		var prof commerce.SellerProfile
		pub.Do("GET", "/api/marketplace/seller/profile", nil).JSON(t, &prof)
		r := pub.Do("POST", "/api/scripts", obj{"name": "Exporter", "slug": "exporter", "language": "sh", "source": "echo '{}'\n"})
		fixture.Want(t, r, http.StatusCreated)
		r = pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": r.Map(t)["id"], "version": "1.0.0", "changelog": "First.",
			"price": obj{"amount_minor": 5000, "currency": "EUR", "interval": "once"}})
		fixture.Want(t, r, http.StatusCreated)
		var p marketplace.Published
		r.JSON(t, &p)
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/approve", nil), http.StatusOK)
		buy := func(c *apitest.Client) {
			r := c.Do("POST", "/api/marketplace/checkout/"+p.Version.ID, nil)
			if r.Status != http.StatusCreated {
				t.Errorf("checkout: %d %s", r.Status, r.Body)
				return
			}
			var co commerce.Checkout
			r.JSON(t, &co)
			if r := c.Do("POST", *co.DevComplete, nil); r.Status != http.StatusOK {
				t.Errorf("complete: %d %s", r.Status, r.Body)
			}
		}
		buy(f.Outsider)
		ledger := func() (int64, int) {
			var l commerce.LedgerPage
			pub.Do("GET", "/api/marketplace/seller/ledger?limit=200", nil).JSON(t, &l)
			var sum int64
			for _, e := range l.Items {
				sum += e.AmountMinor
			}
			if l.Total != len(l.Items) || (len(l.Balances) > 0 && l.Balances[0].AmountMinor != sum) {
				t.Fatalf("the ledger does not sum to its balance: %+v", l)
			}
			return sum, l.Total
		}
		if bal, _ := ledger(); bal != 4500 {
			t.Fatalf("after one sale the balance is %d", bal)
		}
		batch := func(entries ...obj) *apitest.Response {
			return admin.Do("POST", "/api/admin/marketplace/payouts/batches", obj{"entries": entries})
		}
		entry := func(account string, amount int64) obj {
			return obj{"seller_id": prof.ID, "account_id": account, "amount_minor": amount}
		}

		// Only admins; never above what is available.
		fixture.WantError(t, pub.Do("GET", "/api/admin/marketplace/payouts/queue", nil), http.StatusForbidden, "forbidden")
		fixture.WantError(t, pub.Do("POST", "/api/admin/marketplace/payouts/batches", obj{"entries": []obj{entry(acct, 1)}}), http.StatusForbidden, "forbidden")
		fixture.WantError(t, batch(entry(acct, 4501)), http.StatusConflict, "conflict", "available")
		fixture.WantError(t, batch(entry(acct, 2000), entry(acct2, 2501)), http.StatusConflict, "conflict", "available")

		// 20 batches of 20.00 EUR race for 45.00 EUR: two are drafted.
		var raced []string
		var rmu sync.Mutex
		if wins := apitest.Race(t, 20, http.StatusCreated, http.StatusConflict, func() int {
			r := batch(entry(acct, 2000))
			if r.Status == http.StatusCreated {
				rmu.Lock()
				raced = append(raced, r.Map(t)["id"].(string))
				rmu.Unlock()
			}
			return r.Status
		}); wins != 2 {
			t.Fatalf("%d racing batches were drafted against 45.00 EUR, want 2", wins)
		}
		for _, id := range raced {
			fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/payouts/batches/"+id+"/cancel", nil), http.StatusOK)
		}

		// 50 sales at once while 50 batches of 20.00 EUR race for the money.
		buyers := make([]*apitest.Client, 50)
		for i := range buyers {
			buyers[i] = f.App.Approved(admin, fmt.Sprintf("Buyer %02d", i))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		drafted := []string{}
		for i := range 50 {
			wg.Add(2)
			go func() { defer wg.Done(); buy(buyers[i]) }()
			go func() {
				defer wg.Done()
				r := batch(entry(acct, 2000))
				switch r.Status {
				case http.StatusCreated:
					mu.Lock()
					drafted = append(drafted, r.Map(t)["id"].(string))
					mu.Unlock()
				case http.StatusConflict:
				default:
					t.Errorf("a racing batch: %d %s", r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
		bal, _ := ledger()
		if bal != 51*4500 {
			t.Fatalf("after 51 sales the balance is %d", bal)
		}
		var reserved int64 = int64(len(drafted)) * 2000
		if reserved > bal || len(drafted) == 0 {
			t.Fatalf("%d drafts reserve %d of a balance of %d", len(drafted), reserved, bal)
		}
		var q commerce.QueuePage
		admin.Do("GET", "/api/admin/marketplace/payouts/queue", nil).JSON(t, &q)
		if q.Total != 1 || q.Items[0].BalanceMinor != bal || q.Items[0].ReservedMinor != reserved || q.Items[0].AvailableMinor != bal-reserved ||
			q.Items[0].SellerStatus != "pending_review" || len(q.Items[0].Accounts) != 2 || q.Items[0].Accounts[0].IBAN != "FR14 •••• 2606" {
			t.Fatalf("the queue: %+v (reserved %d)", q, reserved)
		}
		for _, id := range drafted { // drafts cancel at once, their money free again
			fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/payouts/batches/"+id+"/cancel", nil), http.StatusOK)
		}
		admin.Do("GET", "/api/admin/marketplace/payouts/queue", nil).JSON(t, &q)
		if q.Items[0].AvailableMinor != bal {
			t.Fatalf("after the cancellations: %+v", q)
		}

		// A batch through its states.
		r = batch(entry(acct, 100000), entry(acct2, 20000))
		fixture.Want(t, r, http.StatusCreated)
		var b commerce.PayoutBatch
		r.JSON(t, &b)
		path := "/api/admin/marketplace/payouts/batches/" + b.ID
		if b.Status != "draft" || b.TotalMinor != 120000 || len(b.Items) != 2 || b.SEPASHA256 != nil {
			t.Fatalf("the draft: %+v", b)
		}
		fixture.WantError(t, admin.Do("POST", path+"/submit", nil), http.StatusConflict, "conflict", "draft")
		fixture.WantError(t, admin.Do("GET", path+"/sepa_xml", nil), http.StatusConflict, "conflict", "draft")
		fixture.WantError(t, admin.Do("POST", path+"/reconcile", nil), http.StatusConflict, "conflict")
		fixture.Want(t, admin.Do("POST", path+"/approve", nil), http.StatusOK)
		fixture.WantError(t, admin.Do("POST", path+"/approve", nil), http.StatusConflict, "conflict")
		r = admin.Do("GET", path+"/sepa_xml", nil)
		fixture.Want(t, r, http.StatusOK)
		sum := sha256.Sum256(r.Body)
		admin.Do("GET", path, nil).JSON(t, &b)
		if b.Status != "approved" || b.SEPASHA256 == nil || *b.SEPASHA256 != hex.EncodeToString(sum[:]) || r.Header.Get("ETag") != `"`+*b.SEPASHA256+`"` ||
			!strings.Contains(string(r.Body), "<IBAN>FR1420041010050500013M02606</IBAN>") || !strings.Contains(string(r.Body), "<CtrlSum>1200.00</CtrlSum>") {
			t.Fatalf("the approved file: %+v\n%s", b, r.Body)
		}
		pub.Do("GET", "/api/marketplace/seller/profile", nil).JSON(t, &prof)
		if prof.Status != "approved" {
			t.Fatalf("the first approved batch did not review the seller: %+v", prof)
		}
		fixture.WantError(t, admin.Do("POST", path+"/tan", obj{"tan": tan}), http.StatusConflict, "conflict")

		// Submitted: the bank asks for a TAN; a wrong one is refused.
		r = admin.Do("POST", path+"/submit", nil)
		fixture.Want(t, r, http.StatusOK)
		var sub commerce.SubmitResult
		r.JSON(t, &sub)
		if sub.Batch.Status != "submitting" || sub.Challenge == nil || sub.Challenge.ID == "" {
			t.Fatalf("submitted: %s", r.Body)
		}
		fixture.WantError(t, admin.Do("POST", path+"/submit", nil), http.StatusConflict, "conflict")
		fixture.WantError(t, admin.Do("POST", path+"/tan", obj{"tan": "000000"}), http.StatusBadRequest, "bad_request", "TAN is wrong")
		r = admin.Do("POST", path+"/tan", obj{"tan": tan})
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["status"] != "submitted" || bk.Batches() != 1 {
			t.Fatalf("after the TAN: %s (%d batches at the bank)", r.Body, bk.Batches())
		}
		for _, q := range []string{"SELECT COUNT(*) FROM audit_log WHERE CAST(after AS TEXT) LIKE '%" + tan + "%' OR CAST(before AS TEXT) LIKE '%" + tan + "%'",
			"SELECT COUNT(*) FROM payout_batches WHERE challenge_id LIKE '%" + tan + "%' OR sepa_xml LIKE '%" + tan + "%'"} {
			var n int
			if err := f.App.DB.R.QueryRowContext(context.Background(), q).Scan(&n); err != nil || n != 0 {
				t.Fatalf("the TAN was kept (%s): %d %v", q, n, err)
			}
		}
		if strings.Contains(f.App.Logs.String(), tan) {
			t.Fatal("the TAN was logged")
		}

		// Reconcile: nothing decided yet, then one paid and one rejected.
		r = admin.Do("POST", path+"/reconcile", nil)
		fixture.Want(t, r, http.StatusOK)
		var rep commerce.ReconcileReport
		r.JSON(t, &rep)
		if rep.Batch.Status != "submitted" || rep.PendingMinor != 120000 {
			t.Fatalf("reconciled before the bank decided: %s", r.Body)
		}
		byAccount := map[string]string{}
		for _, it := range b.Items {
			byAccount[it.AccountID] = it.EndToEndID
		}
		bk.Decide(byAccount[acct], bank.Result{Status: bank.Paid})
		bk.Decide(byAccount[acct2], bank.Result{Status: bank.Rejected, Reason: "AC04 Closed account"})
		fixture.WantError(t, admin.Do("POST", path+"/cancel", nil), http.StatusConflict, "conflict", "executed")
		for range 2 { // twice: the second changes nothing
			r = admin.Do("POST", path+"/reconcile", nil)
			fixture.Want(t, r, http.StatusOK)
			r.JSON(t, &rep)
		}
		if rep.Batch.Status != "reconciled" || rep.PaidMinor != 100000 || rep.RejectedMinor != 20000 || rep.PendingMinor != 0 {
			t.Fatalf("the reconciliation: %s", r.Body)
		}
		after, _ := ledger()
		if after != bal-100000 {
			t.Fatalf("after the payout the balance is %d, want %d", after, bal-100000)
		}
		admin.Do("GET", "/api/admin/marketplace/payouts/queue", nil).JSON(t, &q)
		if q.Items[0].ReservedMinor != 0 || q.Items[0].AvailableMinor != after {
			t.Fatalf("the rejected transfer is not available again: %+v", q)
		}
		fixture.WantError(t, admin.Do("POST", path+"/cancel", nil), http.StatusConflict, "conflict", "reconciled")
		var page commerce.BatchPage
		admin.Do("GET", "/api/admin/marketplace/payouts/batches?status=reconciled", nil).JSON(t, &page)
		if page.Total != 1 || page.Items[0].ID != b.ID {
			t.Fatalf("the reconciled batches: %+v", page)
		}
		var bb struct {
			Rows   []commerce.PayoutBatch `json:"rows"`
			Total  int                    `json:"total"`
			Facets map[string][]struct {
				Value string `json:"value"`
				Count int    `json:"count"`
			} `json:"facets"`
		}
		admin.Do("GET", "/api/admin/marketplace/payouts/batches/board?status=cancelled&sort=total&order=desc&page_size=5", nil).JSON(t, &bb)
		counts := map[string]int{}
		for _, f := range bb.Facets["status"] {
			counts[f.Value] = f.Count
		}
		if bb.Total != len(drafted)+2 || len(bb.Rows) != min(5, bb.Total) || bb.Rows[0].Status != "cancelled" || counts["reconciled"] != 1 ||
			counts["cancelled"] != len(drafted)+2 {
			t.Fatalf("the batches board: %+v", bb)
		}
		fixture.WantError(t, admin.Do("GET", "/api/admin/marketplace/payouts/batches/board?sort=nope", nil), http.StatusBadRequest, "bad_request", "sort")
		var neg []commerce.NegativeBalance
		admin.Do("GET", "/api/admin/marketplace/payouts/negative-balances", nil).JSON(t, &neg)
		if len(neg) != 0 {
			t.Fatalf("negative balances: %+v", neg)
		}
		for _, a := range []string{"marketplace.payout.create", "marketplace.payout.approve", "marketplace.payout.submit", "marketplace.payout.tan",
			"marketplace.payout.reconcile"} {
			if len(f.App.AuditEntries(t, a, b.ID)) == 0 {
				t.Errorf("%s is not audited", a)
			}
		}
	})
}

// TestMarketplacePayoutsFileBank, on both databases, with the file bank:
// a submitted batch is the pain.001 file in the payout directory, and the
// bank's status report put next to it reconciles it. A submission cut off
// before the bank answered (the server killed between the claim and the
// upload) is sent again and lands as the same file.
func TestMarketplacePayoutsFileBank(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		dir := t.TempDir()
		f := fixture.NewAPI(t, e, "SERVICE_PAYOUT_DEBTOR_NAME", "Slipway Marketplace GmbH", "SERVICE_PAYOUT_DEBTOR_IBAN", "DE89370400440532013000",
			"SERVICE_PAYOUT_DEBTOR_BIC", "COBADEFFXXX", "SERVICE_PAYOUT_DIR", dir, "SERVICE_PAYOUT_PAIN_VERSION", "03")
		pub, admin := f.Owner, f.Admin
		fixture.Want(t, pub.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Olivia's tools", "country": "DE"}), http.StatusCreated)
		r := pub.Do("POST", "/api/marketplace/seller/payout-account", obj{"holder_name": "Olivia Owner", "iban": "BE68539007547034", "bic": "GKCCBEBB"})
		fixture.Want(t, r, http.StatusCreated)
		acct := r.Map(t)["id"].(string)
		var prof commerce.SellerProfile
		pub.Do("GET", "/api/marketplace/seller/profile", nil).JSON(t, &prof)
		r = pub.Do("POST", "/api/scripts", obj{"name": "Exporter", "slug": "exporter", "language": "sh", "source": "echo '{}'\n"})
		fixture.Want(t, r, http.StatusCreated)
		r = pub.Do("POST", "/api/marketplace/scripts/publish", obj{"script_id": r.Map(t)["id"], "version": "1.0.0", "changelog": "First.",
			"price": obj{"amount_minor": 1000, "currency": "EUR", "interval": "once"}})
		fixture.Want(t, r, http.StatusCreated)
		var p marketplace.Published
		r.JSON(t, &p)
		fixture.Want(t, admin.Do("POST", "/api/admin/marketplace/items/"+p.Item.ID+"/review/approve", nil), http.StatusOK)
		r = f.Outsider.Do("POST", "/api/marketplace/checkout/"+p.Version.ID, nil)
		fixture.Want(t, r, http.StatusCreated)
		var co commerce.Checkout
		r.JSON(t, &co)
		fixture.Want(t, f.Outsider.Do("POST", *co.DevComplete, nil), http.StatusOK)

		r = admin.Do("POST", "/api/admin/marketplace/payouts/batches", obj{"entries": []obj{{"seller_id": prof.ID, "account_id": acct, "amount_minor": 900}}})
		fixture.Want(t, r, http.StatusCreated)
		var b commerce.PayoutBatch
		r.JSON(t, &b)
		path := "/api/admin/marketplace/payouts/batches/" + b.ID
		fixture.Want(t, admin.Do("POST", path+"/approve", nil), http.StatusOK)
		// The server died after claiming the submission, before the upload.
		f.Exec(t, "UPDATE payout_batches SET status = 'submitting' WHERE id = $1", b.ID)
		r = admin.Do("POST", path+"/submit", nil)
		fixture.Want(t, r, http.StatusOK)
		var sub commerce.SubmitResult
		r.JSON(t, &sub)
		if sub.Batch.Status != "submitted" || sub.Challenge != nil || b.PainVersion != "03" {
			t.Fatalf("submitted to the file bank: %s", r.Body)
		}
		file := filepath.Join(dir, b.MessageID+".pain001.xml")
		written, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r = admin.Do("GET", path+"/sepa_xml", nil)
		if !bytes.Equal(written, r.Body) || !strings.Contains(string(written), "pain.001.001.03") {
			t.Fatal("the file bank's file is not the approved file")
		}
		// Pending until the bank's report is there; then paid.
		fixture.Want(t, admin.Do("POST", path+"/reconcile", nil), http.StatusOK)
		if err := os.WriteFile(filepath.Join(dir, b.MessageID+".pain002.xml"),
			banktest.Report(b.MessageID, map[string]bank.Result{b.Items[0].EndToEndID: {Status: bank.Paid}}), 0o600); err != nil {
			t.Fatal(err)
		}
		r = admin.Do("POST", path+"/reconcile", nil)
		fixture.Want(t, r, http.StatusOK)
		var rep commerce.ReconcileReport
		r.JSON(t, &rep)
		if rep.Batch.Status != "reconciled" || rep.PaidMinor != 900 {
			t.Fatalf("reconciled from the file: %s", r.Body)
		}
		var l commerce.LedgerPage
		pub.Do("GET", "/api/marketplace/seller/ledger", nil).JSON(t, &l)
		if l.Balances[0].AmountMinor != 1000-100-900 {
			t.Fatalf("the ledger after the payout: %+v", l)
		}
	})
}
