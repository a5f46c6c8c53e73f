package approvals

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

type listInput struct {
	Limit int `query:"limit" minimum:"0" maximum:"200" doc:"Page size (default 50)"`
}

type decideInput struct {
	ID   string `path:"id" doc:"ToolApproval id"`
	Body struct {
		Verdict string `json:"verdict" maxLength:"20" doc:"approve or reject"`
	}
}

// Register mounts the tool approval endpoints (active workspace).
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Tool approvals"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	ws := func(ctx context.Context) *actor.Workspace {
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return w
	}
	const base = "/api/tool-approvals"

	huma.Register(api, ops.Op("get_api_tool_approvals_board", http.MethodGet, base+"/board", "Pending and latest decided tool approvals with counts"),
		func(ctx context.Context, in *listInput) (*httpx.Out[*ToolApprovalBoard], error) {
			return httpx.Reply(s.Board(ctx, ws(ctx), in.Limit))
		})
	count := ops.Op("get_api_tool_approvals_count", http.MethodGet, base+"/count", "How many tool approvals wait in the active workspace")
	count.Description = "A bare JSON number (a scalar), e.g. `3`."
	huma.Register(api, count, func(ctx context.Context, _ *struct{}) (*httpx.Out[int], error) {
		return httpx.Reply(s.Count(ctx, ws(ctx)))
	})
	huma.Register(api, ops.Op("get_api_tool_approvals_pending", http.MethodGet, base+"/pending", "Pending tool approvals, newest first"),
		func(ctx context.Context, in *listInput) (*httpx.Out[[]ToolApproval], error) {
			return httpx.Reply(s.Pending(ctx, ws(ctx), in.Limit))
		})
	huma.Register(api, ops.Op("get_api_tool_approvals_decided", http.MethodGet, base+"/decided", "Decided tool approvals (approved, rejected, timed out, superseded), newest first"),
		func(ctx context.Context, in *listInput) (*httpx.Out[[]ToolApproval], error) {
			return httpx.Reply(s.Decided(ctx, ws(ctx), in.Limit))
		})
	decide := ops.Op("post_api_tool_approvals_id_decide", http.MethodPost, base+"/{id}/decide", "Approve or reject a pending tool call")
	decide.Description = "Any member of the approval's workspace (403 otherwise). Exactly one decision wins; a decided approval is 400. The waiting agent goes on with the verdict."
	huma.Register(api, decide, func(ctx context.Context, in *decideInput) (*httpx.Out[*ToolApproval], error) {
		u, _ := actor.UserFrom(ctx)
		return httpx.Reply(s.Decide(ctx, u, in.ID, in.Body.Verdict))
	})
}
