package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"slipway/internal/approvals"
	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/ids"
	"slipway/internal/platform/text"
	"slipway/internal/proposals"
	"slipway/internal/workflows"
)

// decision is one thing of the active workspace waiting for the caller's
// verdict, as the approval ref names it: a tool approval, a proposal or a
// workflow run waiting at a human node. Exactly one field is set.
//
// A chat bot decides through the same services as the web (spec), so each
// kind is decided by its own service, with its own rules: who may decide,
// what a decision does, how a stale or decided one is refused.
type decision struct {
	tool     *approvals.ToolApproval
	proposal *proposals.Proposal
	gate     *workflows.Approval
}

func (d decision) id() string {
	switch {
	case d.proposal != nil:
		return d.proposal.ID
	case d.gate != nil:
		return d.gate.RunID
	}
	return d.tool.ID
}

func (d decision) since() time.Time {
	switch {
	case d.proposal != nil:
		return d.proposal.CreatedAt
	case d.gate != nil:
		return d.gate.WaitingSince
	}
	return d.tool.CreatedAt
}

func (d decision) choice() Choice {
	switch {
	case d.proposal != nil:
		return Choice{Value: d.proposal.ID, Label: "Proposal: " + d.proposal.Title, Hint: d.proposal.Kind + " change"}
	case d.gate != nil:
		what := d.gate.Message
		if what == "" {
			what = "waits at " + d.gate.NodeKey
		}
		return Choice{Value: d.gate.RunID, Label: "Gate: " + d.gate.WorkflowName + " — " + text.Clip(what, 80),
			Hint: "run " + d.gate.RunID + " at " + d.gate.NodeKey}
	}
	a := d.tool
	return Choice{Value: a.ID, Label: "Tool: " + a.Tool + " " + text.Clip(string(a.Arguments), 80), Hint: "task " + a.TaskID}
}

// pendingDecisions lists what waits for a verdict in the workspace, newest
// first: its pending tool approvals and proposals (each source bounded by
// its service's page), and the human gates of the caller's runs there (one
// per run: the gate a decision by run id answers, the oldest). Without a
// caller there are no gates.
func (s *Service) pendingDecisions(ctx context.Context, ws *actor.Workspace, u *actor.User) ([]decision, error) {
	as, err := s.approvals.Pending(ctx, ws, approvals.MaxLimit)
	if err != nil {
		return nil, err
	}
	var out []decision
	for i := range as {
		out = append(out, decision{tool: &as[i]})
	}
	ps, err := s.proposals.List(ctx, ws, proposals.StatusPending, proposals.MaxLimit, 0)
	if err != nil {
		return nil, err
	}
	for i := range ps {
		out = append(out, decision{proposal: &ps[i]})
	}
	gates, err := s.gates(ctx, ws, u)
	if err != nil {
		return nil, err
	}
	for i := range gates {
		out = append(out, decision{gate: &gates[i]})
	}
	slices.SortStableFunc(out, func(a, b decision) int { return b.since().Compare(a.since()) })
	return out, nil
}

// gates are the human gates waiting on u in the workspace, one per run
// (the oldest, which a decision by run id answers). The workflows service
// lists them across all of u's workspaces; another workspace's are left
// out here, so its run ids are as unknown as any.
func (s *Service) gates(ctx context.Context, ws *actor.Workspace, u *actor.User) ([]workflows.Approval, error) {
	if u == nil {
		return nil, nil
	}
	all, err := s.workflows.PendingApprovals(ctx, u)
	if err != nil {
		return nil, err
	}
	var out []workflows.Approval
	for _, g := range all { // oldest first
		if g.WorkspaceID == ws.ID && !slices.ContainsFunc(out, func(o workflows.Approval) bool { return o.RunID == g.RunID }) {
			out = append(out, g)
		}
	}
	return out, nil
}

// errNoDecision is what an id that names nothing pending gets: the answer
// an unknown tool approval always got.
func errNoDecision() error { return apperr.NotFound("approval") }

// findDecision is the pending decision an id names, trying each source in
// turn (ids are UUIDv7, unique across them): a tool approval, a proposal,
// a run waiting on the caller at a human node. One of another workspace,
// one decided already, or a gate waiting on someone else is not found.
func (s *Service) findDecision(ctx context.Context, ws *actor.Workspace, u *actor.User, id string) (*decision, error) {
	if !ids.Valid(id) {
		return nil, errNoDecision()
	}
	as, err := s.approvals.Pending(ctx, ws, approvals.MaxLimit)
	if err != nil {
		return nil, err
	}
	for i := range as {
		if as[i].ID == id {
			return &decision{tool: &as[i]}, nil
		}
	}
	p, err := s.proposals.Get(ctx, ws, id)
	switch {
	case err == nil && p.Status == proposals.StatusPending:
		return &decision{proposal: p}, nil
	case err != nil && !errors.Is(err, apperr.ErrNotFound):
		return nil, err
	}
	gates, err := s.gates(ctx, ws, u)
	if err != nil {
		return nil, err
	}
	for i := range gates {
		if gates[i].RunID == id {
			return &decision{gate: &gates[i]}, nil
		}
	}
	return nil, errNoDecision()
}

// decide is the approve and reject commands: the approval ref names any
// pending decision; its own service decides it.
func decide(verdict string) func(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
	return func(ctx context.Context, s *Service, ws *actor.Workspace, u *actor.User, args map[string]string) (*Plan, error) {
		d, err := s.findDecision(ctx, ws, u, args["approval"])
		if err != nil {
			return nil, err
		}
		switch {
		case d.proposal != nil:
			var p *proposals.Proposal
			if verdict == "approve" {
				p, err = s.proposals.Approve(ctx, ws, u, d.proposal.ID)
			} else {
				p, err = s.proposals.Reject(ctx, ws, u, d.proposal.ID, "")
			}
			if err != nil {
				return nil, err
			}
			return plan(fmt.Sprintf("Proposal %q is %s.", p.Title, p.Status)), nil
		case d.gate != nil:
			// As POST /api/workflows/pending-approvals/{run_id}/decision: the
			// run's waiting gate.
			r, err := s.workflows.Decide(ctx, u, d.gate.RunID, "", workflows.Decision{Decision: verdict})
			if err != nil {
				return nil, err
			}
			decided := "approved"
			if verdict == "reject" {
				decided = "rejected"
			}
			return plan(fmt.Sprintf("The gate of workflow run %s (%s) is %s.", r.ID, d.gate.WorkflowName, decided)), nil
		}
		a, err := s.approvals.Decide(ctx, u, d.tool.ID, verdict)
		if err != nil {
			return nil, err
		}
		return plan(fmt.Sprintf("The %s call is %s; the agent goes on.", a.Tool, a.Status)), nil
	}
}
