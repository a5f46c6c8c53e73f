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
	rows, err := q.QueryContext(ctx, `SELECT t.id, t.name, t.amount_cents, COUNT(*) FROM member_seats s
		JOIN organization_members m ON m.organization_id = s.organization_id AND m.user_id = s.user_id AND m.suspended_at IS NULL
		JOIN seat_types t ON t.id = s.seat_type
		WHERE s.organization_id = $1 GROUP BY t.id, t.name, t.amount_cents, t.sort_order ORDER BY t.sort_order, t.id`, orgID)
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
