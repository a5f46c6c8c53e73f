package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/httpx"
	"slipway/internal/platform/ids"
	"slipway/internal/projects"
)

// Projects is what tasks need from projects.
type Projects interface {
	Get(ctx context.Context, ws *actor.Workspace, id string) (*projects.Project, error)
	List(ctx context.Context, ws *actor.Workspace) ([]projects.Project, error)
	Repository(ctx context.Context, workspaceID, id string) (*projects.Repository, error)
	ProfileByName(ctx context.Context, workspaceID, name string) (*projects.ResolvedProfile, error)
}

// Service implements tasks, runs and events.
type Service struct {
	db       *db.DB
	clock    clock.Clock
	projects Projects
	// wake nudges the dispatcher when work was queued.
	wake func()
	// kill stops a task running in this process, if it runs here.
	kill    func(taskID string)
	hubMode bool
}

// NewService builds the tasks service. The dispatcher, when there is one,
// connects itself with SetDispatcher.
func NewService(d *db.DB, clk clock.Clock, p Projects, hubMode bool) *Service {
	return &Service{db: d, clock: clk, projects: p, wake: func() {}, kill: func(string) {}, hubMode: hubMode}
}

// TaskCreate is a new task.
type TaskCreate struct {
	ProjectID    string     `json:"project_id" format:"uuid"`
	Prompt       string     `json:"prompt" maxLength:"100000"`
	Title        string     `json:"title,omitempty" maxLength:"200" doc:"Default: the prompt's first line"`
	AgentProfile string     `json:"agent_profile,omitempty" maxLength:"100" doc:"A profile name of the workspace; default: shell"`
	Config       TaskConfig `json:"config,omitempty"`
	Hold         bool       `json:"hold,omitempty" doc:"Create it queued but held; POST …/launch releases it"`
}

func titleFrom(prompt string) string {
	line := strings.TrimSpace(strings.SplitN(strings.TrimSpace(prompt), "\n", 2)[0])
	if utf8.RuneCountInString(line) > 80 {
		line = string([]rune(line)[:79]) + "…"
	}
	if line == "" {
		line = "Untitled task"
	}
	return line
}

func cleanTitle(raw string) (string, error) {
	t := strings.TrimSpace(raw)
	if t == "" {
		return "", apperr.BadRequest("title must not be empty")
	}
	if utf8.RuneCountInString(t) > 200 {
		return "", apperr.BadRequest("title is too long: at most 200 characters")
	}
	return t, nil
}

func validConfig(c TaskConfig) error {
	if c.Runner != nil {
		for _, l := range c.Runner.RequiredLabels {
			if l == "" || len(l) > 64 || strings.ContainsAny(l, " ,\t\n") {
				return apperr.BadRequest("config.runner.required_labels: %q is not a label", l)
			}
		}
	}
	return nil
}

// Create queues a task on a project of the active workspace.
func (s *Service) Create(ctx context.Context, ws *actor.Workspace, u *actor.User, in TaskCreate) (*Task, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, apperr.BadRequest("prompt must not be empty")
	}
	if !ids.Valid(in.ProjectID) {
		return nil, apperr.BadRequest("project_id must be a project id")
	}
	p, err := s.projects.Get(ctx, ws, in.ProjectID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.BadRequest("project_id: no such project in this workspace")
	} else if err != nil {
		return nil, err
	}
	if p.ArchivedAt != nil {
		return nil, apperr.New(apperr.CodeConflict, "the project is archived; restore it to add tasks")
	}
	title := titleFrom(in.Prompt)
	if in.Title != "" {
		if title, err = cleanTitle(in.Title); err != nil {
			return nil, err
		}
	}
	profile := strings.TrimSpace(in.AgentProfile)
	if profile == "" {
		profile = "shell"
	}
	if _, err := s.projects.ProfileByName(ctx, ws.ID, profile); err != nil {
		return nil, err
	}
	if err := validConfig(in.Config); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	id := ids.New()
	var createdBy *string
	if u != nil {
		createdBy = &u.ID
	}
	t := &Task{ID: id, WorkspaceID: ws.ID, ProjectID: p.ID, Title: title, Prompt: in.Prompt, AgentProfile: profile,
		Config: in.Config, Status: StatusQueued, Held: in.Hold, Branch: BranchFor(id), CreatedBy: createdBy,
		CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := insertTask(ctx, tx, t, now); err != nil {
			return err
		}
		return s.event(ctx, tx, t.ID, nil, EventStatus, map[string]any{"to": StatusQueued, "reason": "created", "held": in.Hold})
	})
	if err != nil {
		return nil, err
	}
	if !in.Hold {
		s.wake()
	}
	return t, nil
}

