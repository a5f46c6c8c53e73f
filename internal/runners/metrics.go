package runners

import (
	"context"
	"fmt"
)

// CountByStatus counts the runners of every organization by the status
// their views show (disabled and draining win over online and offline),
// for /metrics. Every status is present, zero or not.
func (s *Service) CountByStatus(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.R.QueryContext(ctx, `SELECT CASE WHEN disabled THEN 'disabled' WHEN draining THEN 'draining'
		WHEN online AND last_heartbeat_at >= $1 THEN 'online' ELSE 'offline' END, COUNT(*) FROM runners GROUP BY 1`,
		s.clock.Now().Add(-s.cfg.Stale))
	if err != nil {
		return nil, fmt.Errorf("runners: count: %w", err)
	}
	defer rows.Close()
	out := map[string]int{StatusOnline: 0, StatusOffline: 0, StatusDraining: 0, StatusDisabled: 0}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("runners: count: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}
