package proposals

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type listInput struct {
	Status string `query:"status" enum:"pending,applied,rejected" doc:"Only proposals of this status"`
	Limit  int    `query:"limit" minimum:"0" doc:"Page size (default 50); more than 200 is clamped to 200"`
	Offset int    `query:"offset" minimum:"0" maximum:"1000000"`
}

type idInput struct {
	ID string `path:"id" doc:"Proposal id"`
}

type rejectInput struct {
	ID   string `path:"id" doc:"Proposal id"`
	Body *struct {
		Note string `json:"note,omitempty" maxLength:"2000" doc:"The reviewer's note (into the audit event)"`
	} `required:"false"`
}

// Register mounts the proposals of the active workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Proposals"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	const base = "/api/proposals"

	huma.Register(api, ops.Op("get_api_proposals", http.MethodGet, base, "The active workspace's proposals, newest first"),
		func(ctx context.Context, in *listInput) (*httpx.Out[[]Proposal], error) {
			return httpx.Reply(s.List(ctx, ws(ctx), in.Status, in.Limit, in.Offset))
		})
	huma.Register(api, ops.Op("get_api_proposals_board", http.MethodGet, base+"/board",
		"Pending proposals and the latest decided, with counts by status"),
		func(ctx context.Context, _ *struct{}) (*httpx.Out[*ProposalBoard], error) {
			return httpx.Reply(s.BoardOf(ctx, ws(ctx)))
		})
	count := ops.Op("get_api_proposals_count", http.MethodGet, base+"/count", "How many proposals wait in the active workspace")
	count.Description = "A bare JSON number (a scalar), e.g. `3`."
	huma.Register(api, count, func(ctx context.Context, _ *struct{}) (*httpx.Out[int], error) {
		return httpx.Reply(s.Count(ctx, ws(ctx)))
	})
	huma.Register(api, ops.Op("get_api_proposals_id", http.MethodGet, base+"/{id}", "One proposal of the active workspace"),
		func(ctx context.Context, in *idInput) (*httpx.Out[*Proposal], error) {
			return httpx.Reply(s.Get(ctx, ws(ctx), in.ID))
		})
	approve := ops.Op("post_api_proposals_id_approve", http.MethodPost, base+"/{id}/approve", "Approve a pending proposal: its change is applied")
	approve.Description = "The workspace's owner or an admin (403 otherwise). In one transaction the change is checked again and applied " +
		"as the approver: `result` is what it applied and `materialized_id` what it made, and an audit event `proposal.approve` records both. " +
		"A proposal whose target changed since it was proposed is refused (409, saying how); one decided already is 409."
	huma.Register(api, approve, func(ctx context.Context, in *idInput) (*httpx.Out[*Proposal], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.Approve(ctx, ws(ctx), u, in.ID))
	})
	reject := ops.Op("post_api_proposals_id_reject", http.MethodPost, base+"/{id}/reject", "Reject a pending proposal, with an optional note")
	reject.Description = "The workspace's owner or an admin (403 otherwise); the note goes to the audit event `proposal.reject`. One decided already is 409."
	huma.Register(api, reject, func(ctx context.Context, in *rejectInput) (*httpx.Out[*Proposal], error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, err
		}
		var note string
		if in.Body != nil {
			note = in.Body.Note
		}
		return httpx.Reply(s.Reject(ctx, ws(ctx), u, in.ID, note))
	})
}