// event appends one lifecycle event inside a transaction.
func (s *Service) event(ctx context.Context, tx *db.Tx, taskID string, runID *string, typ string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	_, err = appendEvents(ctx, s.db, tx, taskID, []pendingEvent{{RunID: runID, Type: typ, Payload: b, At: s.clock.Now()}})
	return err
}

// Get reads a task of the active workspace.
func (s *Service) Get(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	return getTask(ctx, s.db.R, ws.ID, id)
}

// transition moves a task in a transaction after checking the state
// machine, and records the status event; mutate (optional) runs in the same
// transaction before the move.
func (s *Service) transition(ctx context.Context, ws *actor.Workspace, id, to, action, reason string, mutate func(tx *db.Tx, t *Task) error) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	var out *Task
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTask(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if err := checkTransition(t.Status, to, action); err != nil {
			return err
		}
		if mutate != nil {
			if err := mutate(tx, t); err != nil {
				return err
			}
		}
		now := s.clock.Now()
		if ok, err := setStatus(ctx, tx, t.ID, t.Status, to, "", now); err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.CodeConflict, "the task changed while you acted on it; reload it")
		}
		if err := s.event(ctx, tx, t.ID, nil, EventStatus, statusPayload(t.Status, to, reason)); err != nil {
			return err
		}
		out, err = getTask(ctx, tx, ws.ID, id)
		return err
	})
	return out, err
}

// Cancel stops a task: a queued one never starts, a running one's agent is
// killed. Cancelling a finished task is refused.
func (s *Service) Cancel(ctx context.Context, ws *actor.Workspace, id string, u *actor.User) (*Task, error) {
	reason := "cancelled"
	if u != nil {
		reason = "cancelled by user " + u.ID // an id, not an email: every member reads the log
	}
	t, err := s.transition(ctx, ws, id, StatusCancelled, "cancel", reason, nil)
	if err != nil {
		return nil, err
	}
	s.kill(t.ID)
	return t, nil
}

// Launch releases a held task into the queue.
func (s *Service) Launch(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	var out *Task
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTask(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if t.Status != StatusQueued || !t.Held {
			return apperr.New(apperr.CodeConflict, "only a held, queued task can be launched (this one is %s%s)", t.Status, map[bool]string{true: ", held", false: ""}[t.Held])
		}
		now := s.clock.Now()
		if err := updateTaskFields(ctx, tx, ws.ID, id, map[string]any{"held": false, "queued_at": now}, now); err != nil {
			return err
		}
		if err := s.event(ctx, tx, id, nil, EventStatus, map[string]any{"from": StatusQueued, "to": StatusQueued, "reason": "launched"}); err != nil {
			return err
		}
		out, err = getTask(ctx, tx, ws.ID, id)
		return err
	})
	if err == nil {
		s.wake()
	}
	return out, err
}

// Restart queues a finished task again; the new run continues on its branch.
func (s *Service) Restart(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	t, err := s.transition(ctx, ws, id, StatusQueued, "restart", "restarted", func(tx *db.Tx, t *Task) error {
		return updateTaskFields(ctx, tx, ws.ID, t.ID, map[string]any{"held": false, "pr": nil}, s.clock.Now())
	})
	if err == nil {
		s.wake()
	}
	return t, err
}

// Rerun creates a new task with the same project, prompt, profile and
// configuration, and queues it.
func (s *Service) Rerun(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Task, error) {
	t, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	return s.Create(ctx, ws, u, TaskCreate{ProjectID: t.ProjectID, Prompt: t.Prompt, Title: t.Title, AgentProfile: t.AgentProfile, Config: t.Config})
}

// ErrNothingToPropose refuses a pull request for a task without changes.
var ErrNothingToPropose = apperr.New(apperr.CodeConflict, "the task changed nothing, so there is nothing to propose")

