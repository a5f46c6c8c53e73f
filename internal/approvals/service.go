package approvals

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"slipway/internal/agents/protocol"
	"slipway/internal/inbox"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/clock"
	"slipway/internal/platform/db"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/realtime"
	"slipway/internal/platform/sweep"
	"slipway/internal/platform/text"
)

// Members tells whether a user may act in a workspace (tenancy).
type Members interface {
	CanAccess(ctx context.Context, userID, workspaceID string) (bool, error)
}

// Reactions are what other domains do when an approval is decided (the
// composition root lists who reacts).
type Reactions interface {
	// ApprovalDecided is told, in the deciding transaction, that an
	// approval was decided (by a human or by its timeout): the task it
	// holds may go on.
	ApprovalDecided(ctx context.Context, tx *db.Tx, a *ToolApproval) error
	// ApprovalRequested is told, in the transaction that records it, of a
	// new pending approval: someone should decide it.
	ApprovalRequested(ctx context.Context, tx *db.Tx, a *ToolApproval) error
	// ApprovalsSuperseded is told, in the transaction that ends a task's
	// run, of the pending approvals it closed (nobody decides them now).
	ApprovalsSuperseded(ctx context.Context, tx *db.Tx, ids []string) error
}

// Service holds tool approvals.
type Service struct {
	db      *db.DB
	clock   clock.Clock
	inbox   *inbox.Inbox
	members Members
	timeout time.Duration
	log     *slog.Logger
	react   Reactions     // nil: no other domain reacts
	hub     *realtime.Hub // nil: nothing is live
}

// TopicApprovals hints that a workspace's pending approvals changed (the
// count to show moved).
const TopicApprovals = "approvals"

// Deps are what approvals use of the rest; Hub and Reactions are optional.
type Deps struct {
	DB        *db.DB
	Clock     clock.Clock
	Inbox     *inbox.Inbox
	Members   Members
	Hub       *realtime.Hub // nil: nothing is live
	Reactions Reactions
	Log       *slog.Logger
}

// NewService returns the approvals service; a pending approval times out
// after timeout (default a day).
func NewService(d Deps, timeout time.Duration) *Service {
	if timeout <= 0 {
		timeout = 24 * time.Hour
	}
	return &Service{db: d.DB, clock: d.Clock, inbox: d.Inbox, members: d.Members, timeout: timeout, log: d.Log, hub: d.Hub, react: d.Reactions}
}

// Request records an agent's approval_request for a run, inside tx (the
// transaction storing the agent's events). created is false for a request
// already recorded.
func (s *Service) Request(ctx context.Context, tx *db.Tx, workspaceID, taskID, runID, jobID string, req protocol.ApprovalRequest) (*ToolApproval, bool, error) {
	args := req.Arguments
	if !json.Valid(args) {
		args = json.RawMessage(`{}`)
	}
	now := s.clock.Now()
	a := &ToolApproval{ID: ids.New(), WorkspaceID: workspaceID, TaskID: taskID, RunID: runID, Tool: text.Clip(req.Tool, 200),
		Arguments: args, Reason: text.Clip(req.Reason, 1000), Status: StatusPending, CreatedAt: now, ExpiresAt: now.Add(s.timeout),
		jobID: jobID, requestID: text.Clip(req.ID, 200)}
	created, err := insert(ctx, tx, a)
	if err != nil || !created {
		return a, created, err
	}
	if s.react != nil {
		if err := s.react.ApprovalRequested(ctx, tx, a); err != nil {
			return a, true, err
		}
	}
	return a, true, s.hub.NotifyTx(ctx, tx, workspaceID, TopicApprovals, a.ID)
}

