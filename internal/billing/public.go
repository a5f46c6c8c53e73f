package billing

import "context"

// PublicPlan is a plan as anyone may see it on the public plans page: no
// entitlements beyond the included seats, nothing an admin keeps to the
// owner console.
type PublicPlan struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	AmountCents   int64  `json:"amount_cents" doc:"The price in minor units of the currency"`
	Currency      string `json:"currency" enum:"EUR,USD,GBP"`
	Interval      string `json:"interval" enum:"month,year,one_time,custom"`
	IncludedSeats Value  `json:"included_seats" doc:"The plan's users.max: a whole number or \"unlimited\""`
}

// PublicPlans lists the active, public plans, cheapest first: the public
// plans page, and the owner console's seo tab counts them.
func (s *Service) PublicPlans(ctx context.Context) ([]PublicPlan, error) {
	return listPublicPlans(ctx, s.db.R)
}
