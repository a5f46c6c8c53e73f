package tasks

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/board"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/runs"
)

// Get reads a task of the active workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	return getTask(ctx, s.db.R, ws.ID, id)
}

// GetIn reads a task of a workspace through q (a reaction's transaction).
func (s *Service) GetIn(ctx context.Context, q db.Queryer, workspaceID, id string) (*Task, error) {
	return getTask(ctx, q, workspaceID, id)
}

// searchable narrows w to tasks whose title or prompt contains q.
func (s *Service) searchable(w db.Where, q string) (db.Where, error) {
	if q == "" {
		return w, nil
	}
	if err := text.CheckName("q", q); err != nil {
		return w, err
	}
	pat := "%" + db.EscapeLike(q) + "%"
	return w.And("("+s.db.Dialect.ILike("title", "?")+" OR "+s.db.Dialect.ILike("prompt", "?")+")", pat, pat), nil
}

// List returns a page of the active workspace's tasks, newest first, and
// their total: encoded once and served from memory while no task of the
// workspace changes (listCache).
func (s *Service) List(ctx context.Context, ws *actor.Workspace, f ListFilter) (TaskList, error) {
	k := keyOf(ws.ID, f)
	version, err := taskVersion(ctx, s.db, ws.ID)
	if err != nil {
		return TaskList{}, err
	}
	if page, ok := s.lists.get(k, version); ok {
		return TaskList{encoded: page}, nil
	}
	ts, total, err := s.list(ctx, ws, f)
	if err != nil {
		return TaskList{}, err
	}
	l := TaskList{Tasks: ts, Total: total}
	page, err := l.AppendJSON(nil)
	if err != nil {
		return TaskList{}, err
	}
	s.lists.put(k, version, page)
	return TaskList{encoded: page}, nil
}

// list reads a page of the workspace's tasks and their total.
func (s *Service) list(ctx context.Context, ws *actor.Workspace, f ListFilter) ([]Task, int, error) {
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if f.Status != "" {
		w = w.And("status = ?", f.Status)
	}
	if f.ProjectID != "" {
		w = w.And("project_id = ?", f.ProjectID)
	}
	w, err := s.searchable(w, f.Q)
	if err != nil {
		return nil, 0, err
	}
	return listTasks(ctx, s.db, w, "created_at DESC, id DESC", f.Limit, f.Offset)
}

// TaskName is a task in a picker.
type TaskName struct {
	ID     string `json:"id" format:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// Names returns the newest tasks' titles, for pickers.
func (s *Service) Names(ctx context.Context, ws *actor.Workspace, limit int) ([]TaskName, error) {
	rows, _, err := listTasks(ctx, s.db, db.NewWhere("workspace_id = ?", ws.ID), "created_at DESC, id DESC", limit, 0)
	if err != nil {
		return nil, err
	}
	out := make([]TaskName, 0, len(rows))
	for _, t := range rows {
		out = append(out, TaskName{ID: t.ID, Title: t.Title, Status: t.Status})
	}
	return out, nil
}

// BoardInput filters the tasks board.
type BoardInput struct {
	board.Query
	Status    string `query:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	ProjectID string `query:"project_id" format:"uuid"`
}

// Board returns a page of tasks with status and project facets.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*board.Board[Task], error) {
	defOrder := "desc" // newest first
	if in.Sort == "title" || in.Sort == "status" {
		defOrder = "asc" // text reads A to Z
	}
	orderBy, err := in.OrderBy(taskSort, "created_at", defOrder, "id")
	if err != nil {
		return nil, err
	}
	w, err := s.searchable(db.NewWhere("workspace_id = ?", ws.ID), in.Q)
	if err != nil {
		return nil, err
	}
	byProject := w
	if in.Status != "" {
		byProject = byProject.And("status = ?", in.Status)
	}
	byStatus := w
	if in.ProjectID != "" {
		byStatus = byStatus.And("project_id = ?", in.ProjectID)
	}
	statusCounts, err := db.CountBy(ctx, s.db.R, "tasks", "status", byStatus)
	if err != nil {
		return nil, err
	}
	projectCounts, err := db.CountBy(ctx, s.db.R, "tasks", "project_id", byProject)
	if err != nil {
		return nil, err
	}
	rowsW := byStatus
	if in.Status != "" {
		rowsW = rowsW.And("status = ?", in.Status)
	}
	// One unit per group: its oldest task among those the filters keep
	// stands for it (the subquery reuses the clause's own parameters).
	rowsW = rowsW.And("(group_id IS NULL OR id IN (SELECT MIN(id) FROM tasks WHERE " + rowsW.SQL + " AND group_id IS NOT NULL GROUP BY group_id))")
	rows, total, err := listTasks(ctx, s.db, rowsW, orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	facets := map[string][]board.Facet{"status": {}, "project": {}}
	for _, st := range Statuses {
		facets["status"] = append(facets["status"], board.Facet{Value: st, Label: statusLabels[st], Count: statusCounts[st]})
	}
	if len(projectCounts) > 0 {
		names := map[string]string{}
		ps, err := s.projects.List(ctx, ws)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			names[p.ID] = p.Name
		}
		for pid, n := range projectCounts {
			facets["project"] = append(facets["project"], board.Facet{Value: pid, Label: names[pid], Count: n})
		}
		slices.SortFunc(facets["project"], func(a, b board.Facet) int {
			return cmp.Or(strings.Compare(a.Label, b.Label), strings.Compare(a.Value, b.Value))
		})
	}
	return board.New(in.Query, rows, total, facets), nil
}

// Events pages through a task's event log after a sequence number.
func (s *Service) Events(ctx context.Context, ws *actor.Workspace, id string, after int32, limit int) ([]runs.TaskEvent, error) {
	if _, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	}
	return s.runs.LogEvents(ctx, id, after, limit)
}
