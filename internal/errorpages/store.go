package errorpages

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
)

// Every statement on workspace_error_pages names the workspace. A missing
// row is "no page set": the readers answer nil, not an error.

// workspacePage is the workspace's stored page, nil when none is set.
func workspacePage(ctx context.Context, q db.Queryer, workspaceID string) (json.RawMessage, error) {
	var page string
	err := q.QueryRowContext(ctx, "SELECT page FROM workspace_error_pages WHERE workspace_id = $1", workspaceID).Scan(&page)
	return found(page, err, "workspace")
}

// putWorkspacePage stores the workspace's page in place of any other.
func putWorkspacePage(ctx context.Context, q db.Queryer, workspaceID, page, userID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO workspace_error_pages (workspace_id, page, updated_by, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace_id) DO UPDATE SET page = excluded.page, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		workspaceID, page, db.Null(userID), now)
	if err != nil {
		return fmt.Errorf("errorpages: storing the workspace's page: %w", err)
	}
	return nil
}

// deleteWorkspacePage clears the workspace's page.
func deleteWorkspacePage(ctx context.Context, q db.Queryer, workspaceID string) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM workspace_error_pages WHERE workspace_id = $1", workspaceID); err != nil {
		return fmt.Errorf("errorpages: clearing the workspace's page: %w", err)
	}
	return nil
}

// instancePage is the instance default page, nil when none is set.
func instancePage(ctx context.Context, q db.Queryer) (json.RawMessage, error) {
	var page string
	err := q.QueryRowContext(ctx, "SELECT page FROM instance_error_page WHERE id = 1").Scan(&page)
	return found(page, err, "instance")
}

// putInstancePage stores the instance default page in place of any other.
func putInstancePage(ctx context.Context, q db.Queryer, page, userID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO instance_error_page (id, page, updated_by, updated_at) VALUES (1, $1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET page = excluded.page, updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		page, db.Null(userID), now)
	if err != nil {
		return fmt.Errorf("errorpages: storing the instance default page: %w", err)
	}
	return nil
}

// deleteInstancePage clears the instance default page.
func deleteInstancePage(ctx context.Context, q db.Queryer) error {
	if _, err := q.ExecContext(ctx, "DELETE FROM instance_error_page WHERE id = 1"); err != nil {
		return fmt.Errorf("errorpages: clearing the instance default page: %w", err)
	}
	return nil
}

func found(page string, err error, which string) (json.RawMessage, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("errorpages: reading the %s page: %w", which, err)
	}
	return json.RawMessage(page), nil
}