// Decide records a member's verdict (approve or reject). Exactly one
// decision wins; the agent hears it through its inbox.
func (s *Service) Decide(ctx context.Context, u *actor.User, id, verdict string) (*ToolApproval, error) {
	status, err := statusOf(verdict)
	if err != nil {
		return nil, err
	}
	if !ids.Valid(id) {
		return nil, apperr.NotFound("approval")
	}
	// Who may decide is settled before the transaction: it holds its
	// connection only for the compare-and-set and what follows it.
	a, err := lookup(ctx, s.db.R, id)
	if err != nil {
		return nil, err
	}
	ok, err := s.members.CanAccess(ctx, u.ID, a.WorkspaceID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.New(apperr.CodeForbidden, "this approval is not accessible: you are not a member of its workspace")
	}
	err = s.db.Tx(ctx, func(tx *db.Tx) error {
		won, err := s.settle(ctx, tx, a, status, &u.ID)
		if err != nil {
			return err
		}
		if !won {
			return apperr.BadRequest("this approval was already decided (%s)", a.Status)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// settle decides a pending approval (compare-and-set), tells its agent and
// the hooks; false when it was decided already (a.Status then says how).
func (s *Service) settle(ctx context.Context, tx *db.Tx, a *ToolApproval, status string, by *string) (bool, error) {
	if a.Status != StatusPending {
		return false, nil
	}
	now := s.clock.Now()
	won, err := decide(ctx, tx, a.WorkspaceID, a.ID, status, by, now)
	if err != nil || !won {
		if !won {
			if cur, gerr := get(ctx, tx, a.WorkspaceID, a.ID); gerr == nil {
				a.Status = cur.Status
			}
		}
		return false, err
	}
	a.Status, a.DecidedBy, a.DecidedAt = status, by, &now
	if _, err := s.inbox.Post(ctx, tx, a.jobID, protocol.Approval{Type: protocol.InApproval, ID: a.requestID, Verdict: agentVerdict[status]}, ""); err != nil {
		return false, err
	}
	if s.react != nil {
		if err := s.react.ApprovalDecided(ctx, tx, a); err != nil {
			return false, err
		}
	}
	return true, s.hub.NotifyTx(ctx, tx, a.WorkspaceID, TopicApprovals, a.ID)
}

// Supersede closes the pending approvals of a task whose run ended (its
// agent is gone), inside tx. One hint, naming the first, covers them all:
// a watcher refetches the count whichever approval the hint names.
func (s *Service) Supersede(ctx context.Context, tx *db.Tx, workspaceID, taskID string) error {
	closed, err := supersede(ctx, tx, workspaceID, taskID, s.clock.Now())
	if err != nil {
		return err
	}
	if len(closed) == 0 {
		return nil
	}
	if s.react != nil {
		if err := s.react.ApprovalsSuperseded(ctx, tx, closed); err != nil {
			return err
		}
	}
	return s.hub.NotifyTx(ctx, tx, workspaceID, TopicApprovals, closed[0])
}

// PendingOfTask counts a task's pending approvals (in q: a transaction sees
// its own writes).
func (s *Service) PendingOfTask(ctx context.Context, q db.Queryer, workspaceID, taskID string) (int, error) {
	return pendingOfTask(ctx, q, workspaceID, taskID)
}

// Expire times out pending approvals whose time is up; it reports how many.
func (s *Service) Expire(ctx context.Context) (int, error) {
	due, err := expiring(ctx, s.db.R, s.clock.Now())
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range due {
		err := s.db.Tx(ctx, func(tx *db.Tx) error {
			won, err := s.settle(ctx, tx, &due[i], StatusTimedOut, nil)
			if won {
				n++
			}
			return err
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Run times out pending approvals every interval until ctx ends. Every
// replica may run it: each approval is decided once.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	sweep.Every(ctx, every, s.log, "tool approvals timed out", s.Expire)
}

// Page bounds of the lists.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

func clamp(limit int) int {
	if limit <= 0 {
		return DefaultLimit
	}
	return min(limit, MaxLimit)
}

// Pending lists the workspace's pending approvals, newest first.
func (s *Service) Pending(ctx context.Context, ws *actor.Workspace, limit int) ([]ToolApproval, error) {
	return pending(ctx, s.db.R, ws.ID, clamp(limit))
}

// Decided lists the workspace's decided approvals, newest decision first.
func (s *Service) Decided(ctx context.Context, ws *actor.Workspace, limit int) ([]ToolApproval, error) {
	return decided(ctx, s.db.R, ws.ID, clamp(limit))
}

// Count is the number of pending approvals in the workspace.
func (s *Service) Count(ctx context.Context, ws *actor.Workspace) (int, error) {
	return countPending(ctx, s.db.R, ws.ID)
}

// Board is the pending approvals, the latest decided and counts by status.
func (s *Service) Board(ctx context.Context, ws *actor.Workspace, limit int) (*ToolApprovalBoard, error) {
	b := &ToolApprovalBoard{Counts: map[string]int{StatusPending: 0, StatusApproved: 0, StatusRejected: 0, StatusTimedOut: 0, StatusSuperseded: 0}}
	var err error
	if b.Pending, err = s.Pending(ctx, ws, limit); err != nil {
		return nil, err
	}
	if b.Decided, err = s.Decided(ctx, ws, limit); err != nil {
		return nil, err
	}
	if err := countByStatus(ctx, s.db.R, ws.ID, b.Counts); err != nil {
		return nil, err
	}
	return b, nil
}
