package activity

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"slipway/internal/platform/db"
)

// feed reads the newest items older than (at, id): each arm its newest
// limit through an index led by the workspace (tasks_workspace_created,
// runs_workspace_created, tool_approvals_decided), then the newest limit of
// them all.
func feed(ctx context.Context, q db.Queryer, d db.Dialect, workspaceID string, at time.Time, id string, limit int) ([]FeedItem, error) {
	n := strconv.Itoa(limit)
	rows, err := q.QueryContext(ctx, `SELECT kind, id, at, actor_id, actor_name, title, status, task_id, task_title, project, via FROM (
		SELECT * FROM (SELECT 'task' AS kind, t.id, t.created_at AS at, t.created_by AS actor_id, u.display_name AS actor_name,
				t.title, t.status, '' AS task_id, '' AS task_title, p.name AS project, '' AS via
			FROM tasks t JOIN projects p ON p.workspace_id = $1 AND p.id = t.project_id LEFT JOIN users u ON u.id = t.created_by
			WHERE t.workspace_id = $1 AND (t.created_at < $2 OR (t.created_at = $2 AND t.id < $3))
			ORDER BY t.created_at DESC, t.id DESC LIMIT `+n+`) tasks_arm
		UNION ALL
		SELECT * FROM (SELECT 'workflow_run' AS kind, r.id, r.created_at AS at, wr.created_by AS actor_id, u.display_name AS actor_name,
				w.name AS title, wr.status, '' AS task_id, '' AS task_title, p.name AS project,
				COALESCE(`+d.JSONText("wr.trigger_data", "kind")+`, '') AS via
			FROM runs r JOIN workflow_runs wr ON wr.workspace_id = $1 AND wr.id = r.id JOIN workflows w ON w.workspace_id = $1 AND w.id = wr.workflow_id
			JOIN projects p ON p.workspace_id = $1 AND p.id = wr.project_id LEFT JOIN users u ON u.id = wr.created_by
			WHERE r.workspace_id = $1 AND r.kind = 'workflow' AND (r.created_at < $2 OR (r.created_at = $2 AND r.id < $3))
			ORDER BY r.created_at DESC, r.id DESC LIMIT `+n+`) runs_arm
		UNION ALL
		SELECT * FROM (SELECT 'approval' AS kind, a.id, a.decided_at AS at, a.decided_by AS actor_id, u.display_name AS actor_name,
				a.tool AS title, a.status, t.id AS task_id, t.title AS task_title, p.name AS project, '' AS via
			FROM tool_approvals a JOIN tasks t ON t.workspace_id = $1 AND t.id = a.task_id JOIN projects p ON p.workspace_id = $1 AND p.id = t.project_id
			LEFT JOIN users u ON u.id = a.decided_by
			WHERE a.workspace_id = $1 AND a.status <> 'pending' AND (a.decided_at < $2 OR (a.decided_at = $2 AND a.id < $3))
			ORDER BY a.decided_at DESC, a.id DESC LIMIT `+n+`) approvals_arm
		) feed ORDER BY at DESC, id DESC LIMIT `+n, workspaceID, at, id)
	if err != nil {
		return nil, fmt.Errorf("activity: feed: %w", err)
	}
	defer rows.Close()
	items := []FeedItem{}
	for rows.Next() {
		var it FeedItem
		var actorID, actorName sql.NullString
		if err := rows.Scan(&it.Kind, &it.ID, db.UTC(&it.At), &actorID, &actorName, &it.Title, &it.Status, &it.TaskID, &it.TaskTitle,
			&it.Project, &it.Via); err != nil {
			return nil, fmt.Errorf("activity: feed: %w", err)
		}
		if actorID.Valid {
			it.Actor = &Actor{ID: actorID.String, Name: actorName.String}
		}
		items = append(items, it)
	}
	return items, rows.Err()
}
