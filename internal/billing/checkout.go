package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
)

// Account is an organization's billing as its members see it: the plan,
// the subscription's state, and what its owner can do about it here.
type Account struct {
	OrganizationID string `json:"organization_id"`
	PlanID         string `json:"plan_id" doc:"The plan in force (community without a subscription)"`
	Status         string `json:"status" enum:"none,active,trialing,past_due,canceled,incomplete,unpaid" doc:"The subscription's status; none without one"`
	Provider       string `json:"provider" enum:"none,stripe" doc:"Who bills the subscription: stripe, or none for a plan an admin assigned"`
	// Payments is whether this instance takes payments (STRIPE_SECRET_KEY
	// and STRIPE_WEBHOOK_SECRET both set).
	Payments bool `json:"payments" doc:"Whether the instance takes payments: without them an instance admin assigns plans"`
	// Customer is whether the organization has a customer at the provider
	// (the billing portal needs one).
	Customer bool `json:"customer" doc:"Whether the organization is a customer at the provider (the billing portal needs one)"`
	// Subscribed: a provider's subscription that has not ended; plan
	// changes and cancellation go through the billing portal.
	Subscribed bool `json:"subscribed" doc:"A provider's subscription that has not ended: change or cancel it in the billing portal"`
	// Plans are what the owner can check out: active, public, recurring
	// and not free.
	Plans     []BillingPlan `json:"plans" doc:"What can be checked out: active, public, paid monthly or yearly"`
	CanManage bool          `json:"can_manage" doc:"Whether you may check out and open the billing portal (the organization's owner)"`
}

// BillingLink is where the provider takes the owner next.
type BillingLink struct {
	URL string `json:"url" doc:"The provider's page: open it in the browser"`
}

// ErrNoPayments answers a checkout or portal on an instance without a
// payment provider.
var ErrNoPayments = apperr.New(apperr.CodeConflict,
	"this instance takes no payments (STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are unset): an instance admin assigns plans")

// takesPayments: an API to open sessions and a webhook to hear the result.
func (s *Service) takesPayments() bool { return s.prices != nil && s.payments != nil }

// Account reads the organization's billing.
func (s *Service) Account(ctx context.Context, orgID, role string) (*Account, error) {
	out := &Account{OrganizationID: orgID, Status: "none", Provider: "none", Payments: s.takesPayments(), CanManage: role == "owner", Plans: []BillingPlan{}}
	err := s.db.ReadTx(ctx, func(q db.Queryer) error {
		sub, err := subscriptionOf(ctx, q, orgID)
		if err != nil {
			return err
		}
		if sub != nil {
			out.Status, out.Provider = sub.status, sub.provider
			out.Subscribed = sub.provider != "none" && live(sub.status)
		}
		if out.PlanID, err = s.planOf(ctx, q, orgID); err != nil {
			return err
		}
		if out.PlanID == "" {
			out.PlanID = CommunityPlan
		}
		cus, err := customerOf(ctx, q, "stripe", orgID)
		out.Customer = cus != ""
		if err != nil || !out.Payments {
			return err
		}
		plans, err := listPlans(ctx, q)
		for _, p := range plans {
			if sellable(p) {
				out.Plans = append(out.Plans, p)
			}
		}
		return err
	})
	return out, err
}

// live: a subscription state that has not ended.
func live(status string) bool {
	switch status {
	case "active", "trialing", "past_due", "unpaid", "incomplete":
		return true
	}
	return false
}

// sellable: a plan an owner can check out.
func sellable(p BillingPlan) bool {
	return p.Active && p.Public && p.AmountCents > 0 && (p.Interval == "month" || p.Interval == "year")
}

// returnBase is where the provider sends the owner back: the public URL,
// or the loopback origin of a developer's server.
func (s *Service) returnBase(ctx context.Context) (string, error) {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL, nil
	}
	if o := httpx.LoopbackOrigin(ctx); o != "" {
		return o, nil
	}
	return "", apperr.New(apperr.CodeConflict, "set SERVICE_PUBLIC_URL: the payment provider needs an address to send you back to")
}

