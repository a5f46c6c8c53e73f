package projects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// forgeProjects maps the repositories imported through a forge resource
// to their projects.
func forgeProjects(ctx context.Context, q db.Queryer, workspaceID, resourceID string) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT forge_repo, id FROM projects WHERE workspace_id = $1 AND forge_resource_id = $2 AND forge_repo IS NOT NULL",
		workspaceID, resourceID)
	if err != nil {
		return nil, fmt.Errorf("projects: forge projects: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var repo, id string
		if err := rows.Scan(&repo, &id); err != nil {
			return nil, err
		}
		out[repo] = id
	}
	return out, rows.Err()
}

func nameTaken(ctx context.Context, q db.Queryer, workspaceID, name string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM projects WHERE workspace_id = $1 AND name = $2", workspaceID, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func insertAutomation(ctx context.Context, q db.Queryer, workspaceID, projectID, userID string, a *Automation, tokenHash, sealedSecret string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO project_automations (id, workspace_id, project_id, kind, forge, forge_hook_id, token_hash, secret,
		created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		a.ID, workspaceID, projectID, a.Kind, a.Provider, a.ForgeHookID, tokenHash, sealedSecret, db.Null(userID), a.CreatedAt)
	return err
}

func automationsOf(ctx context.Context, q db.Queryer, workspaceID, projectID string) ([]Automation, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, kind, forge, forge_hook_id, created_at, last_delivery_at FROM project_automations
		WHERE workspace_id = $1 AND project_id = $2 ORDER BY created_at, id`, workspaceID, projectID)
	if err != nil {
		return nil, fmt.Errorf("projects: automations: %w", err)
	}
	defer rows.Close()
	out := []Automation{}
	for rows.Next() {
		var a Automation
		if err := rows.Scan(&a.ID, &a.Kind, &a.Provider, &a.ForgeHookID, db.UTC(&a.CreatedAt), db.NullUTC(&a.LastDeliveryAt)); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// hookRow is an automation as a delivery finds it.
type hookRow struct {
	Automation
	workspaceID, projectID, repo, sealedSecret string
}

// automationByToken finds the automation a delivery's token names, in any
// workspace: the token is the credential (unknown: 404).
func automationByToken(ctx context.Context, q db.Queryer, tokenHash string) (*hookRow, error) {
	var h hookRow
	err := q.QueryRowContext(ctx, `SELECT a.id, a.forge, a.workspace_id, a.project_id, a.secret, COALESCE(p.forge_repo, '')
		FROM project_automations a JOIN projects p ON p.id = a.project_id AND p.workspace_id = a.workspace_id
		WHERE a.token_hash = $1`, tokenHash).Scan(&h.ID, &h.Provider, &h.workspaceID, &h.projectID, &h.sealedSecret, &h.repo)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.NotFound("webhook")
	}
	if err != nil {
		return nil, fmt.Errorf("projects: automation: %w", err)
	}
	return &h, nil
}

// recordDelivery records a delivery once: false when its id was taken
// before.
func recordDelivery(ctx context.Context, q db.Queryer, workspaceID, automationID, delivery, event string, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO forge_deliveries (automation_id, workspace_id, delivery_id, event, received_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (automation_id, delivery_id) DO NOTHING`, automationID, workspaceID, delivery, event, now)
	if err != nil {
		return false, fmt.Errorf("projects: delivery: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	_, err = q.ExecContext(ctx, "UPDATE project_automations SET last_delivery_at = $3 WHERE workspace_id = $1 AND id = $2", workspaceID, automationID, now)
	return true, err
}

// pruneDeliveries forgets delivery ids received before cutoff.
func pruneDeliveries(ctx context.Context, q db.Queryer, cutoff time.Time) (int, error) {
	res, err := q.ExecContext(ctx, "DELETE FROM forge_deliveries WHERE received_at < $1", cutoff)
	if err != nil {
		return 0, fmt.Errorf("projects: prune deliveries: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
