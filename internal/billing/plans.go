package billing

import (
	"context"
	"fmt"
	"strings"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/text"
)

// maxEntitlements bounds the keys of one plan.
const maxEntitlements = 100

// Plans lists every plan, inactive and non-public included.
func (s *Service) Plans(ctx context.Context) ([]BillingPlan, error) {
	return listPlans(ctx, s.db.R)
}

// UpdatePlan changes a plan for every organization subscribed to it at
// once, with an audit entry holding the plan before and after. A changed
// price (amount, currency or interval) rotates it at the provider: a new
// price is made before the change commits, the plan's earlier prices are
// archived (they stay mapped, so renewals on them resolve), and archived
// at the provider once it has.
func (s *Service) UpdatePlan(ctx context.Context, u *actor.User, id string, in PlanUpdate) (*BillingPlan, error) {
	priced := func(p *BillingPlan) string { return fmt.Sprintf("%d %s %s", p.AmountCents, p.Currency, p.Interval) }
	// The new price is made outside the transaction (a call to the
	// provider); one left unused by a failed update sells nothing.
	var newPrice, newPriceFor string
	if s.prices != nil && (in.AmountCents != nil || in.Currency != nil || in.Interval != nil) {
		cur, err := getPlan(ctx, s.db.R, id, "")
		if err != nil {
			return nil, err
		}
		next := cur.copy()
		if err := in.apply(next); err != nil {
			return nil, err
		}
		if priced(next) != priced(cur) && next.Interval != "custom" {
			if newPrice, err = s.prices.CreatePrice(ctx, *next, priceKey(next, cur.UpdatedAt)); err != nil {
				return nil, apperr.Wrap(apperr.CodeInternal, err, "the payment provider did not take the new price")
			}
			newPriceFor = priced(next)
		}
	}
	var out *BillingPlan
	var archived []PlanPrice
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		before, err := getPlan(ctx, tx, id, s.db.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		p := before.copy()
		if err := in.apply(p); err != nil {
			return err
		}
		p.UpdatedAt = s.clock.Now()
		if err := updatePlan(ctx, tx, p); err != nil {
			return err
		}
		if newPrice != "" {
			if priced(p) != newPriceFor {
				return apperr.New(apperr.CodeConflict, "the plan changed meanwhile; save again")
			}
			if archived, err = planPrices(ctx, tx, "stripe", p.ID); err != nil {
				return err
			}
			if err := archivePrices(ctx, tx, "stripe", p.ID, p.UpdatedAt); err != nil {
				return err
			}
			if err := insertPrice(ctx, tx, "stripe", newPrice, p.ID, p.AmountCents, p.Currency, p.Interval, p.UpdatedAt); err != nil {
				return err
			}
			if err := audit.Record(ctx, tx, p.UpdatedAt, u.ID, "plan.price", "plan", p.ID, archived, map[string]string{"price_id": newPrice}); err != nil {
				return err
			}
		}
		if err := audit.Record(ctx, tx, p.UpdatedAt, u.ID, "plan.update", "plan", p.ID, before, p); err != nil {
			return err
		}
		s.changed(tx)
		out = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, old := range archived {
		if old.ArchivedAt != nil {
			continue // archived at an earlier rotation
		}
		if err := s.prices.ArchivePrice(ctx, old.PriceID); err != nil {
			// Still sold at the provider: stripe-sync shows it.
			s.log.Warn("archiving a plan's old price at the provider failed", "plan", id, "price", old.PriceID, "err", err)
		}
	}
	return out, nil
}

// copy is the plan with entitlements of its own.
func (p *BillingPlan) copy() *BillingPlan {
	c := *p
	c.Entitlements = make(Entitlements, len(p.Entitlements))
	for k, v := range p.Entitlements {
		c.Entitlements[k] = v
	}
	return &c
}

// StripeSync is what reconciling a plan with the provider would do: its
// prices there, whether one sells the plan as it stands, and the steps a
// rotation would take. It is a preview: nothing is created, archived or
// charged.
type StripeSync struct {
	PlanID     string      `json:"plan_id"`
	InSync     bool        `json:"in_sync" doc:"An active price matches the plan's amount, currency and interval"`
	Configured bool        `json:"configured" doc:"Whether a Stripe API key is set (STRIPE_SECRET_KEY): without one nothing can be created"`
	PriceID    *string     `json:"price_id" nullable:"true" doc:"The active price that sells the plan"`
	Prices     []PlanPrice `json:"prices" doc:"The plan's prices, newest first; archived ones still map renewals"`
	Actions    []string    `json:"actions" doc:"What a sync would do; empty when in sync"`
}

// StripeSyncPreview compares a plan with its prices at the provider.
func (s *Service) StripeSyncPreview(ctx context.Context, id string) (*StripeSync, error) {
	p, err := getPlan(ctx, s.db.R, id, "")
	if err != nil {
		return nil, err
	}
	prices, err := planPrices(ctx, s.db.R, "stripe", id)
	if err != nil {
		return nil, err
	}
	out := &StripeSync{PlanID: id, Configured: s.prices != nil, Prices: prices, Actions: []string{}}
	var active []PlanPrice
	for _, pr := range prices {
		if pr.ArchivedAt == nil {
			active = append(active, pr)
		}
	}
	for _, pr := range active {
		if pr.AmountCents == p.AmountCents && pr.Currency == p.Currency && pr.Interval == p.Interval {
			out.InSync, out.PriceID = true, &pr.PriceID
		}
	}
	switch {
	case p.Interval == "custom":
		out.InSync = len(active) == 0
		for _, pr := range active {
			out.Actions = append(out.Actions, "archive "+pr.PriceID+": a custom plan is not sold through Stripe")
		}
	case !out.InSync:
		out.Actions = append(out.Actions, fmt.Sprintf("create a price of %d %s per %s for product %s", p.AmountCents, p.Currency, p.Interval, productID(p.ID)))
		for _, pr := range active {
			out.Actions = append(out.Actions, "archive "+pr.PriceID+" (it stays mapped for the subscriptions on it)")
		}
	}
	return out, nil
}

// apply writes the given fields onto p and checks the result.
func (in PlanUpdate) apply(p *BillingPlan) error {
	if in.Name != nil {
		name, err := text.Name("name", *in.Name, 100)
		if err != nil {
			return err
		}
		p.Name = name
	}
	if in.AmountCents != nil {
		p.AmountCents = *in.AmountCents
	}
	if in.Currency != nil {
		p.Currency = *in.Currency
	}
	if in.Interval != nil {
		p.Interval = *in.Interval
	}
	if in.Active != nil {
		p.Active = *in.Active
	}
	if in.Public != nil {
		p.Public = *in.Public
	}
	for k, v := range in.Entitlements {
		if k == "" || len(k) > 100 || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789_.") != "" {
			return apperr.BadRequest("entitlements: %q is not a feature key (a-z, 0-9, _ and .)", k)
		}
		if v.IsZero() || string(v.raw) == "null" {
			delete(p.Entitlements, k)
			continue
		}
		pv, err := ParseValue(v.raw)
		if err != nil {
			return apperr.BadRequest("entitlements.%s: %v", k, err)
		}
		if f := FeatureOf(k); f != nil {
			if err := f.fits(pv); err != nil {
				return apperr.BadRequest("entitlements: %v", err)
			}
		}
		p.Entitlements[k] = pv
	}
	if in.IncludedSeats != nil {
		v, err := ParseValue(in.IncludedSeats.raw)
		if err == nil {
			err = FeatureOf("users.max").fits(v)
		}
		if err != nil {
			return apperr.BadRequest("included_seats must be a non-negative whole number or \"unlimited\"")
		}
		p.Entitlements["users.max"] = v
	}
	if len(p.Entitlements) > maxEntitlements {
		return apperr.BadRequest("a plan holds at most %d entitlements", maxEntitlements)
	}
	p.IncludedSeats = p.Entitlements["users.max"]
	if p.IncludedSeats.IsZero() {
		p.IncludedSeats = FeatureOf("users.max").Default
	}
	return nil
}

// Paying reports whether a payment provider bills the organization (an
// organization is not deleted while one does), read through q.
func (s *Service) Paying(ctx context.Context, q db.Queryer, orgID string) (bool, error) {
	return paying(ctx, q, orgID)
}

// AssignPlan puts an organization on a plan without a payment provider (an
// instance admin's decision, audited); the community plan removes its
// subscription's effect.
func (s *Service) AssignPlan(ctx context.Context, u *actor.User, orgID, planID string) error {
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		ok, err := organizationExists(ctx, tx, orgID)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.NotFound("organization")
		}
		if _, err := getPlan(ctx, tx, planID, ""); err != nil {
			return err
		}
		if p, err := paying(ctx, tx, orgID); err != nil || p {
			if err == nil {
				err = apperr.New(apperr.CodeConflict, "a payment provider bills this organization: its plan follows its subscription")
			}
			return err
		}
		before, err := subscribedPlan(ctx, tx, orgID)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if err := upsertSubscription(ctx, tx, orgID, planID, "active", "none", now); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, now, u.ID, "subscription.assign", "organization", orgID,
			map[string]string{"plan_id": before}, map[string]string{"plan_id": planID}); err != nil {
			return err
		}
		s.changed(tx)
		return nil
	})
}
