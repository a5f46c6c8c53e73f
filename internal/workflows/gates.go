package workflows

import (
	"context"
	"encoding/json"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
)

// Approval is a human gate waiting on the caller.
type Approval struct {
	RunID        string    `json:"run_id" format:"uuid"`
	NodeKey      string    `json:"node_key"`
	Message      string    `json:"message"`
	WorkflowID   string    `json:"workflow_id" format:"uuid"`
	WorkflowName string    `json:"workflow_name"`
	ProjectID    string    `json:"project_id" format:"uuid"`
	WorkspaceID  string    `json:"workspace_id" format:"uuid"`
	WaitingSince time.Time `json:"waiting_since"`
}

// PendingApprovals lists the human gates of the caller's runs across the
// workspaces they belong to, oldest first.
func (s *Service) PendingApprovals(ctx context.Context, u *actor.User) ([]Approval, error) {
	gates, err := waitingGates(ctx, s.db, u.ID)
	if err != nil {
		return nil, err
	}
	out := []Approval{}
	for _, g := range gates {
		var hs humanState
		if json.Unmarshal(g.state, &hs) == nil {
			g.Message = hs.Message
		}
		out = append(out, g.Approval)
	}
	return out, nil
}

type humanState struct {
	Message string `json:"message"`
}

// Decision is a person's answer to a human gate.
type Decision struct {
	Decision string `json:"decision" doc:"approve or reject"`
	Comment  string `json:"comment,omitempty" maxLength:"2000"`
}

// Decide answers a human gate of a run the caller owns: by node key, or
// (nodeKey "") the run's waiting gate, the oldest when several wait.
func (s *Service) Decide(ctx context.Context, u *actor.User, runID, nodeKey string, d Decision) (*RunView, error) {
	var handle string
	switch d.Decision {
	case "approve":
		handle = HandleApproved
	case "reject":
		handle = HandleRejected
	default:
		return nil, apperr.BadRequest("decision must be approve or reject")
	}
	if err := text.CheckName("comment", d.Comment); err != nil && d.Comment != "" {
		return nil, err
	}
	if !ids.Valid(runID) {
		return nil, apperr.NotFound("workflow run")
	}
	workspaceID, err := ownRunWorkspace(ctx, s.db.R, runID, u.ID)
	if err != nil {
		return nil, err
	}
	r, err := s.engine.Decide(ctx, workspaceID, runID, nodeKey, Decided{Handle: handle, Decision: d.Decision, By: u.ID, Comment: d.Comment})
	if err != nil {
		return nil, err
	}
	return s.view(ctx, r)
}
