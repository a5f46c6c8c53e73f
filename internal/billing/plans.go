package billing

import (
	"context"
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
// once, with an audit entry holding the plan before and after.
func (s *Service) UpdatePlan(ctx context.Context, u *actor.User, id string, in PlanUpdate) (*BillingPlan, error) {
	var out *BillingPlan
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		before, err := getPlan(ctx, tx, id, s.db.Dialect.ForUpdate())
		if err != nil {
			return err
		}
		p := *before
		p.Entitlements = make(Entitlements, len(before.Entitlements))
		for k, v := range before.Entitlements {
			p.Entitlements[k] = v
		}
		if err := in.apply(&p); err != nil {
			return err
		}
		p.UpdatedAt = s.clock.Now()
		if err := updatePlan(ctx, tx, &p); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, p.UpdatedAt, u.ID, "plan.update", "plan", p.ID, before, &p); err != nil {
			return err
		}
		s.changed(tx)
		out = &p
		return nil
	})
	return out, err
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