// Checkout opens the provider's checkout of a plan for the organization
// (its owner only): the organization becomes a customer the first time,
// the plan's price is made at the provider if it has none matching, and
// the subscription's events later move the organization onto the plan.
func (s *Service) Checkout(ctx context.Context, u *actor.User, orgID, role, planID string) (*BillingLink, error) {
	if role != "owner" {
		return nil, apperr.New(apperr.CodeForbidden, "only the organization's owner may subscribe it to a plan")
	}
	if !s.takesPayments() {
		return nil, ErrNoPayments
	}
	base, err := s.returnBase(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := getPlan(ctx, s.db.R, planID, "")
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.BadRequest("plan_id: no plan %q (see GET /api/plans)", planID)
	}
	if err != nil {
		return nil, err
	}
	if !sellable(*plan) {
		return nil, apperr.BadRequest("plan_id: %q cannot be checked out: only active, public plans paid monthly or yearly can (an instance admin assigns the others)", planID)
	}
	sub, err := subscriptionOf(ctx, s.db.R, orgID)
	if err != nil {
		return nil, err
	}
	if sub != nil && sub.provider != "none" && live(sub.status) {
		return nil, apperr.New(apperr.CodeConflict, "the organization already subscribes to %s (%s): change or cancel it in the billing portal", sub.planID, sub.status)
	}
	price, err := s.sellingPrice(ctx, plan)
	if err != nil {
		return nil, err
	}
	customer, err := s.customer(ctx, u, orgID)
	if err != nil {
		return nil, err
	}
	url, err := s.prices.CheckoutURL(ctx, CheckoutRequest{OrganizationID: orgID, PlanID: plan.ID, CustomerID: customer, PriceID: price,
		SuccessURL: base + "/settings?checkout=done", CancelURL: base + "/settings?checkout=canceled"})
	if err != nil {
		return nil, apperr.Wrap(apperr.CodeInternal, err, "the payment provider did not open a checkout")
	}
	return &BillingLink{URL: url}, nil
}

// Portal opens the provider's billing portal for the organization (its
// owner only; the organization must be a customer).
func (s *Service) Portal(ctx context.Context, orgID, role string) (*BillingLink, error) {
	if role != "owner" {
		return nil, apperr.New(apperr.CodeForbidden, "only the organization's owner may manage its billing")
	}
	if !s.takesPayments() {
		return nil, ErrNoPayments
	}
	base, err := s.returnBase(ctx)
	if err != nil {
		return nil, err
	}
	customer, err := customerOf(ctx, s.db.R, "stripe", orgID)
	if err != nil {
		return nil, err
	}
	if customer == "" {
		return nil, apperr.New(apperr.CodeConflict, "the organization has no billing account yet: subscribe to a plan first")
	}
	url, err := s.prices.PortalURL(ctx, customer, base+"/settings")
	if err != nil {
		return nil, apperr.Wrap(apperr.CodeInternal, err, "the payment provider did not open the billing portal")
	}
	return &BillingLink{URL: url}, nil
}

// customer is the organization's customer at the provider, made the
// first time (the call is idempotent per organization, so two owners'
// tabs racing make one).
func (s *Service) customer(ctx context.Context, u *actor.User, orgID string) (string, error) {
	id, err := customerOf(ctx, s.db.R, "stripe", orgID)
	if err != nil || id != "" {
		return id, err
	}
	name, err := organizationName(ctx, s.db.R, orgID)
	if err != nil {
		return "", err
	}
	id, err = s.prices.CreateCustomer(ctx, ProviderCustomer{OrganizationID: orgID, Name: name, Email: u.Email})
	if err != nil {
		return "", apperr.Wrap(apperr.CodeInternal, err, "the payment provider did not make the organization a customer")
	}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := saveCustomer(ctx, tx, orgID, "stripe", id, s.clock.Now()); err != nil {
			return err
		}
		id, err = customerOf(ctx, tx, "stripe", orgID) // the one saved first
		return err
	})
	return id, err
}

// sellingPrice is the plan's active price matching its amount, currency
// and interval, made at the provider when there is none (keyed by the
// plan's version, so concurrent checkouts make one).
func (s *Service) sellingPrice(ctx context.Context, p *BillingPlan) (string, error) {
	prices, err := planPrices(ctx, s.db.R, "stripe", p.ID)
	if err != nil {
		return "", err
	}
	for _, pr := range prices {
		if pr.ArchivedAt == nil && pr.AmountCents == p.AmountCents && pr.Currency == p.Currency && pr.Interval == p.Interval {
			return pr.PriceID, nil
		}
	}
	id, err := s.prices.CreatePrice(ctx, *p, priceKey(p, p.UpdatedAt))
	if err != nil {
		return "", apperr.Wrap(apperr.CodeInternal, err, "the payment provider did not take the plan's price")
	}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		cur, err := getPlan(ctx, tx, p.ID, s.db.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		if cur.AmountCents != p.AmountCents || cur.Currency != p.Currency || cur.Interval != p.Interval {
			return apperr.New(apperr.CodeConflict, "the plan's price changed meanwhile; check out again")
		}
		return insertPriceOnce(ctx, tx, "stripe", id, p.ID, p.AmountCents, p.Currency, p.Interval, s.clock.Now())
	})
	return id, err
}

// priceKey keys the making of a plan's price: the plan's id, the price
// and the plan's version (its last update), so a retry or a race makes
// one price and a later change makes another.
func priceKey(p *BillingPlan, version time.Time) string {
	return fmt.Sprintf("slipway-price-%s-%d-%s-%s-%d", p.ID, p.AmountCents, p.Currency, p.Interval, version.UnixNano())
}