// OpenPR opens the pull request of a task that finished with changes but
// without an automatic pull request (the project's autodev is off).
func (s *Service) OpenPR(ctx context.Context, ws *actor.Workspace, id string) (*Task, error) {
	return s.transition(ctx, ws, id, StatusDonePR, "open a pull request for", "pull request opened", func(tx *db.Tx, t *Task) error {
		if t.PR == nil || t.PR.Commit == "" {
			return ErrNothingToPropose
		}
		now := s.clock.Now()
		pr := *t.PR
		pr.OpenedAt = &now
		b, err := json.Marshal(pr)
		if err != nil {
			return err
		}
		if err := updateTaskFields(ctx, tx, ws.ID, t.ID, map[string]any{"pr": string(b)}, now); err != nil {
			return err
		}
		return s.event(ctx, tx, t.ID, nil, EventPR, pr)
	})
}

// Delete removes a task that is not running, with its runs and events.
func (s *Service) Delete(ctx context.Context, ws *actor.Workspace, id string) error {
	if !ids.Valid(id) {
		return apperr.NotFound("task")
	}
	return s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTask(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		if Active(t.Status) {
			return apperr.New(apperr.CodeConflict, "the task is %s; cancel it first", t.Status)
		}
		return deleteTask(ctx, tx, ws.ID, id)
	})
}

// SetConfig replaces the configuration of a task that has not started.
func (s *Service) SetConfig(ctx context.Context, ws *actor.Workspace, id string, c TaskConfig) (*Task, error) {
	if err := validConfig(c); err != nil {
		return nil, err
	}
	return s.update(ctx, ws, id, func(t *Task) (map[string]any, error) {
		if t.Status != StatusQueued {
			return nil, apperr.New(apperr.CodeConflict, "the configuration can only change while the task is queued (it is %s)", t.Status)
		}
		cfg, err := jsonText(c)
		return map[string]any{"config": cfg}, err
	})
}

// SetNotes replaces the task's notes.
func (s *Service) SetNotes(ctx context.Context, ws *actor.Workspace, id, notes string) (*Task, error) {
	return s.update(ctx, ws, id, func(*Task) (map[string]any, error) { return map[string]any{"notes": notes}, nil })
}

// Rename sets the title and returns the stored one.
func (s *Service) Rename(ctx context.Context, ws *actor.Workspace, id, title string) (string, error) {
	clean, err := cleanTitle(title)
	if err != nil {
		return "", err
	}
	t, err := s.update(ctx, ws, id, func(*Task) (map[string]any, error) { return map[string]any{"title": clean}, nil })
	if err != nil {
		return "", err
	}
	return t.Title, nil
}

func (s *Service) update(ctx context.Context, ws *actor.Workspace, id string, fn func(t *Task) (map[string]any, error)) (*Task, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("task")
	}
	var out *Task
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, err := getTask(ctx, tx, ws.ID, id)
		if err != nil {
			return err
		}
		set, err := fn(t)
		if err != nil {
			return err
		}
		if err := updateTaskFields(ctx, tx, ws.ID, id, set, s.clock.Now()); err != nil {
			return err
		}
		out, err = getTask(ctx, tx, ws.ID, id)
		return err
	})
	return out, err
}

// List returns tasks of the active workspace, newest first.
func (s *Service) List(ctx context.Context, ws *actor.Workspace, f ListFilter) ([]Task, int, error) {
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if f.Status != "" {
		w = w.And("status = ?", f.Status)
	}
	if f.ProjectID != "" {
		w = w.And("project_id = ?", f.ProjectID)
	}
	if f.Q != "" {
		pat := "%" + db.EscapeLike(f.Q) + "%"
		w = w.And("("+s.db.Dialect.ILike("title", "?")+" OR "+s.db.Dialect.ILike("prompt", "?")+")", pat, pat)
	}
	return listTasks(ctx, s.db.R, w, "created_at DESC, id DESC", f.Limit, f.Offset)
}

