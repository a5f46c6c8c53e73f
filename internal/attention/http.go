package attention

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/httpx"
)

// Register mounts the union inbox of the active workspace.
func Register(api huma.API, s *Service, scoped func(huma.Context, func(huma.Context))) {
	ops := httpx.Operations{Tags: []string{"Notifications"}, Security: httpx.SessionSecurity, Middlewares: huma.Middlewares{scoped}}
	who := func(ctx context.Context) (*actor.User, *actor.Workspace, error) {
		u, err := actor.RequireApproved(ctx)
		if err != nil {
			return nil, nil, err
		}
		w, _ := actor.WorkspaceFrom(ctx) // the middleware guarantees one
		return u, w, nil
	}
	b := ops.Op("get_api_inbox_board", http.MethodGet, "/api/inbox/board",
		"The union inbox: approvals, human gates, proposals and unread notifications, newest first")
	b.Description = "In the active workspace: its pending tool approvals, the human gates of the caller's workflow runs, its pending " +
		"proposals (`actionable` only for the workspace's owner or an admin) and the caller's unread notifications that only inform " +
		"(mentions, failed runs, invites, backlog). `facets.source` counts each source; `actionable` is how many decisions wait for the " +
		"caller. Each item is decided through its source's own endpoint. Pages through the newest 1000 items."
	huma.Register(api, b, func(ctx context.Context, in *Query) (*httpx.Out[*InboxBoard], error) {
		u, w, err := who(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.Board(ctx, u, w, *in))
	})
	c := ops.Op("get_api_inbox_decisions_count", http.MethodGet, "/api/inbox/decisions/count", "How many decisions wait for the caller")
	c.Description = "A bare JSON number (a scalar): the inbox's `actionable`."
	huma.Register(api, c, func(ctx context.Context, _ *struct{}) (*httpx.Out[int], error) {
		u, w, err := who(ctx)
		if err != nil {
			return nil, err
		}
		return httpx.Reply(s.DecisionsCount(ctx, u, w))
	})
}
