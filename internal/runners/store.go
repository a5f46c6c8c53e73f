package runners

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/jobs"
)

// row is a runners row.
type row struct {
	ID             string
	OrganizationID string
	Name           string
	Class          string
	TokenGen       int
	AllowedWS      []string
	AllowedLabels  []string
	Labels         []string
	Disabled       bool
	Draining       bool
	Online         bool
	LastHeartbeat  *time.Time
	Version        string
	Backend        string
	Hostname       string
	Slots          int
	Running        int
	Unhealthy      string // why the backend cannot run work; "" while it can
	CreatedAt      time.Time
}

const runnerColumns = `id, organization_id, name, class, token_gen, allowed_workspace_ids, allowed_labels, labels, disabled, draining, online,
	last_heartbeat_at, version, backend, hostname, slots, running, unhealthy, created_at`

func scanRunner(s interface{ Scan(...any) error }) (*row, error) {
	var r row
	var ws, allowed, labels string
	err := s.Scan(&r.ID, &r.OrganizationID, &r.Name, &r.Class, &r.TokenGen, &ws, &allowed, &labels, &r.Disabled, &r.Draining, &r.Online,
		db.NullUTC(&r.LastHeartbeat), &r.Version, &r.Backend, &r.Hostname, &r.Slots, &r.Running, &r.Unhealthy, db.UTC(&r.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("runner")
	}
	if err != nil {
		return nil, fmt.Errorf("runners: %w", err)
	}
	if err := json.Unmarshal([]byte(ws), &r.AllowedWS); err != nil {
		return nil, fmt.Errorf("runners: allowed_workspace_ids of %s: %w", r.ID, err)
	}
	r.AllowedLabels, r.Labels = strings.Fields(allowed), strings.Fields(labels)
	return &r, nil
}

func jsonList(ids []string) string {
	if len(ids) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

func insertRunner(ctx context.Context, tx *db.Tx, r *row, tokenHash *string, createdBy *string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO runners (id, organization_id, name, class, token_hash, allowed_workspace_ids, allowed_labels,
		created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		r.ID, r.OrganizationID, r.Name, r.Class, tokenHash, jsonList(r.AllowedWS), jobs.EncodeLabels(r.AllowedLabels), createdBy, r.CreatedAt)
	if err != nil {
		return fmt.Errorf("runners: insert: %w", err)
	}
	return nil
}

// getRunner reads a runner of the organization (another organization's is
// not found).
func getRunner(ctx context.Context, q db.Queryer, orgID, id string) (*row, error) {
	return scanRunner(q.QueryRowContext(ctx, "SELECT "+runnerColumns+" FROM runners WHERE id = $1 AND organization_id = $2", id, orgID))
}

func runnerByID(ctx context.Context, q db.Queryer, id string) (*row, error) {
	return scanRunner(q.QueryRowContext(ctx, "SELECT "+runnerColumns+" FROM runners WHERE id = $1", id))
}

func runnerByTokenHash(ctx context.Context, q db.Queryer, hash string) (*row, error) {
	return scanRunner(q.QueryRowContext(ctx, "SELECT "+runnerColumns+" FROM runners WHERE token_hash = $1 AND class = 'static'", hash))
}

func listRunners(ctx context.Context, q db.Queryer, orgID string) ([]*row, error) {
	return queryRunners(ctx, q, "SELECT "+runnerColumns+" FROM runners WHERE organization_id = $1 ORDER BY created_at, id", orgID)
}

func queryRunners(ctx context.Context, q db.Queryer, query string, args ...any) ([]*row, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("runners: %w", err)
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r, err := scanRunner(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("runners: %w", err)
	}
	return out, nil
}

// exec runs one update of a runner of the organization; no row is not found.
func exec(ctx context.Context, q db.Queryer, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("runners: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("runners: %w", err)
	} else if n == 0 {
		return apperr.NotFound("runner")
	}
	return nil
}

// candidates reads the runners that could be eligible for work of a
// workspace: its organization's, online, enabled, undrained, healthy and
// fresh.
func candidates(ctx context.Context, q db.Queryer, workspaceID string, freshSince time.Time) ([]*row, error) {
	return queryRunners(ctx, q, "SELECT "+prefixed("r.", runnerColumns)+` FROM runners r JOIN workspaces w ON w.organization_id = r.organization_id
		WHERE w.id = $1 AND r.online AND NOT r.disabled AND NOT r.draining AND r.unhealthy = '' AND r.last_heartbeat_at >= $2`, workspaceID, freshSince)
}

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// enrollmentRow is a runner_enrollment_tokens row.
type enrollmentRow struct {
	ID             string
	OrganizationID string
	RunnerID       *string
	Name           string
	AllowedWS      []string
	AllowedLabels  []string
	ExpiresAt      time.Time
}

func insertEnrollment(ctx context.Context, tx *db.Tx, e *enrollmentRow, hash string, createdBy *string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO runner_enrollment_tokens (id, organization_id, token_hash, runner_id, name, allowed_workspace_ids,
		allowed_labels, expires_at, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ID, e.OrganizationID, hash, e.RunnerID, e.Name, jsonList(e.AllowedWS), jobs.EncodeLabels(e.AllowedLabels), e.ExpiresAt, createdBy, now)
	if err != nil {
		return fmt.Errorf("runners: insert enrollment token: %w", err)
	}
	return nil
}

// redeem marks an unexpired, unredeemed enrollment token redeemed and
// returns it: one statement, so exactly one of two concurrent redeems wins.
func redeem(ctx context.Context, tx *db.Tx, hash string, now time.Time) (*enrollmentRow, error) {
	var e enrollmentRow
	var ws, labels string
	var runnerID sql.NullString
	err := tx.QueryRowContext(ctx, `UPDATE runner_enrollment_tokens SET redeemed_at = $2
		WHERE token_hash = $1 AND redeemed_at IS NULL AND expires_at > $2
		RETURNING id, organization_id, runner_id, name, allowed_workspace_ids, allowed_labels, expires_at`, hash, now).
		Scan(&e.ID, &e.OrganizationID, &runnerID, &e.Name, &ws, &labels, db.UTC(&e.ExpiresAt))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("runners: redeem: %w", err)
	}
	if runnerID.Valid {
		e.RunnerID = &runnerID.String
	}
	if err := json.Unmarshal([]byte(ws), &e.AllowedWS); err != nil {
		return nil, fmt.Errorf("runners: enrollment token %s: %w", e.ID, err)
	}
	e.AllowedLabels = strings.Fields(labels)
	return &e, nil
}

func countPendingEnrollments(ctx context.Context, q db.Queryer, orgID string, now time.Time) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM runner_enrollment_tokens WHERE organization_id = $1 AND redeemed_at IS NULL AND expires_at > $2`,
		orgID, now).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("runners: enrollment tokens: %w", err)
	}
	return n, nil
}