// TaskName is a task in a picker.
type TaskName struct {
	ID     string `json:"id" format:"uuid"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// Names returns the newest tasks' titles, for pickers.
func (s *Service) Names(ctx context.Context, ws *actor.Workspace, limit int) ([]TaskName, error) {
	rows, _, err := listTasks(ctx, s.db.R, db.NewWhere("workspace_id = ?", ws.ID), "created_at DESC, id DESC", limit, 0)
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
	httpx.BoardQuery
	Status    string `query:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	ProjectID string `query:"project_id" format:"uuid"`
}

var taskSort = map[string]string{"created_at": "created_at", "updated_at": "updated_at", "title": "title", "status": "status"}

var statusLabels = map[string]string{
	StatusQueued: "Queued", StatusRunning: "Running", StatusNeedsInput: "Needs input", StatusDone: "Done",
	StatusDonePR: "Done (PR)", StatusFailed: "Failed", StatusCancelled: "Cancelled",
}

// Board returns a page of tasks with status and project facets.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, in BoardInput) (*httpx.Board[Task], error) {
	defOrder := "desc" // newest first
	if in.Sort == "title" || in.Sort == "status" {
		defOrder = "asc" // text reads A to Z
	}
	orderBy, err := in.OrderBy(taskSort, "created_at", defOrder, "id")
	if err != nil {
		return nil, err
	}
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if in.Q != "" {
		pat := "%" + db.EscapeLike(in.Q) + "%"
		w = w.And("("+s.db.Dialect.ILike("title", "?")+" OR "+s.db.Dialect.ILike("prompt", "?")+")", pat, pat)
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
	rows, total, err := listTasks(ctx, s.db.R, rowsW, orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	facets := map[string][]httpx.Facet{"status": {}, "project": {}}
	for _, st := range Statuses {
		facets["status"] = append(facets["status"], httpx.Facet{Value: st, Label: statusLabels[st], Count: statusCounts[st]})
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
			facets["project"] = append(facets["project"], httpx.Facet{Value: pid, Label: names[pid], Count: n})
		}
		slices.SortFunc(facets["project"], func(a, b httpx.Facet) int {
			return cmp.Or(strings.Compare(a.Label, b.Label), strings.Compare(a.Value, b.Value))
		})
	}
	return &httpx.Board[Task]{Rows: rows, Total: total, Page: in.Page, PageSize: in.PageSize, Facets: facets}, nil
}

// RunnerLine is the spec's runner match line.
type RunnerLine struct {
	InGroup    bool   `json:"in_group" doc:"A worker-group required-label set applies"`
	MatchCount int    `json:"match_count" doc:"Eligible runners; 0 in the local and waiting states"`
	State      string `json:"state" enum:"matched,local,waiting"`
}

