package tasks

import (
	"context"
	"encoding/json"
	"errors"

	"slipway/internal/agents/protocol"
	"slipway/internal/approvals"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/runs"
)

// Working with a running agent: what the agent asks (tool approvals, a
// message after an interrupt) moves its task to needs_input; what humans
// send (verdicts, messages, interrupts) goes to the agent's inbox, which its
// worker takes with its lease renewals wherever it runs.

// Event types of steering, written by the hub.
const (
	EventApproval     = "approval"     // {approval_id, tool, status, decided_by}
	EventIntervention = "intervention" // {message_id, text, by}
	EventInterrupt    = "interrupt"    // {by}
)

// Approvals is what tasks need from tool approvals.
type Approvals interface {
	Request(ctx context.Context, tx *db.Tx, workspaceID, taskID, runID, jobID string, req protocol.ApprovalRequest) (*approvals.ToolApproval, bool, error)
	Supersede(ctx context.Context, tx *db.Tx, workspaceID, taskID string) error
	PendingOfTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) (int, error)
}

// Inbox takes lines for the agent of a job (package inbox).
type Inbox interface {
	Post(ctx context.Context, tx *db.Tx, jobID string, line any, messageID string) (int64, error)
}

// Autonomy reads a workspace's autonomy level (0 to 100).
type Autonomy interface {
	AutonomyLevel(ctx context.Context, workspaceID string) (int, error)
}

// AgentReported reads what a task's agent reported (runs.Reactions): an
// approval request or a wait for a message moves the task to needs_input.
func (s *Service) AgentReported(ctx context.Context, tx *db.Tx, r *runs.Run, evs []runs.NewEvent) error {
	if r.TaskID == nil || s.approvals == nil {
		return nil
	}
	for _, e := range evs {
		switch e.Type {
		case protocol.OutApprovalRequest:
			var req protocol.ApprovalRequest
			if json.Unmarshal(e.Payload, &req) != nil || req.ID == "" {
				continue // not a request the agent can be answered on
			}
			a, created, err := s.approvals.Request(ctx, tx, r.WorkspaceID, *r.TaskID, r.ID, r.JobID, req)
			if err != nil {
				return err
			}
			if created {
				if err := s.needsInput(ctx, tx, r, "waiting for approval of a "+a.Tool+" call"); err != nil {
					return err
				}
			}
		case protocol.OutWaiting:
			if err := s.needsInput(ctx, tx, r, "interrupted; waiting for a message"); err != nil {
				return err
			}
		case protocol.OutSubtask:
			if err := s.agentSubtask(ctx, tx, r, e.Payload); err != nil {
				return err
			}
		case protocol.OutCost:
			var c protocol.Cost
			if json.Unmarshal(e.Payload, &c) == nil && c.CostUSD > 0 && c.CostUSD < 1e6 {
				if err := addCost(ctx, tx, r.WorkspaceID, *r.TaskID, c.CostUSD); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// needsInput moves a running task to needs_input.
func (s *Service) needsInput(ctx context.Context, tx *db.Tx, r *runs.Run, why string) error {
	t, err := getTask(ctx, tx, r.WorkspaceID, *r.TaskID)
	if err != nil || t.Status != StatusRunning {
		return err
	}
	if _, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, t.Status, StatusNeedsInput, ""); err != nil {
		return err
	}
	return s.event(ctx, tx, t, r.ID, s.value(EventStatus, statusPayload(t.Status, StatusNeedsInput, why)))
}

// resume moves a task waiting for input back to running once nothing is
// pending for it.
func (s *Service) resume(ctx context.Context, tx *db.Tx, t *Task, why string) error {
	if t.Status != StatusNeedsInput {
		return nil
	}
	n, err := s.approvals.PendingOfTask(ctx, tx, t.WorkspaceID, t.ID)
	if err != nil || n > 0 {
		return err
	}
	if _, err := s.setStatus(ctx, tx, t.WorkspaceID, t.ID, t.Status, StatusRunning, ""); err != nil {
		return err
	}
	return s.event(ctx, tx, t, "", s.value(EventStatus, statusPayload(t.Status, StatusRunning, why)))
}

// ApprovalDecided records a decided approval on its task and lets the task
// go on (approvals.DecidedFunc).
func (s *Service) ApprovalDecided(ctx context.Context, tx *db.Tx, a *approvals.ToolApproval) error {
	t, err := getTask(ctx, tx, a.WorkspaceID, a.TaskID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.event(ctx, tx, t, "", s.value(EventApproval, map[string]any{"approval_id": a.ID, "tool": a.Tool,
		"status": a.Status, "decided_by": a.DecidedBy})); err != nil {
		return err
	}
	return s.resume(ctx, tx, t, "the "+a.Tool+" call was "+a.Status)
}

// Steer sends a line to the agent of a task of the workspace (queued or
// working: a queued task's agent gets it when it starts), inside tx, and
// records ev on the task. A task waiting for a message goes back to
// running. messageID names the message the line carries ("" for none).
func (s *Service) Steer(ctx context.Context, tx *db.Tx, ws *actor.Workspace, taskID string, line any, messageID string, ev runs.NewEvent) (*Task, string, error) {
	if !ids.Valid(taskID) {
		return nil, "", apperr.NotFound("task")
	}
	if s.inbox == nil {
		return nil, "", apperr.New(apperr.CodeInternal, "steering is not wired")
	}
	t, err := getTask(ctx, tx, ws.ID, taskID)
	if err != nil {
		return nil, "", err
	}
	if t.Status != StatusQueued && !Active(t.Status) {
		return nil, "", apperr.New(apperr.CodeConflict, "the task is %s: no agent works on it", t.Status)
	}
	jobID, err := s.queue.Unfinished(ctx, tx, ws.ID, JobKind, t.ID)
	if err != nil {
		return nil, "", err
	}
	if jobID == "" {
		return nil, "", apperr.New(apperr.CodeConflict, "the task is %s but has no work in the queue", t.Status)
	}
	if _, err := s.inbox.Post(ctx, tx, jobID, line, messageID); err != nil {
		return nil, "", err
	}
	if err := s.event(ctx, tx, t, "", ev); err != nil {
		return nil, "", err
	}
	if ev.Type == EventIntervention {
		if err := s.resume(ctx, tx, t, "a message for the agent arrived"); err != nil {
			return nil, "", err
		}
	}
	t, err = getTask(ctx, tx, ws.ID, taskID)
	return t, jobID, err
}

// Interrupt stops what the task's agent is doing now without ending the
// task: the llm agent waits for a message (the task needs input); an agent
// with a single step (shell, command) ends, failed as interrupted.
func (s *Service) Interrupt(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*Task, error) {
	var out *Task
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		t, _, err := s.Steer(ctx, tx, ws, id, protocol.Interrupt{Type: protocol.InInterrupt}, "",
			s.value(EventInterrupt, map[string]any{"by": u.ID}))
		out = t
		return err
	})
	return out, err
}

// Value builds an event of the task log stamped now.
func (s *Service) Value(typ string, v any) runs.NewEvent { return s.value(typ, v) }
