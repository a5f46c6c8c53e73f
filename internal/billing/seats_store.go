package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

func listSeatTypes(ctx context.Context, q db.Queryer) ([]SeatType, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, name, description, amount_cents FROM seat_types ORDER BY sort_order, id")
	if err != nil {
		return nil, fmt.Errorf("billing: seat types: %w", err)
	}
	defer rows.Close()
	out := []SeatType{}
	for rows.Next() {
		var t SeatType
		if err := rows.Scan(&t.ID, &t.Name, &t.Description, &t.AmountCents); err != nil {
			return nil, fmt.Errorf("billing: seat types: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func seatTypeExists(ctx context.Context, q db.Queryer, id string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM seat_types WHERE id = $1", id).Scan(&n); err != nil {
		return false, fmt.Errorf("billing: seat type: %w", err)
	}
	return n > 0, nil
}

type seatCount struct {
	active, suspended int64
	lines             []SeatLine
}

// seatCounts counts an organization's active and suspended members and,
// by seat type, the active members on one: two aggregate statements
// whatever the number of members.
func seatCounts(ctx context.Context, q db.Queryer, orgID string) (*seatCount, error) {
	c := &seatCount{}
	err := q.QueryRowContext(ctx, `SELECT COALESCE(SUM(CASE WHEN suspended_at IS NULL THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN suspended_at IS NULL THEN 0 ELSE 1 END), 0)
		FROM organization_members WHERE organization_id = $1`, orgID).Scan(&c.active, &c.suspended)
	if err != nil {
		return nil, fmt.Errorf("billing: seats: %w", err)
	}
	rows, err := q.QueryContext(ctx, `SELECT t.id, t.name, t.amount_cents, COUNT(*) FROM member_seats s JOIN seat_types t ON t.id = s.seat_type
		WHERE s.organization_id = $1 AND NOT EXISTS (SELECT 1 FROM organization_members m
			WHERE m.organization_id = s.organization_id AND m.user_id = s.user_id AND m.suspended_at IS NOT NULL)
		GROUP BY t.id, t.name, t.amount_cents, t.sort_order ORDER BY t.sort_order, t.id`, orgID)
	if err != nil {
		return nil, fmt.Errorf("billing: seats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var l SeatLine
		if err := rows.Scan(&l.SeatType, &l.Name, &l.UnitAmountCents, &l.Members); err != nil {
			return nil, fmt.Errorf("billing: seats: %w", err)
		}
		c.lines = append(c.lines, l)
	}
	return c, rows.Err()
}

// memberSeat is a member's seat ("" for standard); not_found for someone
// who is not a member of the organization.
func memberSeat(ctx context.Context, q db.Queryer, orgID, userID string) (*MemberSeat, error) {
	var seat sql.NullString
	err := q.QueryRowContext(ctx, `SELECT s.seat_type FROM organization_members m
		LEFT JOIN member_seats s ON s.organization_id = m.organization_id AND s.user_id = m.user_id
		WHERE m.organization_id = $1 AND m.user_id = $2`, orgID, userID).Scan(&seat)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("member")
	}
	if err != nil {
		return nil, fmt.Errorf("billing: member seat: %w", err)
	}
	return &MemberSeat{UserID: userID, SeatType: seat.String}, nil
}

func setMemberSeat(ctx context.Context, q db.Queryer, orgID, userID, seatType string, now time.Time) error {
	var err error
	if seatType == "" {
		_, err = q.ExecContext(ctx, "DELETE FROM member_seats WHERE organization_id = $1 AND user_id = $2", orgID, userID)
	} else {
		_, err = q.ExecContext(ctx, `INSERT INTO member_seats (organization_id, user_id, seat_type, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (organization_id, user_id) DO UPDATE SET seat_type = excluded.seat_type, updated_at = excluded.updated_at`,
			orgID, userID, seatType, now)
	}
	if err != nil {
		return fmt.Errorf("billing: member seat: %w", err)
	}
	return nil
}

// customerPage reads a page of organizations (name order) matching q (an
// organization's or one of its workspaces' name) with their plans, the
// total, and the workspaces of the page's organizations.
func customerPage(ctx context.Context, d *db.DB, q string, limit, offset int) ([]Customer, int, error) {
	cond, args := "1 = 1", []any{}
	if q != "" {
		args = append(args, "%"+db.EscapeLike(q)+"%")
		cond = "(" + d.Dialect.ILike("o.name", "$1") + " OR EXISTS (SELECT 1 FROM workspaces w WHERE w.organization_id = o.id AND " +
			d.Dialect.ILike("w.name", "$1") + "))"
	}
	var out []Customer
	var total int
	err := d.ReadTx(ctx, func(rq db.Queryer) error {
		if err := rq.QueryRowContext(ctx, "SELECT COUNT(*) FROM organizations o WHERE "+cond, args...).Scan(&total); err != nil {
			return err
		}
		page := append(args, limit, offset)
		rows, err := rq.QueryContext(ctx, fmt.Sprintf(`SELECT o.id, o.name, o.created_at, s.plan_id, s.status, s.provider FROM organizations o
			LEFT JOIN subscriptions s ON s.organization_id = o.id WHERE %s ORDER BY o.name, o.id LIMIT $%d OFFSET $%d`, cond, len(args)+1, len(args)+2), page...)
		if err != nil {
			return err
		}
		byID := map[string]int{}
		var orgIDs []any
		for rows.Next() {
			var c Customer
			var plan, status, provider sql.NullString
			if err := rows.Scan(&c.OrganizationID, &c.Name, db.UTC(&c.CreatedAt), &plan, &status, &provider); err != nil {
				rows.Close()
				return err
			}
			c.PlanID, c.SubscriptionStatus, c.Provider = CommunityPlan, "none", "none"
			if plan.Valid && (status.String == "active" || status.String == "trialing" || status.String == "past_due") {
				c.PlanID = plan.String
			}
			if status.Valid {
				c.SubscriptionStatus, c.Provider = status.String, provider.String
			}
			c.Workspaces = []CustomerWorkspace{}
			byID[c.OrganizationID] = len(out)
			orgIDs = append(orgIDs, c.OrganizationID)
			out = append(out, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(orgIDs) == 0 {
			return err
		}
		marks := ""
		for i := range orgIDs {
			if i > 0 {
				marks += ", "
			}
			marks += fmt.Sprintf("$%d", i+1)
		}
		ws, err := rq.QueryContext(ctx, "SELECT id, organization_id, name, created_at FROM workspaces WHERE organization_id IN ("+marks+") ORDER BY name, id", orgIDs...)
		if err != nil {
			return err
		}
		defer ws.Close()
		for ws.Next() {
			var w CustomerWorkspace
			var org string
			if err := ws.Scan(&w.ID, &org, &w.Name, db.UTC(&w.CreatedAt)); err != nil {
				return err
			}
			out[byID[org]].Workspaces = append(out[byID[org]].Workspaces, w)
		}
		return ws.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("billing: customers: %w", err)
	}
	return out, total, nil
}

// orphanWorkspaces are workspaces whose organization row is missing (none
// while the foreign key holds; the tab's ungrouped bucket).
func orphanWorkspaces(ctx context.Context, q db.Queryer) ([]CustomerWorkspace, error) {
	rows, err := q.QueryContext(ctx, `SELECT w.id, w.name, w.created_at FROM workspaces w
		WHERE NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = w.organization_id) ORDER BY w.name, w.id LIMIT 1000`)
	if err != nil {
		return nil, fmt.Errorf("billing: customers: %w", err)
	}
	defer rows.Close()
	out := []CustomerWorkspace{}
	for rows.Next() {
		var w CustomerWorkspace
		if err := rows.Scan(&w.ID, &w.Name, db.UTC(&w.CreatedAt)); err != nil {
			return nil, fmt.Errorf("billing: customers: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// assignedSeats lists the organization's members on a seat type.
func assignedSeats(ctx context.Context, q db.Queryer, orgID string) ([]MemberSeat, error) {
	rows, err := q.QueryContext(ctx, "SELECT user_id, seat_type FROM member_seats WHERE organization_id = $1 ORDER BY user_id", orgID)
	if err != nil {
		return nil, fmt.Errorf("billing: seats: %w", err)
	}
	defer rows.Close()
	out := []MemberSeat{}
	for rows.Next() {
		var m MemberSeat
		if err := rows.Scan(&m.UserID, &m.SeatType); err != nil {
			return nil, fmt.Errorf("billing: seats: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}
