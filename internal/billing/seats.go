package billing

import (
	"context"
	"time"

	"slipway/internal/audit"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Orgs resolves the organization a request acts on and the caller's role
// in it (tenancy, handed to Register): an organization the caller is not
// an active member of is not_found.
type Orgs func(ctx context.Context, u *actor.User, sel Selector) (orgID, role string, err error)

// Selector carries the request's choice of organization (X-Organization-Id,
// else the active workspace's).
type Selector struct {
	OrganizationID string
	WorkspaceID    string
}

// SeatType is an add-on an organization's member can be given, priced per
// member and month on top of the plan.
type SeatType struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	AmountCents int64  `json:"amount_cents" doc:"Per member and month, in minor units of the plan's currency"`
}

// SeatLine is one add-on line of the seat summary.
type SeatLine struct {
	SeatType        string `json:"seat_type"`
	Name            string `json:"name"`
	Members         int64  `json:"members"`
	UnitAmountCents int64  `json:"unit_amount_cents"`
	AmountCents     int64  `json:"amount_cents" doc:"Per month"`
}

// SeatSummary is what an organization's seats cost, computed server-side:
// the plan's included seats against its active members, the seats beyond
// them, the add-on lines, and the monthly recurring revenue in all.
type SeatSummary struct {
	OrganizationID     string       `json:"organization_id"`
	PlanID             string       `json:"plan_id"`
	PlanName           string       `json:"plan_name"`
	Currency           string       `json:"currency"`
	Interval           string       `json:"interval"`
	PlanAmountCents    int64        `json:"plan_amount_cents" doc:"The plan's price per its interval"`
	PlanMonthlyCents   int64        `json:"plan_monthly_cents" doc:"The plan's price per month (a year's over 12, rounded to the nearest minor unit; one-time: 0)"`
	IncludedSeats      Value        `json:"included_seats"`
	ActiveMembers      int64        `json:"active_members"`
	SuspendedMembers   int64        `json:"suspended_members" doc:"Suspended members hold no seat"`
	OverageSeats       int64        `json:"overage_seats" doc:"Active members beyond the included seats"`
	OveragePriceCents  int64        `json:"overage_price_cents" doc:"Per seat beyond the included and month"`
	OverageAmountCents int64        `json:"overage_amount_cents"`
	AddOns             []SeatLine   `json:"add_ons"`
	Assigned           []MemberSeat `json:"assigned" doc:"The members on a seat type other than the standard seat (suspended ones too)"`
	MRRCents           int64        `json:"mrr_cents" doc:"Monthly recurring revenue: the plan, the overage and the add-ons"`
}

// SeatTypes lists the seat types, cheapest first.
func (s *Service) SeatTypes(ctx context.Context) ([]SeatType, error) {
	return listSeatTypes(ctx, s.db.R)
}

// SeatSummary computes the organization's seats and what they cost.
func (s *Service) SeatSummary(ctx context.Context, orgID string) (*SeatSummary, error) {
	return s.seatSummary(ctx, s.db.R, orgID)
}

func (s *Service) seatSummary(ctx context.Context, q db.Queryer, orgID string) (*SeatSummary, error) {
	planID, err := s.planOf(ctx, q, orgID)
	if err != nil {
		return nil, err
	}
	c, err := s.catalog(ctx, q)
	if err != nil {
		return nil, err
	}
	d := decide(c, planID, Subject{OrganizationID: orgID}, "users.max", s.clock.Now())
	price := decide(c, planID, Subject{OrganizationID: orgID}, "seats.overage_price", s.clock.Now())
	p, ok := c.plans[d.PlanID]
	if !ok {
		p = BillingPlan{ID: d.PlanID, Name: d.PlanID, Currency: "EUR", Interval: "month"}
	}
	out := &SeatSummary{OrganizationID: orgID, PlanID: p.ID, PlanName: p.Name, Currency: p.Currency, Interval: p.Interval,
		PlanAmountCents: p.AmountCents, PlanMonthlyCents: monthly(p.AmountCents, p.Interval), IncludedSeats: d.Value, AddOns: []SeatLine{}}
	counts, err := seatCounts(ctx, q, orgID)
	if err != nil {
		return nil, err
	}
	out.ActiveMembers, out.SuspendedMembers = counts.active, counts.suspended
	if out.Assigned, err = assignedSeats(ctx, q, orgID); err != nil {
		return nil, err
	}
	if n, unlimited, ok := d.Value.Limit(); ok && !unlimited && out.ActiveMembers > n {
		out.OverageSeats = out.ActiveMembers - n
	}
	out.OveragePriceCents, _, _ = price.Value.Limit()
	out.OverageAmountCents = out.OverageSeats * out.OveragePriceCents
	out.MRRCents = out.PlanMonthlyCents + out.OverageAmountCents
	for _, l := range counts.lines {
		l.AmountCents = l.Members * l.UnitAmountCents
		out.AddOns = append(out.AddOns, l)
		out.MRRCents += l.AmountCents
	}
	return out, nil
}

