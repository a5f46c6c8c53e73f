package tasks

import (
	"context"
	"errors"
	"sort"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
)

// Groups: tasks created together (fan-out work), launched and cancelled as
// one, shown as one unit on the board.

// MaxGroupTasks bounds a group.
const MaxGroupTasks = 50

// GroupCreate is a new group of tasks.
type GroupCreate struct {
	Title  string       `json:"title,omitempty" maxLength:"200" doc:"Default: the first task's title"`
	Tasks  []TaskCreate `json:"tasks" minItems:"1" maxItems:"50" doc:"The tasks (their own hold is ignored: the group's launch decides)"`
	Launch bool         `json:"launch,omitempty" doc:"Queue the tasks at once; default: created held until POST …/launch"`
}

// Group is a group with its tasks.
type Group struct {
	ID          string         `json:"id" format:"uuid"`
	WorkspaceID string         `json:"workspace_id" format:"uuid"`
	Title       string         `json:"title"`
	CreatedBy   *string        `json:"created_by" nullable:"true" format:"uuid"`
	CreatedAt   time.Time      `json:"created_at"`
	Counts      map[string]int `json:"counts" doc:"Tasks by status"`
	Tasks       []Task         `json:"tasks" doc:"Oldest first"`
}

// CreateGroup creates the tasks of a group in one transaction: all or none.
func (s *Service) CreateGroup(ctx context.Context, ws *actor.Workspace, u *actor.User, in GroupCreate) (*Group, error) {
	if len(in.Tasks) == 0 || len(in.Tasks) > MaxGroupTasks {
		return nil, apperr.BadRequest("a group has 1 to %d tasks", MaxGroupTasks)
	}
	g := &Group{ID: ids.New(), WorkspaceID: ws.ID, CreatedBy: &u.ID, CreatedAt: s.clock.Now()}
	var ts []*Task
	for i, tc := range in.Tasks {
		tc.Hold = !in.Launch
		t, err := s.newTask(ctx, ws, &u.ID, tc)
		if err != nil {
			var ae *apperr.Error
			if errors.As(err, &ae) {
				return nil, apperr.New(ae.Code, "tasks[%d]: %s", i, ae.Message)
			}
			return nil, err
		}
		t.GroupID = &g.ID
		ts = append(ts, t)
	}
	g.Title = ts[0].Title
	if in.Title != "" {
		title, err := cleanTitle(in.Title)
		if err != nil {
			return nil, err
		}
		g.Title = title
	}
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		if err := insertGroup(ctx, tx, g); err != nil {
			return err
		}
		for _, t := range ts {
			if err := s.insert(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.Group(ctx, ws, g.ID)
}

// Group reads a group of the workspace with its tasks.
func (s *Service) Group(ctx context.Context, ws *actor.Workspace, id string) (*Group, error) {
	return s.group(ctx, s.db.R, ws, id)
}

func (s *Service) group(ctx context.Context, q db.Queryer, ws *actor.Workspace, id string) (*Group, error) {
	if !ids.Valid(id) {
		return nil, apperr.NotFound("group")
	}
	g, err := getGroup(ctx, q, ws.ID, id)
	if err != nil {
		return nil, err
	}
	if g.Tasks, err = groupTasks(ctx, q, ws.ID, id); err != nil {
		return nil, err
	}
	for _, t := range g.Tasks {
		g.Counts[t.Status]++
	}
	return g, nil
}

// CancelGroup cancels every task of the group that has not ended, in one
// transaction.
func (s *Service) CancelGroup(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Group, error) {
	reason := "the group was cancelled"
	if u != nil {
		reason = "the group was cancelled by user " + u.ID
	}
	return s.eachOfGroup(ctx, ws, id, func(tx *db.Tx, t *Task) error {
		if Terminal(t.Status) {
			return nil
		}
		_, err := s.cancelIn(ctx, tx, ws, t, reason)
		return err
	})
}

// LaunchGroup releases every held task of the group, in one transaction.
func (s *Service) LaunchGroup(ctx context.Context, ws *actor.Workspace, id string) (*Group, error) {
	launched := 0
	g, err := s.eachOfGroup(ctx, ws, id, func(tx *db.Tx, t *Task) error {
		if t.Status != StatusQueued || !t.Held {
			return nil
		}
		launched++
		_, err := s.launchIn(ctx, tx, ws, t)
		return err
	})
	if err == nil && launched == 0 {
		return nil, apperr.New(apperr.CodeConflict, "the group has no held task to launch")
	}
	return g, err
}

func (s *Service) eachOfGroup(ctx context.Context, ws *actor.Workspace, id string, fn func(tx *db.Tx, t *Task) error) (*Group, error) {
	var out *Group
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		g, err := s.group(ctx, tx, ws, id)
		if err != nil {
			return err
		}
		for i := range g.Tasks {
			if err := fn(tx, &g.Tasks[i]); err != nil {
				return err
			}
		}
		out, err = s.group(ctx, tx, ws, id)
		return err
	})
	return out, err
}

// TeamRow is one agent profile's line on the team board.
type TeamRow struct {
	AgentProfile string     `json:"agent_profile" doc:"A profile of the workspace, or \"unassigned\" for tasks whose profile is gone"`
	Queued       int        `json:"queued"`
	Running      int        `json:"running"`
	NeedsInput   int        `json:"needs_input"`
	DonePR       int        `json:"done_pr"`
	Failed       int        `json:"failed"`
	LastActivity *time.Time `json:"last_activity" nullable:"true" doc:"The latest change to one of its tasks"`
	CostUSD      float64    `json:"cost_usd" doc:"What its tasks' model calls cost, as reported"`
}

// Unassigned is the team board's row for tasks whose profile is gone.
const Unassigned = "unassigned"

// TeamBoard is a row per agent profile of the workspace (and the
// unassigned fallback when some task's profile is gone), by name.
func (s *Service) TeamBoard(ctx context.Context, ws *actor.Workspace) ([]TeamRow, error) {
	profiles, err := s.projects.Profiles(ctx, ws)
	if err != nil {
		return nil, err
	}
	rows := map[string]*TeamRow{}
	for _, p := range profiles {
		rows[p.Name] = &TeamRow{AgentProfile: p.Name}
	}
	counts, err := profileCounts(ctx, s.db, ws.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		profile, status, n, last, cost := c.profile, c.status, c.n, c.last, c.cost
		row := rows[profile]
		if row == nil {
			if row = rows[Unassigned]; row == nil {
				row = &TeamRow{AgentProfile: Unassigned}
				rows[Unassigned] = row
			}
		}
		switch status {
		case StatusQueued:
			row.Queued += n
		case StatusRunning:
			row.Running += n
		case StatusNeedsInput:
			row.NeedsInput += n
		case StatusDonePR:
			row.DonePR += n
		case StatusFailed:
			row.Failed += n
		}
		if row.LastActivity == nil || last.After(*row.LastActivity) {
			l := last
			row.LastActivity = &l
		}
		row.CostUSD += cost
	}
	out := make([]TeamRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentProfile < out[j].AgentProfile })
	return out, nil
}
