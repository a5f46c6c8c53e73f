package commerce

import (
	"context"
	"strings"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/runners"
)

// Runner offers: an organization offers one of its runners — its pool —
// on the marketplace at a price per minute of use. The offer is sold by a
// person's seller profile; made from the organization's runner page it
// never lets a buyer's secrets reach the runner (deny).

// Offer statuses and trust policies.
const (
	OfferActive   = "active"
	OfferInactive = "inactive"
	TrustDeny     = "deny"
	TrustAllow    = "allow"
)

// Runners is what offers need of runners: one of the organization's the
// request acts on, for its owners and admins.
type Runners interface {
	AdminRunner(ctx context.Context, u *actor.User, sel runners.Selector, id string) (orgID, name string, err error)
	// MemberOrg is the organization the request acts on, for any member.
	MemberOrg(ctx context.Context, u *actor.User, sel runners.Selector) (string, error)
}

// RunnerOffer is a runner offered on the marketplace.
type RunnerOffer struct {
	ID                string    `json:"id" format:"uuid"`
	RunnerPoolID      string    `json:"runner_pool_id" format:"uuid" doc:"The runner offered (a pool of one)"`
	OrganizationID    string    `json:"organization_id" format:"uuid"`
	SellerID          string    `json:"seller_id" format:"uuid"`
	Name              string    `json:"name"`
	Description       string    `json:"description"`
	PriceMinuteMinor  int64     `json:"price_minute_minor" doc:"Minor units per minute of use"`
	Currency          string    `json:"currency"`
	SecretTrustPolicy string    `json:"secret_trust_policy" enum:"deny,allow" doc:"deny: no secret of a buyer's workspace reaches the runner (always, for an offer made from the organization's runners)"`
	ActivationStatus  string    `json:"activation_status" enum:"active,inactive" doc:"inactive: withdrawn, neither bought nor dispatched to"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// OfferInput offers a runner.
type OfferInput struct {
	Name             string `json:"name,omitempty" maxLength:"100" doc:"Default the runner's name"`
	Description      string `json:"description,omitempty" maxLength:"500"`
	PriceMinuteMinor int64  `json:"price_minute_minor" minimum:"1" maximum:"1000000"`
	Currency         string `json:"currency" pattern:"^[A-Z]{3}$"`
}

// OfferCreate offers a runner from the marketplace side (a seller who is
// an owner or admin of the runner's organization).
type OfferCreate struct {
	RunnerID          string `json:"runner_id" format:"uuid"`
	SecretTrustPolicy string `json:"secret_trust_policy,omitempty" enum:"deny,allow" doc:"Default deny"`
	OfferInput
}

// OfferPatch changes an offer; absent fields stay.
type OfferPatch struct {
	Name             *string `json:"name,omitempty" minLength:"1" maxLength:"100"`
	Description      *string `json:"description,omitempty" maxLength:"500"`
	PriceMinuteMinor *int64  `json:"price_minute_minor,omitempty" minimum:"1" maximum:"1000000"`
}

func checkOffer(in *OfferInput, runnerName string) error {
	name := in.Name
	if strings.TrimSpace(name) == "" {
		name = runnerName
	}
	var err error
	if in.Name, err = text.Name("name", name, 100); err != nil {
		return err
	}
	if err := text.CheckName("description", in.Description); err != nil || len(in.Description) > 500 {
		return apperr.BadRequest("description: one line of at most 500 characters")
	}
	if in.PriceMinuteMinor < 1 || in.PriceMinuteMinor > 1_000_000 {
		return apperr.BadRequest("price_minute_minor: 1 to 1,000,000")
	}
	if len(in.Currency) != 3 || strings.ToUpper(in.Currency) != in.Currency {
		return apperr.BadRequest("currency: ISO 4217, as EUR")
	}
	return nil
}

// offer makes (or re-activates with new terms) the offer of a runner.
func (s *Service) offer(ctx context.Context, u *actor.User, sel runners.Selector, runnerID, trust, action string, in OfferInput) (*RunnerOffer, error) {
	if s.Runners == nil {
		return nil, apperr.BadRequest("runner offers are not available on this server")
	}
	orgID, runnerName, err := s.Runners.AdminRunner(ctx, u, sel, runnerID)
	if err != nil {
		return nil, err
	}
	if err := checkOffer(&in, runnerName); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	var out *RunnerOffer
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		p, err := profileByUser(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		if p == nil {
			return apperr.BadRequest("offering a runner needs your seller profile first (onboarding: POST /api/marketplace/seller/profile)")
		}
		o, err := offerOfRunner(ctx, tx, orgID, runnerID)
		if err != nil {
			return err
		}
		var before any
		if o != nil {
			before = *o
		}
		if o == nil {
			o = &RunnerOffer{ID: ids.New(), RunnerPoolID: runnerID, OrganizationID: orgID, CreatedAt: now}
		}
		o.SellerID, o.Name, o.Description, o.PriceMinuteMinor, o.Currency = p.ID, in.Name, in.Description, in.PriceMinuteMinor, in.Currency
		o.SecretTrustPolicy, o.ActivationStatus, o.UpdatedAt = trust, OfferActive, now
		if err := saveOffer(ctx, tx, o, before == nil); err != nil {
			return err
		}
		out = o
		return audit.Record(ctx, tx, now, u.ID, action, "runner_offer", o.ID, before, o)
	})
	return out, err
}

// OfferRunner offers a runner of the organization from its runner page
// (owners and admins with a seller profile): secrets never reach it.
func (s *Service) OfferRunner(ctx context.Context, u *actor.User, sel runners.Selector, runnerID string, in OfferInput) (*RunnerOffer, error) {
	return s.offer(ctx, u, sel, runnerID, TrustDeny, "marketplace.runner_offer.offer", in)
}

// CreateOffer offers a runner from the marketplace (a seller who is an
// owner or admin of the runner's organization), deny unless allow is
// chosen.
func (s *Service) CreateOffer(ctx context.Context, u *actor.User, sel runners.Selector, in OfferCreate) (*RunnerOffer, error) {
	trust := in.SecretTrustPolicy
	if trust == "" {
		trust = TrustDeny
	}
	if trust != TrustDeny && trust != TrustAllow {
		return nil, apperr.BadRequest("secret_trust_policy must be deny or allow")
	}
	return s.offer(ctx, u, sel, in.RunnerID, trust, "marketplace.runner_offer.create", in.OfferInput)
}

// WithdrawRunner makes a runner's offer inactive (owners and admins): no
// checkout, no dispatch. A runner without an offer is a no-op success.
func (s *Service) WithdrawRunner(ctx context.Context, u *actor.User, sel runners.Selector, runnerID string) (bool, error) {
	if s.Runners == nil {
		return false, nil
	}
	orgID, _, err := s.Runners.AdminRunner(ctx, u, sel, runnerID)
	if err != nil {
		return false, err
	}
	changed := false
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		o, err := offerOfRunner(ctx, tx, orgID, runnerID)
		if err != nil || o == nil || o.ActivationStatus == OfferInactive {
			return err
		}
		before := *o
		o.ActivationStatus, o.UpdatedAt = OfferInactive, s.Clock.Now()
		if err := saveOffer(ctx, tx, o, false); err != nil {
			return err
		}
		changed = true
		return audit.Record(ctx, tx, o.UpdatedAt, u.ID, "marketplace.runner_offer.withdraw", "runner_offer", o.ID, before, o)
	})
	return changed, err
}

// OrgOffers are the organization's offers (any member).
func (s *Service) OrgOffers(ctx context.Context, u *actor.User, sel runners.Selector) ([]RunnerOffer, error) {
	if s.Runners == nil {
		return []RunnerOffer{}, nil
	}
	orgID, err := s.Runners.MemberOrg(ctx, u, sel)
	if err != nil {
		return nil, err
	}
	return offersWhere(ctx, s.DB.R, "organization_id = $1", orgID)
}

// Offers are the active offers, for buyers.
func (s *Service) Offers(ctx context.Context) ([]RunnerOffer, error) {
	return offersWhere(ctx, s.DB.R, "activation_status = $1", OfferActive)
}

// SellerOffers are the person's offers (none without a profile).
func (s *Service) SellerOffers(ctx context.Context, u *actor.User) ([]RunnerOffer, error) {
	p, err := profileByUser(ctx, s.DB.R, u.ID)
	if err != nil || p == nil {
		return []RunnerOffer{}, err
	}
	return offersWhere(ctx, s.DB.R, "seller_id = $1", p.ID)
}

// ownOffer is an offer the person sells (another's answers like an
// unknown one).
func ownOffer(ctx context.Context, q db.Queryer, u *actor.User, id string) (*RunnerOffer, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("runner offer")
	}
	o, err := offerByID(ctx, q, id)
	if err != nil {
		return nil, err
	}
	p, err := profileByUser(ctx, q, u.ID)
	if err != nil {
		return nil, err
	}
	if p == nil || o.SellerID != p.ID {
		return nil, apperr.NotFound("runner offer")
	}
	return o, nil
}

// Offer reads an offer (its seller only).
func (s *Service) Offer(ctx context.Context, u *actor.User, id string) (*RunnerOffer, error) {
	return ownOffer(ctx, s.DB.R, u, id)
}

// PatchOffer changes an offer's name, description or price (its seller).
func (s *Service) PatchOffer(ctx context.Context, u *actor.User, id string, in OfferPatch) (*RunnerOffer, error) {
	var out *RunnerOffer
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		o, err := ownOffer(ctx, tx, u, id)
		if err != nil {
			return err
		}
		before := *o
		next := OfferInput{Name: o.Name, Description: o.Description, PriceMinuteMinor: o.PriceMinuteMinor, Currency: o.Currency}
		if in.Name != nil {
			next.Name = *in.Name
		}
		if in.Description != nil {
			next.Description = *in.Description
		}
		if in.PriceMinuteMinor != nil {
			next.PriceMinuteMinor = *in.PriceMinuteMinor
		}
		if err := checkOffer(&next, o.Name); err != nil {
			return err
		}
		o.Name, o.Description, o.PriceMinuteMinor, o.UpdatedAt = next.Name, next.Description, next.PriceMinuteMinor, s.Clock.Now()
		if err := saveOffer(ctx, tx, o, false); err != nil {
			return err
		}
		out = o
		return audit.Record(ctx, tx, o.UpdatedAt, u.ID, "marketplace.runner_offer.update", "runner_offer", o.ID, before, o)
	})
	return out, err
}

// ActivateOffer makes a withdrawn offer active again: its seller only,
// anyone else's is refused (403).
func (s *Service) ActivateOffer(ctx context.Context, u *actor.User, id string) (*RunnerOffer, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("runner offer")
	}
	var out *RunnerOffer
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		o, err := offerByID(ctx, tx, id)
		if err != nil {
			return err
		}
		p, err := profileByUser(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		if p == nil || o.SellerID != p.ID {
			return apperr.New(apperr.CodeForbidden, "the runner offer is another seller's")
		}
		out = o
		if o.ActivationStatus == OfferActive {
			return nil
		}
		before := *o
		o.ActivationStatus, o.UpdatedAt = OfferActive, s.Clock.Now()
		if err := saveOffer(ctx, tx, o, false); err != nil {
			return err
		}
		return audit.Record(ctx, tx, o.UpdatedAt, u.ID, "marketplace.runner_offer.activate", "runner_offer", o.ID, before, o)
	})
	return out, err
}
