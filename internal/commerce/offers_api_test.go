package commerce_test

import (
	"net/http"
	"strings"
	"testing"

	"slipway/internal/apitest"
	"slipway/internal/commerce"
	"slipway/internal/fixture"
	"slipway/internal/platform/db"
	"slipway/internal/platform/db/dbtest"
	"slipway/internal/runners"
)

// TestRunnerOffers, on both databases: an organization's owner offers one
// of its runners (a seller profile first: the 400 names the onboarding
// step; secrets never reach a runner offered from its page), a member may
// not, another organization's runner is not found; buyers list the active
// offers; only its seller reads, changes or activates an offer (another
// seller's activation is 403); withdrawing makes it inactive (again: a
// no-op); offered from the marketplace side the seller may allow secrets.
func TestRunnerOffers(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, e db.Engine) {
		f := fixture.NewAPI(t, e)
		owner, buyer := f.Owner, f.Outsider
		member := f.Member(t, owner, "Mo Member")
		r := owner.Do("POST", "/api/organization/runners", obj{"name": "gpu-box"})
		fixture.Want(t, r, http.StatusCreated)
		var created runners.CreatedRunner
		r.JSON(t, &created)
		f.App.Remember(created.Token)
		runner, org := created.Runner.ID, created.Runner.OrganizationID
		offerPath := "/api/organization/runners/" + runner + "/offer"
		terms := obj{"price_minute_minor": 5, "currency": "EUR", "description": "A GPU box in Frankfurt"}

		fixture.WantError(t, owner.Do("POST", offerPath, terms), http.StatusBadRequest, "bad_request", "seller profile")
		fixture.Want(t, owner.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Olivia's runners", "country": "DE"}), http.StatusCreated)
		fixture.WantError(t, member.Do("POST", offerPath, terms, "X-Organization-Id", org), http.StatusForbidden, "forbidden")
		fixture.WantError(t, buyer.Do("POST", offerPath, terms), http.StatusNotFound, "not_found")
		r = owner.Do("POST", offerPath, terms)
		fixture.Want(t, r, http.StatusOK)
		var o commerce.RunnerOffer
		r.JSON(t, &o)
		if o.RunnerPoolID != runner || o.Name != "gpu-box" || o.SecretTrustPolicy != "deny" || o.ActivationStatus != "active" || o.PriceMinuteMinor != 5 {
			t.Fatalf("the offer: %+v", o)
		}
		var list []commerce.RunnerOffer
		member.Do("GET", "/api/organization/runners/offers", nil, "X-Organization-Id", org).JSON(t, &list)
		if len(list) != 1 || list[0].ID != o.ID {
			t.Fatalf("the organization's offers: %+v", list)
		}
		buyer.Do("GET", "/api/marketplace/runner-offers", nil).JSON(t, &list)
		if len(list) != 1 || list[0].ID != o.ID {
			t.Fatalf("the offers buyers see: %+v", list)
		}

		// Its seller's alone.
		path := "/api/marketplace/runner-offers/" + o.ID
		fixture.Want(t, owner.Do("GET", path, nil), http.StatusOK)
		apitest.CheckTenancy(t, owner, buyer, []apitest.TenancyCase{
			{Name: "offer", Method: "GET", Path: "/api/marketplace/runner-offers/{id}", Create: func(*testing.T, *apitest.Client) string { return o.ID }},
			{Name: "offer patch", Method: "PATCH", Path: "/api/marketplace/runner-offers/{id}", Body: obj{"price_minute_minor": 6},
				Create: func(*testing.T, *apitest.Client) string { return o.ID }},
		})
		r = owner.Do("PATCH", path, obj{"price_minute_minor": 7, "name": "GPU box (A100)"})
		fixture.Want(t, r, http.StatusOK)
		if m := r.Map(t); m["price_minute_minor"] != float64(7) || m["name"] != "GPU box (A100)" {
			t.Fatalf("patched: %+v", m)
		}

		// Withdrawn: inactive, gone from the list; again: nothing to do.
		r = owner.Do("DELETE", offerPath, nil)
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["deleted"] != true {
			t.Fatalf("withdrawn: %s", r.Body)
		}
		r = owner.Do("DELETE", offerPath, nil)
		if r.Status != http.StatusOK || r.Map(t)["deleted"] != false {
			t.Fatalf("withdrawn again: %d %s", r.Status, r.Body)
		}
		buyer.Do("GET", "/api/marketplace/runner-offers", nil).JSON(t, &list)
		if len(list) != 0 {
			t.Fatalf("an inactive offer is listed: %+v", list)
		}
		fixture.Want(t, buyer.Do("POST", "/api/marketplace/seller/profile", obj{"display_name": "Bea", "country": "FR"}), http.StatusCreated)
		fixture.WantError(t, buyer.Do("POST", path+"/activate", nil), http.StatusForbidden, "forbidden", "another seller")
		r = owner.Do("POST", path+"/activate", nil)
		fixture.Want(t, r, http.StatusOK)
		if r.Map(t)["activation_status"] != "active" {
			t.Fatalf("activated: %s", r.Body)
		}

		// From the marketplace side the seller may allow secrets.
		r = owner.Do("POST", "/api/marketplace/runner-offers", obj{"runner_id": runner, "secret_trust_policy": "allow", "price_minute_minor": 4, "currency": "EUR"})
		fixture.Want(t, r, http.StatusCreated)
		if m := r.Map(t); m["secret_trust_policy"] != "allow" || m["id"] != o.ID {
			t.Fatalf("offered from the marketplace: %+v", m)
		}
		owner.Do("GET", "/api/marketplace/seller/runner-offers", nil).JSON(t, &list)
		if len(list) != 1 {
			t.Fatalf("the seller's offers: %+v", list)
		}
		if r := f.App.Anonymous().Do("GET", "/api/marketplace/runner-offers", nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("anonymous: %d", r.Status)
		}
		var none []commerce.RunnerOffer
		f.App.Approved(f.Admin, "Nobody").Do("GET", "/api/marketplace/seller/runner-offers", nil).JSON(t, &none)
		if len(none) != 0 || !strings.Contains(string(owner.Do("GET", path, nil).Body), `"price_minute_minor":4`) {
			t.Fatalf("a person without a profile has offers: %+v", none)
		}
		if len(f.App.AuditEntries(t, "marketplace.runner_offer.withdraw", o.ID)) != 1 {
			t.Fatal("the withdrawal is not audited")
		}
	})
}
