package workflows

import (
	"context"
	"fmt"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/workport"
)

// RunFile is a file a run comes with (an email's attachment): its code
// nodes find it among their files, at Path.
type RunFile struct {
	Path    string
	Content []byte
}

// Bounds on a run's files.
const (
	maxRunFiles     = 50
	maxRunFileBytes = 16 << 20 // together
)

// AddRunFilesTx stores files for a run started in tx.
func (s *Service) AddRunFilesTx(ctx context.Context, tx *db.Tx, ws *actor.Workspace, runID string, files []RunFile) error {
	if len(files) > maxRunFiles {
		return apperr.BadRequest("a run comes with at most %d files", maxRunFiles)
	}
	total := 0
	for _, f := range files {
		total += len(f.Content)
	}
	if total > maxRunFileBytes {
		return apperr.BadRequest("a run's files are at most %d bytes together", maxRunFileBytes)
	}
	for _, f := range files {
		if _, err := tx.ExecContext(ctx, "INSERT INTO workflow_run_files (run_id, workspace_id, path, content) VALUES ($1, $2, $3, $4)",
			runID, ws.ID, f.Path, f.Content); err != nil {
			return fmt.Errorf("workflows: run files: %w", err)
		}
	}
	return nil
}

// runFiles reads the files a run came with.
func runFiles(ctx context.Context, q db.Queryer, workspaceID, runID string) ([]workport.ScriptFile, error) {
	rows, err := q.QueryContext(ctx, "SELECT path, content FROM workflow_run_files WHERE workspace_id = $1 AND run_id = $2 ORDER BY path",
		workspaceID, runID)
	if err != nil {
		return nil, fmt.Errorf("workflows: run files: %w", err)
	}
	defer rows.Close()
	var out []workport.ScriptFile
	for rows.Next() {
		var f workport.ScriptFile
		if err := rows.Scan(&f.Path, &f.Content); err != nil {
			return nil, fmt.Errorf("workflows: run files: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
