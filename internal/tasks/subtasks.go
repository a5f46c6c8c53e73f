package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/runs"
)

// Subtasks: a task delegates work to a child task in its project, run by a
// named agent profile, through the API or its agent's "subtask" line. When
// a child ends, a running parent's agent is told in a message.

// Event types of delegation.
const (
	EventSubtask        = "subtask_created" // {subtask_id, agent_profile, title}
	EventSubtaskRefused = "subtask_refused" // {reason}: the agent's subtask line could not be honoured
)

// SubtaskCreate delegates work.
type SubtaskCreate struct {
	AgentProfile string `json:"agent_profile" maxLength:"100" doc:"The agent profile that runs the subtask"`
	Prompt       string `json:"prompt" maxLength:"100000"`
	Title        string `json:"title,omitempty" maxLength:"200" doc:"Default: the prompt's first line"`
}

// SubtaskRef is what delegating returns.
type SubtaskRef struct {
	ID     string `json:"id" format:"uuid"`
	Status string `json:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
}

// Subtask is a child task as its parent sees it: its outcome, never its
// prompt or its agent's configuration (what its agent reported is redacted
// as stored).
type Subtask struct {
	ID           string       `json:"id" format:"uuid"`
	ParentTaskID string       `json:"parent_task_id" format:"uuid"`
	Title        string       `json:"title"`
	AgentProfile string       `json:"agent_profile"`
	Status       string       `json:"status" enum:"queued,running,needs_input,done,done_pr,failed,cancelled"`
	Summary      string       `json:"summary" doc:"The agent's result summary, once it finished"`
	Error        string       `json:"error"`
	PR           *PullRequest `json:"pr" required:"false" doc:"The change it proposed, if any"`
	CostUSD      float64      `json:"cost_usd"`
	CreatedAt    time.Time    `json:"created_at"`
	FinishedAt   *time.Time   `json:"finished_at" nullable:"true"`
}

// Delegate creates a subtask of a task of the workspace, queued in the
// parent's project.
func (s *Service) Delegate(ctx context.Context, ws *actor.Workspace, u *actor.User, parentID string, in SubtaskCreate) (*SubtaskRef, error) {
	if strings.TrimSpace(in.AgentProfile) == "" {
		return nil, apperr.BadRequest("agent_profile is required: name the profile that runs the subtask")
	}
	parent, err := s.Get(ctx, ws, parentID)
	if err != nil {
		return nil, err
	}
	var by *string
	if u != nil {
		by = &u.ID
	}
	var out *SubtaskRef
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		child, err := s.delegate(ctx, tx, ws, by, parent, in)
		if err == nil {
			out = &SubtaskRef{ID: child.ID, Status: child.Status}
		}
		return err
	})
	return out, err
}

func (s *Service) delegate(ctx context.Context, tx *db.Tx, ws *actor.Workspace, by *string, parent *Task, in SubtaskCreate) (*Task, error) {
	child, err := s.newTask(ctx, ws, by, TaskCreate{ProjectID: parent.ProjectID, Prompt: in.Prompt, Title: in.Title, AgentProfile: in.AgentProfile})
	if err != nil {
		return nil, err
	}
	child.ParentTaskID = &parent.ID
	if err := s.insert(ctx, tx, child); err != nil {
		return nil, err
	}
	return child, s.event(ctx, tx, parent, "", s.value(EventSubtask, map[string]any{"subtask_id": child.ID,
		"agent_profile": child.AgentProfile, "title": child.Title}))
}

// Subtasks lists a task's subtasks, oldest first.
func (s *Service) Subtasks(ctx context.Context, ws *actor.Workspace, parentID string) ([]Subtask, error) {
	if _, err := s.Get(ctx, ws, parentID); err != nil {
		return nil, err
	}
	children, err := childTasks(ctx, s.db.R, ws.ID, parentID)
	if err != nil {
		return nil, err
	}
	out := []Subtask{}
	for i := range children {
		out = append(out, subtaskOf(&children[i], ""))
	}
	return out, nil
}

func subtaskOf(t *Task, summary string) Subtask {
	parent := ""
	if t.ParentTaskID != nil {
		parent = *t.ParentTaskID
	}
	return Subtask{ID: t.ID, ParentTaskID: parent, Title: t.Title, AgentProfile: t.AgentProfile, Status: t.Status, Summary: summary,
		Error: t.Error, PR: t.PR, CostUSD: t.CostUSD, CreatedAt: t.CreatedAt, FinishedAt: t.FinishedAt}
}

// child reads a subtask through its parent: another parent's child, or a
// parent outside the workspace, is not found.
func (s *Service) child(ctx context.Context, q db.Queryer, ws *actor.Workspace, parentID, id string) (*Task, error) {
	if !ids.Valid(parentID) || !ids.Valid(id) {
		return nil, apperr.NotFound("subtask")
	}
	t, err := getTask(ctx, q, ws.ID, id)
	if errors.Is(err, apperr.ErrNotFound) || (err == nil && (t.ParentTaskID == nil || *t.ParentTaskID != parentID)) {
		return nil, apperr.NotFound("subtask")
	}
	return t, err
}

// Subtask reads one subtask with its outcome.
func (s *Service) Subtask(ctx context.Context, ws *actor.Workspace, parentID, id string) (*Subtask, error) {
	t, err := s.child(ctx, s.db.R, ws, parentID, id)
	if err != nil {
		return nil, err
	}
	summary := ""
	if res, err := s.runs.LastResult(ctx, s.db.R, ws.ID, t.ID); err != nil {
		return nil, err
	} else if len(res) > 0 {
		var r protocol.Result
		if json.Unmarshal(res, &r) == nil {
			summary = r.Summary
		}
	}
	out := subtaskOf(t, summary)
	return &out, nil
}

// CancelSubtask cancels a subtask through its parent.
func (s *Service) CancelSubtask(ctx context.Context, ws *actor.Workspace, u *actor.User, parentID, id string) (*Subtask, error) {
	if _, err := s.child(ctx, s.db.R, ws, parentID, id); err != nil {
		return nil, err
	}
	t, err := s.Cancel(ctx, ws, id, u)
	if err != nil {
		return nil, err
	}
	out := subtaskOf(t, "")
	return &out, nil
}

// agentSubtask honours an agent's "subtask" line: a child of its task. A
// line that cannot be honoured (no such profile, empty prompt) is recorded
// as refused; it never fails the batch that carried it.
func (s *Service) agentSubtask(ctx context.Context, tx *db.Tx, r *runs.Run, payload []byte) error {
	var line struct {
		AgentProfile string `json:"agent_profile"`
		Prompt       string `json:"prompt"`
		Title        string `json:"title"`
	}
	parent, err := getTask(ctx, tx, r.WorkspaceID, *r.TaskID)
	if err != nil {
		return err
	}
	refuse := func(why string) error {
		return s.event(ctx, tx, parent, r.ID, s.value(EventSubtaskRefused, map[string]string{"reason": why}))
	}
	if json.Unmarshal(payload, &line) != nil {
		return refuse("the subtask line is not a JSON object")
	}
	in := SubtaskCreate{AgentProfile: text.Clip(line.AgentProfile, 100), Prompt: text.Clip(line.Prompt, 100000), Title: text.Clip(line.Title, 200)}
	if strings.TrimSpace(in.AgentProfile) == "" {
		in.AgentProfile = parent.AgentProfile
	}
	if _, err := s.delegate(ctx, tx, &actor.Workspace{ID: r.WorkspaceID}, parent.CreatedBy, parent, in); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code != apperr.CodeDatabase && ae.Code != apperr.CodeInternal {
			return refuse(ae.Message)
		}
		return err
	}
	return nil
}

// subtaskEnded tells a working parent's agent that its subtask ended.
func (s *Service) subtaskEnded(ctx context.Context, tx *db.Tx, t *Task) error {
	if t.ParentTaskID == nil || s.inbox == nil {
		return nil
	}
	parent, err := getTask(ctx, tx, t.WorkspaceID, *t.ParentTaskID)
	if errors.Is(err, apperr.ErrNotFound) || (err == nil && !Active(parent.Status)) {
		return nil
	}
	if err != nil {
		return err
	}
	job, err := s.queue.Unfinished(ctx, tx, t.WorkspaceID, JobKind, parent.ID)
	if err != nil || job == "" {
		return err
	}
	note := fmt.Sprintf("Subtask %s (%q, agent profile %s) ended: %s.", t.ID, t.Title, t.AgentProfile, t.Status)
	if t.Error != "" {
		note += " Error: " + t.Error
	}
	_, err = s.inbox.Post(ctx, tx, job, protocol.Message{Type: protocol.InMessage, Role: protocol.RoleUser, Text: note}, "")
	return err
}
