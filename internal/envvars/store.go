package envvars

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
)

// Every statement names the workspace.

const columns = "id, project_id, key, is_secret, value, secret_ref, locked, created_at"

// order lists globals first, then each project's, each by key (keys sort
// bytewise on both engines: see the migration).
const order = " ORDER BY project_id IS NOT NULL, project_id, key"

func scan(row interface{ Scan(...any) error }) (*EnvVar, error) {
	var v EnvVar
	var project, ref sql.NullString
	if err := row.Scan(&v.ID, &project, &v.Key, &v.IsSecret, &v.Value, &ref, &v.Locked, db.UTC(&v.CreatedAt)); err != nil {
		return nil, err
	}
	if project.Valid {
		v.ProjectID = &project.String
	}
	v.secretRef = ref.String
	return &v, nil
}

var errNotFound = apperr.New(apperr.CodeNotFound, "env var not found")

// byKey reads the env var of a key in a scope: the workspace's global one
// (projectID "") or a project's.
func byKey(ctx context.Context, q db.Queryer, workspaceID, projectID, key, lock string) (*EnvVar, error) {
	var row *sql.Row
	if projectID == "" {
		row = q.QueryRowContext(ctx, "SELECT "+columns+" FROM env_vars WHERE workspace_id = $1 AND project_id IS NULL AND key = $2"+lock,
			workspaceID, key)
	} else {
		row = q.QueryRowContext(ctx, "SELECT "+columns+" FROM env_vars WHERE workspace_id = $1 AND project_id = $2 AND key = $3"+lock,
			workspaceID, projectID, key)
	}
	return found(row)
}

// byID reads one env var.
func byID(ctx context.Context, q db.Queryer, workspaceID, id, lock string) (*EnvVar, error) {
	return found(q.QueryRowContext(ctx, "SELECT "+columns+" FROM env_vars WHERE workspace_id = $1 AND id = $2"+lock, workspaceID, id))
}

func found(row *sql.Row) (*EnvVar, error) {
	v, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("envvars: get: %w", err)
	}
	return v, nil
}

// list reads the workspace's env vars: all of them (projectID ""), or the
// globals and one project's; at most limit.
func list(ctx context.Context, q db.Queryer, workspaceID, projectID string, limit int) ([]EnvVar, error) {
	query := "SELECT " + columns + " FROM env_vars WHERE workspace_id = $1"
	args := []any{workspaceID}
	if projectID != "" {
		query += " AND (project_id IS NULL OR project_id = $2)"
		args = append(args, projectID)
	}
	args = append(args, limit)
	rows, err := q.QueryContext(ctx, query+order+fmt.Sprintf(" LIMIT $%d", len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("envvars: list: %w", err)
	}
	defer rows.Close()
	out := []EnvVar{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("envvars: list: %w", err)
		}
		out = append(out, *v)
	}
	return out, rows.Err()
}

// globals reads the workspace's global env vars (a run outside any
// project), at most limit.
func globals(ctx context.Context, q db.Queryer, workspaceID string, limit int) ([]EnvVar, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+columns+" FROM env_vars WHERE workspace_id = $1 AND project_id IS NULL ORDER BY key LIMIT $2", workspaceID, limit)
	if err != nil {
		return nil, fmt.Errorf("envvars: globals: %w", err)
	}
	defer rows.Close()
	out := []EnvVar{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("envvars: globals: %w", err)
		}
		out = append(out, *v)
	}
	return out, rows.Err()
}

// count is how many env vars the workspace holds.
func count(ctx context.Context, q db.Queryer, workspaceID string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM env_vars WHERE workspace_id = $1", workspaceID).Scan(&n)
	return n, err
}

// projectExists reports whether the project is the workspace's.
func projectExists(ctx context.Context, q db.Queryer, workspaceID, projectID string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM projects WHERE workspace_id = $1 AND id = $2", workspaceID, projectID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("envvars: project: %w", err)
	}
	return n > 0, nil
}

func insert(ctx context.Context, tx *db.Tx, workspaceID, createdBy string, v *EnvVar, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO env_vars (id, workspace_id, project_id, key, is_secret, value, secret_ref, locked, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
		v.ID, workspaceID, v.ProjectID, v.Key, v.IsSecret, v.Value, db.Null(v.secretRef), v.Locked, db.Null(createdBy), now)
	return err
}

func update(ctx context.Context, tx *db.Tx, workspaceID string, v *EnvVar, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE env_vars SET is_secret = $3, value = $4, secret_ref = $5, locked = $6, updated_at = $7
		WHERE workspace_id = $1 AND id = $2`,
		workspaceID, v.ID, v.IsSecret, v.Value, db.Null(v.secretRef), v.Locked, now)
	return err
}

func remove(ctx context.Context, tx *db.Tx, workspaceID, id string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM env_vars WHERE workspace_id = $1 AND id = $2", workspaceID, id)
	return err
}

// claims reports whether an env var of the workspace names the secret.
func claims(ctx context.Context, q db.Queryer, workspaceID, secretRef string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM env_vars WHERE workspace_id = $1 AND secret_ref = $2", workspaceID, secretRef).Scan(&n)
	return n > 0, err
}
