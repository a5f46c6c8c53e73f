package workflows

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// graphVersion returns the id of the workflow's version of graph (its JSON
// encoding), storing it in tx when the workflow has none yet. Concurrent
// starts of a new graph store it once: the losers of the insert find the
// winner's row (on PostgreSQL the insert waits for the winner's commit).
func graphVersion(ctx context.Context, tx *db.Tx, workspaceID, workflowID string, graph []byte, now time.Time) (string, error) {
	hash := graphHash(graph)
	find := func() (string, error) {
		var id string
		err := tx.QueryRowContext(ctx, "SELECT id FROM workflow_graphs WHERE workspace_id = $1 AND workflow_id = $2 AND hash = $3",
			workspaceID, workflowID, hash).Scan(&id)
		return id, err
	}
	id, err := find()
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("workflows: graph version: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO workflow_graphs (id, workspace_id, workflow_id, hash, graph, created_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (workflow_id, hash) DO NOTHING`, ids.New(), workspaceID, workflowID, hash, graph, now)
	if err != nil {
		return "", fmt.Errorf("workflows: store graph version: %w", err)
	}
	if id, err = find(); err != nil {
		return "", fmt.Errorf("workflows: graph version: %w", err)
	}
	return id, nil
}

// readGraph reads the version a run started with.
func readGraph(ctx context.Context, q db.Queryer, r *runRow) ([]byte, error) {
	var raw []byte
	err := q.QueryRowContext(ctx, "SELECT graph FROM workflow_graphs WHERE workspace_id = $1 AND id = $2", r.WorkspaceID, r.GraphID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("workflows: graph version %s of run %s is missing", r.GraphID, r.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("workflows: graph of run %s: %w", r.ID, err)
	}
	return raw, nil
}
