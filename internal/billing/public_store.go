package billing

import (
	"context"
	"fmt"

	"slipway/internal/platform/db"
)

// listPublicPlans reads the active, public plans, cheapest first (the
// admin's order, then the id, between equal prices).
func listPublicPlans(ctx context.Context, q db.Queryer) ([]PublicPlan, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+planColumns+" FROM plans WHERE active AND public ORDER BY amount_cents, sort_order, id")
	if err != nil {
		return nil, fmt.Errorf("billing: public plans: %w", err)
	}
	defer rows.Close()
	out := []PublicPlan{}
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, fmt.Errorf("billing: public plans: %w", err)
		}
		out = append(out, PublicPlan{ID: p.ID, Name: p.Name, AmountCents: p.AmountCents, Currency: p.Currency,
			Interval: p.Interval, IncludedSeats: p.IncludedSeats})
	}
	return out, rows.Err()
}