// monthly is a price per month: a year's over 12 rounded to the nearest
// minor unit (half up), one-time none, a month's or a custom price as it is.
func monthly(amount int64, interval string) int64 {
	switch interval {
	case "year":
		return (amount*2 + 12) / 24
	case "one_time":
		return 0
	}
	return amount
}

// SetSeatType gives a member of the organization a seat type, or the
// standard seat with "". The organization's owner or admin (role) may;
// audited.
func (s *Service) SetSeatType(ctx context.Context, u *actor.User, orgID, role, userID, seatType string) (*MemberSeat, error) {
	if role != "owner" && role != "admin" {
		return nil, apperr.New(apperr.CodeForbidden, "only an organization owner or admin may change seats")
	}
	if !ids.Valid(userID) {
		return nil, apperr.NotFound("member")
	}
	var out *MemberSeat
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		before, err := memberSeat(ctx, tx, orgID, userID)
		if err != nil {
			return err
		}
		if seatType != "" {
			ok, err := seatTypeExists(ctx, tx, seatType)
			if err != nil {
				return err
			}
			if !ok {
				return apperr.BadRequest("seat_type: no seat type %q (see GET /organization/seat-types)", seatType)
			}
		}
		now := s.clock.Now()
		if err := setMemberSeat(ctx, tx, orgID, userID, seatType, now); err != nil {
			return err
		}
		after := &MemberSeat{UserID: userID, SeatType: seatType}
		out = after
		return audit.Record(ctx, tx, now, u.ID, "member.seat_type", "member", orgID+"/"+userID, before, after)
	})
	return out, err
}

// MemberSeat is a member's seat type ("" for the standard seat).
type MemberSeat struct {
	UserID   string `json:"user_id"`
	SeatType string `json:"seat_type" doc:"Empty: the standard seat"`
}

// Customer is an organization as the owner console's customers tab shows
// it: its plan, its subscription and its workspaces.
type Customer struct {
	OrganizationID     string              `json:"organization_id"`
	Name               string              `json:"name"`
	CreatedAt          time.Time           `json:"created_at"`
	PlanID             string              `json:"plan_id" doc:"community without a subscription that entitles"`
	SubscriptionStatus string              `json:"subscription_status" doc:"none without a subscription"`
	Provider           string              `json:"provider" doc:"none: assigned by an admin, or no subscription"`
	Workspaces         []CustomerWorkspace `json:"workspaces"`
}

// CustomerWorkspace is one workspace of a customer.
type CustomerWorkspace struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Customers is a page of the customers tab: organizations with their
// workspaces, and the workspaces without organization data in one
// ungrouped bucket.
type Customers struct {
	Organizations []Customer          `json:"organizations"`
	Ungrouped     []CustomerWorkspace `json:"ungrouped" doc:"Workspaces without organization data"`
	Total         int                 `json:"total" doc:"Organizations matching q"`
	Page          int                 `json:"page"`
	PageSize      int                 `json:"page_size"`
}

// CustomerList pages the instance's organizations for the customers tab.
func (s *Service) CustomerList(ctx context.Context, q string, page, pageSize int) (*Customers, error) {
	orgs, total, err := customerPage(ctx, s.db, q, pageSize, (page-1)*pageSize)
	if err != nil {
		return nil, err
	}
	if orgs == nil {
		orgs = []Customer{}
	}
	ungrouped, err := orphanWorkspaces(ctx, s.db.R)
	if err != nil {
		return nil, err
	}
	return &Customers{Organizations: orgs, Ungrouped: ungrouped, Total: total, Page: page, PageSize: pageSize}, nil
}