// RunnerLine says where a task would run. Remote runners come later: with
// hub mode off every task runs on the server (local); with hub mode on and
// no runners enrolled yet, a task waits.
func (s *Service) RunnerLine(ctx context.Context, ws *actor.Workspace, id string) (*RunnerLine, error) {
	t, err := s.Get(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	line := &RunnerLine{State: "local"}
	line.InGroup = t.Config.Runner != nil && len(t.Config.Runner.RequiredLabels) > 0
	if s.hubMode {
		line.State = "waiting"
	}
	return line, nil
}

// Events pages through a task's event log after a sequence number.
func (s *Service) Events(ctx context.Context, ws *actor.Workspace, id string, after int32, limit int) ([]TaskEvent, error) {
	if _, err := s.Get(ctx, ws, id); err != nil {
		return nil, err
	}
	return listEvents(ctx, s.db.R, "task_id", id, after, limit)
}

// RunFilter narrows GET /api/runs.
type RunFilter struct {
	Status          string `query:"status" enum:"running,succeeded,failed,cancelled"`
	Kind            string `query:"kind" enum:"task"`
	ProjectID       string `query:"project_id" format:"uuid"`
	TaskID          string `query:"task_id" format:"uuid"`
	IncludeChildren bool   `query:"include_children"`
	Limit           int    `query:"limit" minimum:"1" maximum:"500" default:"100"`
	Offset          int    `query:"offset" minimum:"0" default:"0"`
}

func (s *Service) runWhere(ws *actor.Workspace, f RunFilter) db.Where {
	w := db.NewWhere("workspace_id = ?", ws.ID)
	if f.Status != "" {
		w = w.And("status = ?", f.Status)
	}
	if f.Kind != "" {
		w = w.And("kind = ?", f.Kind)
	}
	if f.ProjectID != "" {
		w = w.And("project_id = ?", f.ProjectID)
	}
	if f.TaskID != "" {
		w = w.And("task_id = ?", f.TaskID)
	}
	if !f.IncludeChildren {
		w = w.And("parent_run_id IS NULL")
	}
	return w
}

// Runs lists runs newest first; top-level only unless asked for children.
func (s *Service) Runs(ctx context.Context, ws *actor.Workspace, f RunFilter) ([]Run, int, error) {
	return listRuns(ctx, s.db.R, s.runWhere(ws, f), "created_at DESC, id DESC", f.Limit, f.Offset)
}

// RunBoardInput filters the runs board.
type RunBoardInput struct {
	httpx.BoardQuery
	Status    string `query:"status" enum:"running,succeeded,failed,cancelled"`
	Kind      string `query:"kind" enum:"task"`
	ProjectID string `query:"project_id" format:"uuid"`
}

// RunBoard returns a page of top-level runs with status and kind facets.
func (s *Service) RunBoard(ctx context.Context, ws *actor.Workspace, in RunBoardInput) (*httpx.Board[Run], error) {
	orderBy, err := in.OrderBy(map[string]string{"created_at": "created_at"}, "created_at", "desc", "id")
	if err != nil {
		return nil, err
	}
	if in.Q != "" {
		return nil, apperr.BadRequest("q: the runs board has no text to search; filter by status, kind or project_id")
	}
	base := s.runWhere(ws, RunFilter{ProjectID: in.ProjectID})
	statusW, kindW := base, base
	if in.Kind != "" {
		statusW = statusW.And("kind = ?", in.Kind)
	}
	if in.Status != "" {
		kindW = kindW.And("status = ?", in.Status)
	}
	statuses, err := db.CountBy(ctx, s.db.R, "runs", "status", statusW)
	if err != nil {
		return nil, err
	}
	kinds, err := db.CountBy(ctx, s.db.R, "runs", "kind", kindW)
	if err != nil {
		return nil, err
	}
	rows, total, err := listRuns(ctx, s.db.R, s.runWhere(ws, RunFilter{Status: in.Status, Kind: in.Kind, ProjectID: in.ProjectID}), orderBy, in.PageSize, in.Offset())
	if err != nil {
		return nil, err
	}
	facets := map[string][]httpx.Facet{"status": {}, "kind": {{Value: "task", Label: "Task", Count: kinds["task"]}}}
	for _, st := range []string{RunRunning, RunSucceeded, RunFailed, RunCancelled} {
		facets["status"] = append(facets["status"], httpx.Facet{Value: st, Label: strings.ToUpper(st[:1]) + st[1:], Count: statuses[st]})
	}
	return &httpx.Board[Run]{Rows: rows, Total: total, Page: in.Page, PageSize: in.PageSize, Facets: facets}, nil
}

// RunTree returns a run with its descendants.
func (s *Service) RunTree(ctx context.Context, ws *actor.Workspace, id string) (*RunTree, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("run")
	}
	r, err := getRun(ctx, s.db.R, ws.ID, id)
	if err != nil {
		return nil, err
	}
	return s.tree(ctx, ws.ID, *r, 0)
}

func (s *Service) tree(ctx context.Context, workspaceID string, r Run, depth int) (*RunTree, error) {
	t := &RunTree{Run: r, Children: []RunTree{}}
	if depth > 20 {
		return t, nil
	}
	kids, err := childRuns(ctx, s.db.R, workspaceID, r.ID)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		sub, err := s.tree(ctx, workspaceID, k, depth+1)
		if err != nil {
			return nil, err
		}
		t.Children = append(t.Children, *sub)
	}
	return t, nil
}

// RunEvents pages through one run's events in sequence order.
func (s *Service) RunEvents(ctx context.Context, ws *actor.Workspace, id string, after int32, limit int) ([]TaskEvent, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("run")
	}
	if _, err := getRun(ctx, s.db.R, ws.ID, id); err != nil {
		return nil, err
	}
	return listEvents(ctx, s.db.R, "run_id", id, after, limit)
}
